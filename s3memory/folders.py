"""Memory folders on local disk in the layout of the SDK's ``BetaLocalFilesystemMemoryTool``:
``<base>/memories/<path below /memories>``, files of UTF-8 bytes (mode 0600) in directories (0700).

Reading walks the folder without following symbolic links; writing replaces each file whole (a temporary
file renamed over it), so a process that dies half-way leaves each file either old or new.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MEMORIES = "memories"
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


@dataclass(frozen=True)
class LocalFile:
    """A regular file of a memory folder: its memory path (``/memories/...``) and bytes, or the reason
    it cannot be one (a symbolic link, a special file)."""

    path: str
    data: bytes | None
    problem: str | None = None


def memory_root(base: Path) -> Path:
    return base / MEMORIES


def walk(base: Path) -> Iterator[LocalFile]:
    """Every entry below ``<base>/memories`` that is not a directory, in sorted order."""
    root = memory_root(base)
    if not root.is_dir() or root.is_symlink():
        raise FileNotFoundError(f"{root} is not a directory (a memory folder holds memories/)")
    for directory, subdirectories, files in os.walk(root, followlinks=False):
        subdirectories.sort()
        here = Path(directory)
        linked = [name for name in subdirectories if (here / name).is_symlink()]
        for name in linked:
            subdirectories.remove(name)
        for name in sorted([*files, *linked]):
            full = here / name
            path = "/" + MEMORIES + "/" + full.relative_to(root).as_posix()
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                yield LocalFile(path, None, "a symbolic link")
            elif not stat.S_ISREG(mode):
                yield LocalFile(path, None, "not a regular file")
            else:
                yield LocalFile(path, full.read_bytes())


def local_path(base: Path, path: str) -> Path:
    """Where the memory file ``path`` (``/memories/...``, already validated) lives below ``base``."""
    return memory_root(base).joinpath(*path.split("/")[2:])


def read_existing(base: Path, path: str) -> bytes | None:
    target = local_path(base, path)
    return target.read_bytes() if target.is_file() and not target.is_symlink() else None


def write(base: Path, path: str, data: bytes) -> None:
    """Write ``data`` at the memory path ``path`` below ``base``, whole or not at all."""
    target = local_path(base, path)
    directory = target.parent
    directory.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".s3memory-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
