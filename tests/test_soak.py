"""The soak run (``tests/soak.py``, ``make soak``) in short: its model, its checker, a seeded run.

The short run has 1, 8 and 32 agents on SeaweedFS with faults injected, for about 25 seconds of
commands; its report (commands, faults, throughput, violations) is printed. Throughput is never
asserted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from . import soak
from .support.backends import SeaweedServer
from .support.faults import Fault

SEED = 20250818
SOAK_BUCKET = "soak-test"


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


def test_root_rows_are_the_agents_first_level() -> None:
    assert soak.root_rows_of("/memories/a01", STATE) == [
        "4.0K\t/memories/a01/",
        "4.0K\t/memories/a01/d/",
        "17B\t/memories/a01/notes.md",
    ]
    assert soak.root_rows_of("/memories/a02", STATE) == []


# -- the checker, on SeaweedFS -------------------------------------------------------------------------


def test_without_faults_the_model_and_s3memory_agree(seaweedfs: SeaweedServer, endpoint: str) -> None:
    """Every answer of 8 agents on two users, with no fault: a disagreement is the model's fault."""
    report = run(seaweedfs, endpoint, duration=6, phases=(8,), agents_per_user=4, fault_rate=0.0)
    assert report.phases[0].commands > 50
    assert report.violations == []


def test_the_checker_reports_a_lost_write_and_a_stray_job_record(
    seaweedfs: SeaweedServer, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the agents' backs, one file is deleted and one job record is planted before the check."""
    original = soak.check_phase

    def sabotaged(context: soak.SoakContext, phase: int, agents: Any) -> None:
        agent = next(agent for agent in agents if agent.state)
        victim = sorted(agent.state)[0]
        admin = context.admin
        admin.delete_object(
            Bucket=context.bucket, Key=f"users/{agent.user}/memories/{victim[len('/memories/') :]}"
        )
        admin.put_object(Bucket=context.bucket, Key=f"users/{agent.user}/internal/jobs/planted", Body=b"junk")
        original(context, phase, agents)

    monkeypatch.setattr(soak, "check_phase", sabotaged)
    report = run(seaweedfs, endpoint, duration=3, phases=(1,), fault_rate=0.0)
    kinds = sorted({violation.kind for violation in report.violations})
    assert kinds == ["lost-or-changed", "stray-internal"]  # the record is left, or set aside but not gone
    assert any("missing /memories/a00/" in violation.detail for violation in report.violations)


def test_a_dead_process_sends_nothing_more(seaweedfs: SeaweedServer, endpoint: str) -> None:
    config = soak.SoakConfig(seed=SEED)
    context = soak.SoakContext(endpoint, SOAK_BUCKET, seaweedfs.admin, config, soak.SoakReport(config))
    process = soak.Process(context, "p1-u0")
    create = {"command": "create", "path": "/memories/a00/x.md", "file_text": "x\n"}
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


@pytest.mark.xfail(
    reason=(
        "finds real core bugs on the current main (see the report of issue 9's soak run): an edit "
        "acknowledged after a failed directory delete is deleted by its roll-forward; a file rename that "
        "dies between its copy and its delete leaves the file at both paths; a refused create that dies "
        "before withdrawing its write leaves a file below a file; a file rename whose DeleteObject answer "
        "is lost reports the moved file as left behind"
    ),
    strict=False,
)
def test_a_short_soak_under_faults_finds_no_violation(seaweedfs: SeaweedServer, endpoint: str) -> None:
    report = run(seaweedfs, endpoint, duration=24, phases=(1, 8, 32))
    assert [phase.agents for phase in report.phases] == [1, 8, 32]
    assert sum(report.tally.faults.values()) > 0
    assert report.violations == [], report.render()
