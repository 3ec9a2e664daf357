"""Folders synced with a memory in a test (``s3memory sync``): the operations over the tests' bucket in
their storage format, a folder's files and a memory's by path, files written into a folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY

STATE = ".s3memory-sync"


def make_operations(s3: Any, storage_format: int, bucket: str = BUCKET, page_size: int = 1000) -> Operations:
    return Operations(
        Bucket(s3, bucket, page_size=page_size), LocalKeyProvider(MASTER_KEY), storage_format=storage_format
    )


def tree(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` but sync's own, by its memory path."""
    return {
        "/memories/" + path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and not path.relative_to(directory).as_posix().startswith(STATE)
    }


def memory(operations: Operations, user: str) -> dict[str, bytes]:
    """Every file of ``user``'s memory, by path."""
    return {
        stored.path: operations.read(user, stored.path).encode("utf-8") for stored in operations.files(user)
    }


def write(directory: Path, path: str, text: str) -> None:
    """``text`` at ``path`` below ``directory`` (its directories made)."""
    target = directory / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def settled(path: Path) -> None:
    """``path`` written a minute ago: a file written this very moment is read again by the next scan
    (its stat may not yet tell a later write from it)."""
    past = os.stat(path).st_mtime_ns - 60 * 10**9
    os.utime(path, ns=(past, past))


def converged(operations: Operations, user: str, *folders: Path) -> dict[str, bytes]:
    """What every folder and ``user``'s memory hold, once they hold the same (asserted)."""
    held = memory(operations, user)
    for folder in folders:
        assert tree(folder) == held, folder
    return held
