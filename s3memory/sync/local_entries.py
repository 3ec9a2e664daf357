"""DIR's entries as sync looks at them (``SyncFolder.scan``, ``read``, ``adoptable``), each read once
(``ops.folders.read_entry``: at most the size limit plus one byte, never through a link). A file whose
``fstat`` changed between before and after its read, or whose name then names another entry, is
refused as ``CHANGED_WHILE_READ``. A file whose stat (``LocalStat``) is the one the caller last saw is
not opened at all; a stat taken in the moments after a file's change (``SETTLING_NS``) is never
trusted so (``UNSETTLED``), since a file changed again within one tick of the file system's clock
keeps it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import time
from dataclasses import dataclass

from s3memory.core.paths import check_new_name, memory_path
from s3memory.errors import CommandError
from s3memory.ops.folder_writes import LOST_TEMPORARY
from s3memory.ops.folders import HARD_LINKED, TEMPORARY, UNREADABLE, Entry, read_entry

CHANGED_WHILE_READ = "changed while it was read (written to, or swapped for another file)"
NOT_TEXT = "not a valid UTF-8 text file"
VERSION_CONTROL = "a version control directory (of a repository, not a memory)"
_VERSION_CONTROL = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj"})

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


def looked_at(entry: Entry, baseline: LocalStat | None, max_bytes: int) -> LocalEntry | None:
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
    found = read_checked(entry.directory, entry.name, entry.path, entry.listed.st_mode, max_bytes)
    if found is None or found.stat is None or found.data is None:
        return found
    if now_ns() - found.stat.mtime_ns < SETTLING_NS:
        return dataclasses.replace(found, stat=dataclasses.replace(found.stat, ctime_ns=UNSETTLED))
    return found


def worded_for_sync(problem: str) -> str:
    """``problem`` (one of ``ops.folders``') with sync's fix where it names import's or export's."""
    return _WORDED_FOR_SYNC.get(problem, problem)


def now_ns() -> int:
    """The time now, in ns since the epoch, as file times count it."""
    return time.time_ns()


def read_checked(directory: int, name: str, path: str, mode: int, max_bytes: int) -> LocalEntry | None:
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
    now = current(directory, name)
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


def current(directory: int, name: str) -> os.stat_result | None:
    """What the entry ``name`` is now (not followed), None if nothing is there."""
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


def repository_of(path: str) -> str | None:
    """The version control directory ``path`` lies in (``_VERSION_CONTROL``), None for none."""
    segments = path.split("/")
    for depth, segment in enumerate(segments[2:], start=3):
        if segment in _VERSION_CONTROL:
            return "/".join(segments[:depth])
    return None


def why_not_adoptable(entry: Entry, max_bytes: int) -> str | None:
    """Why ``entry`` stops adoption: what ``scan`` would report, or a name ``create`` refuses."""
    if entry.listed is not None and stat.S_ISDIR(entry.listed.st_mode):
        return None
    local = looked_at(entry, None, max_bytes)
    if local is None:
        return None
    if local.problem is not None:
        return local.problem
    try:
        check_new_name(memory_path(local.path))
    except CommandError as error:
        return error.message
    return None
