"""Sync's local side (``s3memory/sync/folder.py``, ``local_entries.py``) against a folder whoever
controls it has prepared: symbolic links to files and directories (planted, or swapped in between a scan
and a write), FIFOs, sockets, hard links, huge sparse files, files grown or swapped while read, entries
changed since the round looked at them, a write killed half-way, names the path policy refuses, bytes
that are not UTF-8; and what a folder never synced must hold to be taken as a memory."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os
import socket
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from s3memory.core.placement import MAX_DEPTH
from s3memory.ops import folders
from s3memory.sync import local_entries
from s3memory.sync.folder import (
    APPEARED,
    CHANGED,
    KEPT_FOR_SYNC,
    STATE_DIRECTORY,
    SYNC_TEMPORARY_NAME,
    FolderRefused,
    LocalChanged,
    SyncFolder,
)
from s3memory.sync.local_entries import (
    CHANGED_WHILE_READ,
    NOT_TEXT,
    SETTLING_NS,
    UNSETTLED,
    LocalEntry,
    LocalStat,
)
from tests.support.hostile_files import grows_after_its_size_is_checked

MiB = 1 << 20
SECRET = b"the operator's secret\n"
LIMIT = 64


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[SyncFolder]:
    with SyncFolder(tmp_path / "memory") as opened:
        yield opened


def scanned(
    folder: SyncFolder, baseline: dict[str, LocalStat] | None = None, **options: Any
) -> list[LocalEntry]:
    return list(folder.scan(baseline or {}, LIMIT, **options))


def problems(entries: list[LocalEntry]) -> list[tuple[str, str | None]]:
    return [(entry.path, entry.problem) for entry in entries if entry.problem is not None]


def texts(entries: list[LocalEntry]) -> dict[str, bytes | None]:
    return {entry.path: entry.data for entry in entries if entry.problem is None}


def stat_of(path: Path) -> LocalStat:
    return LocalStat.of(os.lstat(path))


def unsettled(path: Path) -> LocalStat:
    """The stat of a file looked at within ``SETTLING_NS`` of its last change, as ``scan`` reports it."""
    return dataclasses.replace(stat_of(path), ctime_ns=UNSETTLED)


def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scans from now on run as if the files had settled (``SETTLING_NS`` after their last change)."""
    monkeypatch.setattr(local_entries, "now_ns", lambda: time.time_ns() + 10 * SETTLING_NS)


class Opens:
    """``os.open`` counted: the files (not directories) opened, by name; ``before`` runs just before
    the open of a file of its name (a swap between a listing and an open, made deterministic)."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, before: dict[str, Callable[[], None]] | None = None
    ) -> None:
        self.files: list[str] = []
        self.before = before or {}
        real = os.open

        def counted(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if not flags & os.O_DIRECTORY:
                name = os.path.basename(os.fspath(path))
                self.files.append(name)
                swap = self.before.pop(name, None)
                if swap is not None:
                    swap()
            return real(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", counted)


class DuringRead:
    """``os.read`` wrapped: ``change`` runs once, before the first read of a file of ``size`` bytes
    (a file written to or swapped while it is read); every byte read is counted."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, changes: dict[int, Callable[[], None]] | None = None
    ) -> None:
        self.changes = changes or {}
        self.bytes = 0
        real = os.read

        def reading(descriptor: int, count: int) -> bytes:
            change = self.changes.pop(os.fstat(descriptor).st_size, None)
            if change is not None:
                change()
            chunk = real(descriptor, count)
            self.bytes += len(chunk)
            return chunk

        monkeypatch.setattr(os, "read", reading)


def test_a_memory_folder_is_scanned_as_memory_paths_with_bytes_and_hashes(folder: SyncFolder) -> None:
    root = folder.directory
    (root / "notes").mkdir()
    (root / "a.md").write_bytes(b"a\n")
    (root / "notes" / "b.md").write_bytes("b \u00e9\n".encode())
    found = scanned(folder)
    assert [(entry.path, entry.data, entry.sha256, entry.unchanged) for entry in found] == [
        ("/memories/a.md", b"a\n", hashlib.sha256(b"a\n").hexdigest(), False),
        (
            "/memories/notes/b.md",
            "b \u00e9\n".encode(),
            hashlib.sha256("b \u00e9\n".encode()).hexdigest(),
            False,
        ),
    ]
    assert [entry.stat for entry in found] == [unsettled(root / "a.md"), unsettled(root / "notes" / "b.md")]


