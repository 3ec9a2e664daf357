"""Writing a memory folder on local disk (``ops.folders``' layout), as export and sync do: each file
replaced whole (a new file under a temporary name, created exclusively, renamed over the name), so a
process that dies half-way leaves each file either old or new, and a file is never written through a
link or into another file's inode (a hard link keeps its bytes); each directory opened (or made) from
its parent's handle without following a link. A process killed between the two leaves its new file
under a temporary name (``is_temporary``), which the next write into that directory removes
(``remove_temporaries``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from s3memory.core.paths import check_memory_path
from s3memory.ops.folders import (
    FILE_MODE,
    LINK,
    MEMORIES,
    NOT_DIRECTORY,
    UNREADABLE,
    LeftAlone,
    is_temporary,
    kind,
    name_refused,
    open_directory,
    open_file,
    open_or_make,
    open_root,
    read_at_most,
    temporary_name,
)

TEMPORARY_NAME = (
    "a name export gives its temporary files, never exported (rename the stored file to export it)"
)
NOT_WRITABLE = (
    "this user may not write the file there (permission denied); change the permissions, then export again"
)
LOST_TEMPORARY = (
    "its temporary file was removed before it was renamed into place (by another export into this "
    "folder?); export again"
)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Target:
    """``<base>/memories`` opened for export (``base`` and ``memories`` made if missing): each
    file is written below it, in directories opened one by one from its handle, and nowhere else.
    The first time a file goes to a directory, the temporary files an export cut off left there are
    removed (``is_temporary``)."""

    def __init__(self, base: Path) -> None:
        self._root = open_root(base, make=True)
        self._swept: set[tuple[str, ...]] = set()

    def __enter__(self) -> Target:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        os.close(self._root)

    def put(self, path: str, data: bytes, *, overwrite: bool) -> bool:
        """Write ``data`` at the memory file ``path``, whole or not at all: True if written, False if
        the same bytes are there. ``LeftAlone`` when ``path`` ends in a name of export's temporary
        files, when a link or anything but a directory is where a directory belongs, when a
        directory is at ``path``, when this user may not write there, or (without ``overwrite``)
        when another file, a link, a special file or a file this user may not read is there;
        ``overwrite`` replaces the entry itself, never what a link points to. ``NameRefused`` when
        the local file system refuses a name on ``path`` (``name_refused``)."""
        *parents, name = check_memory_path(path)
        if is_temporary(name):
            raise LeftAlone(TEMPORARY_NAME)
        directory = self._directory(parents)
        try:
            try:
                mode: int | None = os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None:
                if stat.S_ISDIR(mode):
                    raise LeftAlone("a directory is there")
                occupied = _difference(directory, name, data) if stat.S_ISREG(mode) else _occupied(mode)
                if occupied is None:
                    return False
                if not overwrite:
                    raise LeftAlone(occupied)
            replace(directory, name, data)
            return True
        except IsADirectoryError:  # one swapped in since it was checked
            raise LeftAlone("a directory is there") from None
        except PermissionError:
            raise LeftAlone(NOT_WRITABLE) from None
        except OSError as error:
            refused = name_refused(error, None)
            if refused is None:
                raise
            raise refused from None
        finally:
            if directory != self._root:
                os.close(directory)

    def _directory(self, parents: list[str]) -> int:
        """A handle of the directory ``parents`` below the root, each made where missing, and swept
        of temporary files the first time."""
        directory = directory_below(self._root, parents, make=True, command="export")
        if tuple(parents) not in self._swept:
            self._swept.add(tuple(parents))
            remove_temporaries(directory)
        return directory


def directory_below(root: int, parents: list[str], *, make: bool, command: str) -> int:
    """A handle of the directory ``parents`` below the open ``root`` (``/memories``), each opened from
    its parent's handle without following a link (``make``: made where missing, else
    ``FileNotFoundError``); ``root`` itself for none. ``LeftAlone`` where a link or anything but a
    directory is in the way or this user may not open or make one, ``NameRefused`` where the local file
    system refuses a name (``name_refused``): each naming the fix, then running ``command`` again."""
    directory = root
    for depth, name in enumerate(parents):
        where = "/".join(["", MEMORIES, *parents[: depth + 1]])
        try:
            child = (open_or_make if make else open_directory)(directory, name)
        except NotADirectoryError:
            raise LeftAlone(
                f"{where} is a symbolic link, which {command} never follows; remove it to {command} below it"
                if kind(directory, name) == LINK
                else f"{where} is {NOT_DIRECTORY}; remove it to {command} below it"
            ) from None
        except PermissionError:
            raise LeftAlone(
                f"{where} may not be read or made by this user (permission denied); change its "
                f"permissions to {command} below it"
            ) from None
        except OSError as error:
            refused = name_refused(error, where, command)
            if refused is None:
                raise
            raise refused from None
        finally:
            if directory != root:
                os.close(directory)
        directory = child
    return directory


def _occupied(mode: int) -> str:
    """Why export leaves alone the link or special file it found at a file's path (without
    ``overwrite``)."""
    return f"{LINK} is there" if stat.S_ISLNK(mode) else "a special file is there"


def _difference(directory: int, name: str, data: bytes) -> str | None:
    """None if ``name`` is a regular file of exactly ``data`` (at most ``len(data) + 1`` bytes read);
    else why export leaves it alone (without ``overwrite``)."""
    descriptor = open_file(directory, name)
    if descriptor == UNREADABLE:
        return "a local file this user may not read is there (permission denied)"
    if isinstance(descriptor, str):  # gone, or swapped since it was checked
        return "a different local file is there"
    try:
        opened = os.fstat(descriptor)
        same = (
            stat.S_ISREG(opened.st_mode)
            and opened.st_size == len(data)
            and read_at_most(descriptor, len(data) + 1) == data
        )
    finally:
        os.close(descriptor)
    return None if same else "a different local file is there"


def remove_temporaries(directory: int) -> None:
    """Remove from ``directory`` the temporary files an export cut off left (``is_temporary``): the
    names themselves, never a directory, never what a link points to."""
    for name in os.listdir(directory):
        if is_temporary(name):
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                os.unlink(name, dir_fd=directory)


def replace(
    directory: int, name: str, data: bytes, before: Callable[[int], None] | None = None
) -> os.stat_result:
    """A new file of ``data`` (0600) under a temporary name (``is_temporary``), renamed over ``name``
    in ``directory`` once ``before`` (given the new file's descriptor, its bytes written) returns: an
    exception of ``before`` leaves ``name`` as it was. The new file's ``fstat``; ``LeftAlone`` if it is
    removed before it is renamed."""
    temporary = temporary_name()
    descriptor = os.open(temporary, _NEW_FILE, FILE_MODE, dir_fd=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(data)
            handle.flush()
            if before is not None:
                before(handle.fileno())
            try:
                os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
            except FileNotFoundError:
                raise LeftAlone(LOST_TEMPORARY) from None
            return os.fstat(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=directory)
        raise


def write(base: Path, path: str, data: bytes) -> None:
    """Write ``data`` at the memory file ``path`` below ``base`` as export does, over a different
    file (``LeftAlone`` for what export leaves alone even then)."""
    with Target(base) as target:
        target.put(path, data, overwrite=True)
