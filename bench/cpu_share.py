"""Section 10: the memory function on a share of one CPU, as Lambda gives one, warm and cold.

Lambda gives a function CPU in proportion to its memory: one vCPU at 1,769 MB, so about 0.29 of one
at 512 MB and 0.14 at 256 MB (the memory function's default). Here each share is a cgroup v1 CPU
quota (``bench/cgroups.py``: ``cpu.cfs_quota_us`` over Linux's default 100 ms period; Lambda does not
publish its period), and beside them the same work with no quota (*full*: every core of this machine).

- **Warm**: per share, one worker process (this interpreter, started inside its group, byte-code
  from a warm ``PYTHONPYCACHEPREFIX``) imports ``s3memory.aws_lambda`` and serves direct invocations
  through ``memory_handler``, as a warm container does: its own user (storage format 2, a local key,
  the files of ``cost_model.SEEDED``), rounds of ``cost_model.COMMANDS`` (each command timed around
  the handler, with its process CPU; the collector left on, as on Lambda; one CFS period idle before
  each, as a container idles between invocations, so each starts with its quota whole), the workers taking turns
  round by round in rotating order so that other load on the machine falls on every share alike.
  Then directory renames of ``cost_model.RENAME_FILES`` files seeded by this process (so each is
  checked, as files another container wrote are), one unmeasured first.
- **Cold**: per share, a new interpreter started inside the group imports ``s3memory.aws_lambda`` and
  serves ``view /memories`` (section 4's child, ``coldstart.S3MEMORY_CHILD``), spawn to exit.

The S3 endpoint is the bench's (moto, with or without 10 ms per request) in its own process, outside
every group, as S3 is outside a Lambda function; on this machine it shares the cores. Where no group
can be made (no cgroup v1 ``cpu`` hierarchy, not root) only *full* is measured and the report says why.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

from s3memory.crypto import FORMAT_2

from . import cgroups
from .coldstart import S3MEMORY_CHILD, child_environment, spawn, store_settings
from .cost_model import COMMANDS, MEMORY_SIZES, RENAME_DIR, RENAME_FILES, SEEDED, vcpu_share
from .metrics import Summary, load_average, plain, print_alone
from .servers import REPO, Backend, fake_credentials, moto_backend
from .tables import table
from .workload import Tenant, note_text, s3memory_client

BUCKET = "bench-cpu-share"
FULL = "full"

WORKER = r"""
import json, os, sys, time
import s3memory.aws_lambda as entry
from bench.cost_model import ROUND_ORDER, command_inputs, edit_path, edit_text
user, tag, pause = os.environ["BENCH_USER"], os.environ["BENCH_TAG"], float(os.environ["BENCH_PAUSE"])

def call(name, tool_input, seconds, cpu, errors):
    time.sleep(pause)
    cpu_start, started = time.process_time(), time.perf_counter()
    answer = entry.memory_handler({"user_id": user, "input": tool_input}, None)
    seconds[name], cpu[name] = time.perf_counter() - started, time.process_time() - cpu_start
    if answer["is_error"]:
        errors.append(f"{name}: {answer['content'][:300]}")

ready = {}
errors = []
call("setup", {"command": "create", "path": edit_path(tag), "file_text": edit_text()}, ready, {}, errors)
print(json.dumps({"errors": errors}), flush=True)
for line in sys.stdin:
    order = json.loads(line)
    seconds, cpu, errors = {}, {}, []
    if "round" in order:
        inputs = command_inputs(tag, order["round"])
        for name in ROUND_ORDER:
            call(name, inputs[name], seconds, cpu, errors)
    else:
        call(order["name"], {"command": "rename", "old_path": order["old"], "new_path": order["new"]},
             seconds, cpu, errors)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "errors": errors}), flush=True)
