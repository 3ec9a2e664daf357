"""Sections 2 and 3: cost against tree size, and parallel batches against serial ones.

- ``view /memories`` over trees of N objects (all within two levels, so all listed), and over
  trees with the same two visible levels and H objects below level 2 (hidden from the listing).
  The two deep trees share one bucket, so a server whose LIST scans the whole bucket (moto) pays
  the same for both and their ratio shows only what s3memory does.
- ``view /memories`` of one tree of N files (about 50 directories of 20 files, and top-level
  files) in storage format 1 and in format 2 (private names), two users in one bucket, side by
  side: pair by pair, alternating which goes first, the ratio format 2 / format 1 per pair.
- Directory ``delete`` and ``rename`` of N files, each with bounded parallelism (s3memory's
  default, ``concurrency.in_flight``) and serial (both its bounds 1 in this process), interleaved
  pair by pair, one client shared by the worker threads. A delete of up to 1,000 files is one
  ``DeleteObjects`` request either way, so delete is also set against serial deletion without
  batches: the same client listing the directory and deleting its objects one request at a time.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import s3memory.storage.concurrency as concurrency
from s3memory.crypto import FORMAT_1, FORMAT_2

from .metrics import RequestCounter, Summary, describe, paired_ratios, quiet_gc, timed
from .plan import BatchPlan
from .servers import Backend
from .tables import table
from .workload import Tenant, note_text, s3memory_client

FORMAT_VIEW_TARGET = 1.15
"""``view /memories`` with private names: at most this much of format 1's time (issue 12)."""
TOPICS = 10
SUBS = 10


@dataclass
class ViewResult:
    backend: str
    tree: str
    objects: int
    below_level_2: int
    requests: int
    breakdown: str
    seconds: Summary
    output_chars: int
    level_one_directories: int = 0
    """Directories directly below ``/memories`` (the deep trees': ``TOPICS``)."""

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "seconds": self.seconds.as_dict()}


@dataclass
class BatchResult:
    backend: str
    operation: str
    files: int
    mode: str
    requests: int
    breakdown: str
    budget: int
    seconds: Summary
    cpu_seconds: Summary
    server_cpu_seconds: Summary

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "seconds": self.seconds.as_dict(),
            "cpu_seconds": self.cpu_seconds.as_dict(),
            "server_cpu_seconds": self.server_cpu_seconds.as_dict(),
        }


@dataclass
class ViewSide:
    """``view /memories`` of a tree in one storage format."""

    storage_format: int
    requests: int
    """The most any measured run sent (they are expected to be equal)."""
    breakdown: str
    seconds: Summary
    cpu_seconds: Summary
    """CPU time of the bench process (the client's work; the server is another process)."""
    output_chars: int

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "seconds": self.seconds.as_dict(),
            "cpu_seconds": self.cpu_seconds.as_dict(),
        }


@dataclass
class FormatViews:
    """``view /memories`` of the same tree in format 1 and format 2, measured side by side."""

    backend: str
    files: int
    directories: int
    top_level_files: int
    format1: ViewSide
    format2: ViewSide
    ratio: Summary
    """Format 2 time / format 1 time, per pair."""
    same_answer: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "format1": self.format1.as_dict(),
            "format2": self.format2.as_dict(),
            "ratio": self.ratio.as_dict(),
        }


SERIAL_BATCHES = "serial batches"
ONE_BY_ONE = "one request per file"


