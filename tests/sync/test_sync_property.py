"""Property (issue 41): two folders standing for two machines, a laptop and a desktop, take random
edits, new files, deletions, renames (a deletion plus a new file) and conflicting edits, and are
synced with ``Operations.sync`` in turns (``--once`` rounds), some rounds killed at a random step: an
S3 request (before it is sent, or once it is applied and its answer lost) or a local rename, unlink or
write (a write cut half-way), as ``test_killed_rounds`` kills them, and some with a step of the
user's made while they run (as they send an S3 request). After a killed round the machine goes on
from what its folder and the bucket hold (a new ``Operations``: a new process). At the end,
rounds in turns until both make no change (the mass-delete guard lifted: deletions a round withheld
are ones the user made); then both folders and the memory are the same byte for byte, and every text
that must survive is there.

What must survive (``Placements``): every text written is new (but where the user makes the same
edit on both machines: ``Write.same``). The user *places* a text at a path on one machine: a new
file, an edit (the file's whole new text), or the second half of a rename. A placement (P, T) is
*withdrawn* when the user, on either machine, replaces or deletes a file that then holds T, at P or
at a conflict copy of P: an edit of it, its deletion, the first half of a rename, a rename onto it.
The user saw T there and chose to replace it; so a text written and then overwritten on the same
machine before a round read it is withdrawn too. Every placement not withdrawn has its text, at the
end, at its path or at a conflict copy of it (``<stem>.conflict-...<ext>`` beside it, or a copy of
such a copy). More may survive (a text a round pushed before the user replaced it comes back as a
conflict copy), never less.

A text put back where the machine's last round left it (the same bytes at the same path: a file
renamed away and back, deleted and written again) is no placement: sync compares bytes, as the
hosted worker's sha256 baselines do, so the file is unchanged there, and a deletion or an edit made
on the other machine meanwhile wins.

``make test`` runs a few examples (``test_random_edits_and_killed_rounds_converge``); the ``fuzz``
run (``make test-all``) many more, longer."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from s3memory.core.files import MemoryFiles
from s3memory.core.placement import Survey
from s3memory.ops.folders import is_temporary
from s3memory.ops.operations import Operations
from s3memory.sync.report import SyncReport
from tests.conftest import STORAGE_FORMAT
from tests.support.faults import SimulatedCrash
from tests.support.synced import STATE, converged, make_operations, memory, own_requests, write
from tests.sync.test_killed_rounds import Killer, local_death

pytestmark = [pytest.mark.takes_format]

MACHINES = ("laptop", "desktop")
PATHS = ("MEMORY.md", "notes.md", "projects/acme.md", "projects/deep/todo")
"""Where the user makes files (and edits the files there are, conflict copies among them)."""
QUIET_ROUNDS = 6
"""Rounds on each machine, at most, before both make no change at the end."""


@dataclass(frozen=True)
class Write:
    """On ``machine``, the file ``target`` picks (among ``PATHS`` and the folder's files) gets a new
    text; ``same`` where the other machine has a file there: its text (the same edit on both)."""

    machine: str
    target: int
    same: bool = False


@dataclass(frozen=True)
class Both:
    """On both machines, the file ``target`` picks (among ``PATHS``) gets a new text: a conflict
    for the next rounds."""

    target: int


@dataclass(frozen=True)
class Delete:
    """On ``machine``, the folder's file ``target`` picks is deleted."""

    machine: str
    target: int


@dataclass(frozen=True)
class Rename:
    """On ``machine``, the folder's file ``target`` picks is renamed to the one of ``PATHS`` ``to``
    picks (a file there is replaced), as a file manager does: the new file written, the old deleted."""

    machine: str
    target: int
    to: int


@dataclass(frozen=True)
class Kill:
    """Where a round dies: at its ``at``-th S3 request (``s3``) or local rename, unlink or write
    (``local``); ``after``: once it is done (a write is cut half-way either way)."""

    kind: str
    at: int
    after: bool


@dataclass(frozen=True)
class Round:
    """One ``--once`` round on ``machine``, killed where ``kill`` says (None: it runs to its end);
    ``meanwhile``: the user's step done as the round sends its ``at``-th S3 request (files the round
    then finds changed are left to the next round)."""

    machine: str
    kill: Kill | None = None
    meanwhile: Meanwhile | None = None


@dataclass(frozen=True)
class Meanwhile:
    """A step of the user's while a round runs, as it sends its ``at``-th S3 request."""

    at: int
    step: Write | Delete


Step = Write | Both | Delete | Rename | Round

_MACHINE = st.sampled_from(MACHINES)
_PICK = st.integers(min_value=0, max_value=63)
_KILL = st.builds(
    Kill, st.sampled_from(("s3", "local")), st.integers(min_value=1, max_value=12), st.booleans()
)
_WRITE = st.builds(Write, _MACHINE, _PICK, st.booleans())
_ROUND = st.builds(Round, _MACHINE)
STEPS = st.one_of(
    _WRITE,
    _WRITE,
    st.builds(Both, _PICK),
    st.builds(Delete, _MACHINE, _PICK),
    st.builds(Rename, _MACHINE, _PICK, _PICK),
    _ROUND,
    _ROUND,
    st.builds(Round, _MACHINE, _KILL),
    st.builds(Round, _MACHINE, _KILL),
    st.builds(
        Round,
        _MACHINE,
        st.none(),
        st.builds(
            Meanwhile,
            st.integers(min_value=1, max_value=8),
            st.one_of(st.builds(Write, _MACHINE, _PICK), st.builds(Delete, _MACHINE, _PICK)),
        ),
    ),
)
"""The user's steps and the rounds, weighted: writes and rounds most."""
PAGE_SIZES = st.sampled_from((1000, 2))
"""Keys per listing page: S3's, or so few that a round's listing takes many pages."""


def is_copy_of(copy: str, path: str) -> bool:
    """True if ``copy`` is ``path`` or a conflict copy of it (``plan.conflict_names``), or a copy of
    such a copy: beside it, its stem then ``.conflict-``, its extension."""
    directory, _, name = path.rpartition("/")
    dot = name.rfind(".")
    stem, extension = (name[:dot], name[dot:]) if dot > 0 else (name, "")
    beside, _, copy_name = copy.rpartition("/")
    return copy == path or (
        beside == directory and copy_name.startswith(f"{stem}.conflict-") and copy_name.endswith(extension)
    )


def files_of(folder: Path) -> dict[str, bytes]:
    """The user's files in ``folder`` by memory path (not sync's state, nor a temporary file of a
    round cut off, which the next round sweeps)."""
    found: dict[str, bytes] = {}
    for directory, names, files in os.walk(folder):
        names[:] = sorted(name for name in names if not (Path(directory) == folder and name == STATE))
        for name in sorted(files):
            if not is_temporary(name):
                path = Path(directory, name)
                found["/memories/" + path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


@dataclass
class Placements:
    """The texts the user placed, by path, less those withdrawn (the module's docstring)."""

    alive: set[tuple[str, bytes]] = field(default_factory=set)

    def place(self, path: str, text: bytes) -> None:
        self.alive.add((path, text))

    def withdraw(self, path: str, text: bytes) -> None:
        """The user replaced or deleted ``text`` at ``path``."""
        self.alive -= {
            (placed, held) for placed, held in self.alive if held == text and is_copy_of(path, placed)
        }

    def missing(self, held: dict[str, bytes]) -> list[tuple[str, bytes]]:
        """The placements whose text is neither at their path nor at a conflict copy of it in ``held``."""
        return sorted(
            (placed, text)
            for placed, text in self.alive
            if not any(data == text and is_copy_of(path, placed) for path, data in held.items())
        )


@contextlib.contextmanager
def dying(s3: Any, kill: Kill) -> Iterator[None]:
    """The block's process dies where ``kill`` says (``SimulatedCrash``), its requests in flight with it
    (``synced.own_requests``)."""
    if kill.kind == "local":
        with local_death(kill.at, after=kill.after):
            yield
        return
    killer = Killer(s3, kill.at, after=kill.after)
    killer.armed = True
    try:
        with own_requests():  # its requests in flight end with it, the killer still armed
            yield
    finally:
        killer.armed = False
        s3.meta.events.unregister("after-call.s3" if kill.after else "before-call.s3", killer._call)


def quiet(report: SyncReport) -> bool:
    """True if the round changed nothing on either side."""
    return not any(count for name, count in report.counts().items() if name != "unchanged")


class Machines:
    """Two folders synced with one user's memory, the user's steps done on them, and what must
    survive (``placements``)."""

    def __init__(self, s3: Any, root: Path, page_size: int) -> None:
        self.s3 = s3
        self.page_size = page_size
        self.user = f"prop-{uuid.uuid4().hex[:12]}"
        self.folders = {machine: root / machine for machine in MACHINES}
        for folder in self.folders.values():
            folder.mkdir()
        self.processes = {machine: self._started() for machine in MACHINES}
        self.placements = Placements()
        self.left: dict[str, dict[str, bytes]] = {machine: {} for machine in MACHINES}
        """What each machine's folder held when its last round (not killed, no step meanwhile) ended."""
        self.written = 0
        self.kills = 0
        self.conflicts = 0
        self.meanwhile = 0

    def _started(self) -> Operations:
        return make_operations(self.s3, STORAGE_FORMAT, page_size=self.page_size)

    def text(self, machine: str) -> bytes:
        self.written += 1
        return f"text {self.written}, written on the {machine} ✓\n".encode()

    def put(self, machine: str, path: str, text: bytes) -> None:
        """The user writes ``text`` at ``path`` on ``machine`` (over what the file held)."""
        target = self.folders[machine] / path.removeprefix("/memories/")
        if target.is_file():
            self.placements.withdraw(path, target.read_bytes())
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
        if self.left[machine].get(path) != text:
            self.placements.place(path, text)

    def remove(self, machine: str, path: str) -> None:
        target = self.folders[machine] / path.removeprefix("/memories/")
        self.placements.withdraw(path, target.read_bytes())
        target.unlink()

    def step(self, step: Step) -> None:
        match step:
            case Write(machine=machine, target=target, same=same):
                paths = sorted({*(f"/memories/{path}" for path in PATHS), *files_of(self.folders[machine])})
                path = paths[target % len(paths)]
                theirs = files_of(self.folders[_other(machine)]).get(path)
                self.put(machine, path, theirs if same and theirs is not None else self.text(machine))
            case Both(target=target):
                path = f"/memories/{PATHS[target % len(PATHS)]}"
                for machine in MACHINES:
                    self.put(machine, path, self.text(machine))
            case Delete(machine=machine, target=target):
                held = sorted(files_of(self.folders[machine]))
                if held:
                    self.remove(machine, held[target % len(held)])
            case Rename(machine=machine, target=target, to=to):
                held = files_of(self.folders[machine])
                if held:
                    source = sorted(held)[target % len(held)]
                    destinations = [f"/memories/{path}" for path in PATHS if f"/memories/{path}" != source]
                    self.put(machine, destinations[to % len(destinations)], held[source])
                    self.remove(machine, source)
            case Round(machine=machine, kill=kill, meanwhile=meanwhile):
                with self.during(meanwhile) as done:
                    self.round(machine, kill, allowed=done)
                self.meanwhile += len(done)

    @contextlib.contextmanager
    def during(self, meanwhile: Meanwhile | None) -> Iterator[list[bool]]:
        """The user's step ``meanwhile`` done as the block sends its ``at``-th S3 request; yields
        ``[True]`` once it is done."""
        done: list[bool] = []
        if meanwhile is None:
            yield done
            return
        calls = [0]

        def call(**_: Any) -> None:
            calls[0] += 1
            if calls[0] == meanwhile.at:
                self.step(meanwhile.step)
                done.append(True)

        self.s3.meta.events.register("before-call.s3", call)
        try:
            yield done
        finally:
            self.s3.meta.events.unregister("before-call.s3", call)

    def round(self, machine: str, kill: Kill | None, allowed: list[bool]) -> None:
        """A round on ``machine``; one killed ends its process (the next round is a new one's). A
        round leaves nothing alone unless ``allowed`` (the user changed a file while it ran)."""
        if kill is None:
            report = self.processes[machine].sync(self.user, self.folders[machine], machine=machine)
            assert report.left_alone == [] or allowed, report.left_alone
            if not allowed:
                self.left[machine] = files_of(self.folders[machine])
            self.conflicts += len(report.conflicts)
            return
        try:
            with dying(self.s3, kill):
                self.processes[machine].sync(self.user, self.folders[machine], machine=machine)
        except SimulatedCrash:
            self.kills += 1
            self.processes[machine] = self._started()

    def settle(self) -> dict[str, bytes]:
        """Rounds in turns until neither changes anything (deletions allowed); what both folders and
        the memory then hold, the same (asserted)."""
        for _ in range(QUIET_ROUNDS):
            reports = [
                self.processes[machine].sync(
                    self.user, self.folders[machine], machine=machine, allow_deletes=True
                )
                for machine in MACHINES
            ]
            assert all(report.left_alone == [] for report in reports)
            self.conflicts += sum(len(report.conflicts) for report in reports)
            if all(quiet(report) for report in reports):
                return converged(self.processes["laptop"], self.user, *self.folders.values())
        raise AssertionError(f"no quiet round on both machines after {QUIET_ROUNDS} rounds each")


def _other(machine: str) -> str:
    return MACHINES[1 - MACHINES.index(machine)]


def run(s3: Any, base: Path, steps: list[Step], page_size: int) -> Machines:
    """``steps`` done on two new folders, then rounds until quiet: every text placed is kept."""
    with tempfile.TemporaryDirectory(dir=base) as root:
        machines = Machines(s3, Path(root), page_size)
        for step in steps:
            machines.step(step)
        held = machines.settle()
        assert machines.placements.missing(held) == []
    return machines


def tally(machines: Machines) -> None:
    """What an example did, in hypothesis's statistics (``--hypothesis-show-statistics``)."""
    event(f"rounds killed: {min(machines.kills, 3)} (3: 3 or more)")
    event(f"conflicts kept: {min(machines.conflicts, 3)} (3: 3 or more)")
    event(f"steps of the user's during a round: {min(machines.meanwhile, 3)} (3: 3 or more)")


def test_a_killed_rounds_requests_in_flight_end_with_it(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round killed while its push is still on a worker (the create's write, which a loaded machine
    runs late): the write lands before the machine goes on, as a dead process's does, never during a
    later round. Else the other machine's round, after this one's listing missed it, finds it the same
    as its own file: both quiet, the folders apart (``settle`` failed so under four workers)."""
    operations = make_operations(s3, STORAGE_FORMAT)
    user, folder = "in-flight", tmp_path / "laptop"
    write(folder, "MEMORY.md", "zero\n")
    operations.sync(user, folder, machine="laptop")  # the store and the user made
    write(folder, "notes.md", "one\n")
    put_new = MemoryFiles.put_new

    def late(files: MemoryFiles, *args: Any, **kwargs: Any) -> str | None:
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.3)  # the worker runs late, after its process died
        return put_new(files, *args, **kwargs)

    def died(*_: Any) -> None:
        raise SimulatedCrash("killed as it waited for the create's checks")

    monkeypatch.setattr(MemoryFiles, "put_new", late)
    monkeypatch.setattr(Survey, "obstacle", died)
    with pytest.raises(SimulatedCrash), dying(s3, Kill("s3", 1000, after=True)):
        operations.sync(user, folder, machine="laptop")
    assert memory(operations, user) == {"/memories/MEMORY.md": b"zero\n", "/memories/notes.md": b"one\n"}


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STEPS, min_size=4, max_size=16), PAGE_SIZES)
def test_random_edits_and_killed_rounds_converge(
    s3: Any, tmp_path: Path, steps: list[Step], page_size: int
) -> None:
    tally(run(s3, tmp_path, steps, page_size))


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STEPS, min_size=8, max_size=40), PAGE_SIZES)
def test_many_random_edits_and_killed_rounds_converge(
    s3: Any, tmp_path: Path, steps: list[Step], page_size: int
) -> None:
    tally(run(s3, tmp_path, steps, page_size))