def test_a_file_unchanged_by_its_stat_is_never_opened(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    later(monkeypatch)
    root = folder.directory
    (root / "d").mkdir()
    for name in ("a.md", "b.md", "d/c.md"):
        (root / name).write_bytes(f"{name}\n".encode())
    first = scanned(folder)
    baseline = {entry.path: entry.stat for entry in first if entry.stat is not None}
    (root / "b.md").write_bytes(b"b, edited\n")
    opens = Opens(monkeypatch)
    again = scanned(folder, baseline)
    assert opens.files == ["b.md"]
    assert [(entry.path, entry.unchanged, entry.data) for entry in again] == [
        ("/memories/a.md", True, None),
        ("/memories/b.md", False, b"b, edited\n"),
        ("/memories/d/c.md", True, None),
    ]
    opens.files.clear()
    assert texts(scanned(folder, baseline, rehash=True)) == {
        "/memories/a.md": b"a.md\n",
        "/memories/b.md": b"b, edited\n",
        "/memories/d/c.md": b"d/c.md\n",
    }
    assert opens.files == ["a.md", "b.md", "c.md"]


def test_a_file_changed_within_the_settling_time_is_read_again_until_it_has_settled(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed again in the clock tick it was scanned in keeps its stat (size, times and
    inode), as a file system whose clock has not moved gives it: the next scan still reads it."""
    root = folder.directory
    (root / "a.md").write_bytes(b"first\n")
    [scanned_first] = scanned(folder)
    assert scanned_first.stat == unsettled(root / "a.md")
    assert folder.read("/memories/a.md", unsettled(root / "a.md")) == b"first\n"  # still the file expected
    frozen = os.lstat(root / "a.md")
    (root / "a.md").write_bytes(b"again\n")  # the same size, in the same tick
    real_stat, real_fstat = os.stat, os.fstat

    def unmoved_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return frozen if path == "a.md" else real_stat(path, *args, **kwargs)

    def unmoved_fstat(descriptor: int) -> os.stat_result:
        found = real_fstat(descriptor)
        return frozen if found.st_ino == frozen.st_ino else found

    monkeypatch.setattr(os, "stat", unmoved_stat)
    monkeypatch.setattr(os, "fstat", unmoved_fstat)
    baseline = {"/memories/a.md": unsettled(root / "a.md")}
    assert [(entry.data, entry.unchanged) for entry in scanned(folder, baseline)] == [(b"again\n", False)]
    monkeypatch.undo()
    later(monkeypatch)
    [settled] = scanned(folder, baseline)
    assert settled.stat == stat_of(root / "a.md")  # settled: trusted from now on
    opens = Opens(monkeypatch)
    assert [entry.unchanged for entry in scanned(folder, {"/memories/a.md": settled.stat})] == [True]
    assert opens.files == []


def test_links_to_files_and_directories_are_reported_and_never_followed(
    tmp_path: Path, folder: SyncFolder
) -> None:
    outside = tmp_path / "home"
    (outside / ".ssh").mkdir(parents=True)
    (outside / ".ssh" / "id").write_bytes(SECRET)
    root = folder.directory
    (root / "deep" / "er").mkdir(parents=True)
    (root / "config.md").symlink_to(outside / ".ssh" / "id")
    (root / "ssh").symlink_to(outside / ".ssh", target_is_directory=True)
    (root / "deep" / "er" / "ssh").symlink_to(outside / ".ssh", target_is_directory=True)
    (root / "deep" / "er" / "ok.md").write_bytes(b"ok\n")
    found = scanned(folder)
    assert problems(found) == [
        ("/memories/config.md", "a symbolic link"),
        ("/memories/ssh", "a symbolic link"),
        ("/memories/deep/er/ssh", "a symbolic link"),
    ]
    assert texts(found) == {"/memories/deep/er/ok.md": b"ok\n"}
    with pytest.raises(folders.LeftAlone) as below:
        folder.write("/memories/ssh/id", b"planted\n", None)
    assert (
        below.value.reason
        == "/memories/ssh is a symbolic link, which sync never follows; remove it to sync below it"
    )
    with pytest.raises(LocalChanged) as over:
        folder.write("/memories/config.md", b"planted\n", None)
    assert over.value.reason == APPEARED
    with pytest.raises(LocalChanged) as read:
        folder.read("/memories/config.md", stat_of(outside / ".ssh" / "id"))
    assert read.value.reason == "a symbolic link"
    assert [path.name for path in (outside / ".ssh").iterdir()] == ["id"]
    assert (outside / ".ssh" / "id").read_bytes() == SECRET
    assert (root / "config.md").is_symlink()


def test_a_directory_swapped_for_a_link_after_the_scan_is_never_written_or_deleted_through(
    tmp_path: Path, folder: SyncFolder
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_bytes(SECRET)
    root = folder.directory
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_bytes(b"a\n")
    seen = stat_of(root / "notes" / "a.md")
    (root / "notes").rename(tmp_path / "moved")  # between the scan and the write
    (root / "notes").symlink_to(outside, target_is_directory=True)
    linked = "/memories/notes is a symbolic link, which sync never follows; remove it to sync below it"
    for attempt in (
        lambda: folder.write("/memories/notes/a.md", b"pulled\n", seen),
        lambda: folder.write("/memories/notes/new.md", b"pulled\n", None),
        lambda: folder.delete("/memories/notes/a.md", seen),
        lambda: folder.read("/memories/notes/a.md", seen),
    ):
        with pytest.raises(folders.LeftAlone) as refused:
            attempt()
        assert refused.value.reason == linked
    assert sorted(path.name for path in outside.iterdir()) == ["a.md"]
    assert (outside / "a.md").read_bytes() == SECRET


def test_a_file_swapped_for_a_link_or_a_fifo_after_it_was_listed_is_refused_without_blocking(
    tmp_path: Path, folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret").write_bytes(SECRET)
    root = folder.directory
    for name in ("a.md", "f.md", "z.md"):
        (root / name).write_bytes(b"x\n")

    def link() -> None:
        (root / "a.md").unlink()
        (root / "a.md").symlink_to(tmp_path / "secret")

    def fifo() -> None:  # no writer: a blocking open of it would never return
        (root / "f.md").unlink()
        os.mkfifo(root / "f.md")

    Opens(monkeypatch, {"a.md": link, "f.md": fifo})
    found = scanned(folder)
    assert problems(found) == [
        ("/memories/a.md", "a symbolic link"),
        ("/memories/f.md", "not a regular file"),
    ]
    assert texts(found) == {"/memories/z.md": b"x\n"}


def test_fifos_sockets_and_hard_links_are_reported_and_left_alone(
    tmp_path: Path, folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder.directory
    os.mkfifo(root / "fifo.md")
    monkeypatch.chdir(root)  # a socket's path is at most 107 bytes: bound by its name
    listening = socket.socket(socket.AF_UNIX)
    listening.bind("socket.md")
    (tmp_path / "outside.txt").write_bytes(SECRET)
    os.link(tmp_path / "outside.txt", root / "linked.md")
    try:
        found = scanned(folder)
    finally:
        listening.close()
    assert problems(found) == [
        ("/memories/fifo.md", "not a regular file"),
        (
            "/memories/linked.md",
            "a file with other hard links (replace it with a copy of it, then sync again)",
        ),
        ("/memories/socket.md", "not a regular file"),
    ]
    linked = stat_of(root / "linked.md")
    assert folder.write("/memories/linked.md", b"pulled\n", linked) == stat_of(root / "linked.md")
    assert (tmp_path / "outside.txt").read_bytes() == SECRET  # the name replaced, never the inode
    assert (root / "linked.md").read_bytes() == b"pulled\n"


def test_problems_import_and_export_share_are_reported_with_syncs_fix(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder.directory
    (root / "secret.md").write_bytes(SECRET)
    (root / ".s3memory-0123456789abcdef").write_bytes(b"cut off\n")
    real_open = os.open

    def denied(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == "secret.md":  # this user may not read it (the tests may run as root)
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    assert folder.adoptable(LIMIT) == [
        "/memories/.s3memory-0123456789abcdef: a temporary file of a write cut off (by export or sync), "
        "never synced (a round removes it)",
        "/memories/secret.md: not readable by this user (permission denied: make it readable, then sync again)",
    ]
    assert problems(scanned(folder)) == [
        (
            "/memories/secret.md",
            "not readable by this user (permission denied: make it readable, then sync again)",
        )
    ]

    def temporary_removed(source: Any, *args: Any, **kwargs: Any) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(os, "replace", temporary_removed)
    with pytest.raises(folders.LeftAlone) as left:
        folder.write("/memories/new.md", b"pulled\n", None)
    assert left.value.reason == (
        "its temporary file was removed before it was renamed into place (by another program in this "
        "folder?); the next round writes it again"
    )


def test_a_huge_sparse_file_is_refused_with_nothing_read_beyond_the_limit(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder.directory
    (root / "fine.md").write_bytes(b"fine\n")
    with open(root / "huge.md", "wb") as sparse:
        sparse.truncate(256 * MiB)
    reads = DuringRead(monkeypatch)
    found = scanned(folder)
    assert problems(found) == [("/memories/huge.md", "larger than the size limit")]
    assert [entry.stat.size for entry in found if entry.stat is not None] == [5, 256 * MiB]
    assert reads.bytes == len(b"fine\n")  # its size is known from what was opened: none of it is read
    grows_after_its_size_is_checked(monkeypatch, 256 * MiB)
    reads.bytes = 0
    assert problems(scanned(folder)) == [("/memories/huge.md", "larger than the size limit")]
    assert reads.bytes == LIMIT + 1 + len(b"fine\n")


def test_a_file_grown_or_swapped_while_it_is_read_is_refused(
    tmp_path: Path, folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder.directory
    (root / "grown.md").write_bytes(b"1")
    (root / "same.md").write_bytes(b"22")
    (root / "swapped.md").write_bytes(b"333")
    (root / "unseen.md").write_bytes(b"4444")
    (tmp_path / "other.md").write_bytes(b"other\n")
    (tmp_path / "new.md").write_bytes(b"new\n")

    def grow() -> None:
        with open(root / "grown.md", "ab") as handle:
            handle.write(b" and more\n")

    def swap() -> None:  # the name now names another file; the one open is read whole
        os.replace(tmp_path / "other.md", root / "swapped.md")

    def swap_unseen() -> None:  # moved away, another put in its place: only its name tells
        os.rename(root / "unseen.md", tmp_path / "away.md")
        os.rename(tmp_path / "new.md", root / "unseen.md")

    real_fstat = os.fstat
    first: dict[int, os.stat_result] = {}

    def unmoved(descriptor: int) -> os.stat_result:  # a file system whose renames move no change time
        found = real_fstat(descriptor)
        return first.setdefault(found.st_ino, found) if found.st_size == 4 else found

    monkeypatch.setattr(os, "fstat", unmoved)
    DuringRead(monkeypatch, {1: grow, 3: swap, 4: swap_unseen})
    found = scanned(folder)
    assert problems(found) == [
        ("/memories/grown.md", CHANGED_WHILE_READ),
        ("/memories/swapped.md", CHANGED_WHILE_READ),
        ("/memories/unseen.md", CHANGED_WHILE_READ),
    ]
    assert CHANGED_WHILE_READ == "changed while it was read (written to, or swapped for another file)"
    assert texts(found) == {"/memories/same.md": b"22"}
    assert texts(scanned(folder)) == {
        "/memories/grown.md": b"1 and more\n",
        "/memories/same.md": b"22",
        "/memories/swapped.md": b"other\n",
        "/memories/unseen.md": b"new\n",
    }


def test_names_the_path_policy_refuses_and_bytes_not_utf8_are_reported_with_their_reason(
    folder: SyncFolder,
) -> None:
    root = os.fsencode(folder.directory)
    for name in (b"back\\slash.md", b"bell\x07.md", b"latin\xe9.md", b"\xe2\x80\xa5", b"ok.md"):
        with open(os.path.join(root, name), "wb") as handle:
            handle.write(b"text\n")
    (folder.directory / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    found = scanned(folder)
    assert problems(found) == [
        (
            "/memories/back\\slash.md",
            "Error: The path /memories/back\\slash.md is not allowed: backslashes are refused.",
        ),
        (
            "/memories/bell\x07.md",
            "Error: The path /memories/bell\\x07.md is not allowed: NUL and other control characters are refused.",
        ),
        ("/memories/binary.md", NOT_TEXT),
        (
            "/memories/latin\udce9.md",
            "Error: The path /memories/latin\\udce9.md is not allowed: it is not valid UTF-8 text.",
        ),
        (
            "/memories/\u2025",
            "Error: Path /memories/\u2025 would escape /memories directory ('.' and '..' segments are refused, "
            "also percent-encoded or as look-alike characters)",
        ),
    ]
    assert NOT_TEXT == "not a valid UTF-8 text file"
    assert texts(found) == {"/memories/ok.md": b"text\n"}


def test_a_write_replaces_the_file_only_if_it_is_still_the_one_expected(folder: SyncFolder) -> None:
    root = folder.directory
    written = folder.write("/memories/a/b/new.md", b"pulled\n", None)
    assert written == stat_of(root / "a" / "b" / "new.md")
    assert written.mtime_ns <= time.time_ns() - SETTLING_NS  # a later change moves it: trusted at once
    assert (root / "a" / "b" / "new.md").read_bytes() == b"pulled\n"
    assert stat.S_IMODE(os.lstat(root / "a" / "b" / "new.md").st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(root / "a").st_mode) == 0o700
    assert [entry.unchanged for entry in scanned(folder, {"/memories/a/b/new.md": written})] == [True]

    (root / "a" / "b" / "new.md").write_bytes(b"edited meanwhile\n")  # after the round looked
    with pytest.raises(LocalChanged) as changed:
        folder.write("/memories/a/b/new.md", b"pulled again\n", written)
    assert changed.value.reason == CHANGED == "changed since it was last looked at"
    with pytest.raises(LocalChanged) as appeared:
        folder.write("/memories/a/b/new.md", b"pulled again\n", None)
    assert appeared.value.reason == APPEARED == "an entry was made there since the folder was last looked at"
    with pytest.raises(LocalChanged) as gone:
        folder.write("/memories/gone/x.md", b"pulled\n", written)
    assert gone.value.reason == "gone"
    (root / "dir.md").mkdir()
    with pytest.raises(LocalChanged) as directory:
        folder.write("/memories/dir.md", b"pulled\n", None)
    assert directory.value.reason == APPEARED
    assert (root / "a" / "b" / "new.md").read_bytes() == b"edited meanwhile\n"
    assert sorted(path.name for path in (root / "a" / "b").iterdir()) == ["new.md"]  # no temporary left
    assert not (root / "gone").exists()

    current = stat_of(root / "a" / "b" / "new.md")
    assert folder.read("/memories/a/b/new.md", current) == b"edited meanwhile\n"
    replaced = folder.write("/memories/a/b/new.md", b"pulled again\n", current)
    assert replaced.inode != current.inode and (root / "a" / "b" / "new.md").read_bytes() == b"pulled again\n"
    with pytest.raises(LocalChanged) as stale:
        folder.read("/memories/a/b/new.md", current)
    assert stale.value.reason == CHANGED
    with open(root / "a" / "b" / "new.md", "ab") as handle:
        handle.write(b"grown\n")
    with pytest.raises(LocalChanged) as grown:
        folder.read("/memories/a/b/new.md", replaced)
    assert grown.value.reason == CHANGED


def test_a_change_made_between_the_bytes_written_and_the_rename_is_kept(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs after the new file's bytes are written and flushed, right before the rename."""
    root = folder.directory
    (root / "a.md").write_bytes(b"a\n")
    seen = stat_of(root / "a.md")
    real_fsync = os.fsync

    def edited_meanwhile(descriptor: int) -> None:
        real_fsync(descriptor)
        if stat.S_ISREG(os.fstat(descriptor).st_mode) and (root / "a.md").read_bytes() == b"a\n":
            (root / "a.md").write_bytes(b"the user's edit\n")

    monkeypatch.setattr(os, "fsync", edited_meanwhile)
    with pytest.raises(LocalChanged) as changed:
        folder.write("/memories/a.md", b"pulled\n", seen)
    assert changed.value.reason == CHANGED
    assert (root / "a.md").read_bytes() == b"the user's edit\n"
    assert sorted(path.name for path in root.iterdir()) == ["a.md"]


def refused_to_this_user(*args: Any, **kwargs: Any) -> None:
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))


