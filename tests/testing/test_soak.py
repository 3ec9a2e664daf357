"""The soak run (``tests/soak.py``, ``make soak``) in short: its model, its checker, a seeded run.

The short run has 1, 8 and 32 agents on SeaweedFS with faults injected, for about 25 seconds of
commands (12 on storage format 2); its report (commands, faults, throughput, violations) is printed.
Throughput is never asserted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from s3memory.clients import make_s3_client
from s3memory.core.paths import KeyLayout, memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests import soak
from tests.support.backends import REGION, SeaweedServer
from tests.support.faults import ALL, Fault, FaultPlan, SimulatedCrash, held, instant_retries

SEED = 20250818
SOAK_BUCKET = "soak-test"

SHORT_SOAK_SECONDS = {1: 24, 2: 12}
"""Seconds of commands of the short soak under faults, per storage format."""

both_formats = pytest.mark.parametrize("storage_format", [1, 2], ids=["format-1", "format-2"])
"""The soak's own runs, once per storage format (format 2: private names, renames by copy)."""


@pytest.fixture
def endpoint(seaweedfs: SeaweedServer) -> Iterator[str]:
    """The session's SeaweedFS with a bucket of the soak's own, emptied afterwards."""
    admin = seaweedfs.admin
    try:
        admin.create_bucket(Bucket=SOAK_BUCKET)
    except admin.exceptions.ClientError as error:  # a bucket left by an earlier test of this session
        if "BucketAlready" not in str(error):
            raise
    soak.empty(admin, SOAK_BUCKET)
    yield seaweedfs.endpoint
    soak.empty(admin, SOAK_BUCKET)


def run(seaweedfs: SeaweedServer, endpoint: str, **settings: Any) -> soak.SoakReport:
    config = soak.SoakConfig(**{"seed": SEED, **settings})
    report = soak.run_soak(config, endpoint, seaweedfs.admin, SOAK_BUCKET)
    print(report.render())
    return report


# -- the model (pure) -------------------------------------------------------------------------------

STATE = {
    "/memories/a01/notes.md": "alpha beta\ngamma\n",
    "/memories/a01/d/x.md": "kiwi\n",
    "/memories/a01/d/e/deep/y.md": "lime\n",
}


def apply(command: dict[str, Any]) -> soak.Expected:
    return soak.Model.apply(command, STATE)


def test_the_model_answers_with_the_contracts_strings() -> None:
    view = apply({"command": "view", "path": "/memories/a01/notes.md"})
    assert view.answer == (
        "Here's the content of /memories/a01/notes.md with line numbers:\n     1\talpha beta\n     2\tgamma"
    )
    listing = apply({"command": "view", "path": "/memories/a01"})
    assert listing.answer.split("\n")[1:] == [
        "4.0K\t/memories/a01",
        "4.0K\t/memories/a01/d/",
        "4.0K\t/memories/a01/d/e/",
        "5B\t/memories/a01/d/x.md",
        "17B\t/memories/a01/notes.md",
    ]
    assert apply({"command": "delete", "path": "/memories/a01/zz"}).answer == (
        "Error: The path /memories/a01/zz does not exist"
    )
    assert apply(
        {"command": "rename", "old_path": "/memories/a01/d", "new_path": "/memories/a01/d/e"}
    ).answer == ("Error: Cannot move /memories/a01/d into itself (/memories/a01/d/e)")
    taken = apply({"command": "rename", "old_path": "/memories/a01/notes.md", "new_path": "/memories/a01/d"})
    assert taken.answer == "Error: The destination /memories/a01/d already exists"
    below = apply({"command": "create", "path": "/memories/a01/notes.md/z.md", "file_text": "z\n"})
    assert below.answer == (
        "Error: Cannot create /memories/a01/notes.md/z.md: /memories/a01/notes.md is a file, not a directory."
    )
    several = apply(
        {"command": "str_replace", "path": "/memories/a01/notes.md", "old_str": "a", "new_str": "o"}
    )
    assert several.answer.endswith(
        "Multiple occurrences of old_str `a` in lines: 1, 1, 1, 2, 2. Please ensure it is unique"
    )


def test_the_model_moves_a_directory_whole() -> None:
    moved = apply({"command": "rename", "old_path": "/memories/a01/d", "new_path": "/memories/a01/b/d"})
    assert moved.ok and sorted(moved.state) == [
        "/memories/a01/b/d/e/deep/y.md",
        "/memories/a01/b/d/x.md",
        "/memories/a01/notes.md",
    ]
    deleted = soak.Model.apply({"command": "delete", "path": "/memories/a01/d"}, moved.state)
    assert not deleted.ok and deleted.state == moved.state