"""
"""A warm container: serves the orders on its standard input, one JSON line each, and answers each with
the seconds and process CPU of every command it ran. Before each command it idles ``BENCH_PAUSE``
seconds (one CFS period), as a container idles between invocations, so each command starts with its
quota whole, as an agent's commands, separated by the model's turns, do."""


@dataclass
class Share:
    """One share of a CPU: its warm commands and its cold starts."""

    label: str
    memory_mb: int | None
    """The Lambda memory size it stands for (None: no quota)."""
    share: float | None
    seconds: dict[str, Summary] = field(default_factory=dict)
    cpu: dict[str, Summary] = field(default_factory=dict)
    cold: Summary | None = None
    """Spawn to exit of a new interpreter serving its first command."""
    cold_inside: Summary | None = None
    """Import and first command, timed inside the child."""
    throttled_periods: int = 0
    throttled_seconds: float = 0.0
    samples: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            **plain({k: v for k, v in self.__dict__.items() if k not in ("seconds", "cpu", "samples")}),
            "seconds": {name: value.as_dict() for name, value in self.seconds.items()},
            "cpu": {name: value.as_dict() for name, value in self.cpu.items()},
        }


@dataclass
class CpuShare:
    """Section 10 on one endpoint."""

    backend: str
    rounds: int
    renames: int
    cold_reps: int
    period_us: int
    skipped: str = ""
    """Why no quota was measured (only *full*), or ""."""
    load_before: str = ""
    load_after: str = ""
    shares: list[Share] = field(default_factory=list)

    def share(self, memory_mb: int) -> Share | None:
        return next((item for item in self.shares if item.memory_mb == memory_mb), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in self.__dict__.items() if k != "shares"},
            "shares": [s.as_dict() for s in self.shares],
        }


class _Worker:
    """A warm container in its group: a process answering orders on its standard input."""

    def __init__(self, argv: list[str], environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv,
            env=environment,
            cwd=tempfile.gettempdir(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ask(None)

    def ask(self, order: dict[str, Any] | None) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        if order is not None:
            stdin.write(json.dumps(order) + "\n")
            stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"a CPU-share worker ended (exit status {self.process.wait(timeout=10)})")
        answer: dict[str, Any] = json.loads(line)
        if answer["errors"]:
            raise RuntimeError(f"a CPU-share worker's command answered an error: {answer['errors']}")
        return answer

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        return self.process.stdin, self.process.stdout

    def close(self) -> None:
        stdin, _ = self._pipes()
        stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _levels(
    period_us: int, stack: contextlib.ExitStack
) -> tuple[list[tuple[Share, cgroups.QuotaGroup | None]], str]:
    """*full*, then a group per ``MEMORY_SIZES`` where groups can be made; and why not, if not."""
    levels: list[tuple[Share, cgroups.QuotaGroup | None]] = [(Share(FULL, None, None), None)]
    why = cgroups.unavailable()
    if why:
        return levels, why
    for memory_mb in sorted(MEMORY_SIZES, reverse=True):
        share = vcpu_share(memory_mb)
        group = stack.enter_context(cgroups.QuotaGroup(f"{memory_mb}mb", share, period_us))
        levels.append((Share(f"{memory_mb:,} MB", memory_mb, share), group))
    return levels, ""


def _user(share: Share) -> str:
    return f"cpu-{share.memory_mb or FULL}"


def _rotated(items: list[Any], turn: int) -> list[Any]:
    shift = turn % len(items)
    return items[shift:] + items[:shift]


def run(
    backend: Backend,
    rounds: int,
    warmup: int,
    cold_reps: int,
    renames: int,
    period_us: int = cgroups.DEFAULT_PERIOD_US,
) -> CpuShare:
    """Section 10 on ``backend`` (see the module)."""
    backend.create_bucket(BUCKET)
    found = CpuShare(backend.name, rounds, renames, cold_reps, period_us, load_before=load_average())
    client = s3memory_client(backend)
    with (
        contextlib.ExitStack() as stack,
        tempfile.TemporaryDirectory(prefix="s3memory-bench-pycache-") as cache,
    ):
        levels, found.skipped = _levels(period_us, stack)
        tenants: dict[str, Tenant] = {}
        for share, _ in levels:
            tenant = Tenant(backend, client, BUCKET, _user(share), storage_format=FORMAT_2)
            tenant.clear()
            tenant.seed({path: note_text(index, lines) for index, (path, lines) in enumerate(SEEDED.items())})
            tenants[share.label] = tenant
        settings = {
            **store_settings(backend, BUCKET),
            "S3MEMORY_DIRECT_INVOCATION": "allow",
            "BENCH_TAG": "w",
            "BENCH_PAUSE": str(period_us / 1e6),
            "PYTHONPATH": str(REPO),
        }
        try:
            _warm(levels, settings, cache, tenants, rounds, warmup, renames, stack)
            _cold(levels, settings, cache, cold_reps)
        finally:
            for tenant in tenants.values():
                tenant.clear()
        for share, group in levels:
            if group is not None:
                share.throttled_periods, share.throttled_seconds = group.throttled()
        found.shares = [share for share, _ in levels]
    found.load_after = load_average()
    return found


def _warm(
    levels: list[tuple[Share, cgroups.QuotaGroup | None]],
    settings: dict[str, str],
    cache: str,
    tenants: dict[str, Tenant],
    rounds: int,
    warmup: int,
    renames: int,
    stack: contextlib.ExitStack,
) -> None:
    workers: list[tuple[Share, _Worker]] = []
    for share, group in levels:
        environment = child_environment({**settings, "BENCH_USER": _user(share)}, cache)
        command = [sys.executable, "-c", WORKER]
        worker = _Worker(group.argv(command) if group else command, environment)
        stack.callback(worker.close)
        workers.append((share, worker))
    samples: dict[str, dict[str, list[float]]] = {s.label: {} for s, _ in workers}
    cpu: dict[str, dict[str, list[float]]] = {s.label: {} for s, _ in workers}

    def record(share: Share, answer: dict[str, Any]) -> None:
        for name, value in answer["seconds"].items():
            samples[share.label].setdefault(name, []).append(value)
            cpu[share.label].setdefault(name, []).append(answer["cpu"][name])

    for number in range(warmup + rounds):
        for share, worker in _rotated(workers, number):
            answer = worker.ask({"round": number})
            if number >= warmup:
                record(share, answer)
    for number in range(renames + 1 if renames else 0):
        for share, worker in _rotated(workers, number):
            tenant = tenants[share.label]
            source = f"/memories/w/batch-{number}"
            tenant.seed({f"{source}/f-{index:03d}.md": note_text(index, 20) for index in range(RENAME_FILES)})
            answer = worker.ask({"name": RENAME_DIR, "old": source, "new": f"/memories/w/moved-{number}"})
            if number:
                record(share, answer)
    for share, _ in workers:
        share.samples = samples[share.label]
        share.seconds = {name: Summary.of(values) for name, values in samples[share.label].items()}
        share.cpu = {name: Summary.of(values) for name, values in cpu[share.label].items()}


def _cold(
    levels: list[tuple[Share, cgroups.QuotaGroup | None]], settings: dict[str, str], cache: str, reps: int
) -> None:
    process: dict[str, list[float]] = {share.label: [] for share, _ in levels}
    inside: dict[str, list[float]] = {share.label: [] for share, _ in levels}
    for number in range(reps):
        for share, group in _rotated(levels, number):
            environment = child_environment({**settings, "BENCH_USER": _user(share)}, cache)
            elapsed, report = spawn(S3MEMORY_CHILD, environment, group.argv if group else None)
            process[share.label].append(elapsed)
            inside[share.label].append(report["seconds"])
    for share, _ in levels:
        share.cold, share.cold_inside = Summary.of(process[share.label]), Summary.of(inside[share.label])


def durations(found: list[CpuShare], memory_mb: int) -> tuple[str, dict[str, float]]:
    """The median warm seconds of each command at ``memory_mb`` and the endpoint they were measured on:
    the one with a round trip (``+10ms``) where measured, else the first; ({}, "") if none."""
    ordered = sorted(found, key=lambda item: "+" not in item.backend)
    for measured in ordered:
        share = measured.share(memory_mb)
        if share is not None and share.seconds:
            return measured.backend, {name: value.median for name, value in share.seconds.items()}
    return "", {}


CPU_SHARE_ABOUT = (
    "The memory function (`s3memory.aws_lambda.memory_handler`, direct invocations, storage format 2, a "
    "local key) in a process held to a share of one CPU, as Lambda holds a function to one in proportion "
    "to its memory (one vCPU at 1,769 MB): a cgroup v1 CPU quota (`bench/cgroups.py`, "
    "`cpu.cfs_quota_us` over `cpu.cfs_period_us`), and *full* with no quota (every core of this machine). "
    "*Warm*: one process per share serving rounds of the priced commands (each timed around the handler, "
    "after one CFS period idle, as a container idles between invocations: each starts with its quota whole), "
    f"the shares taking turns round by round, then directory renames of {RENAME_FILES} files another "
    "process wrote. *Cold*: a new interpreter in the group serving its first command (`view /memories`), "
    "spawn to exit. The S3 server runs outside every group, on this machine's cores.",
)


def cpu_share_lines(found: list[CpuShare]) -> list[str]:
    """Section 10 of ``latest.md``."""
    out = [
        "## 10. The memory function on a share of one CPU (Lambda's memory sizes)",
        "",
        *CPU_SHARE_ABOUT,
        "",
    ]
    if not found:
        return [*out, "Not measured in this run.", ""]
    for measured in found:
        out += [
            f"**{measured.backend}**: {measured.rounds} rounds, {measured.renames} directory renames and "
            f"{measured.cold_reps} cold starts per share; CFS period {measured.period_us / 1000:g} ms; load "
            f"average {measured.load_before} before, {measured.load_after} after (other load on the machine "
            "slows every share, the smallest most).",
            "",
        ]
        if measured.skipped:
            out += [f"CPU quotas skipped: {measured.skipped}. Only *full* was measured.", ""]
        shares = measured.shares
        header = ["command", *[_heading(share) for share in shares], "CPU ms (full)"]
        rows = []
        for name in (*COMMANDS, RENAME_DIR):
            if not all(name in share.seconds for share in shares):
                continue
            rows.append(
                [
                    name,
                    *[share.seconds[name].ms() for share in shares],
                    f"{shares[0].cpu[name].median * 1000:.1f}",
                ]
            )
        rows.append(
            [
                "cold start, spawn to exit",
                *["\u2013" if share.cold is None else share.cold.ms(0) for share in shares],
                "",
            ]
        )
        out += ["Milliseconds, median (p25\u2013p75):", ""]
        out += table(header, rows)
        throttled = [s for s in shares if s.memory_mb is not None]
        if throttled:
            out += [
                "Throttled: "
                + "; ".join(
                    f"{s.label} {s.throttled_periods:,} periods, {s.throttled_seconds:.1f} s waited"
                    for s in throttled
                )
                + ".",
                "",
            ]
    return out


def _heading(share: Share) -> str:
    return "full (no quota) ms" if share.share is None else f"{share.label} ({share.share:.2f} vCPU) ms"


def main(argv: list[str] | None = None) -> int:
    """Run section 10 alone on a moto server of its own (with ``--latency-ms``, per request) and print
    its part of ``latest.md``."""
    from .plan import FULL as FULL_PLAN
    from .plan import QUICK

    parser = argparse.ArgumentParser(prog="python -m bench.cpu_share", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the size of `python -m bench --quick`")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="added to every request by the server")
    parser.add_argument(
        "--period-ms", type=float, default=cgroups.DEFAULT_PERIOD_US / 1000, help="CFS period"
    )
    parser.add_argument("--json", help="also write the results to this JSON file")
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else FULL_PLAN
    fake_credentials()
    with moto_backend(latency_ms=options.latency_ms) as backend:
        found = run(
            backend,
            plan.cpu_share_rounds,
            plan.cpu_share_warmup,
            plan.cpu_share_cold,
            plan.cpu_share_renames,
            period_us=round(options.period_ms * 1000),
        )
    print_alone(cpu_share_lines([found]), options.json, found.as_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
