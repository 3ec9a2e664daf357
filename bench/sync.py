"""Section 11: ``s3memory sync`` (issue 41) on a memory of N files (the full run: 1,000; ``--quick``:
100), against ``export`` and ``import`` for the same effect.

A store of its own on the bench's endpoint (storage format 2, a local master key), and folders of N
files (``FILE_LINES`` lines each, in ``DIRECTORIES`` directories, their times a minute back: files a
scan may trust by their stat). Each repetition takes new users, so every first round starts from an
empty memory or an empty folder:

- *push*: the first round from a full folder into an empty memory, against ``import`` of the same
  files into another empty memory;
- *pull*: the first round into an empty folder from that memory of N files, against ``export`` of the
  other memory into an empty folder;
- *no change*: a round over a folder in step with its memory, in the process that ran the last round
  (``s3memory sync``'s loop: the memory placed, its keys held) and in a new process (``--once``: a new
  ``Operations`` on a new client, the store forgotten: ``store.forget_stores``), against ``export``
  then ``import`` over a folder already in step (what keeps a folder and a memory the same without
  sync: every file read on both sides).

Each sync round and its comparison run back to back, alternating which goes first; requests are
counted on the measured client, time is wall time (``perf_counter``, the collector paused) and the
bench process's CPU (``process_time``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3memory.crypto import FORMAT_2, LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from s3memory.store import forget_stores

from .metrics import RequestCounter, Summary, describe, paired_ratios, print_alone, quiet_gc
from .servers import Backend, fake_credentials, moto_backend
from .tables import table
from .workload import MASTER_KEY, note_text, s3memory_client

BUCKET = "bench-sync"
PREFIX = "sync/"
MACHINE = "bench"
FILE_LINES = 12
"""Lines of about 60 characters in each file."""
DIRECTORIES = 10
PAGE_KEYS = 1000
"""Keys in a listing page (S3's most)."""
SETTLED_SECONDS = 60
"""How far back the seeded files' times are set: a scan trusts their stat (``sync/folder.py``)."""

PUSH, IMPORT, PULL, EXPORT = "push", "import", "pull", "export"
QUIET, QUIET_ONCE, EXPORT_IMPORT = "no change", "no change, --once", "export then import"
WHAT = {
    PUSH: "sync: first round, from a full folder into an empty memory",
    IMPORT: "`import` of the same folder into an empty memory",
    PULL: "sync: first round, into an empty folder",
    EXPORT: "`export` of the memory into an empty folder",
    QUIET: "sync: a round with no change (the same process: sync's loop)",
    QUIET_ONCE: "sync: a round with no change (a new process: `--once`)",
    EXPORT_IMPORT: "`export` then `import` over a folder in step",
}
"""What each measurement is, in the order the report shows them."""
PAIRS = ((PUSH, IMPORT), (PULL, EXPORT), (QUIET, EXPORT_IMPORT))
"""Each sync round and what does the same without sync, measured back to back."""


@dataclass
class Measured:
    """Repetitions of one thing: wall seconds, the bench's CPU seconds, and the requests of each."""

    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    requests: list[dict[str, int]] = field(default_factory=list)
    fsyncs: list[list[float]] = field(default_factory=list)
    """The seconds of each ``os.fsync`` of each repetition (sync makes each file it writes durable)."""

    def add(self, seconds: float, cpu: float, requests: Counter[str], fsyncs: list[float]) -> None:
        self.seconds.append(seconds)
        self.cpu.append(cpu)
        self.requests.append(dict(requests))
        self.fsyncs.append(fsyncs)

    @property
    def most(self) -> dict[str, int]:
        """The requests of the repetition that sent the most."""
        return max(self.requests, key=lambda calls: sum(calls.values()), default={})

    def count(self, operation: str) -> int:
        """The most requests of ``operation`` one repetition sent."""
        return max((calls.get(operation, 0) for calls in self.requests), default=0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": Summary.of(self.seconds).as_dict(),
            "cpu": Summary.of(self.cpu).as_dict(),
            "requests": self.requests,
            "fsync_calls": [len(each) for each in self.fsyncs],
            "fsync_seconds": [sum(each) for each in self.fsyncs],
        }


@dataclass
class SyncBench:
    """Section 11's measurements on one endpoint (the module's docstring)."""

    backend: str
    files: int
    storage_format: int = FORMAT_2
    keys: int = 0
    """Keys in the memory's namespace after the push: its files and its own objects (its key...)."""
    measured: dict[str, Measured] = field(default_factory=lambda: {name: Measured() for name in WHAT})

    @property
    def list_pages(self) -> int:
        """The listing pages of the issue's budget: ⌈N/1000⌉."""
        return math.ceil(self.files / PAGE_KEYS)

    def ratio(self, name: str, other: str) -> Summary:
        """``name``'s time over ``other``'s, pair by pair."""
        return paired_ratios(self.measured[name].seconds, self.measured[other].seconds)

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "files": self.files,
            "storage_format": self.storage_format,
            "keys": self.keys,
            "list_pages": self.list_pages,
            "measured": {name: measured.as_dict() for name, measured in self.measured.items()},
            "ratios": {f"{name} / {other}": self.ratio(name, other).as_dict() for name, other in PAIRS},
        }