def test_a_str_replace_snippet_is_checked_against_the_edited_file() -> None:
    edit = apply(
        {"command": "str_replace", "path": "/memories/a01/notes.md", "old_str": "gamma", "new_str": "tea"}
    )
    assert edit.ok and edit.state["/memories/a01/notes.md"] == "alpha beta\ntea\n"
    header = "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
    assert edit.matches(True, f"{header}\n     1\talpha beta\n     2\ttea")
    assert not edit.matches(True, f"{header}\n     1\talpha beta\n     2\tgamma")
    assert not edit.matches(True, f"{header}\n     1\talpha beta")  # the changed line is not shown


def test_seaweedfs_may_refuse_a_create_where_an_emptied_directory_was() -> None:
    command = {"command": "create", "path": "/memories/a01/old", "file_text": "x\n"}
    assert len(soak.Model.answers(command, STATE, set())) == 1
    answers = soak.Model.answers(command, STATE, {"/memories/a01/old"})
    assert [answer.answer for answer in answers] == [
        "File created successfully at: /memories/a01/old",
        "Error: File /memories/a01/old already exists",
    ]
    assert answers[1].state == STATE
    rename = {"command": "rename", "old_path": "/memories/a01/notes.md", "new_path": "/memories/a01/old"}
    assert [answer.answer for answer in soak.Model.answers(rename, STATE, {"/memories/a01/old"})][1:] == [
        "Error: The destination /memories/a01/old already exists"
    ]
    copied = soak.Model.answers(rename, STATE, {"/memories/a01/old"}, storage_format=2)  # a refused copy
    assert [answer.answer for answer in copied][1:] == [
        "Error: /memories/a01/notes.md changed while it was being renamed; it was left where it is and "
        "nothing was renamed."
    ]


def test_seaweedfs_may_refuse_the_files_of_a_directory_rename_that_land_where_emptied_directories_were() -> (
    None
):
    """Found by the format-1 soak (seed 24, phase 1): s3memory moves the other files, leaves these
    at their old paths and names them (nothing is lost); the retry of a rename that died answers so too."""
    rename = {"command": "rename", "old_path": "/memories/a01/d", "new_path": "/memories/a01/b"}
    assert len(soak.Model.answers(rename, STATE, {"/memories/a01/x.md"})) == 1
    answers = soak.Model.answers(rename, STATE, {"/memories/a01/b/x.md"})
    assert [answer.answer for answer in answers][1:] == [
        "Error: Renamed /memories/a01/d to /memories/a01/b, except 1 file(s) that changed during the rename "
        "and were left at their old paths: /memories/a01/d/x.md"
    ]
    assert answers[1].state == {
        "/memories/a01/notes.md": "alpha beta\ngamma\n",
        "/memories/a01/d/x.md": "kiwi\n",
        "/memories/a01/b/e/deep/y.md": "lime\n",
    }


def test_root_rows_are_the_agents_first_level() -> None:
    assert soak.root_rows_of("/memories/a01", STATE) == [
        "4.0K\t/memories/a01/",
        "4.0K\t/memories/a01/d/",
        "17B\t/memories/a01/notes.md",
    ]
    assert soak.root_rows_of("/memories/a02", STATE) == []


