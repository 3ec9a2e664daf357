"""DIR, the local side of sync: ``DIR/notes.md`` is ``/memories/notes.md``.

DIR is taken as hostile, as export's and import's folders are (``ops/folders.py``, whose walk and
primitives this module uses): DIR is resolved as given, once; everything below it is opened from its
directory's handle without following a link, each file once (``O_NONBLOCK``: a FIFO swapped in
cannot block), at most the size limit plus one byte read. A file whose ``fstat`` changed between
before and after its read, or whose name then names another entry, is refused as
``CHANGED_WHILE_READ``. A file whose stat (``LocalStat``) is the one the caller last saw is not
opened at all; a stat taken in the moments after a file's change (``SETTLING_NS``) is never trusted
so (``UNSETTLED``), since a file changed again within one tick of the file system's clock keeps it,
and a file sync writes is given a modification time that any later change moves.

Writes and deletes are conditional on the entry at the name still being what the caller expects:
a write makes a new file under a temporary name (``ops.folders.is_temporary``), flushes it to disk,
checks the entry, then renames the new file over the name (never through a link, never into another
inode); a delete checks, then unlinks the name. Between the check and the rename (or unlink) is the
one window in which a change made by another process is replaced; ``docs/sync.md`` says so.
``DIR/.s3memory-sync/`` (0700) is sync's own: never scanned, never written by ``write``, and locked
(``flock``) while a ``SyncFolder`` is open, so that two syncs never work in one folder at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from s3memory.core.paths import MEMORY_ROOT, check_memory_path, check_new_name, memory_path, shown_path
from s3memory.errors import CommandError
from s3memory.ops.folder_writes import LOST_TEMPORARY, directory_below, remove_temporaries, replace
from s3memory.ops.folders import (
    DIRECTORY_MODE,
    GONE,
    HARD_LINKED,
    LINK,
    NOT_DIRECTORY,
    TEMPORARY,
    TOO_LARGE,
    UNREADABLE,
    Entry,
    LeftAlone,
    entries,
    is_temporary,
    kind,
    name_refused,
    open_or_make,
    read_entry,
)

STATE_DIRECTORY = ".s3memory-sync"
"""The directory in DIR that holds sync's own state; no memory file below it is ever synced."""
CHANGED_WHILE_READ = "changed while it was read (written to, or swapped for another file)"
NOT_TEXT = "not a valid UTF-8 text file"
KEPT_FOR_SYNC = f"a name sync keeps for its own state ({STATE_DIRECTORY}), never synced"
SYNC_TEMPORARY_NAME = (
    "a name sync gives its temporary files, never synced (rename the stored file to sync it)"
)
NOT_WRITABLE = (
    "this user may not write the file there (permission denied); change the permissions, then sync again"
)
NOT_REMOVABLE = (
    "this user may not remove the file there (permission denied); change the permissions, then sync again"
)
_WORDED_FOR_SYNC = {
    HARD_LINKED: "a file with other hard links (replace it with a copy of it, then sync again)",
    UNREADABLE: "not readable by this user (permission denied: make it readable, then sync again)",
    TEMPORARY: "a temporary file of a write cut off (by export or sync), never synced (a round removes it)",
    LOST_TEMPORARY: (
        "its temporary file was removed before it was renamed into place (by another program in this "
        "folder?); the next round writes it again"
    ),
}
"""``ops.folders``' problems whose fix names import or export, as sync says them."""
CHANGED = "changed since it was last looked at"
APPEARED = "an entry was made there since the folder was last looked at"
VERSION_CONTROL = "a version control directory (of a repository, not a memory)"
_VERSION_CONTROL = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj"})


SETTLING_NS = 2_000_000_000
"""How long after its last change a file's stat may still not tell a later change apart: a file
system's clock moves in ticks (a few ms; FAT's modification times in 2 s), so a file changed again in
the tick it was looked at keeps its stat."""
UNSETTLED = -1
"""The change time of a ``LocalStat`` taken within ``SETTLING_NS`` of the file's last modification:
no stat taken later equals it, so the next scan reads the file again (and, once it has settled,
reports a stat that a later scan may trust)."""


