"""Sync rounds against a memory (``sync/round.py``, ``Operations.sync``): two folders standing for two
machines, synced in turns, converge byte for byte; an edit, a conflict and a deletion reach the other
side; the guard holds; a folder of another memory and a folder that is no memory are refused; a link
is never followed; a round with no change lists once and reads nothing (format 1 and 2; moto, and
SeaweedFS, which lists empty folders, in ``make test-all``)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench.metrics import RequestCounter
from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.ops.versions import MemoryVersions
from s3memory.storage.bucket import Bucket
from s3memory.sync.folder import KEPT_FOR_SYNC, SYNC_TEMPORARY_NAME, FolderRefused
from s3memory.sync.plan import GUARD_FILES, NOT_PUSHED
from s3memory.sync.report import SyncReport
from tests.conftest import STORAGE_FORMAT, rename_crash_point
from tests.ops.test_progress import Recorded
from tests.support import synced
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW
from tests.support.faults import ProcessDeath, SimulatedCrash
from tests.support.synced import STATE, settled, tree, write

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)

USER = "alice"


def make_operations(s3: Any, bucket: str = BUCKET, page_size: int = 1000) -> Operations:
    return synced.make_operations(s3, STORAGE_FORMAT, bucket, page_size)


@pytest.fixture
def operations(s3: Any, versioned: str) -> Operations:
    return make_operations(s3, versioned)


def sync(operations: Operations, directory: Path, machine: str, **options: Any) -> SyncReport:
    return operations.sync(USER, directory, machine=machine, **options)


def memory(operations: Operations) -> dict[str, bytes]:
    return synced.memory(operations, USER)


def converged(operations: Operations, *folders: Path) -> dict[str, bytes]:
    return synced.converged(operations, USER, *folders)


def started(operations: Operations, laptop: Path, desktop: Path, **files: str) -> None:
    """``files`` (name: text) made on the laptop, then synced to the memory and the desktop."""
    for name, text in files.items():
        write(laptop, name, text)
    sync(operations, laptop, "laptop")
    sync(operations, desktop, "desktop")


@pytest.fixture
def laptop(tmp_path: Path) -> Path:
    return tmp_path / "laptop"


@pytest.fixture
def desktop(tmp_path: Path) -> Path:
    return tmp_path / "desktop"


def test_two_folders_synced_in_turns_converge_byte_for_byte(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    files = {
        "MEMORY.md": "# Memory\n- [notes](notes.md)\n",
        "notes.md": "ünïcödé ✓\n",
        "projects/acme/todo.md": "",
        "a/b/c/d.txt": "deep\r\nline",
    }
    for path, text in files.items():
        write(laptop, path, text)
    first = sync(operations, laptop, "laptop")
    assert first.adopted and sorted(first.pushed) == sorted(f"/memories/{path}" for path in files)
    second = sync(operations, desktop, "desktop")
    assert second.adopted and second.pulled == sorted(f"/memories/{path}" for path in files)
    held = converged(operations, laptop, desktop)
    assert held == {f"/memories/{path}": text.encode("utf-8") for path, text in files.items()}
    for folder in (laptop, desktop):  # nothing to do, nothing done
        again = sync(operations, folder, folder.name)
        assert again.counts() == {**dict.fromkeys(again.counts(), 0), "unchanged": len(files)}


def test_an_edit_on_one_reaches_the_other_and_names_sync_and_the_machine_as_author(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    started(operations, laptop, desktop, **{"notes.md": "one\n"})
    write(desktop, "notes.md", "one\ntwo\n")
    assert sync(operations, desktop, "desktop").pushed == ["/memories/notes.md"]
    assert sync(operations, laptop, "laptop").pulled == ["/memories/notes.md"]
    assert converged(operations, laptop, desktop) == {"/memories/notes.md": b"one\ntwo\n"}
    versions = MemoryVersions(operations.memory(USER)).history("/memories/notes.md")
    assert [version.author for version in versions] == ["sync:desktop", "sync:laptop"]


def test_a_conflict_keeps_both_texts_on_both_sides(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    started(operations, laptop, desktop, **{"notes.md": "base\n"})
    write(laptop, "notes.md", "laptop's\n")
    write(desktop, "notes.md", "desktop's\n")
    os.utime(desktop / "notes.md", ns=(0, 1_765_000_000 * 10**9))
    sync(operations, laptop, "laptop")
    report = sync(operations, desktop, "desktop")
    copy = "/memories/notes.conflict-desktop-20251206T054640Z.md"
    assert report.conflicts == [("/memories/notes.md", copy)]
    sync(operations, laptop, "laptop")
    held = converged(operations, laptop, desktop)
    assert held == {"/memories/notes.md": b"laptop's\n", copy: b"desktop's\n"}
    assert sync(operations, desktop, "desktop").counts()["unchanged"] == 2


def test_the_same_file_new_on_both_sides_is_one_file(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    write(laptop, "notes.md", "same\n")
    write(desktop, "notes.md", "same\n")
    sync(operations, laptop, "laptop")
    report = sync(operations, desktop, "desktop")
    assert (report.conflicts, report.pushed, report.pulled, report.unchanged) == ([], [], [], 1)
    assert converged(operations, laptop, desktop) == {"/memories/notes.md": b"same\n"}


def test_a_deletion_reaches_the_other_side_and_the_memory_and_is_restorable(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    started(operations, laptop, desktop, **{"keep.md": "keep\n", "dir/gone.md": "gone\n"})
    (laptop / "dir" / "gone.md").unlink()
    assert sync(operations, laptop, "laptop").deleted_remote == ["/memories/dir/gone.md"]
    assert sync(operations, desktop, "desktop").deleted_local == ["/memories/dir/gone.md"]
    assert converged(operations, laptop, desktop) == {"/memories/keep.md": b"keep\n"}
    assert not (desktop / "dir").exists()  # the directory it left empty went too
    versions = MemoryVersions(operations.memory(USER))
    history = versions.history("/memories/dir/gone.md")
    assert [version.operation for version in history] == ["deleted", "written"]
    assert versions.restore("/memories/dir/gone.md", history[1].version_id) == "written"
    assert sync(operations, laptop, "laptop").pulled == ["/memories/dir/gone.md"]
    assert sync(operations, desktop, "desktop").pulled == ["/memories/dir/gone.md"]
    assert converged(operations, laptop, desktop)["/memories/dir/gone.md"] == b"gone\n"


def test_a_local_edit_of_a_file_deleted_in_the_memory_brings_it_back(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    started(operations, laptop, desktop, **{"notes.md": "one\n"})
    (desktop / "notes.md").unlink()
    sync(operations, desktop, "desktop")
    write(laptop, "notes.md", "one, edited\n")
    assert sync(operations, laptop, "laptop").pushed == ["/memories/notes.md"]
    sync(operations, desktop, "desktop")
    assert converged(operations, laptop, desktop) == {"/memories/notes.md": b"one, edited\n"}


def test_the_guard_holds_against_an_emptied_folder(
    operations: Operations, laptop: Path, desktop: Path
) -> None:
    files = GUARD_FILES + 12
    started(operations, laptop, desktop, **{f"f{number:02}.md": f"{number}\n" for number in range(files)})
    for path in laptop.glob("*.md"):
        path.unlink()
    write(laptop, "new.md", "everything else still happens\n")
    report = sync(operations, laptop, "laptop")
    assert (report.deleted_remote, len(report.withheld), report.pushed) == ([], files, ["/memories/new.md"])
    assert report.guard is not None and "--allow-deletes" in report.guard
    assert len(memory(operations)) == files + 1
    assert sync(operations, laptop, "laptop").withheld  # withheld again, until asked
    allowed = sync(operations, laptop, "laptop", allow_deletes=True)
    assert len(allowed.deleted_remote) == files
    sync(operations, desktop, "desktop", allow_deletes=True)
    assert converged(operations, laptop, desktop) == {"/memories/new.md": b"everything else still happens\n"}


def test_the_guard_holds_against_a_wiped_memory(operations: Operations, laptop: Path, desktop: Path) -> None:
    files = {f"f{number:02}.md": f"{number}\n" for number in range(GUARD_FILES + 1)}
    started(operations, laptop, desktop, **files)
    operations.memory(USER).clear_all()
    report = sync(operations, laptop, "laptop")
    assert (report.deleted_local, len(report.withheld)) == ([], len(files))
    assert tree(laptop) == {f"/memories/{name}": text.encode() for name, text in files.items()}


def test_a_single_deletion_in_a_small_memory_goes_through(operations: Operations, laptop: Path) -> None:
    write(laptop, "only.md", "x")
    sync(operations, laptop, "laptop")
    (laptop / "only.md").unlink()
    assert sync(operations, laptop, "laptop").deleted_remote == ["/memories/only.md"]
    assert memory(operations) == {}


def test_a_folder_synced_with_one_user_is_refused_for_another(operations: Operations, laptop: Path) -> None:
    write(laptop, "notes.md", "alice's\n")
    sync(operations, laptop, "laptop")
    before = tree(laptop)
    with pytest.raises(FolderRefused) as refused:
        operations.sync("bob", laptop, machine="laptop")
    assert "synced with another memory of this store" in refused.value.reason
    assert tree(laptop) == before
    assert list(operations.users()) == [USER]


def test_a_folder_synced_with_one_store_is_refused_for_another(
    operations: Operations, s3: Any, versioned: str, laptop: Path
) -> None:
    write(laptop, "notes.md", "n\n")
    sync(operations, laptop, "laptop")
    elsewhere = Operations(
        Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), prefix="other/", storage_format=STORAGE_FORMAT
    )
    with pytest.raises(FolderRefused, match="this folder is synced with another store"):
        elsewhere.sync(USER, laptop, machine="laptop")
    assert list(elsewhere.users()) == []


def test_a_round_tells_its_progress_file_by_file(operations: Operations, laptop: Path) -> None:
    for number in range(5):
        write(laptop, f"f{number}.md", "x")
    progress = Recorded()
    operations.sync(USER, laptop, machine="laptop", progress=progress)
    assert (progress.totals, progress.done) == ([5], 5)


def test_a_folder_that_is_no_memory_is_refused_until_adopted(operations: Operations, laptop: Path) -> None:
    write(laptop, "notes.md", "n\n")
    write(laptop, ".git/HEAD", "ref: refs/heads/main\n")
    (laptop / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(laptop / "fifo")
    with pytest.raises(FolderRefused) as refused:
        sync(operations, laptop, "laptop")
    assert "--adopt" in refused.value.reason and "/memories/.git" in refused.value.reason
    assert list(operations.users()) == [] and not (laptop / STATE / "marker.json").exists()
    report = sync(operations, laptop, "laptop", adopt=True)
    assert report.adopted and report.pushed == ["/memories/.git/HEAD", "/memories/notes.md"]
    assert [path for path, _ in report.left_alone] == ["/memories/fifo"]


def test_a_link_in_the_folder_is_never_followed(operations: Operations, laptop: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.md", "never synced\n")
    write(laptop, "notes.md", "n\n")
    sync(operations, laptop, "laptop")
    (laptop / "linked").symlink_to(outside)
    (laptop / "file-link.md").symlink_to(outside / "secret.md")
    operations.memory(USER).run({"command": "create", "path": "/memories/linked/x.md", "file_text": "x\n"})
    report = sync(operations, laptop, "laptop")
    assert sorted(path for path, _ in report.left_alone) == ["/memories/file-link.md", "/memories/linked"]
    assert report.pulled == [] and report.pushed == []
    assert sorted(os.listdir(outside)) == ["secret.md"]
    assert "/memories/file-link.md" not in memory(operations)


def test_a_directory_rename_cut_off_is_finished_before_the_round_lists(
    operations: Operations, versioned: str, new_client: Callable[..., Any], laptop: Path, desktop: Path
) -> None:
    started(operations, laptop, desktop, **{"dir/a.md": "a\n", "dir/b.md": "b\n", "keep.md": "k\n"})
    client = new_client()
    dying = make_operations(client, versioned).memory(USER)
    ProcessDeath(client, *rename_crash_point("PutObject", 3))  # the record, a copy: then it dies
    with pytest.raises(SimulatedCrash):
        dying.run({"command": "rename", "old_path": "/memories/dir", "new_path": "/memories/moved"})
    report = sync(operations, laptop, "laptop")
    assert (report.pulled, report.deleted_local) == (
        ["/memories/moved/a.md", "/memories/moved/b.md"],
        ["/memories/dir/a.md", "/memories/dir/b.md"],
    )
    sync(operations, desktop, "desktop")
    assert converged(operations, laptop, desktop) == {
        "/memories/keep.md": b"k\n",
        "/memories/moved/a.md": b"a\n",
        "/memories/moved/b.md": b"b\n",
    }


@pytest.mark.parametrize("storage_format", [2], ids=["format-2"])
def test_a_shared_memory_syncs_as_shared_name(
    s3: Any, versioned: str, laptop: Path, desktop: Path, storage_format: int
) -> None:
    operations = synced.make_operations(s3, storage_format, versioned)
    write(laptop, "runbook.md", "r\n")
    operations.sync("shared/team-acme", laptop, machine="laptop")
    operations.sync("shared/team-acme", desktop, machine="desktop")
    assert synced.converged(operations, "shared/team-acme", laptop, desktop) == {
        "/memories/runbook.md": b"r\n"
    }
    with pytest.raises(FolderRefused, match="synced with another memory of this store"):
        operations.sync(USER, desktop, machine="desktop")


def test_the_memorys_files_no_folder_takes_are_left_alone_unread(
    operations: Operations, s3: Any, laptop: Path
) -> None:
    model = operations.memory(USER)
    for path in ("/memories/.s3memory-sync/marker.json", "/memories/d/.s3memory-0123456789abcdef"):
        model.run({"command": "create", "path": path, "file_text": "planted\n"})
    syncing = operations.syncing(USER, laptop, machine="laptop")
    assert syncing.round().left_alone == [
        ("/memories/.s3memory-sync/marker.json", KEPT_FOR_SYNC),
        ("/memories/d/.s3memory-0123456789abcdef", SYNC_TEMPORARY_NAME),
    ]
    requests = RequestCounter(s3)
    assert len(syncing.round().left_alone) == 2
    assert +requests.calls == {"ListObjectsV2": 1}
    assert tree(laptop) == {}


def count_keys(s3: Any, bucket: str, prefix: str) -> int:
    return sum(
        page.get("KeyCount", 0)
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    )


@pytest.mark.parametrize(
    ("files", "page_size"),
    [(25, 10), pytest.param(1000, 1000, marks=[pytest.mark.slow, pytest.mark.scale])],
)
def test_a_round_with_no_change_lists_once_and_reads_nothing(
    s3: Any, laptop: Path, files: int, page_size: int
) -> None:
    for number in range(files):
        write(laptop, f"d{number % 7}/f{number:04}.md", f"{number}\n")
        settled(laptop / f"d{number % 7}/f{number:04}.md")
    operations = make_operations(s3, BUCKET, page_size)
    syncing = operations.syncing(USER, laptop, machine="laptop")
    assert len(syncing.round().pushed) == files
    assert count_keys(s3, BUCKET, syncing.memory.layout.memories_prefix) == files
    written = os.stat(laptop / STATE / "baseline.json")
    snapshot = (written.st_ino, written.st_mtime_ns)
    requests = RequestCounter(s3)
    report = syncing.round()
    assert report.unchanged == files
    assert +requests.calls == {"ListObjectsV2": math.ceil(files / page_size)}
    unwritten = os.stat(laptop / STATE / "baseline.json")
    assert (unwritten.st_ino, unwritten.st_mtime_ns) == snapshot  # nor anything written


LONG_NAME = "/memories/" + "n" * 300 + ".md"
NAME_REFUSED = (
    "the local file system refuses its name (too long: ENAMETOOLONG, most take 255 bytes a name); rename "
    "the file with the memory tool's `rename` command (`s3memory cat` shows its text meanwhile), then "
    "sync again"
)


def test_a_file_the_folder_refuses_is_read_again_only_where_it_or_the_folder_changed(
    s3: Any, backend: str, operations: Operations, laptop: Path
) -> None:
    if backend == "seaweedfs":
        pytest.skip(
            "SeaweedFS refuses a key with a 300-byte segment (InternalError): no memory holds the file"
        )
    write(laptop, "notes.md", "n\n")
    settled(laptop / "notes.md")
    sync(operations, laptop, "laptop")
    tool = operations.memory(USER)
    tool.run({"command": "create", "path": LONG_NAME, "file_text": "one\n"})
    syncing = operations.syncing(USER, laptop, machine="laptop")
    requests = RequestCounter(s3)

    def round_reads(expected: int) -> SyncReport:
        requests.reset()
        report = syncing.round()
        assert requests.calls["GetObject"] == expected
        assert (LONG_NAME, NAME_REFUSED) in report.left_alone
        return report

    round_reads(1)  # tried, refused by the local file system
    assert round_reads(0).left_alone == [(LONG_NAME, NAME_REFUSED)]  # no change: not read again
    assert +requests.calls == {"ListObjectsV2": 1}
    tool.run({"command": "str_replace", "path": LONG_NAME, "old_str": "one", "new_str": "two"})
    round_reads(1)  # its ETag changed
    round_reads(0)
    write(laptop, "other.md", "o\n")
    settled(laptop / "other.md")
    assert round_reads(1).pushed == [
        "/memories/other.md"
    ]  # the folder changed: an entry in the way may have gone
    round_reads(0)
    tool.run({"command": "rename", "old_path": LONG_NAME, "new_path": "/memories/short.md"})
    assert syncing.round().pulled == ["/memories/short.md"]
    assert not (laptop / ".s3memory-sync" / "refused.json").exists()  # nothing refused is kept


class ReadOnly:
    """The S3 client as credentials that may only read make it: each write refused (AccessDenied),
    and counted."""

    WRITES = frozenset({"PutObject", "CopyObject", "DeleteObject", "DeleteObjects", "CreateMultipartUpload"})

    def __init__(self, s3: Any) -> None:
        self.refused: list[str] = []
        self.s3 = s3

    def __enter__(self) -> ReadOnly:
        self.s3.meta.events.register("before-call.s3", self._refuse)
        return self

    def __exit__(self, *_: object) -> None:
        self.s3.meta.events.unregister("before-call.s3", self._refuse)

    def _refuse(self, model: Any, **_: Any) -> None:
        if model.name in self.WRITES:
            self.refused.append(model.name)
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "read only"}}, model.name)


def test_pull_only_never_writes_the_memory_and_loses_nothing_here(
    s3: Any, operations: Operations, laptop: Path, desktop: Path
) -> None:
    started(operations, laptop, desktop, **{"a.md": "a\n", "b.md": "b\n", "c.md": "c\n", "d.md": "d\n"})
    write(desktop, "a.md", "a, edited here\n")  # an edit here: stays, not pushed
    write(desktop, "new.md", "new here\n")  # a new file here: stays, not pushed
    (desktop / "b.md").unlink()  # deleted here: pulled back, the memory keeps it
    write(desktop, "c.md", "c, here\n")  # changed on both sides: a conflict
    write(laptop, "c.md", "c, there\n")
    write(laptop, "d.md", "d, there\n")  # changed in the memory: pulled
    sync(operations, laptop, "laptop")
    in_memory = memory(operations)
    with ReadOnly(s3) as read_only:
        report = sync(operations, desktop, "desktop", pull_only=True)
        again = sync(operations, desktop, "desktop", pull_only=True)  # what stays here is reported each round
    assert read_only.refused == []
    assert report.left_alone == [("/memories/a.md", NOT_PUSHED), ("/memories/new.md", NOT_PUSHED)]
    assert report.pulled == ["/memories/b.md", "/memories/d.md"]
    ((path, copy),) = report.conflicts
    assert path == "/memories/c.md" and ".conflict-desktop-" in copy
    assert (report.pushed, report.deleted_remote) == ([], [])
    assert report.lines()[2] == (
        f"conflict /memories/c.md: changed on both sides; the memory's version is at the path, this "
        f"folder's is kept as {copy}, here only (pull-only)"
    )
    assert tree(desktop) == {
        "/memories/a.md": b"a, edited here\n",
        "/memories/b.md": b"b\n",
        "/memories/c.md": b"c, there\n",
        copy: b"c, here\n",
        "/memories/d.md": b"d, there\n",
        "/memories/new.md": b"new here\n",
    }
    assert memory(operations) == in_memory
    assert again.left_alone == sorted(
        [("/memories/a.md", NOT_PUSHED), (copy, NOT_PUSHED), ("/memories/new.md", NOT_PUSHED)]
    )
    assert (again.pulled, again.conflicts, read_only.refused) == ([], [], [])


def test_a_file_in_the_way_of_a_directory_is_read_again_only_once_it_is_moved(
    s3: Any, operations: Operations, laptop: Path
) -> None:
    operations.memory(USER).run({"command": "create", "path": "/memories/a/b.md", "file_text": "b\n"})
    write(laptop, "a", "in the way\n")
    settled(laptop / "a")
    syncing = operations.syncing(USER, laptop, machine="laptop")
    in_the_way = ("/memories/a/b.md", "/memories/a is not a directory; remove it to sync below it")
    requests = RequestCounter(s3)
    assert in_the_way in syncing.round().left_alone
    assert requests.calls["GetObject"] == 1
    requests.reset()
    assert in_the_way in syncing.round().left_alone
    assert requests.calls["GetObject"] == 0
    (laptop / "a").rename(laptop / "a.md")
    assert syncing.round().pulled == ["/memories/a/b.md"]