class Listing:
    """An admin client whose bucket holds ``keys`` (what ``SoakContext.admin_keys`` asks of it)."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys

    def get_paginator(self, _operation: str) -> Listing:
        return self

    def paginate(self, Bucket: str, Prefix: str) -> list[dict[str, Any]]:
        return [{"Contents": [{"Key": key} for key in self.keys if key.startswith(Prefix)]}]


@both_formats
def test_the_bucket_check_takes_only_the_store_key_and_mark_outside_namespaces(
    storage_format: Literal[1, 2],
) -> None:
    config = soak.SoakConfig(seed=SEED, phases=(1,), storage_format=storage_format)
    namespace = "users/p1-u0/" if storage_format == 1 else "users/mfrggzdf/"
    keys = [
        "users/s3memory.storage.bucket-key",
        "users/s3memory.migrated",
        f"{namespace}memories/{'a00' if storage_format == 1 else 'nbswy3dp'}/x",
        f"{namespace}internal/keys/v1",
    ]
    if storage_format == 2:
        keys.append(f"{namespace}memories/a00/notes.md")  # a plain name
    context = soak.SoakContext("http://unused", "bucket", Listing(keys), config, soak.SoakReport(config))
    context.layouts["p1-u0"] = KeyLayout(namespace)
    soak.check_bucket(context, 1)
    found = {violation.kind: violation.detail for violation in context.report.violations}
    if storage_format == 1:  # format 1 has no store key or mark
        assert found == {
            "stray-object": "2 object(s) in no user's namespace: "
            "users/s3memory.storage.bucket-key, users/s3memory.migrated"
        }
    else:
        assert found == {
            "plain-name": f"1 key(s) with a plain name in them: {namespace}memories/a00/notes.md"
        }


# -- the checker, on SeaweedFS -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.seaweedfs
@both_formats
def test_without_faults_the_model_and_s3memory_agree(
    seaweedfs: SeaweedServer, endpoint: str, storage_format: int
) -> None:
    """Every answer of 8 agents on two users, with no fault: a disagreement is the model's fault."""
    report = run(
        seaweedfs,
        endpoint,
        duration=6,
        phases=(8,),
        agents_per_user=4,
        fault_rate=0.0,
        storage_format=storage_format,
    )
    assert report.phases[0].commands > 50
    assert report.violations == []


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.seaweedfs
@both_formats
def test_the_checker_reports_a_lost_write_and_stray_objects(
    seaweedfs: SeaweedServer, endpoint: str, monkeypatch: pytest.MonkeyPatch, storage_format: int
) -> None:
    """Behind the agents' backs, one file is deleted, and one job record and one object in no user's
    namespace are planted before the check (their keys from the user's layout, on either format)."""
    original = soak.check_phase

    def sabotaged(context: soak.SoakContext, phase: int, agents: Any) -> None:
        (agent,) = agents
        if not agent.state:  # the random walk may end with nothing stored: store one file to lose
            kept = f"{agent.root}/kept.md"
            assert (
                soak.Process(context, agent.user)
                .run({"command": "create", "path": kept, "file_text": "k\n"})
                .ok
            )
            agent.state = {kept: "k\n"}
        victim = sorted(agent.state)[0]
        admin, layout = context.admin, context.layout(agent.user)
        admin.delete_object(Bucket=context.bucket, Key=layout.file_key(memory_path(victim)))
        admin.put_object(Bucket=context.bucket, Key=layout.key_of_internal("jobs/planted"), Body=b"junk")
        admin.put_object(Bucket=context.bucket, Key=f"{soak.PREFIX}planted", Body=b"junk")  # no user's
        original(context, phase, agents)

    monkeypatch.setattr(soak, "check_phase", sabotaged)
    report = run(seaweedfs, endpoint, duration=3, phases=(1,), fault_rate=0.0, storage_format=storage_format)
    kinds = sorted({violation.kind for violation in report.violations})
    assert kinds == ["lost-or-changed", "stray-internal", "stray-object"]  # a record is set aside, not gone
    assert any("missing /memories/a00/" in violation.detail for violation in report.violations)
    assert [violation.detail for violation in report.violations if violation.kind == "stray-object"] == [
        f"1 object(s) in no user's namespace: {soak.PREFIX}planted"
    ]


@pytest.mark.slow
@pytest.mark.seaweedfs
def test_a_dead_process_sends_nothing_more(seaweedfs: SeaweedServer, endpoint: str) -> None:
    config = soak.SoakConfig(seed=SEED)
    context = soak.SoakContext(endpoint, SOAK_BUCKET, seaweedfs.admin, config, soak.SoakReport(config))
    create = {"command": "create", "path": "/memories/a00/x.md", "file_text": "x\n"}
    assert soak.Process(context, "p1-u1").run(create).ok  # the store's first use: its server checked
    process = soak.Process(context, "p1-u0")
    outcome = process.run(create, [soak.Rule("PutObject", Fault.CRASH_AFTER, 1, 1)])
    assert outcome.crashed and process.dead and outcome.injected == [Fault.CRASH_AFTER]
    sent: list[str] = []
    process.client.meta.events.register(
        "request-created", lambda **event: sent.append(event["operation_name"])
    )
    assert process.run({"command": "view", "path": "/memories"}).crashed
    assert sent == []
    found = soak.Process(context, "p1-u0").run({"command": "view", "path": "/memories/a00/x.md"})
    assert found.ok  # CRASH_AFTER: the write landed before the process died


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.seaweedfs
@both_formats
def test_a_short_soak_under_faults_finds_no_violation(
    seaweedfs: SeaweedServer, endpoint: str, storage_format: int
) -> None:
    """Format 2 runs half as long, to keep the suite short: its longer runs are made by hand
    (``python -m tests.soak --storage-format 2``)."""
    duration = SHORT_SOAK_SECONDS[storage_format]
    report = run(seaweedfs, endpoint, duration=duration, phases=(1, 8, 32), storage_format=storage_format)
    assert [phase.agents for phase in report.phases] == [1, 8, 32]
    assert sum(report.tally.faults.values()) > 0
    assert report.violations == [], report.render()


