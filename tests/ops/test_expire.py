"""Idle expiry and the access record: a file idle past the limit goes, one read a moment ago stays,
with no extra request on the command; writes and commands during a run are respected; keys and
records stay; a record a bucket writer touched stops nothing but that user; a crashed run is
finished by a rerun; the scheduled Lambda handler (moto and SeaweedFS)."""

from __future__ import annotations

import json
import logging
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bench.metrics import RequestCounter
from s3memory.aws_lambda import expiry as expiry_function
from s3memory.aws_lambda import runtime as lambda_runtime
from s3memory.core.last_used import ACCESS_MAX_BYTES, RECORD_EVERY_SECONDS
from s3memory.crypto import KeyProvider, KMSKeyProvider, LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.ops.idle_expiry import (
    ACTIVE,
    BATCH,
    NOT_AUTHENTIC,
    PENDING_JOB,
    USED_MEANWHILE,
    ExpiryReport,
    UserExpiry,
    expire,
)
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from tests.support.access import AccessRecordWrites, is_access_record
from tests.support.bucket import (
    BUCKET,
    LOCAL_KEY_B64,
    MASTER_KEY,
    SEAWEEDFS_SLOW,
    snapshot,
    stored_keys,
)
from tests.support.faults import ALL, Fault, FaultPlan, ProcessDeath, SimulatedCrash
from tests.support.processes import run_python_json
from tests.support.records import invocation_records

BACKENDS = ("moto", SEAWEEDFS_SLOW)
DAY = 24 * 3600
IDLE_DAYS = 30
KEYS = LocalKeyProvider(MASTER_KEY)


@pytest.fixture
def start() -> float:
    """Now, before the test writes anything: S3 dates every object the test writes at or after it
    (to the second). Expiry runs with ``now`` days later, as if the files had lain that long."""
    return time.time() - 1


def memory_of(client: Any, user: str, clock: Callable[[], float], keys: KeyProvider = KEYS) -> S3Memory:
    """One process's memory of ``user`` whose clock says ``clock()``."""
    return S3Memory(Bucket(client, BUCKET), user, keys, clock=clock, storage_format=1)


def written(client: Any, user: str, files: dict[str, str], clock: Callable[[], float]) -> S3Memory:
    """``files`` created by one process of ``user`` (its access record written at ``clock()``)."""
    memory = memory_of(client, user, clock)
    for path, text in files.items():
        memory.run({"command": "create", "path": path, "file_text": text})
    return memory


def files_of(client: Any, user: str) -> list[str]:
    return stored_keys(client, f"users/{user}/memories/")


def one(report: ExpiryReport) -> UserExpiry:
    (user,) = report.users
    return user


class SlowRecord:
    """A slow S3 for the access record: each PutObject of one waits ``delay`` seconds in botocore's
    ``request-created`` hook, after setting ``writing``. A record written off the answer's path
    would still be on its way when the command answers."""

    def __init__(self, client: Any, delay: float = 0.3) -> None:
        self.writing = threading.Event()
        self._delay = delay
        client.meta.events.register("request-created.s3.PutObject", self._slow)

    def _slow(self, request: Any, **_: Any) -> None:
        if is_access_record(request):
            self.writing.set()
            time.sleep(self._delay)


class OnAccessRead:
    """Runs ``action`` once, when ``client`` sends its ``nth`` GET of an access record."""

    def __init__(self, client: Any, nth: int, action: Callable[[], object]) -> None:
        self.reads = 0
        self._nth = nth
        self._action = action
        client.meta.events.register("request-created.s3.GetObject", self._count)

    def _count(self, request: Any, **_: Any) -> None:
        if is_access_record(request):
            self.reads += 1
            if self.reads == self._nth:
                self._action()


# -- the access record and the Done-when ------------------------------------------------------