@dataclass(frozen=True)
class LocalStat:
    """What tells a local file's versions apart without reading it: size, modification time,
    inode and change time (which a write, a rename over it or a new hard link moves; ``UNSETTLED``
    where it could not yet tell)."""

    size: int
    mtime_ns: int
    inode: int
    ctime_ns: int

    @classmethod
    def of(cls, found: os.stat_result) -> LocalStat:
        return cls(found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns)

    def describes(self, found: LocalStat) -> bool:
        """True if ``found`` (a stat taken now) is of the file this stat was taken of, unchanged: the
        fields equal, the change time but where it is ``UNSETTLED``."""
        return self == (
            found if self.ctime_ns != UNSETTLED else dataclasses.replace(found, ctime_ns=UNSETTLED)
        )


@dataclass(frozen=True)
class LocalEntry:
    """An entry of DIR as ``scan`` found it: its memory path and (where known) its ``LocalStat``;
    then ``unchanged`` (its stat the caller's: not read), or its bytes (UTF-8) and their sha256 (hex),
    or why it is left alone (``problem``: one of ``ops.folders``' ``LINK``, ``SPECIAL``,
    ``HARD_LINKED``, ``TOO_LARGE``, ``TOO_DEEP``, ``UNREADABLE``, ``NOT_DIRECTORY``, ``TEMPORARY``, as
    ``worded_for_sync`` says them, or ``CHANGED_WHILE_READ``, ``NOT_TEXT``, or the path policy's
    refusal of its name)."""

    path: str
    stat: LocalStat | None = None
    unchanged: bool = False
    data: bytes | None = None
    sha256: str | None = None
    problem: str | None = None


class LocalChanged(Exception):
    """The entry at a path is not what the caller expected (it changed, appeared or went since it
    was looked at): nothing was written or deleted. ``reason`` says what is there."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FolderRefused(Exception):
    """DIR cannot be synced as it is: ``reason`` names why and the fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FolderBusy(FolderRefused):
    """Another sync holds DIR's lock: a refusal that passes once it finishes."""