# -- what the soak found in the core, each alone (SeaweedFS) -------------------------------------------
#
# Each test asserts what the contract or the docs promise; each failed on the core the soak first
# ran against.


class Users:
    """Memories on the soak's bucket, one fresh process (client) each, optionally with faults."""

    def __init__(self, endpoint: str, admin: Any) -> None:
        self.endpoint = endpoint
        self.admin = admin

    def memory(self, user: str, plan: FaultPlan | None = None) -> tuple[S3Memory, Any]:
        client = make_s3_client(endpoint_url=self.endpoint, region_name=REGION)
        if plan is not None:
            plan.attach(client)
        return S3Memory(
            Bucket(client, SOAK_BUCKET), user, LocalKeyProvider(soak.MASTER_KEY), storage_format=1
        ), client

    def run(self, user: str, command: dict[str, Any], plan: FaultPlan | None = None) -> str:
        try:
            return self.memory(user, plan)[0].run(command)
        except SimulatedCrash:
            return "(the process died)"
        except CommandError as error:
            return error.message

    def files(self, user: str) -> list[str]:
        """The memory paths stored for ``user``, listed directly."""
        prefix = f"users/{user}/memories/"
        found = self.admin.list_objects_v2(Bucket=SOAK_BUCKET, Prefix=prefix).get("Contents", [])
        return sorted("/memories/" + item["Key"][len(prefix) :] for item in found)


@pytest.fixture
def users(seaweedfs: SeaweedServer, endpoint: str) -> Iterator[Users]:
    with instant_retries():
        yield Users(endpoint, seaweedfs.admin)


ROOT_VIEW = {"command": "view", "path": "/memories"}


def create(path: str) -> dict[str, Any]:
    return {"command": "create", "path": path, "file_text": "hello\n"}


def died_after_recording(users: Users, user: str, old: str, new: str, copies: int = 0) -> None:
    """A directory rename whose process dies after its record and ``copies`` copies are written."""
    plan = FaultPlan().fail("PutObject", Fault.CRASH, call=2 + copies)
    assert (
        users.run(user, {"command": "rename", "old_path": old, "new_path": new}, plan) == "(the process died)"
    )


@pytest.mark.slow
@pytest.mark.seaweedfs
def test_two_processes_finishing_one_job_both_succeed(users: Users) -> None:
    users.run("f-two", create("/memories/d/a.md"))
    died_after_recording(users, "f-two", "/memories/d", "/memories/e")
    slow, client = users.memory("f-two")
    reached, release = held(client, "DeleteObjects", "")
    answers: list[str] = []

    def finish() -> None:
        try:
            answers.append(slow.run(ROOT_VIEW))
        except CommandError as error:
            answers.append(error.message)

    thread = threading.Thread(target=finish)
    thread.start()
    assert reached.wait(60)  # it has copied and is about to delete the sources
    assert users.run("f-two", ROOT_VIEW).startswith("Here're the files")  # another process finishes the job
    release.set()
    thread.join()
    assert answers[0].startswith("Here're the files"), answers[0]
    assert users.files("f-two") == ["/memories/e/a.md"]


@pytest.mark.slow
@pytest.mark.seaweedfs
@pytest.mark.parametrize("delete_retried", [False, True], ids=["delete-answered", "delete-retried"])
def test_a_slow_finisher_never_brings_back_a_file_deleted_after_its_job_ended(
    users: Users, delete_retried: bool
) -> None:
    """delete-retried: the slow finisher's ``DeleteObjects`` is answered 500 once and retried, and
    the retry finds the source gone, as its own first attempt could have left it. The job's record,
    removed by the process that ended the job, tells that the copy came late (J11)."""
    user = f"f-stale-{delete_retried}"
    users.run(user, create("/memories/d/f.md"))
    died_after_recording(users, user, "/memories/d", "/memories/e")
    plan = FaultPlan().fail("DeleteObjects", Fault.INTERNAL_ERROR, call=1) if delete_retried else None
    stale, client = users.memory(user, plan)
    reached, release = held(client, "PutObject", "/memories/e/f.md")
    thread = threading.Thread(target=lambda: stale.run(ROOT_VIEW))
    thread.start()
    assert reached.wait(60)  # it has read d/f.md and is about to copy it
    assert users.run(user, ROOT_VIEW).startswith("Here're the files")  # another process finishes the job
    assert users.run(user, {"command": "delete", "path": "/memories/e/f.md"}) == (
        "Successfully deleted /memories/e/f.md"
    )
    release.set()
    thread.join()
    assert users.files(user) == []