def test_expire_deletes_an_idle_file_and_keeps_one_read_a_moment_ago_with_no_extra_request_on_the_view(
    s3: Any, new_client: Callable[..., Any], start: float
) -> None:
    now = start + 31 * DAY
    written(s3, "alice", {"/memories/old.md": "idle\n"}, time.time)
    written(s3, "bob", {"/memories/notes.md": "metric units\n"}, time.time)
    reader = new_client()
    bob = memory_of(reader, "bob", lambda: now - 60)  # another process of bob's, a moment ago
    requests = RequestCounter(reader)
    answer = bob.run({"command": "view", "path": "/memories/notes.md"})
    assert "metric units" in answer
    assert requests.calls == {"GetObject": 1, "PutObject": 1}  # the view's GET, the record's one PUT
    requests.reset()
    assert "metric units" in bob.run({"command": "view", "path": "/memories/notes.md"})
    assert requests.calls == {"GetObject": 1}  # the next view: no extra request

    report = expire(
        Operations(Bucket(s3, BUCKET), KEYS, storage_format=1), IDLE_DAYS, ["alice", "bob"], now=now
    )

    assert files_of(s3, "alice") == [] and files_of(s3, "bob") == ["users/bob/memories/notes.md"]
    alice, bob_expiry = report.users
    assert (alice.expired, alice.skipped, bob_expiry.expired, bob_expiry.skipped) == (
        ["/memories/old.md"],
        None,
        [],
        ACTIVE,
    )
    assert bob_expiry.last_access == pytest.approx(now - 60, abs=0.001)
    assert stored_keys(s3, "users/alice/internal/") == ["users/alice/internal/access"]
    assert report.counts() == {
        "users": 2,
        "expired": 1,
        "kept_recent": 0,
        "kept_changed": 0,
        "active": 1,
        "pending_job": 0,
        "used_meanwhile": 0,
        "problems": 0,
    }


@pytest.mark.parametrize("storage_format", [1, 2])
def test_the_record_lands_before_the_answer_and_nothing_is_sent_once_mock_aws_has_ended(
    storage_format: int, start: float, caplog: pytest.LogCaptureFixture
) -> None:
    """As a user's own test does: one command inside ``mock_aws``, then the context ends. The record
    is stored when the command returns, however slow its PUT, and no request (so no warning) comes
    after the context. A request after it would fail in the hook, never reach a network."""
    caplog.set_level(logging.WARNING, logger="s3memory")
    ended = threading.Event()
    sent_after: list[str] = []

    def after_the_end(request: Any, **_: Any) -> None:
        if ended.is_set():
            sent_after.append(request.method)
            raise ConnectionRefusedError("a request after the caller's mock_aws ended")

    bucket = f"access-{uuid.uuid4().hex[:12]}"
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        client.meta.events.register("request-created.s3", after_the_end)
        SlowRecord(client)
        memory = S3Memory(Bucket(client, bucket), "kim", KEYS, storage_format=storage_format)
        answer = memory.run({"command": "view", "path": "/memories"})
        at_the_answer = client.list_objects_v2(Bucket=bucket, Prefix=memory.placed.access.key).get("KeyCount")
        recorded = memory.placed.access.read().at
        for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
            client.delete_object(Bucket=bucket, Key=item["Key"])
        client.delete_bucket(Bucket=bucket)
    ended.set()

    assert answer.startswith("Here're the files and directories up to 2 levels deep in /memories")
    assert at_the_answer == 1 and recorded is not None and recorded >= start
    assert (sent_after, caplog.messages) == ([], [])


def test_a_command_answered_while_the_record_is_being_written_waits_for_it(s3: Any) -> None:
    """Two commands of one memory at once: the second, finding the record's write under way, returns
    only once it has landed; the record is written once."""
    memory = memory_of(s3, "lou", time.time)
    slow = SlowRecord(s3)
    records = AccessRecordWrites(s3)
    view = {"command": "view", "path": "/memories"}
    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(memory.run(view)))
    first.start()
    assert slow.writing.wait(30)  # a deadlock guard, not a timing
    answers.append(memory.run(view))
    at_the_answer = stored_keys(s3, memory.placed.access.key)
    first.join(30)
    assert at_the_answer == [memory.placed.access.key]
    assert len(answers) == 2 and records.count == 1