def test_a_delete_removes_only_the_file_expected_and_the_directories_it_leaves_empty(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder.directory
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "kept.md").write_bytes(b"kept\n")
    (root / "a" / "b" / "c" / "x.md").write_bytes(b"x\n")
    (root / "y.md").write_bytes(b"y\n")
    seen = stat_of(root / "y.md")
    (root / "y.md").write_bytes(b"y, edited\n")
    with pytest.raises(LocalChanged) as changed:
        folder.delete("/memories/y.md", seen)
    assert changed.value.reason == CHANGED
    assert (root / "y.md").read_bytes() == b"y, edited\n"
    with monkeypatch.context() as denied:  # as the kernel refuses this user (the tests run as root)
        denied.setattr(os, "unlink", refused_to_this_user)
        with pytest.raises(folders.LeftAlone) as refused:
            folder.delete("/memories/y.md", stat_of(root / "y.md"))
    assert refused.value.reason == (
        "this user may not remove the file there (permission denied); change the permissions, then sync again"
    )
    assert folder.delete("/memories/a/b/c/x.md", stat_of(root / "a" / "b" / "c" / "x.md")) is True
    assert sorted(path.name for path in root.rglob("*")) == ["a", "kept.md", "y.md"]
    assert folder.delete("/memories/a/b/c/x.md", seen) is False  # already gone: a round re-run
    assert folder.delete("/memories/a/kept.md", stat_of(root / "a" / "kept.md")) is True
    assert folder.delete("/memories/y.md", stat_of(root / "y.md")) is True
    assert list(root.iterdir()) == []  # DIR itself stays
    assert root.is_dir()


