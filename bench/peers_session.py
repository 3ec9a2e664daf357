"""Section 5: s3memory and its peers on the same agent session, and on directory renames.

The session is what an agent does in one conversation: look at its memory, read a few files,
write new ones, edit (``str_replace``, ``insert``), and move a project directory to the archive.
Each repetition starts every implementation from the same files in a fresh namespace, and runs
them one after another in rotating order:

- s3memory in storage format 1 (this process, local master key),
- s3memory in storage format 2 (private names; renames are copies on the server),
- the s3fs peer (``bench/peers/s3fs_memory.py``, in its own virtualenv, a worker process),
- the SDK's ``BetaLocalFilesystemMemoryTool`` on local disk: the floor with no network at all.

A command kind's time in one repetition is the mean over its commands in the session; the table
shows medians over repetitions and the ratio s3memory/s3fs per repetition, for either format.

``run_renames`` sets the three S3 implementations on one command, a directory rename of N files
(``/memories/a/batch`` to ``/memories/moved-0/batch``, then on to ``moved-1`` ..., each move a
sample), side by side in rotating order in one bucket: s3fs renames a directory with server-side copies and deletes
(``fs.copy(recursive=True)`` + ``fs.rm(recursive=True)``), format 2 with server-side copies,
format 1 by reading and writing every file. Alone (its own endpoints; ``--held 16`` also runs
format 2 with its calls in flight held at 16, beside its own rule)::

    python -m bench.peers_session --endpoints moto+10ms,seaweedfs+10ms --files 100,1000 --held 16
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3memory.crypto import FORMAT_1, FORMAT_2

from .metrics import RequestCounter, Summary, describe, paired_ratios, print_alone, quiet_gc
from .plan import FULL, QUICK
from .scaling import in_flight_held
from .servers import REPO, Backend, fake_credentials, moto_backend, seaweed_backend
from .tables import table
from .workload import MASTER_KEY, Tenant, note_text, s3memory_client

BUCKET = "bench-peers"
RENAME_BUCKET = "bench-peer-renames"
PEER_VENV = Path(__file__).resolve().parent / ".venv-peer"
KINDS = ("view dir", "view file", "create", "str_replace", "insert", "rename dir")
S3MEMORY = "s3memory"
S3MEMORY_F2 = "s3memory f2"
S3FS = "s3fs"
LOCAL = "local (SDK)"
FORMATS = {S3MEMORY: FORMAT_1, S3MEMORY_F2: FORMAT_2}
"""The s3memory implementations and their storage formats (format 2: private names)."""

SEED = {
    "/memories/preferences.md": "# Preferences\nunits: imperial\n" + note_text(1, 28),
    "/memories/projects/alpha/notes.md": "# Alpha\nstatus: draft\n" + note_text(2, 30),
    "/memories/projects/alpha/todo.md": note_text(3, 12),
    "/memories/projects/alpha/design/overview.md": note_text(4, 25),
    "/memories/projects/alpha/design/api.md": note_text(5, 25),
    "/memories/projects/alpha/meetings/2025-01-08.md": note_text(6, 20),
    "/memories/projects/beta/readme.md": note_text(7, 15),
    "/memories/people/alice.md": note_text(8, 10),
    "/memories/people/bob.md": note_text(9, 10),
    "/memories/journal/2025-01-14.md": note_text(10, 18),
    "/memories/snippets/sql.md": note_text(11, 20),
    "/memories/snippets/bash.md": note_text(12, 20),
}

SESSION: list[tuple[str, dict[str, Any]]] = [
    ("view dir", {"command": "view", "path": "/memories"}),
    ("view file", {"command": "view", "path": "/memories/preferences.md"}),
    ("view file", {"command": "view", "path": "/memories/projects/alpha/notes.md"}),
    ("view dir", {"command": "view", "path": "/memories/projects/alpha"}),
    (
        "create",
        {
            "command": "create",
            "path": "/memories/projects/alpha/decisions.md",
            "file_text": note_text(20, 15),
        },
    ),
    (
        "str_replace",
        {
            "command": "str_replace",
            "path": "/memories/preferences.md",
            "old_str": "units: imperial",
            "new_str": "units: metric",
        },
    ),
    (
        "insert",
        {
            "command": "insert",
            "path": "/memories/projects/alpha/notes.md",
            "insert_line": 2,
            "insert_text": "owner: dana",
        },
    ),
    (
        "create",
        {"command": "create", "path": "/memories/journal/2025-01-15.md", "file_text": note_text(21, 8)},
    ),
    (
        "str_replace",
        {
            "command": "str_replace",
            "path": "/memories/projects/alpha/notes.md",
            "old_str": "status: draft",
            "new_str": "status: in review",
        },
    ),
    ("view file", {"command": "view", "path": "/memories/people/alice.md"}),
    (
        "insert",
        {
            "command": "insert",
            "path": "/memories/journal/2025-01-15.md",
            "insert_line": 0,
            "insert_text": "# 2025-01-15",
        },
    ),
    (
        "rename dir",
        {"command": "rename", "old_path": "/memories/projects/alpha", "new_path": "/memories/archive/alpha"},
    ),
    (
        "create",
        {"command": "create", "path": "/memories/projects/gamma/plan.md", "file_text": note_text(22, 10)},
    ),
    ("view dir", {"command": "view", "path": "/memories"}),
    ("view file", {"command": "view", "path": "/memories/archive/alpha/decisions.md"}),
]


@dataclass
class CommandTiming:
    seconds: float
    requests: Counter[str]
    ok: bool


CREATES = 30
"""New files each S3 implementation creates in a row, in one sample of ``CreateCosts``."""


@dataclass
class CreateCosts:
    """What one ``create`` of a new file in a directory that exists costs each S3 implementation,
    from samples of ``CREATES`` creates in a row: wall time and the CPU of the client's process (the
    bench's for s3memory, the worker's for s3fs) and of the server's, where Linux tells. In a row,
    so that the server's CPU, counted in ticks of 10 ms, is counted over tens of ticks (a sample
    lasts about 0.1 s on loopback, 0.5 s with 10 ms per request)."""

    seconds: dict[str, Summary]
    client_cpu: dict[str, Summary]
    server_cpu: dict[str, Summary]

    def as_dict(self) -> dict[str, Any]:
        return {
            name: {key: value.as_dict() for key, value in getattr(self, name).items()}
            for name in self.__dict__
        }

    def made_of(self, name: str) -> str:
        """``name``'s time and client + server CPU per create, e.g. ``17.1 ms, 4.1 + 3.2 ms CPU``."""
        client, server = self.client_cpu[name].median * 1000, self.server_cpu[name].median * 1000
        cpu = f"{client:.1f} + {server:.1f}" if not math.isnan(server) else f"{client:.1f} + ?"
        return f"{self.seconds[name].median * 1000:.1f} ms, {cpu} ms CPU"