def test_the_record_is_written_again_once_an_hour_and_after_a_failure(
    s3: Any, start: float, no_back_off: None
) -> None:
    clock = [start]
    memory = memory_of(s3, "ivy", lambda: clock[0])
    requests = RequestCounter(s3)
    view = {"command": "view", "path": "/memories"}
    for moment in (start, start + RECORD_EVERY_SECONDS - 1, start + RECORD_EVERY_SECONDS, start + 7199):
        clock[0] = moment
        memory.run(view)
    assert requests.calls == {"ListObjectsV2": 4, "PutObject": 2}  # at the start, an hour later
    assert memory.placed.access.read().at == pytest.approx(start + RECORD_EVERY_SECONDS, abs=0.001)

    failing_record().attach(s3)
    clock[0] = start + 3 * RECORD_EVERY_SECONDS
    assert memory.run(view).startswith("Here're the files")  # a record that fails fails no command
    assert memory.placed.access.read().at == pytest.approx(start + RECORD_EVERY_SECONDS, abs=0.001)
    memory.run(view)  # so the next command writes it
    assert memory.placed.access.read().at == pytest.approx(start + 3 * RECORD_EVERY_SECONDS, abs=0.001)


def failing_record() -> FaultPlan:
    """Every attempt of the first PutObject of an access record answers 503."""
    return FaultPlan().fail(
        "PutObject",
        Fault.SLOW_DOWN,
        call=1,
        attempts=ALL,
        where=is_access_record,
    )


def test_a_failed_record_is_logged_without_the_user_or_a_path(
    s3: Any, caplog: pytest.LogCaptureFixture, no_back_off: None
) -> None:
    memory = memory_of(failing_record().attach(s3), "secret-user", time.time)
    caplog.set_level(logging.WARNING, logger="s3memory")
    assert memory.run({"command": "view", "path": "/memories"}).startswith("Here're the files")
    assert [entry.getMessage() for entry in caplog.records] == [
        "s3memory: the access record could not be written (RequestFailed)"
    ]


def test_a_refused_command_writes_no_record(s3: Any) -> None:
    memory = memory_of(s3, "uri", time.time)
    requests = RequestCounter(s3)
    deep = "/memories/" + "d/" * 17 + "f.md"
    for command, refusal in [
        ({"command": "view", "path": "/memories/none.md"}, "does not exist"),
        ({"command": "create", "path": deep, "file_text": "x"}, "levels below /memories"),
    ]:
        with pytest.raises(CommandError, match=refusal):
            memory.run(command)
    assert requests.calls["PutObject"] == 0 and stored_keys(s3, "users/uri/") == []


def test_copies_acting_as_another_author_share_the_record(s3: Any, start: float) -> None:
    memory = memory_of(s3, "jo", lambda: start)
    twin = memory.acting_as("session-7")
    assert twin is not memory and twin.placed.access is memory.placed.access
    requests = RequestCounter(s3)
    memory.run({"command": "view", "path": "/memories"})
    twin.run({"command": "view", "path": "/memories"})
    assert requests.calls["PutObject"] == 1


# -- during a run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("versioning", [False, True], ids=["plain", "versioned"])
def test_a_file_written_while_expire_runs_is_kept(
    s3: Any, new_client: Callable[..., Any], start: float, versioning: bool, request: pytest.FixtureRequest
) -> None:
    bucket = request.getfixturevalue("versioned") if versioning else BUCKET
    # a process whose last record is a month old by the time expiry runs: its edit writes none
    writer = S3Memory(Bucket(new_client(), bucket), "carol", KEYS, clock=lambda: start, storage_format=1)
    for name in ("a", "b"):
        writer.run({"command": "create", "path": f"/memories/{name}.md", "file_text": f"{name}\n"})
    expirer = new_client()
    edit = {"command": "str_replace", "path": "/memories/b.md", "old_str": "b", "new_str": "edited"}
    OnAccessRead(expirer, 2, lambda: writer.run(edit))  # after the listing, before the deletes
    operations = Operations(Bucket(expirer, bucket), KEYS, storage_format=1)

    carol = one(expire(operations, IDLE_DAYS, ["carol"], now=start + 31 * DAY))

    assert (carol.expired, carol.changed, carol.skipped) == (["/memories/a.md"], ["/memories/b.md"], None)
    keys = [
        item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="users/carol/memories/")["Contents"]
    ]
    assert keys == ["users/carol/memories/b.md"]
    assert "edited" in writer.run({"command": "view", "path": "/memories/b.md"})
    if versioning:  # a delete marker: the expired file stays recoverable until the lifecycle rule
        markers = s3.list_object_versions(Bucket=bucket, Prefix="users/carol/memories/a.md")["DeleteMarkers"]
        assert [marker["Key"] for marker in markers] == ["users/carol/memories/a.md"]