@pytest.mark.slow
@pytest.mark.seaweedfs
def test_view_of_the_root_never_shows_a_half_done_rename(users: Users) -> None:
    users.run("f-half", create("/memories/d/a.md"))
    users.run("f-half", create("/memories/d/b.md"))
    died_after_recording(users, "f-half", "/memories/d", "/memories/e", copies=1)
    slow, client = users.memory("f-half")
    reached, release = held(client, "GetObject", "/internal/jobs/")
    answers: list[str] = []
    thread = threading.Thread(target=lambda: answers.append(slow.run(ROOT_VIEW)))
    thread.start()
    assert reached.wait(60)  # it has listed the namespace, record and half-moved files
    users.run("f-half", ROOT_VIEW)  # another process finishes the job
    release.set()
    thread.join()
    rows = answers[0].split("\n")[1:]
    assert ("4.0K\t/memories/d/" in rows) != ("4.0K\t/memories/e/" in rows), rows


@pytest.mark.slow
@pytest.mark.seaweedfs
def test_a_file_rename_that_died_between_copy_and_delete_is_finished_by_its_retry(users: Users) -> None:
    """A single-file rename has no job record (`docs/storage.md`): a process dying between its copy and its
    delete leaves the file at both paths, and the retry of the rename converges."""
    users.run("f-both", create("/memories/a.md"))
    plan = FaultPlan().fail("DeleteObject", Fault.CRASH, call=1)
    rename = {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}
    assert users.run("f-both", rename, plan) == "(the process died)"
    assert users.files("f-both") == ["/memories/a.md", "/memories/b.md"]
    assert users.run("f-both", rename) == "Successfully renamed /memories/a.md to /memories/b.md"
    assert users.files("f-both") == ["/memories/b.md"]


@pytest.mark.slow
@pytest.mark.seaweedfs
@pytest.mark.parametrize("fault", [Fault.DROP_AFTER, Fault.CRASH_AFTER])
def test_a_refused_create_leaves_no_file_below_a_file_but_a_dead_ones(users: Users, fault: Fault) -> None:
    """A write whose answer was lost is looked for and withdrawn; one whose process died before it
    could withdraw stays (the retry, refused the same way, cannot tell it from a file another create
    wrote and was answered for) until it is deleted."""
    user = f"f-below-{fault.value}"
    users.run(user, create("/memories/f.md"))
    plan = FaultPlan().fail("PutObject", fault, call=1, attempts=ALL if fault is Fault.DROP_AFTER else 1)
    refusal = "Error: Cannot create /memories/f.md/x.md: /memories/f.md is a file, not a directory."
    answer = users.run(user, create("/memories/f.md/x.md"), plan)
    if fault is Fault.DROP_AFTER:
        assert answer == refusal
    else:
        assert answer == "(the process died)"
        assert users.files(user) == ["/memories/f.md", "/memories/f.md/x.md"]
        assert users.run(user, create("/memories/f.md/x.md")) == refusal
        assert users.files(user) == ["/memories/f.md", "/memories/f.md/x.md"]
        delete = {"command": "delete", "path": "/memories/f.md/x.md"}
        assert users.run(user, delete) == "Successfully deleted /memories/f.md/x.md"
    assert users.files(user) == ["/memories/f.md"]


@pytest.mark.slow
@pytest.mark.seaweedfs
def test_a_file_rename_whose_delete_answer_was_lost_succeeds(users: Users) -> None:
    users.run("f-lost", create("/memories/a.md"))
    plan = FaultPlan().fail("DeleteObject", Fault.DROP_AFTER, call=1)
    rename = {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}
    assert users.files("f-lost") == ["/memories/a.md"]
    assert users.run("f-lost", rename, plan) == "Successfully renamed /memories/a.md to /memories/b.md"


@pytest.mark.slow
@pytest.mark.seaweedfs
def test_a_create_whose_answer_was_lost_onto_a_larger_file_says_it_exists(users: Users) -> None:
    users.run(
        "f-larger", {"command": "create", "path": "/memories/a.md", "file_text": "a longer text stored\n"}
    )
    plan = FaultPlan().fail("PutObject", Fault.DROP_AFTER, call=1)
    assert (
        users.run("f-larger", create("/memories/a.md"), plan) == "Error: File /memories/a.md already exists"
    )