class SyncFolder:
    """DIR opened for sync (made, 0700, if missing where its parent is) and locked (``flock``) for as long as this is open,
    so that two syncs never work in one folder at once. ``FolderRefused`` when DIR is no directory,
    when another sync holds the lock, or when ``STATE_DIRECTORY``'s name holds anything but a
    directory (a link too). Nothing is written in DIR until sync's state is (``state_directory``)
    or a file is."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._root = _open_given(directory)
        self._state: int | None = None
        try:
            _lock(self._root, directory)
            if _current(self._root, STATE_DIRECTORY) is not None:  # a link or a file: refused now
                self._state = self._open_state()
        except BaseException:
            self.close()
            raise
        self._swept: set[tuple[str, ...]] = set()

    @property
    def has_state(self) -> bool:
        """True if DIR holds sync's state directory (made by an earlier round, or by this one)."""
        return self._state is not None

    @property
    def state_directory(self) -> int:
        """A handle of ``STATE_DIRECTORY`` in DIR (0700), made on first use; for sync's state."""
        if self._state is None:
            self._state = self._open_state()
        return self._state

    def close(self) -> None:
        """Release the handles, and the lock with them."""
        if self._state is not None:
            os.close(self._state)
        os.close(self._root)

    def __enter__(self) -> SyncFolder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def scan(
        self, baseline_stats: Mapping[str, LocalStat], max_bytes: int, rehash: bool = False
    ) -> Iterator[LocalEntry]:
        """Every entry below DIR but ``STATE_DIRECTORY`` and the directories walked into, in sorted
        order (``ops.folders.entries``): a regular file whose stat is ``baseline_stats``' for its path
        ``unchanged`` and never opened (unless ``rehash``), any other read (``max_bytes`` the size
        limit) and checked. Temporary files of a write cut off are removed, never reported. An entry
        gone since its directory was listed is left out."""
        with contextlib.closing(entries(self._root, MEMORY_ROOT, excluded=STATE_DIRECTORY)) as found:
            for entry in found:
                if entry.problem == TEMPORARY:  # the name itself, never what a link points to
                    with contextlib.suppress(FileNotFoundError, PermissionError):
                        os.unlink(entry.name, dir_fd=entry.directory)
                    continue
                local = _looked_at(entry, None if rehash else baseline_stats.get(entry.path), max_bytes)
                if local is not None:
                    yield local

    def adoptable(self, max_bytes: int, most: int = 5) -> list[str]:
        """What stops a folder never synced from being taken as a memory, at most ``most`` of them,
        each ``PATH: why``: anything ``scan`` leaves alone, a name ``create`` refuses, and a version
        control directory (named once, not walked). Empty: DIR holds only what a memory can hold."""
        offenders: list[str] = []
        repositories: set[str] = set()
        with contextlib.closing(entries(self._root, MEMORY_ROOT, excluded=STATE_DIRECTORY)) as found:
            for entry in found:
                repository = _repository(entry.path)
                if repository is not None:
                    if repository not in repositories:
                        repositories.add(repository)
                        offenders.append(f"{shown_path(repository, ())}: {VERSION_CONTROL}")
                else:
                    why = _why_not_adoptable(entry, max_bytes)
                    if why is not None:
                        offenders.append(f"{shown_path(entry.path, ())}: {why}")
                if len(offenders) >= most:
                    break
        return offenders

    def read(self, path: str, expected: LocalStat) -> bytes:
        """The bytes of the file at ``path``, read and checked as ``scan`` reads it; ``LocalChanged``
        unless it is the file ``expected`` (``LeftAlone`` where a link or no directory is in the way)."""
        *parents, name = self._segments(path)
        try:
            directory = directory_below(self._root, parents, make=False, command="sync")
        except FileNotFoundError:
            raise LocalChanged(GONE) from None
        try:
            found = _read(directory, name, path, stat.S_IFREG, expected.size)
        finally:
            self._close(directory)
        if found is None:
            raise LocalChanged(GONE)
        if found.problem is not None and found.problem != TOO_LARGE:
            raise LocalChanged(found.problem)
        if found.stat is None or not expected.describes(found.stat) or found.data is None:
            raise LocalChanged(CHANGED)
        return found.data

    def write(self, path: str, data: bytes, expected: LocalStat | None) -> LocalStat:
        """Replace the file at ``path`` with ``data`` (0600), whole, if the entry there is still the
        file ``expected`` (None: no entry at all; its directories are then made where missing, 0700);
        the new file's stat. ``LocalChanged`` if the entry is another; ``LeftAlone`` for a name of
        sync's own (``KEPT_FOR_SYNC``, ``SYNC_TEMPORARY_NAME``), where a link or no directory is in the
        way, or where this user may not write; ``NameRefused`` where the local file system refuses a
        name. The first write into a directory removes the temporary files a write cut off left there."""
        *parents, name = self._segments(path)
        if is_temporary(name):
            raise LeftAlone(SYNC_TEMPORARY_NAME)
        try:
            directory = directory_below(self._root, parents, make=expected is None, command="sync")
        except FileNotFoundError:
            raise LocalChanged(GONE) from None
        try:
            if tuple(parents) not in self._swept:
                self._swept.add(tuple(parents))
                remove_temporaries(directory)

            def durable_and_expected(descriptor: int) -> None:
                now = _now()  # a later change moves its modification time past this one
                os.utime(descriptor, ns=(now, now - SETTLING_NS))
                os.fsync(descriptor)
                _check(directory, name, expected)

            written = replace(directory, name, data, durable_and_expected)
            os.fsync(directory)
            return LocalStat.of(written)
        except LeftAlone as left:
            raise LeftAlone(worded_for_sync(left.reason)) from None
        except IsADirectoryError:  # one swapped in since the check
            raise LocalChanged(APPEARED) from None
        except PermissionError:
            raise LeftAlone(NOT_WRITABLE) from None
        except OSError as error:
            refused = name_refused(error, None, "sync")
            if refused is None:
                raise
            raise refused from None
        finally:
            self._close(directory)

    def delete(self, path: str, expected: LocalStat) -> bool:
        """Remove the file at ``path`` if it is still the file ``expected``, then each directory it
        leaves empty, up to DIR (never DIR): True if removed, False if nothing is there.
        ``LocalChanged`` if another entry is there; ``LeftAlone`` where a link or no directory is in
        the way, or where this user may not remove it."""
        *parents, name = self._segments(path)
        try:
            directory = directory_below(self._root, parents, make=False, command="sync")
        except FileNotFoundError:
            return False
        try:
            if _current(directory, name) is None:
                return False
            _check(directory, name, expected)
            os.unlink(name, dir_fd=directory)
            os.fsync(directory)
        except PermissionError:
            raise LeftAlone(NOT_REMOVABLE) from None
        finally:
            self._close(directory)
        self._remove_empty(parents)
        return True

    def _open_state(self) -> int:
        """A handle of ``STATE_DIRECTORY``, made if missing, 0700; ``FolderRefused`` for anything else."""
        try:
            state = open_or_make(self._root, STATE_DIRECTORY)
        except NotADirectoryError:
            what = "a symbolic link" if kind(self._root, STATE_DIRECTORY) == LINK else NOT_DIRECTORY
            raise FolderRefused(
                f"{self.directory / STATE_DIRECTORY} is {what}, where sync keeps its state (a directory); "
                "move it away, then sync again"
            ) from None
        try:
            os.fchmod(state, DIRECTORY_MODE)
        except BaseException:
            os.close(state)
            raise
        return state

    def _segments(self, path: str) -> tuple[str, ...]:
        """The segments of the memory file ``path``; ``LeftAlone`` below ``STATE_DIRECTORY``."""
        segments = check_memory_path(path)
        if not segments:
            raise LeftAlone("a directory is there")
        if segments[0] == STATE_DIRECTORY:
            raise LeftAlone(KEPT_FOR_SYNC)
        return segments

    def _remove_empty(self, parents: list[str]) -> None:
        """Remove the directories ``parents`` names, deepest first, while they are empty."""
        for depth in range(len(parents), 0, -1):
            try:
                above = directory_below(self._root, parents[: depth - 1], make=False, command="sync")
            except (OSError, LeftAlone):
                return
            try:
                os.rmdir(parents[depth - 1], dir_fd=above)  # a link there: ENOTDIR, never followed
            except OSError:
                return
            finally:
                self._close(above)

    def _close(self, directory: int) -> None:
        if directory != self._root:
            os.close(directory)


