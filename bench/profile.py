"""Profiles of the commands behind missed targets: pyinstrument call trees plus a request timeline.

    python -m bench.profile                      # every scenario, against moto (loopback)
    python -m bench.profile create view-root --latency-ms 10 --repeat 30
    python -m bench.profile view-root-1000 rename-dir-300 --storage-format 2 --seaweed

Each scenario runs on a warm tool; the call tree shows where wall time goes inside s3memory, and the
timeline shows each API call's start and end (ms from the command's start), so sequential round trips
are visible. Directory renames run their worker function inline (s3memory's ``parallel`` patched to
a loop) so the profiler, which follows one thread, sees the per-file work. ``--storage-format 2``
profiles private names (format 2), ``--seaweed`` runs against SeaweedFS instead of moto. Output goes
to stdout and to ``bench/results/profiles/<scenario>[-f2][-seaweedfs].txt``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import s3memory.core.files as files_module
import s3memory.core.job_runner as job_runner_module

from .scaling import named_tree
from .servers import Backend, fake_credentials, moto_backend, seaweed_backend
from .workload import Tenant, note_text, s3memory_client

OUT = Path(__file__).resolve().parent / "results" / "profiles"
BUCKET = "bench-profile"


class Timeline:
    """API calls of one client with start/end times (``before-call`` to ``after-call`` hooks)."""

    def __init__(self, client: Any) -> None:
        self.origin = time.perf_counter()
        self.calls: list[tuple[str, float, float]] = []
        self._open: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()
        client.meta.events.register("before-call.s3", self._before)
        client.meta.events.register("after-call.s3", self._after)

    def _before(self, event_name: str = "", **_: Any) -> None:
        with self._lock:
            self._open[threading.get_ident()] = (event_name.rsplit(".", 1)[-1], time.perf_counter())

    def _after(self, **_: Any) -> None:
        now = time.perf_counter()
        with self._lock:
            name, started = self._open.pop(threading.get_ident(), ("?", now))
            self.calls.append((name, started, now))

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
        self.origin = time.perf_counter()

    def render(self, limit: int = 40) -> str:
        lines = [f"{'call':<16}{'start ms':>10}{'end ms':>10}{'ms':>8}"]
        for name, started, ended in sorted(self.calls, key=lambda call: call[1])[:limit]:
            lines.append(
                f"{name:<16}{(started - self.origin) * 1000:>10.1f}{(ended - self.origin) * 1000:>10.1f}"
                f"{(ended - started) * 1000:>8.1f}"
            )
        if len(self.calls) > limit:
            lines.append(f"... {len(self.calls) - limit} more calls")
        return "\n".join(lines)


@contextmanager
def inline_parallel() -> Iterator[None]:
    """Run s3memory's parallel batches inline, in the calling thread (for the profiler only)."""
    modules = (files_module, job_runner_module)
    saved = [module.parallel for module in modules]

    def inline(function: Callable[[Any], object], items: Sequence[Any]) -> None:
        for item in items:
            function(item)

    for module in modules:
        module.parallel = inline  # type: ignore[assignment]
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.parallel = original  # type: ignore[assignment]


