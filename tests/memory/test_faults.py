"""Injected faults (dropped connections, 500, 503 SlowDown, stalls) at every phase of every command.

Each scenario asserts: the failed try answers a clear error (or survives through retries), no file
is lost or changed by a refused command, and one retry of the same command leaves a clean state.
Faults come from ``tests/faults.py``: a botocore hook (``FaultPlan``) inside the client, and an
HTTP proxy (``FaultProxy``) in front of a real-HTTP S3 endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from s3memory.clients import make_s3_client
from s3memory.core.paths import memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT, keys_of, prefix_of, rename_crash_point
from tests.support.bucket import BUCKET, MASTER_KEY, snapshot, stored_keys, temporary_bucket
from tests.support.faults import ALL, Fault, FaultPlan, FaultProxy, ProxyFault, SimulatedCrash
from tests.support.memories import seed

EVERY_PHASE = [pytest.mark.slow, pytest.mark.every_phase]
"""A fault at more phases of a rename than ``make test`` keeps (its record and its batched delete, dropped)."""
pytestmark = [pytest.mark.takes_format, pytest.mark.usefixtures("no_back_off")]

FILES = {f"/memories/project/part{index % 3}/note{index:02d}.md": f"note {index}\n" for index in range(12)}
MOVED = {path.replace("/memories/project", "/memories/archive"): text for path, text in FILES.items()}


def memory_with(plan: FaultPlan | None = None) -> S3Memory:
    """alice's memory; ``plan`` faults its requests from its first command (on format 2, building it
    reads the store key: that is before the plan, as building a format-1 memory sends nothing)."""
    client = make_s3_client(region_name="us-east-1")
    memory = S3Memory(
        Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=STORAGE_FORMAT
    )
    if plan is not None:
        plan.attach(client)
    return memory


def seeded(s3: Any, files: dict[str, str] = FILES) -> None:
    seed(memory_with(), files)


def text_at(path: str) -> str | None:
    found = memory_with().placed.files.read(memory_path(path))
    return None if found is None else found.text


def assert_files(expected: dict[str, str], s3: Any) -> None:
    memory = memory_with()
    assert stored_keys(s3, prefix_of(memory)) == keys_of(memory, expected)
    for path, text in expected.items():
        assert text_at(path) == text


def refused_cleanly(memory: S3Memory, command: dict[str, Any], s3: Any) -> str:
    before = snapshot(s3)
    with pytest.raises(CommandError) as caught:
        memory.run(command)
    assert caught.value.message.startswith("Error: S3 ")
    assert "try again" in caught.value.message
    assert snapshot(s3) == before
    return caught.value.message


@pytest.mark.parametrize("fault", [Fault.DROP, Fault.INTERNAL_ERROR, Fault.SLOW_DOWN])
def test_a_single_fault_on_any_request_is_survived_by_retries(s3: Any, fault: Fault) -> None:
    seeded(s3)
    plan = FaultPlan().fail("*", fault, attempts=1)
    memory = memory_with(plan)
    memory.run({"command": "view", "path": "/memories"})
    memory.run({"command": "create", "path": "/memories/new.txt", "file_text": "fresh\n"})
    memory.run(
        {"command": "str_replace", "path": "/memories/new.txt", "old_str": "fresh", "new_str": "edited"}
    )
    memory.run({"command": "rename", "old_path": "/memories/project", "new_path": "/memories/archive"})
    assert plan.count(fault) > 20
    assert_files({**MOVED, "/memories/new.txt": "edited\n"}, s3)


@pytest.mark.parametrize("fault", [Fault.DROP, Fault.INTERNAL_ERROR, Fault.SLOW_DOWN])
def test_create_and_edits_that_cannot_write_change_nothing(s3: Any, fault: Fault) -> None:
    seeded(s3)
    memory = memory_with(FaultPlan().fail("PutObject", fault, attempts=ALL))
    path = "/memories/project/part0/note00.md"
    refused_cleanly(memory, {"command": "create", "path": "/memories/new.txt", "file_text": "x"}, s3)
    refused_cleanly(
        memory, {"command": "str_replace", "path": path, "old_str": "note", "new_str": "memo"}, s3
    )
    refused_cleanly(memory, {"command": "insert", "path": path, "insert_line": 0, "insert_text": "top"}, s3)
    retry = memory_with()
    retry.run({"command": "str_replace", "path": path, "old_str": "note", "new_str": "memo"})
    assert text_at(path) == "memo 0\n"


def test_an_edit_whose_answer_was_lost_is_recognised_on_retry(s3: Any) -> None:
    seeded(s3)
    plan = FaultPlan().fail("PutObject", Fault.DROP_AFTER, call=1)
    memory = memory_with(plan)
    path = "/memories/project/part0/note00.md"
    answer = memory.run({"command": "str_replace", "path": path, "old_str": "note 0", "new_str": "memo 0"})
    assert answer.startswith("The memory file has been edited.")
    assert plan.count(Fault.DROP_AFTER) == 1
    assert text_at(path) == "memo 0\n"


def test_a_create_whose_answer_was_lost_is_recognised_on_retry(s3: Any) -> None:
    plan = FaultPlan().fail("PutObject", Fault.DROP_AFTER, call=1)
    memory = memory_with(plan)
    answer = memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "alpha\n"})
    assert answer == "File created successfully at: /memories/a.txt"
    assert plan.count(Fault.DROP_AFTER) == 1
    with pytest.raises(CommandError, match=r"^Error: File /memories/a.txt already exists$"):
        memory_with().run({"command": "create", "path": "/memories/a.txt", "file_text": "alpha\n"})


@pytest.mark.parametrize(
    ("operation", "call"),
    [
        pytest.param("ListObjectsV2", 2, marks=EVERY_PHASE),
        ("PutObject", 1),
        pytest.param("PutObject", 5, marks=EVERY_PHASE),
        pytest.param("GetObject", 3, marks=EVERY_PHASE),
        ("DeleteObjects", 1),
        pytest.param("DeleteObject", 1, marks=EVERY_PHASE),
    ],
)
@pytest.mark.parametrize("fault", [Fault.DROP, pytest.param(Fault.SLOW_DOWN, marks=EVERY_PHASE)])
def test_directory_rename_fails_loudly_then_converges(
    s3: Any, operation: str, call: int, fault: Fault
) -> None:
    seeded(s3)
    rename = {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/archive"}
    operation, call = rename_crash_point(operation, call)
    plan = FaultPlan().fail(operation, fault, call=call, attempts=ALL)
    with pytest.raises(CommandError) as caught:
        memory_with(plan).run(rename)
    assert caught.value.message.startswith(f"Error: S3 {operation} failed")
    assert plan.count(fault) == 5
    for path, text in FILES.items():
        assert text in (text_at(path), text_at(path.replace("/memories/project", "/memories/archive")))
    assert memory_with().run(rename) == "Successfully renamed /memories/project to /memories/archive"
    assert_files(MOVED, s3)
    assert stored_keys(s3, memory_with().placed.layout.key_of_internal("jobs/")) == []


@pytest.mark.parametrize(
    ("operation", "call"), [("ListObjectsV2", 2), ("PutObject", 1), ("DeleteObjects", 1)]
)
def test_directory_delete_fails_loudly_then_converges(s3: Any, operation: str, call: int) -> None:
    seeded(s3, {**FILES, "/memories/keep.md": "kept\n"})
    delete = {"command": "delete", "path": "/memories/project"}
    with pytest.raises(CommandError, match=f"^Error: S3 {operation} failed"):
        memory_with(FaultPlan().fail(operation, Fault.INTERNAL_ERROR, call=call, attempts=ALL)).run(delete)
    assert text_at("/memories/keep.md") == "kept\n"
    assert memory_with().run(delete) == "Successfully deleted /memories/project"
    assert_files({"/memories/keep.md": "kept\n"}, s3)


def test_a_partial_delete_objects_answer_fails_loudly(s3: Any) -> None:
    seeded(s3)
    client = make_s3_client(region_name="us-east-1")

    def partly(**kwargs: Any) -> dict[str, Any]:
        keys = [item["Key"] for item in kwargs["Delete"]["Objects"]]
        boto3.client("s3", region_name="us-east-1").delete_objects(
            Bucket=BUCKET, Delete={"Objects": [{"Key": key} for key in keys[1:]]}
        )
        return {
            "Errors": [
                {"Key": keys[0], "Code": "InternalError", "Message": "We encountered an internal error."}
            ]
        }

    client.delete_objects = partly  # type: ignore[method-assign]
    memory = S3Memory(
        Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=STORAGE_FORMAT
    )
    with pytest.raises(
        CommandError, match=r"^Error: S3 DeleteObjects could not delete 1 of 12 objects \(InternalError\)"
    ):
        memory.run({"command": "delete", "path": "/memories/project"})
    assert (
        memory_with().run({"command": "delete", "path": "/memories/project"})
        == "Successfully deleted /memories/project"
    )
    assert stored_keys(s3, prefix_of(memory)) == []


def test_a_create_whose_check_fails_withdraws_its_write(s3: Any) -> None:
    """The write goes out with the check of its place; when the check cannot answer, the write is removed."""
    seeded(s3)
    plan = FaultPlan().fail("ListObjectsV2", Fault.SLOW_DOWN, attempts=ALL)
    message = refused_cleanly(
        memory_with(plan), {"command": "create", "path": "/memories/project/new.md", "file_text": "x"}, s3
    )
    assert message.startswith("Error: S3 ListObjectsV2 failed (SlowDown)")
    first_attempts = [operation for operation, attempt in plan.sent if attempt == 1]
    assert first_attempts.count("PutObject") == 1 and first_attempts.count("DeleteObject") == 1
    create = {"command": "create", "path": "/memories/project/new.md", "file_text": "x\n"}
    assert memory_with().run(create) == "File created successfully at: /memories/project/new.md"


BELOW_A_FILE = "/memories/project/part0/note00.md/inner.md"


@pytest.mark.parametrize("fault", [Fault.SLOW_DOWN, Fault.DROP])
def test_a_refused_create_that_cannot_withdraw_its_write_says_what_to_delete(s3: Any, fault: Fault) -> None:
    seeded(s3)
    plan = FaultPlan().fail("DeleteObject", fault, attempts=ALL)
    with pytest.raises(CommandError) as caught:
        memory_with(plan).run({"command": "create", "path": BELOW_A_FILE, "file_text": "x"})
    assert caught.value.message == (
        f"Error: Cannot create {BELOW_A_FILE}: /memories/project/part0/note00.md is a file, not a directory. "
        f"The file written while this was checked could not be removed again; delete {BELOW_A_FILE}."
    )
    assert text_at(BELOW_A_FILE) == "x"  # every file stays readable, the stray one too
    assert (
        memory_with().run({"command": "delete", "path": BELOW_A_FILE})
        == f"Successfully deleted {BELOW_A_FILE}"
    )
    assert_files(FILES, s3)


def test_a_crash_between_a_refused_write_and_its_withdrawal_leaves_every_file_readable(s3: Any) -> None:
    seeded(s3)
    with pytest.raises(SimulatedCrash):
        memory_with(FaultPlan().fail("DeleteObject", Fault.CRASH)).run(
            {"command": "create", "path": BELOW_A_FILE, "file_text": "x"}
        )
    assert text_at(BELOW_A_FILE) == "x"
    for path, text in FILES.items():
        assert text_at(path) == text
    # the retry is refused the same way and leaves what is there: a file with the same text may be
    # another create's, answered for (docs/storage.md, "Creates at once"); a delete clears it
    with pytest.raises(CommandError, match=r"is a file, not a directory\.$"):
        memory_with().run({"command": "create", "path": BELOW_A_FILE, "file_text": "x"})
    assert text_at(BELOW_A_FILE) == "x"
    assert (
        memory_with().run({"command": "delete", "path": BELOW_A_FILE})
        == f"Successfully deleted {BELOW_A_FILE}"
    )
    assert_files(FILES, s3)


# -- through a fault-injecting proxy, over real HTTP ------------------------------------------------


@pytest.fixture
def proxy(moto_endpoint: str) -> Iterator[tuple[FaultProxy, Any]]:
    admin = make_s3_client(endpoint_url=moto_endpoint, region_name="us-east-1")
    with temporary_bucket(admin), FaultProxy(moto_endpoint) as fault_proxy:
        yield fault_proxy, admin


def proxied(fault_proxy: FaultProxy) -> S3Memory:
    client = make_s3_client(endpoint_url=fault_proxy.endpoint, region_name="us-east-1")
    return S3Memory(
        Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=STORAGE_FORMAT
    )


@pytest.mark.slow
@pytest.mark.every_phase
@pytest.mark.parametrize(
    ("fault", "operation"),
    [
        (ProxyFault.DROP_AFTER, "PutObject"),
        (ProxyFault.DROP_BEFORE, "DeleteObjects"),
        (ProxyFault.SLOW_DOWN, "GetObject"),
        (ProxyFault.INTERNAL_ERROR, "ListObjectsV2"),
        (ProxyFault.STALL, "PutObject"),
    ],
)
def test_proxy_faults_during_a_session_lose_nothing(
    proxy: tuple[FaultProxy, Any], fault: ProxyFault, operation: str
) -> None:
    fault_proxy, admin = proxy
    memory = proxied(fault_proxy)
    seed(memory, FILES)
    operation, _ = rename_crash_point(operation, 1)  # format 2 reads the sources by HEAD
    fault_proxy.add(fault, operation=operation, attempts=ALL, times=6, stall_seconds=0.2)
    rename = {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/archive"}
    failure = None
    try:
        memory.run(rename)
    except CommandError as error:
        failure = error.message
    assert fault_proxy.faults()
    fault_proxy.clear()
    if failure is not None:
        assert failure.startswith("Error: S3 ")
        assert (
            proxied(fault_proxy).run(rename) == "Successfully renamed /memories/project to /memories/archive"
        )
    reader = proxied(fault_proxy)
    assert stored_keys(admin, prefix_of(reader)) == keys_of(reader, MOVED)
    for path, text in MOVED.items():
        assert reader.run({"command": "view", "path": path}).endswith(text.rstrip("\n"))