def test_a_command_during_the_run_stops_the_users_expiry(
    s3: Any, new_client: Callable[..., Any], start: float
) -> None:
    now = start + 31 * DAY
    names = [f"/memories/f{index:02d}.md" for index in range(BATCH + 2)]
    written(s3, "dave", dict.fromkeys(names, "x\n"), lambda: start)
    expirer = new_client()
    came_back = memory_of(new_client(), "dave", lambda: now)
    commands: list[str] = []

    def dave_comes_back(**_: Any) -> None:
        if not commands:
            commands.append(came_back.run({"command": "view", "path": "/memories"}))

    expirer.meta.events.register("after-call.s3.DeleteObject", dave_comes_back)

    dave = one(
        expire(Operations(Bucket(expirer, BUCKET), KEYS, storage_format=1), IDLE_DAYS, ["dave"], now=now)
    )

    assert (dave.expired, dave.skipped) == (names[:BATCH], USED_MEANWHILE)  # the batch in flight went
    assert files_of(s3, "dave") == [f"users/dave{name}" for name in names[BATCH:]]


# -- what is never expired ------------------------------------------------------------------------


def test_keys_records_and_keys_of_no_memory_path_are_never_deleted(
    s3: Any, kms: Any, key_id: str, start: float
) -> None:
    keys = KMSKeyProvider(key_id, kms_client=kms)
    memory = memory_of(s3, "erin", lambda: start, keys)
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    planted = {
        "users/erin/internal/quarantine/0000000000000-" + "0" * 32: b"set aside",
        "users/erin/internal/jobs/0000000000001-" + "1" * 32: b"a record that can never run",
        "users/erin/internal/other": b"not ours",
        "users/erin/memories/notes/": b"",  # an S3 console folder marker
        "users/erin/elsewhere": b"outside memories/ and internal/",
    }
    for key, body in planted.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    before = sorted(key for key in stored_keys(s3, "users/erin/") if not key.endswith("/a.md"))

    erin = one(
        expire(
            Operations(Bucket(s3, BUCKET), keys, storage_format=1), IDLE_DAYS, ["erin"], now=start + 31 * DAY
        )
    )

    assert erin.expired == ["/memories/a.md"]
    assert sorted(stored_keys(s3, "users/erin/")) == before
    assert "users/erin/internal/keys/v1" in before and "users/erin/internal/access" in before


def test_a_user_with_a_pending_job_is_left_alone(
    s3: Any, new_client: Callable[..., Any], start: float
) -> None:
    written(s3, "finn", {"/memories/d/a.md": "a\n", "/memories/d/b.md": "b\n"}, lambda: start)
    dying = new_client()
    ProcessDeath(dying, "DeleteObjects", 1)  # the job's record is stored, its deletes never sent
    crashed = memory_of(dying, "finn", lambda: start)
    with pytest.raises(SimulatedCrash):
        crashed.run({"command": "delete", "path": "/memories/d"})
    before = snapshot(s3)

    finn = one(
        expire(
            Operations(Bucket(s3, BUCKET), KEYS, storage_format=1), IDLE_DAYS, ["finn"], now=start + 31 * DAY
        )
    )

    assert (finn.expired, finn.skipped) == ([], PENDING_JOB)
    assert snapshot(s3) == before


# -- the record as a bucket writer may leave it -----------------------------------------------------


