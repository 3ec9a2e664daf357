"""A sync round killed between any two steps is finished by the next, with nothing lost or duplicated
(``docs/sync.md``): a round that pushes, pulls, deletes on both sides and keeps a conflict is killed
at its k-th S3 request (before it is sent, or once it is applied and its answer lost) or at its k-th
local rename, unlink or write (a write cut half-way), for every k; rounds then run from what the
folders and the bucket hold (a new ``Operations``, as a new process), and both folders and the memory
end the same, every text at its path or in its one conflict copy.

``make test`` kills at a few steps of each kind; the ``every_phase`` run (``make test-all``) at every
step."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from s3memory.ops.operations import Operations
from tests.conftest import STORAGE_FORMAT
from tests.support.faults import SimulatedCrash
from tests.support.synced import converged, make_operations, settled, write

pytestmark = [pytest.mark.takes_format]

MTIME_NS = 1_765_000_000 * 10**9  # 2025-12-06T05:46:40Z
COPY = "/memories/e.conflict-laptop-20251206T054640Z.md"
FINAL = {
    "/memories/a.md": b"a, edited on the laptop\n",
    "/memories/c.md": b"c, edited on the desktop\n",
    "/memories/e.md": b"e, edited on the desktop\n",
    COPY: b"e, edited on the laptop\n",
    "/memories/new.md": b"new on the laptop\n",
}


def scene(operations: Operations, user: str, root: Path) -> tuple[Path, Path]:
    """Two folders in step with ``user``'s memory; then the desktop's changes synced (c edited, d
    deleted, e edited) and the laptop's made, not synced (a edited, b deleted, new.md made, e edited)."""
    laptop, desktop = root / "laptop", root / "desktop"
    for name in "abcde":
        write(laptop, f"{name}.md", f"{name}\n")
        settled(laptop / f"{name}.md")
    operations.sync(user, laptop, machine="laptop")
    operations.sync(user, desktop, machine="desktop")
    write(desktop, "c.md", "c, edited on the desktop\n")
    (desktop / "d.md").unlink()
    write(desktop, "e.md", "e, edited on the desktop\n")
    operations.sync(user, desktop, machine="desktop")
    write(laptop, "a.md", "a, edited on the laptop\n")
    (laptop / "b.md").unlink()
    write(laptop, "new.md", "new on the laptop\n")
    write(laptop, "e.md", "e, edited on the laptop\n")
    os.utime(laptop / "e.md", ns=(MTIME_NS, MTIME_NS))
    return laptop, desktop


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
def local_death(at: int, *, after: bool) -> Iterator[list[int]]:
    """The process dies at the k-th ``os.rename``, ``os.replace``, ``os.unlink`` or ``os.write`` of the
    block (``after``: once it is done; a write dies half-way either way). Yields the count so far."""
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

    with pytest.MonkeyPatch.context() as patch:
        for name in originals:
            patch.setattr(os, name, dying(name))
        yield count


def finished(s3: Any, user: str, laptop: Path, desktop: Path) -> None:
    """Rounds from what the folders and the bucket hold, in a new ``Operations``: both folders and
    the memory end the same, with every text once."""
    operations = make_operations(s3, STORAGE_FORMAT)
    for folder in (laptop, desktop, laptop, desktop):
        operations.sync(user, folder, machine=folder.name)
    assert converged(operations, user, laptop, desktop) == FINAL


def killed_at_s3(s3: Any, root: Path, at: int, *, after: bool) -> bool:
    """The scene's laptop round killed at its ``at``-th S3 call; True if the round got that far."""
    user = f"s3-{'after' if after else 'before'}-{at}"
    operations = make_operations(s3, STORAGE_FORMAT)
    laptop, desktop = scene(operations, user, root / user)
    killer = Killer(s3, at, after=after)
    killer.armed = True
    try:
        operations.sync(user, laptop, machine="laptop")
    except SimulatedCrash:
        pass
    finally:
        killer.armed = False
    finished(s3, user, laptop, desktop)
    return killer.dead


def killed_locally(s3: Any, root: Path, at: int, *, after: bool) -> bool:
    """The scene's laptop round killed at its ``at``-th local step; True if the round got that far."""
    user = f"local-{'after' if after else 'before'}-{at}"
    operations = make_operations(s3, STORAGE_FORMAT)
    laptop, desktop = scene(operations, user, root / user)
    died = False
    try:
        with local_death(at, after=after):
            operations.sync(user, laptop, machine="laptop")
    except SimulatedCrash:
        died = True
    finished(s3, user, laptop, desktop)
    return died


KILLS = {"s3": killed_at_s3, "local": killed_locally}


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("kind", sorted(KILLS))
@pytest.mark.parametrize("at", [1, 4, 9])
def test_a_round_killed_at_a_step_is_finished_by_the_next(
    s3: Any, tmp_path: Path, kind: str, at: int, after: bool
) -> None:
    assert KILLS[kind](s3, tmp_path, at, after=after)


@pytest.mark.slow
@pytest.mark.every_phase
@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("kind", sorted(KILLS))
def test_a_round_killed_at_every_step_is_finished_by_the_next(
    s3: Any, tmp_path: Path, kind: str, after: bool
) -> None:
    at = 1
    while KILLS[kind](s3, tmp_path, at, after=after):
        at += 1
    assert at > 5  # the round got past every step, and was killed at each of them first
