"""DIR, the local side of sync: ``DIR/notes.md`` is ``/memories/notes.md``.

DIR is taken as hostile, as export's and import's folders are (``ops/folders.py`` and
``ops/folder_writes.py``, whose walk and primitives this module uses): DIR is resolved as given, once;
everything below it is opened from its directory's handle without following a link. Each entry is
looked at and read as ``sync.local_entries`` says; a file sync writes is given a modification time
that any later change moves (``SETTLING_NS``).

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
import fcntl
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from s3memory.core.paths import MEMORY_ROOT, check_memory_path, shown_path
from s3memory.ops.folder_writes import directory_below, remove_temporaries, replace
from s3memory.ops.folders import (
    DIRECTORY_MODE,
    GONE,
    LINK,
    NOT_DIRECTORY,
    TEMPORARY,
    TOO_LARGE,
    LeftAlone,
    entries,
    is_temporary,
    kind,
    name_refused,
    open_or_make,
)
from s3memory.sync.local_entries import (
    SETTLING_NS,
    VERSION_CONTROL,
    LocalEntry,
    LocalStat,
    current,
    looked_at,
    now_ns,
    read_checked,
    repository_of,
    why_not_adoptable,
    worded_for_sync,
)

STATE_DIRECTORY = ".s3memory-sync"
"""The directory in DIR that holds sync's own state; no memory file below it is ever synced."""
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
CHANGED = "changed since it was last looked at"
APPEARED = "an entry was made there since the folder was last looked at"


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
            if current(self._root, STATE_DIRECTORY) is not None:  # a link or a file: refused now
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
                local = looked_at(entry, None if rehash else baseline_stats.get(entry.path), max_bytes)
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
                repository = repository_of(entry.path)
                if repository is not None:
                    if repository not in repositories:
                        repositories.add(repository)
                        offenders.append(f"{shown_path(repository, ())}: {VERSION_CONTROL}")
                else:
                    why = why_not_adoptable(entry, max_bytes)
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
            found = read_checked(directory, name, path, stat.S_IFREG, expected.size)
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
                now = now_ns()  # a later change moves its modification time past this one
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
            if current(directory, name) is None:
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


def _check(directory: int, name: str, expected: LocalStat | None) -> None:
    """``LocalChanged`` unless the entry ``name`` is the regular file ``expected`` (None: nothing)."""
    now = current(directory, name)
    if expected is None:
        if now is not None:
            raise LocalChanged(APPEARED)
    elif now is None:
        raise LocalChanged(GONE)
    elif not stat.S_ISREG(now.st_mode) or not expected.describes(LocalStat.of(now)):
        raise LocalChanged(CHANGED)
