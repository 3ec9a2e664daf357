"""Memory folders on local disk in the layout of the SDK's ``BetaLocalFilesystemMemoryTool``:
``<base>/memories/<path below /memories>``, files of UTF-8 bytes (mode 0600) in directories (0700).

A folder is taken as hostile: whoever controls it may plant symbolic links, hard links, FIFOs,
devices and huge or sparse files, and swap any entry while we work (``docs/operations.md``,
"Export and import"). ``base`` is the operator's and is resolved as given, once; ``memories`` and
everything below it are opened relative to a handle of their directory, without following a link
(``O_NOFOLLOW``, and ``O_DIRECTORY`` for directories), and what was opened is checked (``fstat``)
before it is used, so no path is resolved twice.

Reading opens each entry once (``O_NONBLOCK``: a FIFO swapped in cannot block), reads at most the
size limit plus one byte, and never takes an entry of the name export gives its temporary files
(``is_temporary``) as a memory file. Writing is ``ops.folder_writes``'; what both sides use (the
root's opening, the primitives that open an entry, temporary names, ``LeftAlone``, ``NameRefused``)
lives here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

from s3memory.core.placement import MAX_DEPTH

MEMORIES = "memories"
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
LINK = "a symbolic link"
SPECIAL = "not a regular file"
NOT_DIRECTORY = "not a directory"
GONE = "gone"
TOO_LARGE = "larger than the size limit"
HARD_LINKED = "a file with other hard links (import a copy of it)"
TOO_DEEP = f"a directory {MAX_DEPTH} levels below /memories, where no file may lie"
UNREADABLE = "not readable by this user (permission denied: make it readable, then import again)"
TEMPORARY = (
    "a temporary file of an export cut off or still running, never imported (an export into this "
    "folder removes it)"
)
_NAME_REFUSED = {
    errno.ENAMETOOLONG: "too long: ENAMETOOLONG, most take 255 bytes a name",
    errno.EILSEQ: "not in an encoding it takes: EILSEQ",
    errno.EINVAL: "a character it does not take: EINVAL",
}
"""Why the local file system refuses a name, by the error an open, a stat or a mkdir of it fails with."""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_OPEN_REFUSED = {
    errno.ENOENT: GONE,
    errno.ELOOP: LINK,  # a link swapped in since the entry was checked
    errno.ENXIO: SPECIAL,  # a socket (or a device without a driver) swapped in
    errno.ENODEV: SPECIAL,
    errno.EACCES: UNREADABLE,
    errno.EPERM: UNREADABLE,
}
"""Why an entry cannot be opened for reading, by the error its open fails with."""
_TEMPORARY_PREFIX = ".s3memory-"
_TEMPORARY_RANDOM_BYTES = 8
_TEMPORARY_NAME = re.compile(rf"{re.escape(_TEMPORARY_PREFIX)}[0-9a-f]{{{2 * _TEMPORARY_RANDOM_BYTES}}}")


def temporary_name() -> str:
    """A new name for the temporary file a file is written as before it is renamed over its name."""
    return _TEMPORARY_PREFIX + secrets.token_hex(_TEMPORARY_RANDOM_BYTES)


def is_temporary(name: str) -> bool:
    """True if ``name`` (one segment) is a name export gives its temporary files: an entry of that
    name is export's, never a memory file, and a memory file of that name is never exported."""
    return _TEMPORARY_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class LocalFile:
    """An entry of a memory folder: its memory path (``/memories/...``) and size, and its bytes, or
    (``data`` None) why it cannot be imported: a symbolic link, a special file, a hard link, a
    directory too deep, an entry this user may not read, an export's ``TEMPORARY`` file, or
    ``TOO_LARGE`` (then ``size`` is over the limit, and nothing was kept)."""

    path: str
    size: int
    data: bytes | None
    problem: str | None = None


class LeftAlone(Exception):
    """What export found in its way at a path, and left as it was."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NameRefused(Exception):
    """A name on a file's path that the local file system refuses (too long, not in its encoding):
    export writes nothing there; ``reason`` names it and the fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def name_refused(error: OSError, directory: str | None, command: str = "export") -> NameRefused | None:
    """The ``NameRefused`` of ``error`` where it is the file system refusing a name (the file's own,
    or with ``directory`` that directory's), else None; the fix ends in running ``command`` again."""
    cause = _NAME_REFUSED.get(error.errno or 0)
    if cause is None:
        return None
    if directory is None:
        return NameRefused(
            f"the local file system refuses its name ({cause}); rename the file with the memory tool's "
            f"`rename` command (`s3memory cat` shows its text meanwhile), then {command} again"
        )
    return NameRefused(
        f"the local file system refuses the name of the directory {directory} ({cause}); rename that "
        f"directory with the memory tool's `rename` command, then {command} again"
    )


def open_root(base: Path, *, make: bool = False) -> int:
    """A handle of ``<base>/memories``: ``base`` resolved as given (``make``: made if missing, with
    ``memories``), ``memories`` a directory and no link."""
    root = base / MEMORIES
    if make:
        try:
            base.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise FileExistsError(
                f"{base} is not a folder (a file or another entry is there, or above it): give the path of "
                "a folder to export into, or of one to make"
            ) from None
    try:
        above = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{root} is not a directory (a memory folder holds memories/)") from None
    try:
        return (open_or_make if make else open_directory)(above, MEMORIES)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(
            f"{root} is not a directory (a memory folder holds memories/, a directory and no symbolic link)"
        ) from None
    finally:
        os.close(above)