def seeded(folder: Path, files: int) -> Path:
    """``folder`` with ``files`` files of notes, their times ``SETTLED_SECONDS`` back."""
    past = time.time_ns() - SETTLED_SECONDS * 10**9
    for number in range(files):
        path = folder / f"notes-{number % DIRECTORIES}" / f"note-{number:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(number, FILE_LINES), encoding="utf-8")
        os.utime(path, ns=(past, past))
    return folder


def operations_of(client: Any) -> Operations:
    """An operator's process of the section's store, on ``client``."""
    return Operations(Bucket(client, BUCKET), LocalKeyProvider(MASTER_KEY), prefix=PREFIX, storage_format=2)


@contextlib.contextmanager
def timed_fsyncs() -> Iterator[list[float]]:
    """Every ``os.fsync`` of the block, timed: yields the seconds of each (filled as they come)."""
    original = os.fsync
    spent: list[float] = []

    def fsync(fd: Any) -> None:
        started = time.perf_counter()
        try:
            original(fd)
        finally:
            spent.append(time.perf_counter() - started)

    os.fsync = fsync
    try:
        yield spent
    finally:
        os.fsync = original


class Meter:
    """Runs the section's calls on one client, counting their requests and timing their fsyncs."""

    def __init__(self, client: Any) -> None:
        self.counter = RequestCounter(client)

    def measure(self, into: Measured, call: Callable[[], object]) -> None:
        with self.counter.window() as seen, timed_fsyncs() as fsyncs, quiet_gc():
            cpu = time.process_time()
            started = time.perf_counter()
            call()
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu
        into.add(seconds, cpu, seen, fsyncs)


def _expect(done: int, files: int, what: str) -> None:
    if done != files:
        raise RuntimeError(f"{what} moved {done} of {files} files")


def run(backend: Backend, files: int, quiet_reps: int, first_reps: int) -> SyncBench:
    """Measure section 11 on ``backend`` with ``files`` files (the module's docstring)."""
    backend.create_bucket(BUCKET)
    backend.clear(BUCKET, PREFIX)
    found = SyncBench(backend.name, files)
    client = s3memory_client(backend)
    meter = Meter(client)
    operations = operations_of(client)
    measured = found.measured
    try:
        with tempfile.TemporaryDirectory(prefix="s3memory-bench-sync-") as temporary:
            root = Path(temporary)
            operations.memory("warm-up").run(  # the store made and resolved: no first round pays it
                {"command": "create", "path": "/memories/warm-up.md", "file_text": "warm\n"}
            )
            for rep in range(first_reps):
                pushed, imported = f"push-{rep}", f"import-{rep}"
                source = seeded(root / pushed / "memories", files)
                copy = seeded(root / imported / "memories", files)
                pull, export = root / f"pull-{rep}" / "memories", root / f"export-{rep}"
                pull.parent.mkdir()  # sync makes the folder it is given, not the folders above it

                def push(user: str = pushed, folder: Path = source) -> None:
                    report = operations.sync(user, folder, machine=MACHINE)
                    _expect(len(report.pushed), files, "the first round's push")

                def import_(user: str = imported, folder: Path = copy) -> None:
                    _expect(len(operations.import_folder(user, folder.parent).written), files, "import")

                def pull_(user: str = pushed, folder: Path = pull) -> None:
                    _expect(len(operations.sync(user, folder, machine=MACHINE).pulled), files, "the pull")

                def export_(user: str = imported, folder: Path = export) -> None:
                    _expect(len(operations.export(user, folder).written), files, "export")

                _paired(meter, rep, (measured[PUSH], push), (measured[IMPORT], import_))
                _paired(meter, rep, (measured[PULL], pull_), (measured[EXPORT], export_))
            user, folder = "push-0", root / "push-0" / "memories"
            found.keys = len(backend.keys(BUCKET, operations.placed(user).layout.namespace))
            in_step = root / "in-step"
            operations.export(user, in_step)
            syncing = operations.syncing(user, folder, machine=MACHINE)  # sync's loop: placed once
            syncing.round()  # unmeasured: the memory placed, the folder's stats settled

            def quiet() -> None:
                _expect(syncing.round().unchanged, files, "a round with no change")

            def export_import() -> None:
                _expect(
                    len(operations.export(user, in_step).unchanged), files, "export over a folder in step"
                )
                _expect(len(operations.import_folder(user, in_step).unchanged), files, "import of it")

            for rep in range(quiet_reps):
                _paired(meter, rep, (measured[QUIET], quiet), (measured[EXPORT_IMPORT], export_import))
                forget_stores()  # what a new process knows of the store: nothing
                fresh = s3memory_client(backend)
                Meter(fresh).measure(measured[QUIET_ONCE], functools.partial(_once, fresh, user, folder))
    finally:
        backend.clear(BUCKET, PREFIX)
    return found


