"""Runs the bench and writes ``latest.md``, ``latest.png`` and ``latest.json``.

    python -m bench                 # full run, about 22 minutes on 2 cores (26 under load)
    python -m bench --quick         # about a minute: every section, small sizes
    python -m bench --quick --out /tmp/bench-smoke

Exits 0 when every section ran (missed targets are reported, not failures; ``--strict`` exits 1
on a missed target), 2 when a section could not run.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

if __package__ in (None, ""):  # ``python bench/run.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from . import (
    adversarial,
    coldstart,
    cost,
    cpu_share,
    mcp_lambda,
    mcp_overhead,
    peers_session,
    per_command,
    rotation,
    scaling,
    sync,
)
from .metrics import load_average
from .plan import FULL, QUICK, Plan
from .results_model import Results, evaluate
from .servers import Backend, fake_credentials, moto_backend, seaweed_backend, weed_binary

RESULTS = Path(__file__).resolve().parent / "results"
_T = TypeVar("_T")


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _environment(peer_python: str | None, peer_origin: str) -> dict[str, str]:
    env = {
        "cores": str(os.cpu_count()),
        "load_before": load_average(),
        "platform": platform.platform(),
        "v:python": platform.python_version(),
    }
    for name in ("s3memory", "boto3", "botocore", "moto", "cryptography", "anthropic", "mcp"):
        env[f"v:{name}"] = _version(name)
    binary = weed_binary()
    if binary:
        try:
            line = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=30).stdout
            env["v:seaweedfs"] = line.split()[2] if len(line.split()) > 2 else line.strip()
        except (OSError, subprocess.SubprocessError):
            env["v:seaweedfs"] = "unavailable"
    env["peer_python"] = f"{peer_python} ({peer_origin})" if peer_python else peer_origin
    return env


class Runner:
    def __init__(self, plan: Plan, results: Results) -> None:
        self.plan = plan
        self.results = results
        self.errors: list[str] = []

    def section(self, name: str, function: Callable[[], _T]) -> _T | None:
        started = time.perf_counter()
        _log(f"{name} ...")
        try:
            value = function()
        except Exception as error:
            self.errors.append(f"{name}: {type(error).__name__}: {error}")
            self.results.notes.append(f"**{name} failed**: {type(error).__name__}: {error}")
            traceback.print_exc()
            return None
        _log(f"{name} done in {time.perf_counter() - started:.1f} s")
        return value

    def commands(self, backend: Backend, reps: int, kms: bool) -> None:
        found = self.section(
            f"per command on {backend.name}",
            lambda: per_command.run(backend, reps=reps, warmup=self.plan.command_warmup),
        )
        if found is None:
            return
        self.results.commands += found
        if kms and backend.has_kms:
            cold = self.section(
                f"KMS request counts on {backend.name}", lambda: per_command.run_kms(backend, found)
            )
            if cold is not None:
                self.results.kms[backend.name] = cold

    def batches(self, backend: Backend, plan: scaling.BatchPlan) -> None:
        found = self.section(
            f"directory rename/delete on {backend.name}", lambda: scaling.run_batches(backend, plan)
        )
        if found is not None:
            self.results.batches += found[0]
            self.results.speedups += found[1]

    def views(self, backend: Backend, flat: list[int], deep: list[int]) -> None:
        found = self.section(
            f"view scaling on {backend.name}",
            lambda: scaling.run_views(backend, flat, deep, reps=self.plan.view_reps),
        )
        if found is not None:
            self.results.views += found

    def format_views(self, backend: Backend) -> None:
        files = self.plan.format_view_files
        found = self.section(
            f"view /memories of {files:,} files, format 1 vs 2, on {backend.name}",
            lambda: scaling.run_format_views(backend, files, reps=self.plan.format_view_reps),
        )
        if found is not None:
            self.results.format_views.append(found)

    def renames(self, backend: Backend, sizes: list[int], peer_python: str | None) -> None:
        found = self.section(
            f"directory rename, format 1, format 2 and s3fs, on {backend.name}",
            lambda: peers_session.run_renames(
                backend,
                sizes,
                self.plan.rename_peer_reps,
                peer_python,
                format1_files=self.plan.rename_format1_files,
            ),
        )
        if found is not None:
            self.results.renames += found

    def cpu_shares(self, backend: Backend) -> None:
        plan = self.plan
        found = self.section(
            f"the memory function on Lambda's CPU shares on {backend.name}",
            lambda: cpu_share.run(
                backend,
                plan.cpu_share_rounds,
                plan.cpu_share_warmup,
                plan.cpu_share_cold,
                plan.cpu_share_renames,
            ),
        )
        if found is not None:
            self.results.cpu_shares.append(found)
            if found.skipped:
                self.results.notes.append(f"CPU quotas skipped on {backend.name}: {found.skipped}.")
                _log(f"CPU quotas skipped on {backend.name}: {found.skipped}")

    def peers(self, backend: Backend, reps: int, peer_python: str | None) -> None:
        found = self.section(
            f"agent session on {backend.name}", lambda: peers_session.run(backend, reps, peer_python)
        )
        if found is not None:
            self.results.peers.append(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a ~1 minute smoke run with small sizes")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for latest.md/.png/.json")
    parser.add_argument(
        "--seaweed",
        choices=("auto", "on", "off"),
        default=None,
        help="SeaweedFS endpoint: auto (full run default: use it when `weed` starts), on (require it), "
        "off (--quick default)",
    )
    parser.add_argument("--no-latency", action="store_true", help="skip the endpoint with added latency")
    parser.add_argument(
        "--peer-python", help="interpreter with s3fs for the s3fs peer (default: bench/.venv-peer)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    arguments = parser.parse_args(argv)
    plan = QUICK if arguments.quick else FULL
    seaweed_mode = arguments.seaweed or ("off" if arguments.quick else "auto")

    fake_credentials()
    began = time.perf_counter()
    peer_python, peer_origin = peers_session.find_peer_python(arguments.peer_python)
    results = Results(
        plan=plan,
        started=datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        environment=_environment(peer_python, peer_origin),
    )
    if peer_python is None:
        results.notes.append(f"s3fs peer skipped: {peer_origin}.")
    runner = Runner(plan, results)

    with moto_backend() as moto:
        results.backends.append((moto.name, moto.description))
        runner.commands(moto, plan.command_reps, kms=True)
        runner.views(moto, plan.view_flat, plan.view_deep)
        runner.format_views(moto)
        runner.batches(moto, plan.batches)
        cold = runner.section("cold start", lambda: coldstart.run(moto, plan.coldstart_reps))
        results.coldstart = cold
        results.mcp = runner.section(
            "memory tool over MCP stdio vs the library",
            lambda: mcp_overhead.run(moto, plan.mcp_calls, plan.mcp_warmup, plan.mcp_starts),
        )
        if results.mcp is not None and results.mcp.skipped:
            results.notes.append(f"MCP section skipped: {results.mcp.skipped}.")
        results.mcp_lambda = runner.section(
            "the MCP function vs the memory function on Lambda",
            lambda: mcp_lambda.run(moto, plan.mcp_lambda_calls, plan.mcp_warmup, plan.mcp_lambda_cold_reps),
        )
        runner.peers(moto, plan.peer_reps, peer_python)
        runner.renames(moto, plan.rename_peer_sizes, peer_python)
        growths = runner.section(
            "adversarial inputs", lambda: adversarial.run(moto, adversarial.SCALES[plan.name])
        )
        results.adversarial = growths or []
        results.rotation = runner.section(
            f"rotate --all --wait on {plan.rotation_users} users",
            lambda: rotation.run(moto, plan.rotation_users),
        )
        results.cost = runner.section("cost per command (requests counted)", lambda: cost.count(moto))
        runner.cpu_shares(moto)
        results.sync = runner.section(
            f"sync rounds on {plan.sync_files:,} files against export and import",
            lambda: sync.run(moto, plan.sync_files, plan.sync_quiet_reps, plan.sync_first_reps),
        )

    if not arguments.no_latency and plan.latency_ms:
        with moto_backend(latency_ms=plan.latency_ms) as slow:
            results.backends.append((slow.name, slow.description))
            runner.commands(slow, plan.latency_command_reps, kms=False)
            runner.batches(slow, plan.latency_batches)
            runner.peers(slow, plan.latency_peer_reps, peer_python)
            runner.renames(slow, plan.latency_rename_sizes, peer_python)
            runner.cpu_shares(slow)

    if seaweed_mode != "off":
        _log("starting SeaweedFS ...")
        with seaweed_backend() as weed:
            if weed is None:
                message = (
                    "SeaweedFS skipped: no `weed` binary"
                    if weed_binary() is None
                    else ("SeaweedFS skipped: `weed mini` did not start within 60 s")
                )
                results.notes.append(message + ".")
                _log(message)
                if seaweed_mode == "on":
                    runner.errors.append(message)
            else:
                results.backends.append((weed.name, weed.description))
                runner.commands(weed, plan.seaweed_command_reps, kms=False)
                if plan.seaweed_view_deep:
                    runner.views(weed, [], plan.seaweed_view_deep)
                runner.format_views(weed)
                runner.batches(weed, plan.seaweed_batches)
                runner.peers(weed, plan.seaweed_peer_reps, peer_python)
                runner.renames(weed, plan.rename_peer_sizes, peer_python)
                if not arguments.no_latency and plan.latency_ms:
                    far = weed.with_client_latency(plan.latency_ms)
                    results.backends.append((far.name, far.description))
                    runner.commands(far, plan.latency_command_reps, kms=False)
                    runner.batches(far, plan.seaweed_batches)
                    runner.peers(far, plan.latency_peer_reps, peer_python)
                    runner.renames(far, plan.latency_rename_sizes, peer_python)

    results.environment["load_after"] = load_average()
    results.seconds = time.perf_counter() - began
    arguments.out.mkdir(parents=True, exist_ok=True)
    from . import plots, report

    (arguments.out / "latest.md").write_text(report.render(results), encoding="utf-8")
    (arguments.out / "latest.json").write_text(
        json.dumps(results.as_dict(), indent=1, default=str), encoding="utf-8"
    )
    try:
        plots.render(results, arguments.out / "latest.png")
    except Exception as error:  # a plot must not lose the tables
        runner.errors.append(f"plot: {type(error).__name__}: {error}")
        traceback.print_exc()
    missed = [t for t in evaluate(results) if t.status == "FAIL"]
    _log(
        f"wrote {arguments.out / 'latest.md'} and latest.png in {results.seconds / 60:.1f} min; "
        f"{len(missed)} target(s) missed"
    )
    if runner.errors:
        for error in runner.errors:
            _log(f"error: {error}")
        return 2
    return 1 if arguments.strict and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