def test_a_record_a_bucket_writer_touched_skips_that_user_and_is_reported(s3: Any, start: float) -> None:
    operations = Operations(Bucket(s3, BUCKET), KEYS, storage_format=1)
    for user in ("gus", "hal", "ida", "kim"):
        written(s3, user, {"/memories/a.md": "a\n"}, lambda: start)
    record = s3.get_object(Bucket=BUCKET, Key="users/gus/internal/access")["Body"].read()
    s3.put_object(Bucket=BUCKET, Key="users/gus/internal/access", Body=record[:-1] + bytes([record[-1] ^ 1]))
    s3.put_object(Bucket=BUCKET, Key="users/hal/internal/access", Body=record)  # gus's, copied
    s3.put_object(Bucket=BUCKET, Key="users/ida/internal/access", Body=b"\0" * (ACCESS_MAX_BYTES + 1))
    before = snapshot(s3)

    report = expire(operations, IDLE_DAYS, ["gus", "hal", "ida", "kim"], now=start + 31 * DAY)

    assert [(user.user_id, user.skipped, user.problem) for user in report.users] == [
        ("gus", NOT_AUTHENTIC, True),
        ("hal", NOT_AUTHENTIC, True),
        ("ida", NOT_AUTHENTIC, True),
        ("kim", None, False),
    ]
    assert report.counts()["problems"] == 3
    del before["users/kim/memories/a.md"]
    assert snapshot(s3) == before
    findings = [(finding.kind, finding.key) for finding in operations.verify("hal").findings]
    assert findings == [("unreadable access record", "users/hal/internal/access")]
    assert operations.verify("kim").findings == []


def test_without_an_access_record_the_files_write_times_decide(s3: Any, start: float) -> None:
    written(s3, "lea", {"/memories/a.md": "a\n"}, time.time)
    s3.delete_object(Bucket=BUCKET, Key="users/lea/internal/access")  # or a user from before records
    operations = Operations(Bucket(s3, BUCKET), KEYS, storage_format=1)

    early = one(expire(operations, 1, ["lea"], now=start + DAY / 2))
    late = one(expire(operations, 1, ["lea"], now=start + 3 * DAY))

    assert (early.last_access, early.recent, early.expired) == (None, 1, [])
    assert (late.recent, late.expired) == (0, ["/memories/a.md"])
    assert files_of(s3, "lea") == []


# -- bad input, dry runs, crashes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"idle_days": 0}, "idle_days must be a whole number of days from 1 to 3,650"),
        ({"idle_days": 3651}, "idle_days must be a whole number of days from 1 to 3,650"),
        ({"idle_days": 1.5}, "idle_days must be a whole number of days from 1 to 3,650"),
        ({"idle_days": "30"}, "idle_days must be a whole number of days from 1 to 3,650"),
        ({"idle_days": True}, "idle_days must be a whole number of days from 1 to 3,650"),
        ({"now": float("nan")}, "now must be a time in seconds since the epoch"),
        ({"now": "tomorrow"}, "now must be a time in seconds since the epoch"),
        (
            {"user_ids": ["mia", "bad/user"]},
            "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'",
        ),
        ({"user_ids": ["mia", ""]}, "user_id must be a non-empty string"),
    ],
)
def test_bad_input_is_refused_clearly_and_changes_nothing(
    s3: Any, start: float, arguments: dict[str, Any], message: str
) -> None:
    written(s3, "mia", {"/memories/a.md": "a\n"}, lambda: start)
    before = snapshot(s3)
    given: dict[str, Any] = {
        "idle_days": IDLE_DAYS,
        "user_ids": ["mia"],
        "now": start + 31 * DAY,
        **arguments,
    }
    with pytest.raises(ValueError) as refused:
        expire(
            Operations(Bucket(s3, BUCKET), KEYS, storage_format=1),
            given.pop("idle_days"),
            given.pop("user_ids"),
            **given,
        )
    assert str(refused.value) == message
    assert snapshot(s3) == before


def test_a_dry_run_reports_what_would_go_and_changes_nothing(s3: Any, start: float) -> None:
    written(s3, "ned", {"/memories/a.md": "a\n", "/memories/d/b.md": "b\n"}, lambda: start)
    before = snapshot(s3)
    requests = RequestCounter(s3)

    report = expire(
        Operations(Bucket(s3, BUCKET), KEYS, storage_format=1),
        IDLE_DAYS,
        ["ned"],
        now=start + 31 * DAY,
        dry_run=True,
    )

    assert (report.dry_run, one(report).expired) == (True, ["/memories/a.md", "/memories/d/b.md"])
    assert snapshot(s3) == before
    assert requests.calls["DeleteObject"] == 0


