"""Folders synced with a memory in a test (``s3memory sync``): the operations over the tests' bucket in
their storage format, a folder's files and a memory's by path, files written into a folder, and a
round's process killed at its k-th S3 call (``Killer``) or local step (``local_death``), its requests
in flight ending with it (``own_requests``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage import concurrency
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY
from tests.support.faults import SimulatedCrash

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


class Killer:
    """The process dies (``SimulatedCrash``) at the k-th S3 call of a client, before it is sent
    (``after``: once it is applied, its answer lost); every call after that dies too."""

    def __init__(self, client: Any, at: int, *, after: bool) -> None:
        self.calls = 0
        self.at = at
        self.dead = False
        self.armed = False
        event = "after-call.s3" if after else "before-call.s3"
        client.meta.events.register(event, self._call)

    def _call(self, **_: Any) -> None:
        if not self.armed:
            return
        self.calls += 1
        if self.dead or self.calls == self.at:
            self.dead = True
            raise SimulatedCrash(f"killed at S3 call {self.at}")


@contextlib.contextmanager
def own_requests() -> Iterator[None]:
    """The requests the block sends beside its thread (``storage.concurrency.side``) run on workers of
    its own, waited for as it ends, also when its process dies (``SimulatedCrash``): what a dead
    process had in flight lands, or dies as its kill says, before anything after the block runs. Run
    late by a loaded machine's workers, a dead process's write would otherwise land in a later round
    (after one machine's listing missed it, before the other's finds it the same as its own file:
    both rounds quiet, the folders apart), which no process does."""
    workers = ThreadPoolExecutor(
        max_workers=concurrency.PARALLEL_REQUESTS, thread_name_prefix="s3memory-test"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(concurrency, "_pool", workers)
        try:
            yield
        finally:
            workers.shutdown(wait=True)


@contextlib.contextmanager
def local_death(at: int, *, after: bool) -> Iterator[list[int]]:
    """The process dies at the k-th ``os.rename``, ``os.replace``, ``os.unlink`` or ``os.write`` of the
    block (``after``: once it is done; a write dies half-way either way), its requests in flight
    ending with it (``own_requests``). Yields the count so far."""
    count = [0]
    originals: dict[str, Callable[..., Any]] = {
        name: getattr(os, name) for name in ("rename", "replace", "unlink", "write")
    }

    def dying(name: str) -> Callable[..., Any]:
        original = originals[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            count[0] += 1
            if count[0] < at:
                return original(*args, **kwargs)
            if name == "write":
                descriptor, data = args[0], bytes(args[1])
                original(descriptor, data[: max(1, len(data) // 2)])
            elif after and count[0] == at:
                original(*args, **kwargs)
            raise SimulatedCrash(f"killed at local step {at}")

        return call

    with pytest.MonkeyPatch.context() as patch, own_requests():
        for name in originals:
            patch.setattr(os, name, dying(name))
        yield count