def _scenarios(
    tenant: Tenant, repeat: int
) -> dict[str, tuple[Callable[[int], None], Callable[[int], object]]]:
    """name -> (untimed preparation for run i, the command of run i)."""
    base = {
        "/memories/notes/a.md": note_text(1),
        "/memories/notes/b.md": note_text(2),
        "/memories/projects/alpha/readme.md": note_text(3),
        "/memories/scratch/keep.md": note_text(4, 4),
    }
    tenant.seed(base)

    def nothing(_: int) -> None:
        return None

    def seed_rename(i: int) -> None:
        tenant.clear()
        tenant.seed({**base, **{f"/memories/big/sub-{k % 10}/f-{k}.md": note_text(k, 6) for k in range(300)}})

    def seed_edited(i: int) -> None:
        if i == 0:
            tenant.seed({"/memories/notes/edited.md": note_text(5) + "counter: 0\n"})

    def seed_named(i: int) -> None:
        if i == 0:
            tenant.clear()
            tenant.seed(named_tree(1000)[0])

    return {
        "create": (
            nothing,
            lambda i: tenant.run(
                {"command": "create", "path": f"/memories/notes/new-{i}.md", "file_text": note_text(i)}
            ),
        ),
        "create-deep": (
            nothing,
            lambda i: tenant.run(
                {"command": "create", "path": f"/memories/projects/gamma/p-{i}.md", "file_text": note_text(i)}
            ),
        ),
        "str-replace": (
            seed_edited,
            lambda i: tenant.run(
                {
                    "command": "str_replace",
                    "path": "/memories/notes/edited.md",
                    "old_str": f"counter: {i}\n",
                    "new_str": f"counter: {i + 1}\n",
                }
            ),
        ),
        "view-root": (nothing, lambda i: tenant.run({"command": "view", "path": "/memories"})),
        "view-root-1000": (seed_named, lambda i: tenant.run({"command": "view", "path": "/memories"})),
        "view-dir": (nothing, lambda i: tenant.run({"command": "view", "path": "/memories/notes"})),
        "view-file": (nothing, lambda i: tenant.run({"command": "view", "path": "/memories/notes/a.md"})),
        "delete-file": (
            lambda i: tenant.seed({f"/memories/scratch/d-{i}.md": note_text(i, 5)}),
            lambda i: tenant.run({"command": "delete", "path": f"/memories/scratch/d-{i}.md"}),
        ),
        "rename-dir-300": (
            seed_rename,
            lambda i: tenant.run(
                {"command": "rename", "old_path": "/memories/big", "new_path": "/memories/archive/big"}
            ),
        ),
    }


def profile(backend: Backend, names: list[str], repeat: int, storage_format: int = 1) -> dict[str, str]:
    from pyinstrument import Profiler

    backend.create_bucket(BUCKET)
    client = s3memory_client(backend)
    timeline = Timeline(client)
    tenant = Tenant(backend, client, BUCKET, "profiled", storage_format=storage_format)
    tenant.clear()
    scenarios = _scenarios(tenant, repeat)
    reports: dict[str, str] = {}
    for name in names:
        prepare, command = scenarios[name]
        runs = 1 if name.startswith("rename-dir") else repeat
        prepare(0)
        command(0)  # warm
        profiler = Profiler(interval=0.0005)
        wall = 0.0
        cpu = 0.0
        with inline_parallel():
            for index in range(1, runs + 1):
                prepare(index)
                timeline.reset()
                started, cpu_started = time.perf_counter(), time.process_time()
                profiler.start()
                command(index)
                profiler.stop()
                wall += time.perf_counter() - started
                cpu += time.process_time() - cpu_started
        tree = profiler.output_text(unicode=False, color=False, show_all=False)
        reports[name] = (
            f"# {name} on {backend.name}, storage format {storage_format}: {runs} run(s), {wall / runs * 1000:.1f} ms wall and "
            f"{cpu / runs * 1000:.1f} ms CPU per run (profiler on)\n\n"
            f"## API calls of the last run\n\n{timeline.render()}\n\n## Call tree (all runs)\n{tree}"
        )
    tenant.clear()
    return reports


def main(argv: list[str] | None = None) -> int:
    names = [
        "create",
        "create-deep",
        "str-replace",
        "view-root",
        "view-root-1000",
        "view-dir",
        "view-file",
        "delete-file",
        "rename-dir-300",
    ]
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", choices=names, default=names, metavar="scenario")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--storage-format", type=int, choices=(1, 2), default=1)
    parser.add_argument("--seaweed", action="store_true", help="SeaweedFS instead of moto (no --latency-ms)")
    arguments = parser.parse_args(argv)
    fake_credentials()
    arguments.out.mkdir(parents=True, exist_ok=True)
    chosen = arguments.scenarios or names
    if arguments.seaweed:
        with seaweed_backend() as weed:
            if weed is None:
                print("SeaweedFS did not start (is `weed` installed?)", file=sys.stderr)
                return 2
            reports = profile(weed, chosen, arguments.repeat, arguments.storage_format)
    else:
        with moto_backend(arguments.latency_ms) as backend:
            reports = profile(backend, chosen, arguments.repeat, arguments.storage_format)
    for name, text in reports.items():
        suffix = f"-{arguments.latency_ms:g}ms" if arguments.latency_ms else ""
        suffix += "-f2" if arguments.storage_format == 2 else ""
        suffix += "-seaweedfs" if arguments.seaweed else ""
        (arguments.out / f"{name}{suffix}.txt").write_text(text, encoding="utf-8")
        print(text, file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
