"""A process "crash" in the middle of a command: nothing is lost, and a retry converges.

A crash is modelled by a botocore hook that, from a chosen request on, raises an exception that is not
an ``Exception`` (so no handler in s3memory can swallow it) for every request of that client: the
process is dead. A new tool, with a new client, then retries.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest

from s3memory.core import files as files_module
from s3memory.core.paths import memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT, key_of, keys_of, plant, prefix_of, rename_crash_point
from tests.support.bucket import BUCKET, MASTER_KEY, stored_keys
from tests.support.faults import ProcessDeath, SimulatedCrash
from tests.support.memories import seed

EVERY_PHASE = [pytest.mark.slow, pytest.mark.every_phase]
"""A crash point of a protocol beyond those ``make test`` keeps (the record, a copy, the batched delete)."""
pytestmark = [pytest.mark.takes_format]


def crash_during(command: dict[str, Any], operation: str, ordinal: int) -> ProcessDeath:
    """Run ``command`` in a fresh process that dies at the ``ordinal``-th ``operation`` request."""
    doomed, client = fresh_memory()
    if command["command"] == "rename":
        operation, ordinal = rename_crash_point(operation, ordinal)
    death = ProcessDeath(client, operation, ordinal)
    with pytest.raises(SimulatedCrash):
        doomed.run(command)
    assert death.dead
    return death


def fresh_memory(user: str = "alice") -> tuple[S3Memory, Any]:
    client = boto3.client("s3", region_name="us-east-1")
    memory = S3Memory(
        Bucket(client, BUCKET), user, LocalKeyProvider(MASTER_KEY), storage_format=STORAGE_FORMAT
    )
    return memory, client


def content(memory: S3Memory, path: str) -> str | None:
    try:
        shown = memory.run({"command": "view", "path": path})
    except CommandError:
        return None
    return "\n".join(row.split("\t", 1)[1] for row in shown.splitlines()[1:]) + "\n"


PAGE = 20
"""The listing page of a test that fills one: small, so that filling it costs little."""


def tree(count: int, base: str = "/memories/project") -> dict[str, str]:
    return {
        f"{base}/part{index % 4}/note{index:04d}.md": f"note {index}\nline two of {index}\n"
        for index in range(count)
    }


def raw_text(memory: S3Memory, path: str) -> str | None:
    """The file's text as stored, read without finishing pending jobs."""
    found = memory.placed.files.read(memory_path(path))
    return None if found is None else found.text


def assert_each_readable_at_old_or_new(files: dict[str, str], old: str, new: str) -> None:
    reader, _ = fresh_memory()
    for path, text in files.items():
        moved = new + path[len(old) :]
        assert text in (raw_text(reader, path), raw_text(reader, moved)), path


def no_jobs_left(s3: Any) -> bool:
    return stored_keys(s3, fresh_memory()[0].placed.layout.key_of_internal("jobs/")) == []