def test_an_expiry_that_dies_half_way_is_finished_by_running_it_again(
    s3: Any, new_client: Callable[..., Any], start: float
) -> None:
    names = [f"/memories/f{index}.md" for index in range(5)]
    written(s3, "oli", dict.fromkeys(names, "x\n"), lambda: start)
    dying = new_client()
    ProcessDeath(dying, "DeleteObject", 3)  # two deletes went out; the process died at the third
    now = start + 31 * DAY
    with pytest.raises(SimulatedCrash):
        expire(Operations(Bucket(dying, BUCKET), KEYS, storage_format=1), IDLE_DAYS, ["oli"], now=now)
    assert len(files_of(s3, "oli")) == 3

    rerun = one(expire(Operations(Bucket(s3, BUCKET), KEYS, storage_format=1), IDLE_DAYS, ["oli"], now=now))

    assert len(rerun.expired) == 3 and rerun.changed == [] and files_of(s3, "oli") == []


# -- the scheduled function -----------------------------------------------------------------------


class FakeContext:
    """A Lambda context whose remaining time is ``plenty`` for the first ``calls`` asks, then short."""

    aws_request_id = "req-expiry"

    def __init__(self, calls: int) -> None:
        self.asked = 0
        self._calls = calls

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        return 600_000 if self.asked <= self._calls else 1_000


@pytest.fixture
def function_env(s3: Any, backend: str) -> Iterator[dict[str, str]]:
    """The expiry function's settings for this test's bucket; the container's runtime reset around."""
    environ = {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_EXPIRE_IDLE_DAYS": "30",
    }
    if backend == "seaweedfs":
        environ["S3MEMORY_ENDPOINT_URL"] = s3.meta.endpoint_url
    lambda_runtime.reset()
    yield environ
    lambda_runtime.reset()


def test_the_function_expires_idle_users_writes_nothing_and_records_counts_only(
    s3: Any, function_env: dict[str, str], start: float, caplog: pytest.LogCaptureFixture
) -> None:
    written(s3, "pat", {"/memories/secret-plan.md": "a\n"}, lambda: start)
    written(s3, "quin", {"/memories/b.md": "b\n"}, lambda: start + 31 * DAY - 60)
    requests = RequestCounter(lambda_runtime.get_runtime(function_env).s3_client)
    caplog.set_level(logging.INFO, logger="s3memory")

    answer = expiry_function.handle({}, FakeContext(calls=1_000), function_env, lambda: start + 31 * DAY)

    assert answer == {
        "outcome": "ok",
        "dry_run": False,
        "users": 2,
        "expired": 1,
        "kept_recent": 0,
        "kept_changed": 0,
        "active": 1,
        "pending_job": 0,
        "used_meanwhile": 0,
        "problems": 0,
    }
    assert files_of(s3, "pat") == [] and files_of(s3, "quin") == ["users/quin/memories/b.md"]
    assert requests.calls["PutObject"] == requests.calls["CopyObject"] == 0
    (line,) = invocation_records(caplog, "expiry")
    assert (line["command"], line["outcome"], line["expired"], line["users"]) == ("expire", "ok", 1, 2)
    assert line["s3_requests"] == requests.total
    text = json.dumps(line)
    assert "pat" not in text and "quin" not in text and "/memories" not in text and "secret" not in text


def test_the_function_stops_before_the_deadline_and_a_later_run_goes_on(
    s3: Any, function_env: dict[str, str], start: float
) -> None:
    for user in ("rae", "sam"):
        written(s3, user, {"/memories/a.md": "a\n"}, lambda: start)

    def month_later() -> float:
        return start + 31 * DAY

    first = expiry_function.handle({}, FakeContext(calls=2), function_env, month_later)  # one user, one batch

    assert (first["outcome"], first["users"], first["expired"]) == ("incomplete", 1, 1)
    assert sorted(len(files_of(s3, user)) for user in ("rae", "sam")) == [0, 1]
    second = expiry_function.handle({}, FakeContext(calls=1_000), function_env, month_later)
    assert (second["outcome"], second["users"], second["expired"]) == ("ok", 2, 1)
    assert files_of(s3, "rae") == files_of(s3, "sam") == []