def test_a_write_killed_before_its_rename_leaves_a_temporary_file_that_is_swept_never_reported(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder.directory
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_bytes(b"a\n")
    child = os.fork()
    if child == 0:  # the process dies between the new file's bytes and its rename
        monkeypatch.setattr(os, "replace", lambda *args, **kwargs: os._exit(0))
        folder.write("/memories/notes/a.md", b"pulled\n", stat_of(root / "notes" / "a.md"))
        os._exit(1)
    assert os.waitpid(child, 0)[1] == 0
    left = [path.name for path in (root / "notes").iterdir() if path.name != "a.md"]
    assert len(left) == 1 and folders.is_temporary(left[0])
    assert (root / "notes" / left[0]).read_bytes() == b"pulled\n"
    assert [(entry.path, entry.data) for entry in scanned(folder)] == [("/memories/notes/a.md", b"a\n")]
    assert sorted(path.name for path in (root / "notes").iterdir()) == ["a.md"]
    with pytest.raises(folders.LeftAlone) as temporary:
        folder.write(f"/memories/notes/{left[0]}", b"x\n", None)
    assert temporary.value.reason == SYNC_TEMPORARY_NAME


def test_the_state_directory_is_private_locked_never_scanned_nor_written(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    (root / STATE_DIRECTORY).mkdir(parents=True, mode=0o755)
    (root / STATE_DIRECTORY / "state.json").write_bytes(b"{}")
    (root / "a.md").write_bytes(b"a\n")
    with SyncFolder(root) as folder:
        assert folder.has_state
        assert stat.S_IMODE(os.lstat(root / STATE_DIRECTORY).st_mode) == 0o700
        assert os.listdir(folder.state_directory) == ["state.json"]
        assert [entry.path for entry in scanned(folder)] == ["/memories/a.md"]
        assert folder.adoptable(LIMIT) == []
        with pytest.raises(folders.LeftAlone) as kept:
            folder.write(f"/memories/{STATE_DIRECTORY}/state.json", b"{}", None)
        assert (
            kept.value.reason
            == KEPT_FOR_SYNC
            == "a name sync keeps for its own state (.s3memory-sync), never synced"
        )
        with pytest.raises(FolderRefused) as busy:
            SyncFolder(root)
        assert busy.value.reason == (
            f"another s3memory sync is working in {root}; let it finish (or stop it), then sync again"
        )
    SyncFolder(root).close()  # the lock goes with the folder

    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / STATE_DIRECTORY).symlink_to(tmp_path / "memory", target_is_directory=True)
    with pytest.raises(FolderRefused) as link:
        SyncFolder(linked)
    assert link.value.reason == (
        f"{linked / STATE_DIRECTORY} is a symbolic link, where sync keeps its state (a directory); move it "
        "away, then sync again"
    )
    (tmp_path / "file").write_bytes(b"mine\n")
    with SyncFolder(tmp_path / "new") as new:
        assert not new.has_state and not (tmp_path / "new" / STATE_DIRECTORY).exists()
        assert os.listdir(new.state_directory) == [] and new.has_state
        assert stat.S_IMODE(os.lstat(tmp_path / "new" / STATE_DIRECTORY).st_mode) == 0o700
    with pytest.raises(FolderRefused) as file:
        SyncFolder(tmp_path / "file")
    assert file.value.reason == (
        f"{tmp_path / 'file'} is not a folder (a file or another entry is there, or above it): give the path "
        "of a folder to sync, or of one to make"
    )
    assert (tmp_path / "file").read_bytes() == b"mine\n"


def test_adoptable_takes_an_empty_or_memory_shaped_folder_and_names_what_else_stops_it(
    tmp_path: Path,
) -> None:
    with SyncFolder(tmp_path / "new") as empty:
        assert empty.adoptable(LIMIT) == []
    shaped = tmp_path / "shaped"
    (shaped / "projects" / "x").mkdir(parents=True)
    (shaped / "MEMORY.md").write_bytes(b"# Memory\n")
    (shaped / "projects" / "x" / "notes.md").write_bytes(b"notes\n")
    (shaped / "empty").mkdir()
    with SyncFolder(shaped) as folder:
        assert folder.adoptable(LIMIT) == []

    home = tmp_path / "home"
    (home / ".git" / "objects").mkdir(parents=True)
    (home / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (home / ".git" / "objects" / "ab").write_bytes(b"x\x9c\x00")
    (home / ".bashrc").write_bytes(b"alias ll='ls -l'\n")
    (home / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0")
    (home / "big.log").write_bytes(b"x" * (LIMIT + 1))
    (home / "zero\u200bwidth.md").write_bytes(b"z\n")
    (home / "Downloads").symlink_to(tmp_path, target_is_directory=True)
    levels = [f"d{level}" for level in range(MAX_DEPTH + 1)]
    home.joinpath(*levels).mkdir(parents=True)
    with SyncFolder(home) as folder:
        assert folder.adoptable(LIMIT, most=10) == [
            "/memories/Downloads: a symbolic link",
            "/memories/big.log: larger than the size limit",
            "/memories/photo.jpg: not a valid UTF-8 text file",
            "/memories/zero\\u200bwidth.md: Error: The path /memories/zero\\u200bwidth.md is not allowed: a name "
            "may not hold U+200B ZERO WIDTH SPACE, an invisible character with which one name can pass for "
            "another; use a name without it.",
            "/memories/.git: a version control directory (of a repository, not a memory)",
            f"/memories/{'/'.join(levels[:MAX_DEPTH])}: a directory {MAX_DEPTH} levels below /memories, where "
            "no file may lie",
        ]
        assert folder.adoptable(LIMIT, most=2) == [
            "/memories/Downloads: a symbolic link",
            "/memories/big.log: larger than the size limit",
        ]
    assert sorted(path.name for path in home.iterdir()) == [  # nothing written in a folder refused
        ".bashrc",
        ".git",
        "Downloads",
        "big.log",
        "d0",
        "photo.jpg",
        "zero\u200bwidth.md",
    ]


def test_a_write_this_user_may_not_make_or_a_name_the_local_file_system_refuses_is_named_with_the_fix(
    folder: SyncFolder, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.open

    def denied(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT:
            refused_to_this_user()
        return real(path, flags, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "open", denied)
        with pytest.raises(folders.LeftAlone) as not_writable:
            folder.write("/memories/a.md", b"x\n", None)
    assert not_writable.value.reason == (
        "this user may not write the file there (permission denied); change the permissions, then sync again"
    )
    name = "n" * 300 + ".md"
    with pytest.raises(folders.NameRefused) as refused:
        folder.write(f"/memories/{name}", b"x\n", None)
    assert refused.value.reason == (
        "the local file system refuses its name (too long: ENAMETOOLONG, most take 255 bytes a name); rename "
        "the file with the memory tool's `rename` command (`s3memory cat` shows its text meanwhile), then "
        "sync again"
    )
    assert os.listdir(folder.directory) == []