@pytest.mark.parametrize(
    ("operation", "ordinal"),
    [
        pytest.param("ListObjectsV2", 2, marks=EVERY_PHASE),
        ("PutObject", 1),
        ("PutObject", 2),
        pytest.param("PutObject", 17, marks=EVERY_PHASE),
        pytest.param("GetObject", 9, marks=EVERY_PHASE),
        ("DeleteObjects", 1),
        pytest.param("DeleteObject", 1, marks=EVERY_PHASE),
    ],
)
def test_directory_rename_survives_a_crash_at_every_phase(s3: Any, operation: str, ordinal: int) -> None:
    files = tree(30)
    setup, _ = fresh_memory()
    seed(setup, files)
    rename = {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/archive/project"}
    crash_during(rename, operation, ordinal)
    assert_each_readable_at_old_or_new(files, "/memories/project", "/memories/archive/project")

    retry, _ = fresh_memory()
    assert retry.run(rename) == "Successfully renamed /memories/project to /memories/archive/project"
    assert stored_keys(s3, prefix_of(retry, "/memories/project")) == []
    for path, text in files.items():
        assert content(retry, path.replace("/memories/project", "/memories/archive/project")) == text
    assert no_jobs_left(s3)


@pytest.mark.parametrize(
    ("operation", "ordinal"), [("PutObject", 1), ("DeleteObjects", 1), ("DeleteObject", 1)]
)
def test_directory_delete_survives_a_crash(s3: Any, operation: str, ordinal: int) -> None:
    setup, _ = fresh_memory()
    seed(setup, {**tree(12), "/memories/keep.txt": "kept\n"})
    crash_during({"command": "delete", "path": "/memories/project"}, operation, ordinal)
    retry, _ = fresh_memory()
    assert (
        retry.run({"command": "delete", "path": "/memories/project"})
        == "Successfully deleted /memories/project"
    )
    assert stored_keys(s3, prefix_of(retry)) == [key_of(retry, "/memories/keep.txt")]
    assert no_jobs_left(s3)


def test_the_next_conversation_finishes_an_abandoned_rename(s3: Any) -> None:
    files = tree(20)
    setup, _ = fresh_memory()
    seed(setup, files)
    crash_during(
        {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/moved"}, "PutObject", 6
    )
    later, _ = fresh_memory()
    listing = later.run({"command": "view", "path": "/memories"})
    assert "/memories/project" not in listing and "4.0K\t/memories/moved/" in listing
    for path, text in files.items():
        assert content(later, path.replace("/memories/project", "/memories/moved")) == text
    assert no_jobs_left(s3)


def test_view_of_the_root_finds_a_job_record_past_its_first_page(s3: Any) -> None:
    """``view /memories`` reads pending jobs from its one listing of the namespace; when job records
    fill that page, it lists them all before it lists the memory (and sets aside the junk)."""
    files = tree(8)
    setup, _ = fresh_memory()
    seed(setup, files)
    crash_during(
        {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/moved"}, "PutObject", 3
    )
    junk = [
        setup.placed.layout.key_of_internal(f"jobs/!{index:04d}") for index in range(PAGE)
    ]  # before any record
    for key in junk:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"not a record")
    later, _ = fresh_memory()
    later.store.bucket.page_size = PAGE  # a page of 20 keys stands for S3's 1,000
    listing = later.run({"command": "view", "path": "/memories"})
    assert "/memories/project" not in listing and "4.0K\t/memories/moved/" in listing
    for path, text in files.items():
        assert content(later, path.replace("/memories/project", "/memories/moved")) == text
    assert (
        stored_keys(s3, later.placed.layout.key_of_internal("jobs/")) == []
    )  # junk can never run: set aside
    assert len(stored_keys(s3, later.placed.layout.key_of_internal("quarantine/"))) == len(junk)


def test_a_missing_path_is_looked_for_after_pending_jobs_finish(s3: Any) -> None:
    files = tree(16)
    setup, _ = fresh_memory()
    seed(setup, files)
    crash_during(
        {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/moved"}, "PutObject", 4
    )
    later, _ = fresh_memory()
    not_yet_copied = [
        path
        for path in files
        if raw_text(later, path.replace("/memories/project", "/memories/moved")) is None
    ]
    assert not_yet_copied
    target = not_yet_copied[0].replace("/memories/project", "/memories/moved")
    assert later.run({"command": "view", "path": target}).endswith(files[not_yet_copied[0]].splitlines()[-1])
    assert stored_keys(s3, prefix_of(later, "/memories/project")) == []
    assert no_jobs_left(s3)


def test_two_processes_finishing_one_job_converge(s3: Any) -> None:
    files = tree(40)
    setup, _ = fresh_memory()
    seed(setup, files)
    crash_during(
        {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/moved"}, "PutObject", 10
    )
    finishers = [fresh_memory()[0] for _ in range(2)]
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def finish(memory: S3Memory) -> None:
        barrier.wait()
        try:
            memory.run({"command": "view", "path": "/memories"})
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=finish, args=(memory,)) for memory in finishers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    reader, _ = fresh_memory()
    assert stored_keys(s3, prefix_of(reader, "/memories/project")) == []
    for path, text in files.items():
        assert content(reader, path.replace("/memories/project", "/memories/moved")) == text
    assert no_jobs_left(s3)


def test_a_rename_of_more_files_than_a_batch_survives_a_crash_between_batches(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of 10 deletes stands for S3's 1,000 (``store.DELETE_BATCH``): 105 files are 11 batches."""
    monkeypatch.setattr(files_module, "DELETE_BATCH", 10)
    files = tree(105)
    setup, _ = fresh_memory()
    for path, text in files.items():
        plant(s3, setup, path, text)
    crash_during(
        {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/big"},
        "DeleteObjects",
        2,
    )
    retry, _ = fresh_memory()
    assert retry.run(
        {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/big"}
    ).startswith("Successfully renamed")
    assert stored_keys(s3, prefix_of(retry, "/memories/project")) == []
    assert len(stored_keys(s3, prefix_of(retry, "/memories/big"))) == 105
    for path in list(files)[::15]:
        assert content(retry, path.replace("/memories/project", "/memories/big")) == files[path]
    assert no_jobs_left(s3)


def test_a_file_rename_survives_a_crash_between_copy_and_delete(s3: Any) -> None:
    setup, _ = fresh_memory()
    seed(setup, {"/memories/a.txt": "alpha\n"})
    rename = {"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories/b/a.txt"}
    crash_during(rename, "DeleteObject", 1)
    retry, _ = fresh_memory()
    assert retry.run(rename) == "Successfully renamed /memories/a.txt to /memories/b/a.txt"
    assert stored_keys(s3, prefix_of(retry)) == [key_of(retry, "/memories/b/a.txt")]
    assert content(retry, "/memories/b/a.txt") == "alpha\n"


def test_a_same_content_file_elsewhere_is_not_mistaken_for_a_finished_rename(s3: Any) -> None:
    memory, _ = fresh_memory()
    seed(memory, {"/memories/a.txt": "same\n", "/memories/b.txt": "same\n"})
    with pytest.raises(CommandError, match=r"^Error: The destination /memories/b.txt already exists$"):
        memory.run({"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories/b.txt"})
    assert stored_keys(s3, prefix_of(memory)) == keys_of(memory, ["/memories/a.txt", "/memories/b.txt"])