@dataclass
class Speedup:
    backend: str
    operation: str
    files: int
    serial: Summary
    parallel: Summary
    speedup: Summary
    parallel_cpu: Summary
    parallel_server_cpu: Summary
    baseline: str = SERIAL_BATCHES

    @property
    def cpu_ceiling(self) -> float:
        """The most any parallelism could give on this machine: serial time over the least time the
        parallel run's CPU work needs. The bench's threads share one interpreter lock (so its CPU
        time is a floor), so does moto's server, and the two together share the machine's cores."""
        bench = self.parallel_cpu.median
        server = self.parallel_server_cpu.median if self.parallel_server_cpu.n else 0.0
        if math.isnan(server):
            server = 0.0
        least = max(bench, server, (bench + server) / (os.cpu_count() or 1))
        return self.serial.median / least if least > 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "operation": self.operation,
            "files": self.files,
            "baseline": self.baseline,
            "serial": self.serial.as_dict(),
            "parallel": self.parallel.as_dict(),
            "speedup": self.speedup.as_dict(),
            "parallel_cpu": self.parallel_cpu.as_dict(),
            "parallel_server_cpu": self.parallel_server_cpu.as_dict(),
            "cpu_ceiling": self.cpu_ceiling,
        }


@contextlib.contextmanager
def in_flight_held(count: int | None) -> Iterator[None]:
    """s3memory's calls in flight at once held at ``count`` for the duration of the block (both
    bounds of ``concurrency.in_flight``); None leaves its rule alone."""
    saved = concurrency.PARALLEL_REQUESTS, concurrency.MAX_IN_FLIGHT
    if count is not None:
        concurrency.PARALLEL_REQUESTS = concurrency.MAX_IN_FLIGHT = count
    try:
        yield
    finally:
        concurrency.PARALLEL_REQUESTS, concurrency.MAX_IN_FLIGHT = saved


def delete_budget(files: int) -> int:
    return 2 * math.ceil(files / 1000) + 6


def rename_budget(files: int) -> int:
    """A copy and a read (format 1) per file, plus a listing page and a ``DeleteObjects`` per 1,000
    files, plus the record's write, HEAD and delete and the checks of the destination."""
    return 2 * files + 2 * math.ceil(files / 1000) + 10


def flat_tree(files: int) -> dict[str, str]:
    """``files`` notes spread over ten topic directories: everything within two levels."""
    return {f"/memories/topic-{i % TOPICS}/note-{i // TOPICS}.md": note_text(i, 6) for i in range(files)}


def deep_tree(hidden: int) -> dict[str, str]:
    """Ten topics of ten subdirectories (the visible levels) with ``hidden`` files below them."""
    return {
        f"/memories/topic-{i % TOPICS}/sub-{(i // TOPICS) % SUBS}/archive/f-{i}.md": note_text(i, 6)
        for i in range(hidden)
    }


_DIRECTORY_NAMES = [
    "projects",
    "people",
    "meeting-notes",
    "journal",
    "snippets",
    "customer-escalations",
    "research",
    "decisions",
]
_FILE_NAMES = ["notes", "todo", "2025-01-08-standup", "overview", "api-design-review", "plan", "readme"]
PER_DIRECTORY = 20