def _once(client: Any, user: str, folder: Path) -> None:
    """A ``--once`` round: a new process's ``Operations`` on ``client``."""
    operations_of(client).sync(user, folder, machine=MACHINE)


def _paired(
    meter: Meter,
    rep: int,
    first: tuple[Measured, Callable[[], object]],
    second: tuple[Measured, Callable[[], object]],
) -> None:
    """Both measured back to back, the second first on odd repetitions."""
    for into, call in (first, second) if rep % 2 == 0 else (second, first):
        meter.measure(into, call)


SYNC_ABOUT = (
    "What `s3memory sync` costs (`bench/sync.py`; alone: `python -m bench.sync [--quick]`), on a store of "
    f"its own in storage format 2: folders of N files ({FILE_LINES} lines of about 60 characters each, in "
    f"{DIRECTORIES} directories). The first round from a full folder into an empty memory (*push*) "
    "against `import` of the same files, and into an empty folder from a memory of N files (*pull*) "
    "against `export`, new users each repetition; a round over a folder in step with its memory, in the "
    "process that ran the last round (sync's loop) and in a new one (`--once`: a new client, the store "
    "resolved again), against `export` then `import` over a folder in step, which is what keeps a folder "
    "and a memory the same without sync. Each sync round and its comparison run back to back, "
    "alternating which goes first. Requests are counted on the measured client; CPU is the bench "
    "process's (the server's is not in it).",
)
"""What section 11 measures (``bench/sync.py``)."""


def sync_lines(found: SyncBench | None) -> list[str]:
    """Section 11 of ``latest.md``: sync on a memory of N files against export and import."""
    out = ["## 11. Sync: a folder kept the same as a memory", "", *SYNC_ABOUT, ""]
    if found is None:
        return [*out, "Not measured in this run.", ""]
    out += [
        f"**{found.backend}**, {found.files:,} files; the memory's namespace holds {found.keys:,} keys "
        "(its files and its own objects)",
        "",
    ]
    rows = []
    for name, what in WHAT.items():
        measured = found.measured[name]
        if measured.seconds:
            most = measured.most
            rows.append(
                [
                    what,
                    str(len(measured.seconds)),
                    Summary.of(measured.seconds).ms(0),
                    Summary.of(measured.cpu).ms(0),
                    _fsyncs(measured),
                    f"{sum(most.values()):,}",
                    describe(Counter(most)),
                ]
            )
    out += table(["what", "runs", "ms", "bench CPU ms", "fsync", "requests", "which"], rows)
    out += table(
        ["sync against", "time, sync / the other"],
        [
            [f"{WHAT[name]} / {WHAT[other]}", found.ratio(name, other).ratio()]
            for name, other in PAIRS
            if found.measured[name].seconds and found.measured[other].seconds
        ],
    )
    return out


def _fsyncs(measured: Measured) -> str:
    """``2,000 in 21.3 s``: the fsyncs of a repetition and their seconds (medians), or ``none``."""
    calls = Summary.of([len(each) for each in measured.fsyncs]).median
    if not calls:
        return "none"
    return f"{calls:,.0f} in {Summary.of([sum(each) for each in measured.fsyncs]).median:.1f} s"


def main(argv: list[str] | None = None) -> int:
    """Run section 11 alone on a moto server of its own and print its part of ``latest.md``."""
    from .plan import FULL, QUICK

    parser = argparse.ArgumentParser(prog="python -m bench.sync", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the size of `python -m bench --quick`")
    parser.add_argument("--files", type=int, help="files in the memory (default: the plan's)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else FULL
    fake_credentials()
    with moto_backend() as backend:
        found = run(backend, options.files or plan.sync_files, plan.sync_quiet_reps, plan.sync_first_reps)
    print_alone(sync_lines(found), options.json, found.as_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