@dataclass
class PeerResult:
    backend: str
    implementations: list[str]
    seconds: dict[str, dict[str, Summary]]  # implementation -> kind -> summary
    totals: dict[str, Summary]
    ratio_s3fs: dict[str, Summary]  # kind -> s3memory/s3fs (format 1)
    ratio_total: Summary | None
    requests: dict[str, dict[str, str]]  # implementation -> kind -> e.g. "GET+LIST"
    request_totals: dict[str, int]
    failures: dict[str, list[str]]
    versions: dict[str, str] = field(default_factory=dict)
    skipped: str | None = None
    ratio_s3fs_f2: dict[str, Summary] = field(default_factory=dict)  # kind -> s3memory f2/s3fs
    ratio_total_f2: Summary | None = None
    create_costs: CreateCosts | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "implementations": self.implementations,
            "seconds": {i: {k: s.as_dict() for k, s in kinds.items()} for i, kinds in self.seconds.items()},
            "totals": {i: s.as_dict() for i, s in self.totals.items()},
            "ratio_s3fs": {k: s.as_dict() for k, s in self.ratio_s3fs.items()},
            "ratio_total": self.ratio_total.as_dict() if self.ratio_total else None,
            "ratio_s3fs_f2": {k: s.as_dict() for k, s in self.ratio_s3fs_f2.items()},
            "create_costs": self.create_costs.as_dict() if self.create_costs else None,
            "ratio_total_f2": self.ratio_total_f2.as_dict() if self.ratio_total_f2 else None,
            "requests": self.requests,
            "request_totals": self.request_totals,
            "failures": self.failures,
            "versions": self.versions,
            "skipped": self.skipped,
        }