def test_the_function_dry_run_changes_nothing(s3: Any, function_env: dict[str, str], start: float) -> None:
    written(s3, "tia", {"/memories/a.md": "a\n"}, lambda: start)
    before = snapshot(s3)

    answer = expiry_function.handle({"dry_run": True}, None, function_env, lambda: start + 31 * DAY)

    assert (answer["outcome"], answer["dry_run"], answer["expired"]) == ("ok", True, 1)
    assert snapshot(s3) == before
    refused = expiry_function.handle({"dry_run": "yes"}, None, function_env)
    assert refused == {
        "outcome": "error",
        "error": "Error: `dry_run` must be true or false; nothing was deleted.",
    }
    assert snapshot(s3) == before


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"S3MEMORY_EXPIRE_IDLE_DAYS": None},
            "S3MEMORY_EXPIRE_IDLE_DAYS is required: the days without use after which a user's memory goes",
        ),
        (
            {"S3MEMORY_EXPIRE_IDLE_DAYS": "0"},
            "S3MEMORY_EXPIRE_IDLE_DAYS must be a whole number from 1 to 3,650",
        ),
        (
            {"S3MEMORY_EXPIRE_IDLE_DAYS": "90d"},
            "S3MEMORY_EXPIRE_IDLE_DAYS must be a whole number from 1 to 3,650",
        ),
        (
            {"S3MEMORY_EXPIRE_IDLE_DAYS": "3651"},
            "S3MEMORY_EXPIRE_IDLE_DAYS must be a whole number from 1 to 3,650",
        ),
        ({"S3MEMORY_BUCKET": None}, "S3MEMORY_BUCKET is required: the S3 bucket that holds the memory"),
    ],
)
def test_the_function_refuses_bad_settings_by_name_and_changes_nothing(
    s3: Any,
    function_env: dict[str, str],
    start: float,
    caplog: pytest.LogCaptureFixture,
    changes: dict[str, str | None],
    message: str,
) -> None:
    written(s3, "uma", {"/memories/a.md": "a\n"}, lambda: start)
    before = snapshot(s3)
    environ = {name: value for name, value in {**function_env, **changes}.items() if value is not None}
    caplog.set_level(logging.INFO, logger="s3memory")

    answer = expiry_function.handle({}, None, environ)

    assert answer == {"outcome": "error", "error": f"Error: s3memory's expiry is misconfigured: {message}."}
    assert snapshot(s3) == before
    (entry,) = [entry for entry in caplog.records if entry.getMessage() == "s3memory invocation"]
    assert (entry.levelno, getattr(entry, "error_type", None)) == (logging.ERROR, "configuration")


@pytest.mark.slow
@pytest.mark.processes
def test_the_function_does_not_import_anthropic() -> None:
    script = textwrap.dedent(
        f"""
        import json, os, sys, time
        os.environ.update(
            AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
            S3MEMORY_BUCKET={BUCKET!r}, S3MEMORY_LOCAL_KEY={LOCAL_KEY_B64!r}, S3MEMORY_EXPIRE_IDLE_DAYS="1",
        )
        from s3memory.aws_lambda.expiry import handler
        from moto import mock_aws
        import boto3
        with mock_aws():
            boto3.client("s3", region_name="us-east-1").create_bucket(Bucket={BUCKET!r})
            answer = handler({{}}, None)
        print(json.dumps({{"answer": answer, "anthropic": "anthropic" in sys.modules}}))
        """
    )
    outcome = run_python_json(script)
    assert outcome == {
        "answer": {
            "outcome": "ok",
            "dry_run": False,
            "users": 0,
            "expired": 0,
            "kept_recent": 0,
            "kept_changed": 0,
            "active": 0,
            "pending_job": 0,
            "used_meanwhile": 0,
            "problems": 0,
        },
        "anthropic": False,
    }