def named_tree(files: int) -> tuple[dict[str, str], int, int]:
    """A realistic memory of ``files`` notes: about one in 25 at the top level, the rest in
    directories of ``PER_DIRECTORY`` (1,000 files: 40 top-level files and 48 directories), with
    names of several lengths (private names take 52 or 77 key characters a segment). Everything
    lies within two levels, so ``view /memories`` lists all of it, up to the view cap. Returns
    the tree, its directories and its top-level files."""
    top = max(1, files // 25)
    tree = {f"/memories/{_FILE_NAMES[i % len(_FILE_NAMES)]}-{i}.md": note_text(i, 6) for i in range(top)}
    for index in range(files - top):
        directory = index // PER_DIRECTORY
        name = f"{_DIRECTORY_NAMES[directory % len(_DIRECTORY_NAMES)]}-{directory}"
        tree[f"/memories/{name}/{_FILE_NAMES[index % len(_FILE_NAMES)]}-{index}.md"] = note_text(
            top + index, 6
        )
    return tree, -(-(files - top) // PER_DIRECTORY), top


def run_format_views(backend: Backend, files: int, reps: int, warmup: int = 2) -> FormatViews:
    """``view /memories`` of ``named_tree(files)`` in format 1 and in format 2: two users in one
    bucket (so a LIST that scans the bucket costs both the same), measured pair by pair,
    alternating which goes first after ``warmup`` unmeasured pairs."""
    bucket = "bench-view-formats"
    backend.create_bucket(bucket)
    backend.clear(bucket, "")
    client = s3memory_client(backend)
    counter = RequestCounter(client)
    tree, directories, top = named_tree(files)
    tenants = {
        storage_format: Tenant(backend, client, bucket, f"viewer-{files}", storage_format=storage_format)
        for storage_format in (FORMAT_1, FORMAT_2)
    }
    for tenant in tenants.values():
        tenant.seed(tree)
    view = {"command": "view", "path": "/memories"}
    times: dict[int, list[float]] = {storage_format: [] for storage_format in tenants}
    cpus: dict[int, list[float]] = {storage_format: [] for storage_format in tenants}
    counts: dict[int, list[Counter[str]]] = {storage_format: [] for storage_format in tenants}
    answers: dict[int, str] = {}
    order = list(tenants)
    for pair in range(warmup + reps):
        for storage_format in order if pair % 2 == 0 else order[::-1]:
            tenant = tenants[storage_format]
            with counter.window() as seen, quiet_gc():
                cpu = time.process_time()
                started = time.perf_counter()
                answer = tenant.run(view)
                seconds = time.perf_counter() - started
                cpu = time.process_time() - cpu
            if pair >= warmup:
                times[storage_format].append(seconds)
                cpus[storage_format].append(cpu)
                counts[storage_format].append(Counter(seen))
                answers[storage_format] = answer

    def side(storage_format: int) -> ViewSide:
        most = max(counts[storage_format], key=lambda seen: sum(seen.values()))
        return ViewSide(
            storage_format=storage_format,
            requests=sum(most.values()),
            breakdown=describe(most),
            seconds=Summary.of(times[storage_format]),
            cpu_seconds=Summary.of(cpus[storage_format]),
            output_chars=len(answers[storage_format]),
        )

    result = FormatViews(
        backend=backend.name,
        files=files,
        directories=directories,
        top_level_files=top,
        format1=side(FORMAT_1),
        format2=side(FORMAT_2),
        ratio=paired_ratios(times[FORMAT_2], times[FORMAT_1]),
        same_answer=answers[FORMAT_1] == answers[FORMAT_2],
    )
    backend.clear(bucket, "")
    return result


def run_views(
    backend: Backend, flat_sizes: list[int], deep_sizes: list[int], reps: int, warmup: int = 1
) -> list[ViewResult]:
    """``view /memories`` over each tree, in rounds (every tree once per round, rotating order)."""
    client = s3memory_client(backend)
    counter = RequestCounter(client)
    trees: list[tuple[str, int, int, Tenant]] = []
    for size in flat_sizes:
        bucket = f"bench-view-flat-{size}"
        backend.create_bucket(bucket)
        tenant = Tenant(backend, client, bucket, "viewer")
        tenant.clear()
        tenant.seed(flat_tree(size))
        trees.append((f"flat-{size}", size, 0, tenant))
    if deep_sizes:
        backend.create_bucket("bench-view-deep")
    for hidden in deep_sizes:
        tenant = Tenant(backend, client, "bench-view-deep", f"deep-{hidden}")
        tenant.clear()
        tenant.seed(deep_tree(hidden))
        trees.append((f"deep-{hidden}", hidden, hidden, tenant))

    times: dict[str, list[float]] = {name: [] for name, *_ in trees}
    counts: dict[str, Counter[str]] = {}
    chars: dict[str, int] = {}
    view = {"command": "view", "path": "/memories"}
    for round_index in range(warmup + reps):
        shift = round_index % len(trees)
        for name, _, _, tenant in trees[shift:] + trees[:shift]:
            output: list[str] = []
            with counter.window() as seen:
                seconds = timed(lambda tenant=tenant, output=output: output.append(tenant.run(view)))
            if round_index >= warmup:
                times[name].append(seconds)
                counts[name] = Counter(seen)
                chars[name] = len(output[0])
    results = [
        ViewResult(
            backend=backend.name,
            tree=name,
            objects=objects,
            below_level_2=hidden,
            requests=sum(counts[name].values()),
            breakdown=describe(counts[name]),
            seconds=Summary.of(times[name]),
            output_chars=chars[name],
            level_one_directories=TOPICS if hidden else 0,
        )
        for name, objects, hidden, _ in trees
    ]
    for _, _, _, tenant in trees:
        tenant.clear()
    return results


@dataclass
class _Batches:
    backend: Backend
    tenant: Tenant
    counter: RequestCounter

    def seed_directory(self, root: str, files: int) -> None:
        self.tenant.seed(
            {f"{root}/sub-{i % 10}/f-{i}.md": note_text(i % 50, 6) for i in range(files)},
        )

    def measure(self, raw: dict[str, Any], parallel: bool) -> tuple[float, tuple[float, float], Counter[str]]:
        """Wall seconds; CPU seconds of this process (all threads) and of the server; the requests."""
        with (
            in_flight_held(None if parallel else 1),
            self.counter.window() as seen,
        ):
            server = self.backend.server_cpu()
            cpu = time.process_time()
            seconds = timed(lambda: self.tenant.run(raw))
            cpu = time.process_time() - cpu
            after = self.backend.server_cpu()
        server_cpu = after - server if server is not None and after is not None else math.nan
        return seconds, (cpu, server_cpu), Counter(seen)

    def delete_one_by_one(self, path: str) -> float:
        """Wall seconds of deleting a directory without batches: list it, then one DeleteObject
        per object, one after another (the baseline, not s3memory)."""
        client, bucket = self.tenant.client, self.tenant.bucket
        prefix = self.tenant.prefix(path)

        def delete() -> None:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for key in [item["Key"] for page in pages for item in page.get("Contents", [])]:
                client.delete_object(Bucket=bucket, Key=key)

        return timed(delete)


def run_batches(backend: Backend, plan: BatchPlan) -> tuple[list[BatchResult], list[Speedup]]:
    """Directory rename and delete of each size; serial runs interleaved where the plan says."""
    bucket = "bench-batches"
    backend.create_bucket(bucket)
    client = s3memory_client(backend)
    batches = _Batches(backend, Tenant(backend, client, bucket, "batcher"), RequestCounter(client))
    batches.tenant.clear()
    results: list[BatchResult] = []
    speedups: list[Speedup] = []
    for files in plan.sizes:
        rename_modes = ["parallel", "serial"] if files in plan.rename_serial else ["parallel"]
        delete_modes = ["parallel", "serial"] if files in plan.delete_serial else ["parallel"]
        # rename: a/batch <-> b/batch, both one directory deep; every move is a sample
        rename_times: dict[str, list[float]] = {mode: [] for mode in rename_modes}
        rename_cpu: dict[str, list[tuple[float, float]]] = {mode: [] for mode in rename_modes}
        rename_counts: dict[str, Counter[str]] = {}
        if plan.rename_reps.get(files, 0):
            batches.seed_directory("/memories/a/batch", files)
            batches.tenant.first_use()  # a quick plan counts its only move: not the store's probe
        location = "a"
        for rep in range(plan.rename_reps.get(files, 0)):
            for mode in rename_modes if rep % 2 == 0 else rename_modes[::-1]:
                target = "b" if location == "a" else "a"
                raw = {
                    "command": "rename",
                    "old_path": f"/memories/{location}/batch",
                    "new_path": f"/memories/{target}/batch",
                }
                seconds, cpu, seen = batches.measure(raw, mode == "parallel")
                location = target
                rename_times[mode].append(seconds)
                rename_cpu[mode].append(cpu)
                rename_counts[mode] = seen
        batches.tenant.clear()
        # delete: a fresh directory each time
        delete_times: dict[str, list[float]] = {mode: [] for mode in delete_modes}
        delete_cpu: dict[str, list[tuple[float, float]]] = {mode: [] for mode in delete_modes}
        delete_counts: dict[str, Counter[str]] = {}
        one_by_one: list[float] = []
        for rep in range(plan.delete_reps.get(files, 0)):
            for mode in delete_modes if rep % 2 == 0 else delete_modes[::-1]:
                batches.seed_directory("/memories/d/batch", files)
                raw = {"command": "delete", "path": "/memories/d/batch"}
                seconds, cpu, seen = batches.measure(raw, mode == "parallel")
                delete_times[mode].append(seconds)
                delete_cpu[mode].append(cpu)
                delete_counts[mode] = seen
                if mode == "serial" and rep < plan.one_by_one_reps.get(files, 0):
                    batches.seed_directory("/memories/d/batch", files)
                    one_by_one.append(batches.delete_one_by_one("/memories/d/batch"))
        for operation, times, cpus, counts, budget in (
            ("rename dir", rename_times, rename_cpu, rename_counts, rename_budget(files)),
            ("delete dir", delete_times, delete_cpu, delete_counts, delete_budget(files)),
        ):
            for mode, values in times.items():
                if not values:
                    continue
                results.append(
                    BatchResult(
                        backend=backend.name,
                        operation=operation,
                        files=files,
                        mode=mode,
                        requests=sum(counts[mode].values()),
                        breakdown=describe(counts[mode]),
                        budget=budget,
                        seconds=Summary.of(values),
                        cpu_seconds=Summary.of([cpu for cpu, _ in cpus[mode]]),
                        server_cpu_seconds=Summary.of([server for _, server in cpus[mode]]),
                    )
                )
            parallel = times.get("parallel", [])
            baselines = [(times.get("serial", []), SERIAL_BATCHES)]
            if operation == "delete dir":
                baselines.insert(0, (one_by_one, ONE_BY_ONE))
            for serial, baseline in baselines:
                if serial and parallel:
                    speedups.append(
                        Speedup(
                            backend=backend.name,
                            operation=operation,
                            files=files,
                            serial=Summary.of(serial),
                            parallel=Summary.of(parallel),
                            speedup=paired_ratios(serial, parallel[: len(serial)]),
                            parallel_cpu=Summary.of([cpu for cpu, _ in cpus["parallel"]]),
                            parallel_server_cpu=Summary.of([server for _, server in cpus["parallel"]]),
                            baseline=baseline,
                        )
                    )
        batches.tenant.clear()
    return results, speedups


def scaling_lines(
    views: list[ViewResult], format_views: list[FormatViews], batches: list[BatchResult]
) -> list[str]:
    """Section 2 of ``latest.md``: ``view /memories`` by tree, format 2 against 1, directory batches."""
    out = [
        "## 2. Scaling",
        "",
        "`view /memories` over trees of N objects. *flat-N*: N notes in ten directories, all within two "
        "levels (all listed). *deep-H*: ten directories of ten subdirectories (the visible levels) with H "
        "objects below level 2, which the listing never shows; the deep trees share one bucket.",
        "",
    ]
    for backend in sorted({v.backend for v in views}):
        shown = [v for v in views if v.backend == backend]
        out += [f"**{backend}** ({shown[0].seconds.n} runs per tree)", ""]
        out += table(
            ["tree", "objects", "below level 2", "requests", "which", "time ms", "answer chars"],
            [
                [
                    v.tree,
                    f"{v.objects:,}",
                    f"{v.below_level_2:,}",
                    str(v.requests),
                    v.breakdown,
                    v.seconds.ms(0),
                    f"{v.output_chars:,}",
                ]
                for v in shown
            ],
        )
    if format_views:
        out += [
            "**Private names.** `view /memories` of one tree in storage format 1 (plain keys) and format 2 "
            "(private names: every key segment an AES-SIV token that `view` decrypts), two users in one "
            "bucket, measured pair by pair (alternating which goes first); the ratio is format 2 / format 1 "
            f"per pair (target ≤ {FORMAT_VIEW_TARGET:.2f}\u00d7, the same requests). The tree: about one file "
            "in 25 at the top level, the rest in directories of 20, all within two levels; the answer is "
            "cut at the view cap in both. *Bench CPU* is this process's CPU time per view (the client: "
            "botocore parsing the listing, and on format 2 the names' decryption).",
            "",
        ]
        rows = []
        for compared in format_views:
            for side in (compared.format1, compared.format2):
                rows.append(
                    [
                        compared.backend,
                        f"{compared.files:,} ({compared.directories} directories, "
                        f"{compared.top_level_files} top-level)",
                        str(side.storage_format),
                        str(side.requests),
                        side.breakdown,
                        side.seconds.ms(0),
                        side.cpu_seconds.ms(1),
                        f"{side.output_chars:,}",
                        compared.ratio.ratio() if side is compared.format2 else "",
                        str(compared.ratio.n) if side is compared.format2 else "",
                    ]
                )
        out += table(
            [
                "endpoint",
                "files",
                "format",
                "requests",
                "which",
                "time ms",
                "bench CPU ms",
                "answer chars",
                "format 2 / format 1",
                "pairs",
            ],
            rows,
        )
    out += [
        "Directory `delete` and `rename` (to a path one directory deep) of N files, with s3memory's bounded "
        "parallelism (`concurrency.in_flight`: 16 in flight, more where a round trip is long, up to 64; "
        "threads sharing one client).",
        "",
    ]
    rows = []
    for batch in batches:
        if batch.mode != "parallel":
            continue
        rows.append(
            [
                batch.backend,
                batch.operation,
                f"{batch.files:,}",
                f"{batch.requests:,}",
                f"{batch.budget:,}",
                batch.breakdown,
                batch.seconds.seconds(2),
                per_request(batch.cpu_seconds.median, batch.requests),
                per_request(batch.server_cpu_seconds.median, batch.requests),
                str(batch.seconds.n),
            ]
        )
    out += table(
        [
            "endpoint",
            "operation",
            "files",
            "requests",
            "budget",
            "which",
            "time s",
            "bench CPU ms/request",
            "server CPU ms/request",
            "runs",
        ],
        rows,
    )
    return out


def speedup_lines(speedups: list[Speedup]) -> list[str]:
    """Section 3 of ``latest.md``: parallel batches against serial."""
    out = [
        "## 3. Parallel batches against serial",
        "",
        "The same command with both bounds of `s3memory.storage.concurrency.in_flight` at 1 (serial), "
        "interleaved run by run with the default (16 in flight, up to 64 where a round trip is long). The speedup is serial/parallel per pair. On a loopback endpoint with no latency "
        "both are bound by CPU (the bench, the server and anything else on 2 cores); the endpoint with an "
        "added per-request delay shows what bounded parallelism buys against a real round trip. *CPU "
        "ceiling* is serial time over the least time the parallel run's CPU work needs on this machine: the "
        "bench's threads share one interpreter lock, moto's server has its own, and both share the cores "
        "(the larger of bench CPU, server CPU, and their sum over the cores). A `+10ms` endpoint whose "
        "delay is the clients' (SeaweedFS) models a real endpoint, whose own work does not share these "
        "cores. A delete of up to 1,000 files is one `DeleteObjects` request in either mode, so delete is "
        "also set against serial deletion without batches (*one request per file*: the same client lists "
        "the directory and deletes each object in turn).",
        "",
    ]
    out += table(
        [
            "endpoint",
            "operation",
            "files",
            "serial is",
            "serial s",
            "parallel s",
            "speedup",
            "CPU ceiling",
            "pairs",
        ],
        [
            [
                s.backend,
                s.operation,
                f"{s.files:,}",
                s.baseline,
                s.serial.seconds(2),
                s.parallel.seconds(2),
                s.speedup.ratio(1),
                f"{s.cpu_ceiling:.1f}\u00d7",
                str(s.speedup.n),
            ]
            for s in speedups
        ],
    )
    return out


def per_request(seconds: float, requests: int) -> str:
    if math.isnan(seconds) or not requests:
        return "\u2013"
    return f"{seconds / requests * 1000:.2f}"
