"""A sync round killed between any two steps is finished by the next, with nothing lost or duplicated
(``docs/sync.md``): a round that pushes, pulls, deletes on both sides and keeps a conflict is killed
at its k-th S3 request (before it is sent, or once it is applied and its answer lost) or at its k-th
local rename, unlink or write (a write cut half-way), for every k; rounds then run from what the
folders and the bucket hold (a new ``Operations``, as a new process), and both folders and the memory
end the same, every text at its path or in its one conflict copy.

``make test`` kills at a few steps of each kind; the ``every_phase`` run (``make test-all``) at every
step."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from s3memory.ops.operations import Operations
from tests.conftest import STORAGE_FORMAT
from tests.support.faults import SimulatedCrash
from tests.support.synced import (
    Killer,
    converged,
    local_death,
    make_operations,
    own_requests,
    settled,
    write,
)

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
        with own_requests():  # its requests in flight end with it, the killer still armed
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