def walk(base: Path, max_bytes: int) -> Iterator[LocalFile]:
    """Every entry below ``<base>/memories`` but the directories it descends into, in sorted order (a
    directory's own entries before its subdirectories'): a file's bytes, of which at most
    ``max_bytes + 1`` are read, or why it has none. An entry gone since its directory was listed is
    left out. The work is linear in the folder: each entry is listed, checked and opened once."""
    root = open_root(base)
    try:
        for entry in entries(root, "/" + MEMORIES):
            if entry.listed is None:
                yield LocalFile(entry.path, 0, None, entry.problem)
                continue
            found = read_entry(entry.directory, entry.name, entry.listed.st_mode, max_bytes)
            if found is not None:
                yield LocalFile(entry.path, found.size, found.data, found.problem)
    finally:
        os.close(root)


@dataclass(frozen=True)
class Entry:
    """An entry ``entries`` found: its memory path, the handle of its directory and its name there
    (the handle valid until the walk goes on), and what ``lstat`` found (``listed``), or (``listed``
    None) why it is not walked: ``UNREADABLE``, ``TEMPORARY`` (an export's), ``TOO_DEEP``, or ``LINK``
    or ``NOT_DIRECTORY`` where a directory was listed."""

    path: str
    directory: int
    name: str
    listed: os.stat_result | None
    problem: str | None = None


def entries(
    directory: int, path: str, depth: int = 0, excluded: str | None = None
) -> Generator[Entry, None, None]:
    """Every entry below the open ``directory`` (memory path ``path``, ``depth`` levels below the root)
    but the directories it descends into and ``excluded`` (a name in ``directory`` itself), in sorted
    order, a directory's own entries before its subdirectories'; each directory opened from its
    parent's handle without following a link. An entry gone since it was listed is left out."""
    subdirectories: list[str] = []
    for name in sorted(os.listdir(directory)):  # of an open handle: never denied
        if name == excluded:
            continue
        try:
            listed = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except PermissionError:  # in a directory this user may list but not search
            yield Entry(f"{path}/{name}", directory, name, None, UNREADABLE)
            continue
        if stat.S_ISDIR(listed.st_mode):
            subdirectories.append(name)
            continue
        if is_temporary(name):
            yield Entry(f"{path}/{name}", directory, name, None, TEMPORARY)
            continue
        yield Entry(f"{path}/{name}", directory, name, listed)
    for name in subdirectories:
        below = f"{path}/{name}"
        if depth + 1 >= MAX_DEPTH:
            yield Entry(below, directory, name, None, TOO_DEEP)
            continue
        try:
            child = open_directory(directory, name)
        except (FileNotFoundError, NotADirectoryError):  # gone, or swapped since it was checked
            found = kind(directory, name)
            if found is not None:
                yield Entry(below, directory, name, None, found)
            continue
        except PermissionError:
            yield Entry(below, directory, name, None, UNREADABLE)
            continue
        try:
            yield from entries(child, below, depth + 1)
        finally:
            os.close(child)


@dataclass(frozen=True)
class Read:
    """What ``read_entry`` found: the file's bytes (``size`` of them) and its ``fstat`` before and
    after they were read, or (``data`` None) why it has none, with its size where ``TOO_LARGE``."""

    size: int
    data: bytes | None
    before: os.stat_result | None = None
    after: os.stat_result | None = None
    problem: str | None = None


def read_entry(directory: int, name: str, mode: int, max_bytes: int) -> Read | None:
    """The entry ``name`` (``mode`` as listed), opened once without following a link and checked by
    what was opened, at most ``max_bytes + 1`` bytes read; None if it is gone."""
    if not stat.S_ISREG(mode):
        return Read(0, None, problem=LINK if stat.S_ISLNK(mode) else SPECIAL)
    descriptor = open_file(directory, name)
    if isinstance(descriptor, str):
        return None if descriptor == GONE else Read(0, None, problem=descriptor)
    try:
        opened = os.fstat(descriptor)
        if not stat.S_ISREG(opened.st_mode):
            return Read(0, None, problem=SPECIAL)
        if opened.st_nlink > 1:
            return Read(0, None, problem=HARD_LINKED)
        if opened.st_size > max_bytes:
            return Read(opened.st_size, None, opened, problem=TOO_LARGE)
        data = read_at_most(descriptor, max_bytes + 1)
        now = os.fstat(descriptor)
        if len(data) > max_bytes:  # grew since it was checked: its size now
            return Read(max(now.st_size, len(data)), None, opened, now, TOO_LARGE)
        return Read(len(data), data, opened, now)
    finally:
        os.close(descriptor)


def open_file(directory: int, name: str) -> int | str:
    """A descriptor of ``name`` opened for reading without following a link (and without blocking on
    a FIFO), or why it cannot be (``_OPEN_REFUSED``): ``GONE``, ``LINK`` or ``SPECIAL`` (swapped in
    since it was checked), or ``UNREADABLE``."""
    try:
        return os.open(name, _FILE, dir_fd=directory)
    except OSError as error:
        refused = _OPEN_REFUSED.get(error.errno or 0)
        if refused is None:
            raise
        return refused


def open_directory(directory: int, name: str) -> int:
    """A handle of the directory ``name``; ``NotADirectoryError`` for anything else, a link too."""
    return os.open(name, _DIRECTORY, dir_fd=directory)


def open_or_make(directory: int, name: str) -> int:
    """A handle of the directory ``name``, made (0700) if missing."""
    try:
        return open_directory(directory, name)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, DIRECTORY_MODE, dir_fd=directory)
        return open_directory(directory, name)


def read_at_most(descriptor: int, limit: int) -> bytes:
    """The first ``limit`` bytes of the open file, or all of it if it is shorter."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(descriptor, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def kind(directory: int, name: str) -> str | None:
    """What the entry ``name`` is, when it is no directory: ``LINK`` or ``NOT_DIRECTORY``; None if
    it is gone."""
    try:
        mode = os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    return LINK if stat.S_ISLNK(mode) else NOT_DIRECTORY