def find_peer_python(explicit: str | None = None) -> tuple[str | None, str]:
    """The interpreter that can import s3fs, and where it was found (or why there is none)."""
    candidates = []
    if explicit:
        candidates.append((explicit, "--peer-python"))
    if os.environ.get("S3MEMORY_BENCH_PEER_PYTHON"):
        candidates.append((os.environ["S3MEMORY_BENCH_PEER_PYTHON"], "S3MEMORY_BENCH_PEER_PYTHON"))
    candidates.append((str(PEER_VENV / "bin" / "python"), "bench/.venv-peer"))
    candidates.append((sys.executable, "this interpreter"))
    for python, origin in candidates:
        if not Path(python).exists():
            continue
        probe = subprocess.run(
            [python, "-c", "import s3fs, cryptography"], capture_output=True, check=False, timeout=60
        )
        if probe.returncode == 0:
            return python, origin
    return None, "no interpreter with s3fs found (run `python -m bench.peer_env` to create bench/.venv-peer)"


class S3fsWorker:
    """The s3fs peer's worker process for one endpoint."""

    def __init__(self, python: str, backend: Backend, bucket: str = BUCKET) -> None:
        key = MASTER_KEY
        environment = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "BENCH_ENDPOINT_URL": backend.endpoint_url,
            "BENCH_BUCKET": bucket,
            "BENCH_KEY_HEX": key.hex(),
            "BENCH_LATENCY_MS": str(backend.client_latency_ms),
        }
        self.process = subprocess.Popen(
            [python, "-m", "bench.peers.s3fs_worker"],
            cwd=REPO,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        hello = self._receive()
        self.versions: dict[str, str] = hello.get("versions", {})

    def _receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            assert self.process.stderr is not None
            raise RuntimeError(f"s3fs worker stopped: {self.process.stderr.read()[-3000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return self._receive()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ask({"op": "quit"}) if self.process.poll() is None else None
        with contextlib.suppress(Exception):
            self.process.wait(timeout=10)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@contextlib.contextmanager
def s3fs_worker(python: str | None, backend: Backend, bucket: str = BUCKET) -> Iterator[S3fsWorker | None]:
    if python is None:
        yield None
        return
    worker = S3fsWorker(python, backend, bucket)
    try:
        yield worker
    finally:
        worker.close()


def _run_s3memory(tenant: Tenant, counter: RequestCounter) -> list[CommandTiming]:
    timings = []
    for _kind, command in SESSION:
        ok = True
        with counter.window() as seen, quiet_gc():
            started = time.perf_counter()
            try:
                tenant.run(command)
            except Exception:
                ok = False
            seconds = time.perf_counter() - started
        timings.append(CommandTiming(seconds, Counter(seen), ok))
    return timings


def _run_local(base: str) -> list[CommandTiming]:
    from anthropic.tools import BetaLocalFilesystemMemoryTool

    tool = BetaLocalFilesystemMemoryTool(base_path=base)
    timings = []
    for _kind, command in SESSION:
        ok = True
        with quiet_gc():
            started = time.perf_counter()
            try:
                tool.call(dict(command))
            except Exception:
                ok = False
            seconds = time.perf_counter() - started
        timings.append(CommandTiming(seconds, Counter(), ok))
    return timings


def _seed_local(base: str) -> None:
    for path, text in SEED.items():
        target = Path(base) / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def run(backend: Backend, reps: int, peer_python: str | None, warmup: int = 1) -> PeerResult:
    backend.create_bucket(BUCKET)
    backend.clear(BUCKET, "")  # before any format-2 tenant: this deletes the store key too
    client = s3memory_client(backend)
    counter = RequestCounter(client)
    implementations = [S3MEMORY, S3MEMORY_F2, *([S3FS] if peer_python else []), LOCAL]
    timings: dict[str, list[list[CommandTiming]]] = {name: [] for name in implementations}
    versions: dict[str, str] = {}
    with (
        tempfile.TemporaryDirectory(prefix="s3memory-bench-local-") as local_root,
        s3fs_worker(peer_python, backend) as worker,
    ):
        if worker is not None:
            versions.update(worker.versions)
        for rep in range(warmup + reps):
            user = f"session-{backend.name.replace('+', '-')}-{rep}"  # SeaweedFS keeps emptied directories
            tenants = {
                name: Tenant(backend, client, BUCKET, user, storage_format=storage_format)
                for name, storage_format in FORMATS.items()
            }
            for tenant in tenants.values():
                tenant.seed(SEED)
            local_base = os.path.join(local_root, user)
            _seed_local(local_base)
            if worker is not None:
                worker.ask({"op": "seed", "user": user, "files": SEED})
            order = (
                implementations[rep % len(implementations) :] + implementations[: rep % len(implementations)]
            )
            for name in order:
                if name in tenants:
                    result = _run_s3memory(tenants[name], counter)
                elif name == S3FS:
                    assert worker is not None
                    answer = worker.ask({"op": "session", "user": user, "commands": [c for _, c in SESSION]})
                    result = [
                        CommandTiming(item["seconds"], Counter(item["requests"]), item["ok"])
                        for item in answer["results"]
                    ]
                else:
                    result = _run_local(local_base)
                if rep >= warmup:
                    timings[name].append(result)
        costs = _create_costs(backend, client, worker, reps, warmup)
    backend.clear(BUCKET, "")
    result = _summarise(backend.name, implementations, timings, versions)
    result.create_costs = costs
    return result


def _create_costs(
    backend: Backend, client: Any, worker: S3fsWorker | None, reps: int, warmup: int
) -> CreateCosts:
    """``CREATES`` new notes in ``/memories/notes``, which holds one, by s3memory in either format
    and the s3fs peer, one after another in rotating order, per repetition: ``reps`` rounded up to
    a multiple of the implementations, so each goes first as often. Each reads the note first,
    unmeasured (s3memory's first command of a user also writes its access record)."""
    names = [*FORMATS, *([S3FS] if worker is not None else [])]
    samples: dict[str, list[_Sample]] = {name: [] for name in names}
    creates = [
        {"command": "create", "path": f"/memories/notes/new-{index}.md", "file_text": note_text(index, 10)}
        for index in range(CREATES)
    ]
    seed = {"/memories/notes/seed.md": note_text(0, 10)}
    read = {"command": "view", "path": "/memories/notes/seed.md"}
    for rep in range(warmup + -(-reps // len(names)) * len(names)):
        user = f"creates-{backend.name.replace('+', '-')}-{rep}"
        tenants = {
            name: Tenant(backend, client, BUCKET, user, storage_format=storage_format)
            for name, storage_format in FORMATS.items()
        }
        for tenant in tenants.values():
            tenant.seed(seed)
        for tenant in tenants.values():
            tenant.run(read)
        if worker is not None:
            worker.ask({"op": "seed", "user": user, "files": seed})
            worker.ask({"op": "session", "user": user, "commands": [read]})
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            server = backend.server_cpu()
            if name in tenants:
                with quiet_gc():
                    cpu, started = time.process_time(), time.perf_counter()
                    for command in creates:
                        tenants[name].run(command)
                    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            else:
                assert worker is not None
                items = worker.ask({"op": "session", "user": user, "commands": creates})["results"]
                if failed := [item for item in items if not item["ok"]]:
                    raise RuntimeError(f"the s3fs peer's create failed: {failed[0]['head']}")
                seconds, cpu = sum(item["seconds"] for item in items), sum(item["cpu"] for item in items)
            after = backend.server_cpu()
            server_cpu = after - server if server is not None and after is not None else math.nan
            if rep >= warmup:
                samples[name].append(
                    _Sample(seconds / CREATES, Counter(), cpu / CREATES, server_cpu / CREATES)
                )
    return CreateCosts(
        seconds=_summaries(samples, "seconds"),
        client_cpu=_summaries(samples, "client_cpu"),
        server_cpu=_summaries(samples, "server_cpu"),
    )


@dataclass
class RenameComparison:
    """A directory rename of ``files`` files by s3memory in either format and by the s3fs peer."""

    backend: str
    files: int
    implementations: list[str]
    seconds: dict[str, Summary]
    requests: dict[str, int]
    breakdown: dict[str, str]
    ratio_s3fs: dict[str, Summary]
    """Per s3memory implementation: its time / s3fs's time, per repetition."""
    versions: dict[str, str] = field(default_factory=dict)
    client_cpu: dict[str, Summary] = field(default_factory=dict)
    """CPU seconds of a rename in the client's process (all its threads): the bench's for s3memory,
    the worker's for s3fs."""
    server_cpu: dict[str, Summary] = field(default_factory=dict)
    """CPU seconds of a rename in the server's process, where Linux tells."""
    cpu_ratio_s3fs: dict[str, Summary] = field(default_factory=dict)
    """Per s3memory implementation: its client + server CPU / s3fs's, per repetition."""
    left_out: str = ""
    """An implementation not measured at this size, and why."""

    def as_dict(self) -> dict[str, Any]:
        summaries = ("seconds", "ratio_s3fs", "client_cpu", "server_cpu", "cpu_ratio_s3fs")
        return {
            **self.__dict__,
            **{
                name: {key: value.as_dict() for key, value in getattr(self, name).items()}
                for name in summaries
            },
        }


def rename_tree(files: int) -> dict[str, str]:
    """``files`` notes in ten subdirectories of ``/memories/a/batch`` (as section 2's batches)."""
    return {f"/memories/a/batch/sub-{i % 10}/f-{i}.md": note_text(i % 50, 6) for i in range(files)}


@dataclass
class _Sample:
    """One measured rename: wall seconds, requests, CPU seconds of the client's and the server's process."""

    seconds: float
    requests: Counter[str]
    client_cpu: float
    server_cpu: float


def run_renames(
    backend: Backend,
    sizes: list[int],
    reps: dict[int, int],
    peer_python: str | None,
    warmup: int = 1,
    format1_files: int | None = None,
    held: int | None = None,
) -> list[RenameComparison]:
    """A directory of N files renamed from ``/memories/a/batch`` to ``/memories/moved-0/batch``,
    then on to ``moved-1`` ..., by s3memory (format 1 up to ``format1_files``, format 2) and the
    s3fs peer, one bucket for all, every move a sample (``reps[N]`` after ``warmup``); each
    repetition runs them back to back in rotating order. ``held``: format 2 also with its calls
    in flight held at that many (``held_name``), the bound before ``concurrency.in_flight``."""
    backend.create_bucket(RENAME_BUCKET)
    backend.clear(RENAME_BUCKET, "")
    client = s3memory_client(backend)
    counter = RequestCounter(client)
    results: list[RenameComparison] = []
    with s3fs_worker(peer_python, backend, RENAME_BUCKET) as worker:
        for files in sizes:
            # a user per endpoint: SeaweedFS keeps the directories an earlier endpoint's moves emptied
            user = f"renamer-{backend.name.replace('+', '-')}-{files}"
            tree = rename_tree(files)
            measured: dict[str, tuple[int, int | None]] = {
                name: (storage_format, None)
                for name, storage_format in FORMATS.items()
                if storage_format == FORMAT_2 or format1_files is None or files <= format1_files
            }
            if held is not None:
                measured[held_name(held)] = (FORMAT_2, held)
            tenants = {
                name: Tenant(backend, client, RENAME_BUCKET, f"{user}-{index}", storage_format=storage_format)
                for index, (name, (storage_format, _)) in enumerate(measured.items())
            }
            for tenant in tenants.values():
                tenant.seed(tree)
            if worker is not None:
                worker.ask({"op": "seed", "user": user, "files": tree})
            implementations = [*tenants, *([S3FS] if worker is not None else [])]
            samples: dict[str, list[_Sample]] = {name: [] for name in implementations}
            for rep in range(warmup + reps[files]):
                shift = rep % len(implementations)
                # to a directory never used: SeaweedFS keeps emptied directories, which s3fs's
                # ``exists`` (a delimited listing) finds, so it would refuse to move back
                command = {
                    "command": "rename",
                    "old_path": f"/memories/{'a' if rep == 0 else f'moved-{rep - 1}'}/batch",
                    "new_path": f"/memories/moved-{rep}/batch",
                }
                for name in implementations[shift:] + implementations[:shift]:
                    server = backend.server_cpu()
                    if name in tenants:
                        with counter.window() as seen, quiet_gc(), in_flight_held(measured[name][1]):
                            cpu = time.process_time()
                            started = time.perf_counter()
                            tenants[name].run(command)
                            seconds = time.perf_counter() - started
                            cpu = time.process_time() - cpu
                        requests = Counter(seen)
                    else:
                        assert worker is not None
                        answer = worker.ask({"op": "session", "user": user, "commands": [command]})
                        item = answer["results"][0]
                        if not item["ok"]:
                            raise RuntimeError(f"the s3fs peer's rename failed: {item['head']}")
                        seconds, requests, cpu = item["seconds"], Counter(item["requests"]), item["cpu"]
                    after = backend.server_cpu()
                    server_cpu = after - server if server is not None and after is not None else math.nan
                    if rep >= warmup:
                        samples[name].append(_Sample(seconds, requests, cpu, server_cpu))
            results.append(_compare(backend.name, files, samples, worker, format1_files))
            backend.clear(RENAME_BUCKET, "")  # the next size's tenants make a new store key
    return results


def _summaries(samples: dict[str, list[_Sample]], measure: str) -> dict[str, Summary]:
    """Per implementation, the summary of its samples' ``measure`` (a ``_Sample`` field)."""
    return {
        name: Summary.of([getattr(sample, measure) for sample in found]) for name, found in samples.items()
    }


def held_name(count: int) -> str:
    """The name of format 2 measured with its calls in flight held at ``count``."""
    return f"{S3MEMORY_F2}, {count} in flight"


def _compare(
    backend: str,
    files: int,
    samples: dict[str, list[_Sample]],
    worker: S3fsWorker | None,
    format1_files: int | None,
) -> RenameComparison:
    """One size's samples, summarised, each s3memory implementation set against s3fs per repetition."""
    times = {name: [sample.seconds for sample in found] for name, found in samples.items()}
    cpu = {
        name: [sample.client_cpu + sample.server_cpu for sample in found] for name, found in samples.items()
    }
    ours = [name for name in samples if name != S3FS]
    return RenameComparison(
        backend=backend,
        files=files,
        implementations=list(samples),
        seconds={name: Summary.of(values) for name, values in times.items()},
        requests={name: sum(found[-1].requests.values()) for name, found in samples.items()},
        breakdown={name: describe(found[-1].requests) for name, found in samples.items()},
        ratio_s3fs={name: paired_ratios(times[name], times[S3FS]) for name in ours} if S3FS in times else {},
        versions=worker.versions if worker is not None else {},
        client_cpu=_summaries(samples, "client_cpu"),
        server_cpu=_summaries(samples, "server_cpu"),
        cpu_ratio_s3fs=(
            {name: paired_ratios(cpu[name], cpu[S3FS]) for name in ours}
            if S3FS in cpu and not any(math.isnan(value) for value in cpu[S3FS])
            else {}
        ),
        left_out=(
            f"format 1 measured up to {format1_files:,} files"
            if S3MEMORY not in samples and format1_files is not None
            else ""
        ),
    )


def _summarise(
    backend: str,
    implementations: list[str],
    timings: dict[str, list[list[CommandTiming]]],
    versions: dict[str, str],
) -> PeerResult:
    per_kind: dict[str, dict[str, list[float]]] = {
        name: {kind: [] for kind in KINDS} for name in implementations
    }
    totals: dict[str, list[float]] = {name: [] for name in implementations}
    requests: dict[str, dict[str, str]] = {name: {} for name in implementations}
    request_totals: dict[str, int] = {}
    failures: dict[str, list[str]] = {name: [] for name in implementations}
    for name in implementations:
        for run_timings in timings[name]:
            totals[name].append(sum(t.seconds for t in run_timings))
            for kind in KINDS:
                values = [t.seconds for (k, _), t in zip(SESSION, run_timings, strict=True) if k == kind]
                per_kind[name][kind].append(sum(values) / len(values))
            for (kind, command), timing in zip(SESSION, run_timings, strict=True):
                if not timing.ok:
                    failures[name].append(f"{kind}: {command.get('path') or command.get('old_path')}")
        last = timings[name][-1] if timings[name] else []
        for kind in KINDS:
            merged: Counter[str] = Counter()
            count = 0
            for (k, _), timing in zip(SESSION, last, strict=False):
                if k == kind:
                    merged.update(timing.requests)
                    count += 1
            requests[name][kind] = _per_command(merged, count)
        request_totals[name] = sum(sum(t.requests.values()) for t in last)
    seconds = {name: {kind: Summary.of(per_kind[name][kind]) for kind in KINDS} for name in implementations}
    ratios: dict[str, dict[str, Summary]] = {}
    ratio_totals: dict[str, Summary] = {}
    if S3FS in implementations:
        for name in FORMATS:
            if name in implementations:
                ratios[name] = {
                    kind: paired_ratios(per_kind[name][kind], per_kind[S3FS][kind]) for kind in KINDS
                }
                ratio_totals[name] = paired_ratios(totals[name], totals[S3FS])
    return PeerResult(
        backend=backend,
        implementations=implementations,
        seconds=seconds,
        totals={name: Summary.of(totals[name]) for name in implementations},
        ratio_s3fs=ratios.get(S3MEMORY, {}),
        ratio_total=ratio_totals.get(S3MEMORY),
        requests=requests,
        request_totals=request_totals,
        failures={name: sorted(set(items)) for name, items in failures.items() if items},
        versions=versions,
        ratio_s3fs_f2=ratios.get(S3MEMORY_F2, {}),
        ratio_total_f2=ratio_totals.get(S3MEMORY_F2),
    )


def _per_command(merged: Counter[str], count: int) -> str:
    """Requests per command of a kind: ``GET+PUT`` when every command of the kind sent the same."""
    if not merged or count == 0:
        return "\u2013"
    if all(value % count == 0 for value in merged.values()):
        return describe(Counter({name: value // count for name, value in merged.items()}))
    return f"{describe(merged)} over {count}"


ENDPOINTS = ("moto", "moto+10ms", "seaweedfs", "seaweedfs+10ms")
"""The endpoints ``main`` can run the renames on."""


def peers_lines(peers: list[PeerResult], renames: list[RenameComparison]) -> list[str]:
    """Section 5 of ``latest.md``: the agent session per implementation, then the directory renames."""
    out = [
        "## 5. Peers on an agent session",
        "",
        "One conversation's worth of memory work, from the same 12 starting files in a fresh namespace each "
        f"repetition ({len(SESSION)} commands: "
        + ", ".join(f"{sum(1 for k, _ in SESSION if k == kind)} {kind}" for kind in KINDS)
        + "). A kind's time is the mean over its commands in one session. *s3memory*: storage format 1; "
        "*s3memory f2*: storage format 2 (private names; a rename copies on the server). *s3fs*: "
        "`bench/peers/s3fs_memory.py`, what a user would write with s3fs + `cryptography`; *local (SDK)*: "
        "`BetaLocalFilesystemMemoryTool` on local disk, the floor with no network.",
        "",
    ]
    for peer in peers:
        names = peer.implementations
        ours = [name for name in (S3MEMORY, S3MEMORY_F2) if name in names]
        ratios = {S3MEMORY: peer.ratio_s3fs, S3MEMORY_F2: peer.ratio_s3fs_f2}
        totals = {S3MEMORY: peer.ratio_total, S3MEMORY_F2: peer.ratio_total_f2}
        compared = [name for name in ours if S3FS in names and ratios[name]]
        header = ["command", *[f"{name} ms" for name in names]]
        header += [f"{name} / s3fs" for name in compared]
        header += [f"requests {name}" for name in names if name != LOCAL]
        rows = []
        for kind in KINDS:
            row = [kind, *[peer.seconds[name][kind].ms(1 if name != LOCAL else 2) for name in names]]
            row += [ratios[name][kind].ratio() for name in compared]
            row += [peer.requests[name][kind] for name in names if name != LOCAL]
            rows.append(row)
        total = ["whole session", *[peer.totals[name].ms(0 if name != LOCAL else 1) for name in names]]
        total += [totals[name].ratio() if totals[name] is not None else "\u2013" for name in compared]
        total += [str(peer.request_totals[name]) for name in names if name != LOCAL]
        rows.append(total)
        versions = ", ".join(f"{k} {v}" for k, v in peer.versions.items())
        runs = peer.totals[names[0]].n
        out += [f"**{peer.backend}** ({runs} sessions each{'; ' + versions if versions else ''})", ""]
        out += table(header, rows)
        if peer.failures:
            out += [
                "Commands that answered an error: "
                + "; ".join(f"{name}: {', '.join(items)}" for name, items in peer.failures.items()),
                "",
            ]
        if peer.skipped:
            out += [peer.skipped, ""]
        out += create_costs_lines(peer.create_costs)
    if renames:
        out += renames_lines(renames)
    return out


def create_costs_lines(costs: CreateCosts | None) -> list[str]:
    """One line: what a create costs each S3 implementation, from creates in a row."""
    if costs is None:
        return []
    made_of = "; ".join(f"{name} {costs.made_of(name)}" for name in costs.seconds)
    runs = next(iter(costs.seconds.values())).n
    return [
        f"*create alone*, {CREATES} new notes in a row in a directory that exists "
        f"({runs} run{'s' if runs != 1 else ''} each), "
        f"per create: time, client + server CPU: {made_of}.",
        "",
    ]


def renames_lines(renames: list[RenameComparison]) -> list[str]:
    """The directory renames' table: time, requests and CPU per file of each implementation."""
    out = [
        "**Directory rename of N files**, alone: `/memories/a/batch` (ten subdirectories) moved to "
        "`/memories/moved-0/batch`, then on to `moved-1` ..., every move a sample, the implementations one "
        "after another in rotating order, in one bucket. s3memory format 1 reads and writes every file (GET + "
        "PUT, sealed again for its new path); format 2 copies on the server (a CopyObject with a new "
        "place record; a HEAD first only for a file this process did not read, write or copy itself: here "
        "the unmeasured first move); s3fs copies on the server and deletes (`fs.copy(recursive=True)` + "
        "`fs.rm(recursive=True)`, up to its batch of concurrent requests; s3memory keeps as many in flight "
        "as `concurrency.in_flight` asks: 16, more where a round trip is long, up to 64). Each s3memory "
        "rename also writes and removes its job record (crash safety). *CPU ms/file*: the client's process "
        "(the bench's for s3memory, the s3fs worker's for s3fs) and the server's, per file moved; *CPU / "
        "s3fs*: client + server CPU over s3fs's, per repetition.",
        "",
    ]
    rows = []
    notes = []
    for renamed in renames:
        if renamed.left_out:
            notes.append(f"{renamed.backend}, {renamed.files:,} files: {renamed.left_out}.")
        for name in renamed.implementations:
            ratio = renamed.ratio_s3fs.get(name)
            cpu_ratio = renamed.cpu_ratio_s3fs.get(name)
            per_file = 1000 / renamed.files
            rows.append(
                [
                    renamed.backend,
                    f"{renamed.files:,}",
                    name,
                    renamed.seconds[name].ms(0),
                    ratio.ratio() if ratio is not None else "",
                    f"{renamed.requests[name]:,}",
                    renamed.breakdown[name],
                    f"{renamed.client_cpu[name].median * per_file:.2f}",
                    f"{renamed.server_cpu[name].median * per_file:.2f}",
                    cpu_ratio.ratio() if cpu_ratio is not None else "",
                    str(renamed.seconds[name].n),
                ]
            )
    out += table(
        [
            "endpoint",
            "files",
            "implementation",
            "time ms",
            "/ s3fs",
            "requests",
            "which",
            "client CPU ms/file",
            "server CPU ms/file",
            "CPU / s3fs",
            "runs",
        ],
        rows,
    )
    if notes:
        out += [" ".join(notes), ""]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run section 5's directory renames alone, on endpoints of their own, and print their table."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers_session", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the sizes of `python -m bench --quick`")
    parser.add_argument(
        "--endpoints",
        default="moto+10ms",
        help=f"comma-separated, of {', '.join(ENDPOINTS)} (default: moto+10ms)",
    )
    parser.add_argument("--files", help="comma-separated sizes (default: the plan's for each endpoint)")
    parser.add_argument("--reps", type=int, help="measured moves per size (default: the plan's)")
    parser.add_argument(
        "--held", type=int, help="also run format 2 with its calls in flight held at this many (e.g. 16)"
    )
    parser.add_argument("--peer-python", help="interpreter with s3fs (default: bench/.venv-peer)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else FULL
    endpoints = options.endpoints.split(",")
    if unknown := set(endpoints) - set(ENDPOINTS):
        parser.error(f"unknown endpoints: {', '.join(sorted(unknown))}")
    fake_credentials()
    peer_python, origin = find_peer_python(options.peer_python)
    if peer_python is None:
        print(f"s3fs peer skipped: {origin}", file=sys.stderr)
    found: list[RenameComparison] = []

    def measure(backend: Backend) -> None:
        sizes = (
            [int(size) for size in options.files.split(",")]
            if options.files
            else plan.latency_rename_sizes
            if backend.name.endswith("ms")
            else plan.rename_peer_sizes
        )
        reps = {size: options.reps or plan.rename_peer_reps.get(size, 3) for size in sizes}
        found.extend(
            run_renames(
                backend, sizes, reps, peer_python, format1_files=plan.rename_format1_files, held=options.held
            )
        )

    for latency in (0.0, plan.latency_ms):
        if "moto" + (f"+{latency:g}ms" if latency else "") in endpoints:
            with moto_backend(latency_ms=latency) as moto:
                measure(moto)
    if {"seaweedfs", "seaweedfs+10ms"} & set(endpoints):
        with seaweed_backend() as weed:
            if weed is None:
                raise SystemExit("SeaweedFS did not start")
            if "seaweedfs" in endpoints:
                measure(weed)
            if "seaweedfs+10ms" in endpoints:
                measure(weed.with_client_latency(plan.latency_ms))
    print_alone(renames_lines(found), options.json, [item.as_dict() for item in found])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