def _open_given(directory: Path) -> int:
    """A handle of DIR, resolved as given, made (0700) if missing where its parent is: a path
    mistyped above DIR is refused, never made."""
    refused = FolderRefused(
        f"{directory} is not a folder (a file or another entry is there, or above it): give the path of "
        "a folder to sync, or of one to make"
    )
    try:
        directory.mkdir(mode=DIRECTORY_MODE, exist_ok=True)
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FolderRefused(
            f"{directory.parent} does not exist, and sync makes the folder it is given but not the folders "
            f"above it (is the path mistyped?): make {directory.parent} first, or give another folder; "
            "nothing was made"
        ) from None
    except (FileExistsError, NotADirectoryError):
        raise refused from None


def _lock(root: int, directory: Path) -> None:
    """Lock DIR (its handle ``root``) for this sync, ``FolderBusy`` if another holds it."""
    try:
        fcntl.flock(root, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise FolderBusy(
            f"another s3memory sync is working in {directory}; let it finish (or stop it), then sync again"
        ) from None


def _looked_at(entry: Entry, baseline: LocalStat | None, max_bytes: int) -> LocalEntry | None:
    """What ``scan`` reports of ``entry``: its problem, or its name's refusal, or ``unchanged`` when
    its stat is ``baseline``, or what reading it found (None: it is gone)."""
    if entry.listed is None:
        return LocalEntry(
            entry.path, problem=None if entry.problem is None else worded_for_sync(entry.problem)
        )
    try:
        memory_path(entry.path)
    except CommandError as error:
        return LocalEntry(entry.path, problem=error.message)
    listed = LocalStat.of(entry.listed)
    if stat.S_ISREG(entry.listed.st_mode) and listed == baseline:
        return LocalEntry(entry.path, listed, unchanged=True)
    found = _read(entry.directory, entry.name, entry.path, entry.listed.st_mode, max_bytes)
    if found is None or found.stat is None or found.data is None:
        return found
    if _now() - found.stat.mtime_ns < SETTLING_NS:
        return dataclasses.replace(found, stat=dataclasses.replace(found.stat, ctime_ns=UNSETTLED))
    return found


def worded_for_sync(problem: str) -> str:
    """``problem`` (one of ``ops.folders``') with sync's fix where it names import's or export's."""
    return _WORDED_FOR_SYNC.get(problem, problem)


def _now() -> int:
    """The time now, in ns since the epoch, as file times count it."""
    return time.time_ns()


def _read(directory: int, name: str, path: str, mode: int, max_bytes: int) -> LocalEntry | None:
    """The file ``name`` (``mode`` as listed) read once (``ops.folders.read_entry``), refused if its
    stat before the read differs from after it or from what its name names then, or if it is not
    UTF-8; None if it is gone."""
    found = read_entry(directory, name, mode, max_bytes)
    if found is None:
        return None
    if found.data is None or found.before is None or found.after is None:
        return LocalEntry(
            path,
            None if found.before is None else LocalStat.of(found.before),
            problem=None if found.problem is None else worded_for_sync(found.problem),
        )
    before = LocalStat.of(found.before)
    now = _current(directory, name)
    if (
        found.size != found.before.st_size
        or LocalStat.of(found.after) != before
        or now is None
        or LocalStat.of(now) != before
    ):
        return LocalEntry(path, before, problem=CHANGED_WHILE_READ)
    try:
        found.data.decode("utf-8")
    except UnicodeDecodeError:
        return LocalEntry(path, before, problem=NOT_TEXT)
    return LocalEntry(path, before, data=found.data, sha256=hashlib.sha256(found.data).hexdigest())


def _current(directory: int, name: str) -> os.stat_result | None:
    """What the entry ``name`` is now (not followed), None if nothing is there."""
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check(directory: int, name: str, expected: LocalStat | None) -> None:
    """``LocalChanged`` unless the entry ``name`` is the regular file ``expected`` (None: nothing)."""
    now = _current(directory, name)
    if expected is None:
        if now is not None:
            raise LocalChanged(APPEARED)
    elif now is None:
        raise LocalChanged(GONE)
    elif not stat.S_ISREG(now.st_mode) or not expected.describes(LocalStat.of(now)):
        raise LocalChanged(CHANGED)


def _repository(path: str) -> str | None:
    """The version control directory ``path`` lies in (``_VERSION_CONTROL``), None for none."""
    segments = path.split("/")
    for depth, segment in enumerate(segments[2:], start=3):
        if segment in _VERSION_CONTROL:
            return "/".join(segments[:depth])
    return None


def _why_not_adoptable(entry: Entry, max_bytes: int) -> str | None:
    """Why ``entry`` stops adoption: what ``scan`` would report, or a name ``create`` refuses."""
    if entry.listed is not None and stat.S_ISDIR(entry.listed.st_mode):
        return None
    local = _looked_at(entry, None, max_bytes)
    if local is None:
        return None
    if local.problem is not None:
        return local.problem
    try:
        check_new_name(memory_path(local.path))
    except CommandError as error:
        return error.message
    return None
