"""``python -m bench.edge_load`` (``make edge-soak``): the HTTP MCP server alone on loopback against a
stranger on the network (issue 37, E1 and E2), with its default limits (``s3memory/mcp/limits.py``).

``s3memory mcp --transport http`` runs in a process of its own (S3 on the bench's moto child, a local
key, a loopback token issuer, ``tests/support/issuer.py``). An attacker process holds, for
``--seconds`` (60):

- ``--half-open`` connections (2,000) that send half a request head and wait, each opened again
  as soon as the server closes it (no token needed);
- ``--stalled`` connections (200) with alice's token, each declaring a 4 MiB body and sending all
  of it but 10 bytes, each opened again as soon as it is answered or closed;
- ``--slow-readers`` connections (50) that send, at once, as many requests for the protected
  resource's metadata as the server holds ahead (no token needed) and never read the answers (a
  receive buffer of 1 KiB and 536-byte segments, as a client across a network), each opened again as
  soon as the server closes it.

Meanwhile bob's ``tools/call`` (a ``view`` of a file, a connection of its own each time) is timed
twice a second, and the server's resident memory (``VmRSS``) and open descriptors are sampled four
times a second. Then the attacker stops, the server closes what it held, and the call and the memory
are measured again; ``--rounds`` attacks (2), each followed by a quiet phase. The client raises its
own open-file limit to the hard one.

Passes (exit 0) when every call, under attack and after, was answered 200 within
``--latency-bound`` seconds (2), the server's memory stayed under ``--rss-bound-mib`` (256) and no
attack's peak exceeded the first's by more than a tenth (what is held is given back, round after
round). Prints each phase's figures; ``--json PATH`` writes them.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import ctypes
import http.client
import json
import multiprocessing
import os
import signal
import socket
import statistics
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import SynchronizedArray
from pathlib import Path
from typing import Any

from .servers import REPO, fake_credentials, moto_backend, process_cpu

BUCKET = "edge-load"
MIB = 1024 * 1024
LATENCY_BOUND_SECONDS = 2.0
RSS_BOUND_MIB = 256
PROBE_EVERY_SECONDS = 0.5
SAMPLE_EVERY_SECONDS = 0.25
CALL_TIMEOUT_SECONDS = 30.0
START_TIMEOUT_SECONDS = 60.0
PROTOCOL_VERSION = "2025-06-18"
PR_SET_PDEATHSIG = 1
TCP_ESTABLISHED = 1

# The attacker's counters (a shared array of the attacker's writing, read by the bench): the
# connections it holds, then what it was answered.
HALF_OPEN_HELD, BODIES_HELD, READERS_HELD = HELD = range(3)
ANSWERED_408, ANSWERED_413, ANSWERED_429, ANSWERED_503, UNANSWERED, READERS_CLOSED = range(3, 9)
COUNTERS = (
    *("half_open_held", "bodies_held", "readers_held"),
    *("408", "413", "429", "503", "unanswered", "readers_closed"),
)
"""``unanswered``: closed with nothing the attacker could read. A refusal sent while the attacker is
still sending its body is lost: a close with unread data resets the connection. ``readers_closed``:
slow readers the server closed."""
STATUSES = {b"408": ANSWERED_408, b"413": ANSWERED_413, b"429": ANSWERED_429, b"503": ANSWERED_503}


# -- the attacker, in a process of its own -----------------------------------------------------------


def _count(counters: SynchronizedArray[int], answer: bytes) -> None:
    index = STATUSES.get(answer[9:12], UNANSWERED) if answer.startswith(b"HTTP/1.1 ") else UNANSWERED
    counters[index] += 1


async def _until_answered(reader: asyncio.StreamReader) -> bytes:
    with contextlib.suppress(OSError):
        return await reader.read()
    return b""


async def _connected(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A new connection to the server, tried again until it is accepted."""
    while True:
        try:
            return await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)


async def _half_open(port: int, counters: SynchronizedArray[int]) -> None:
    """One connection that sends half a head, opened again whenever the server closes it."""
    while True:
        reader, writer = await _connected(port)
        counters[HALF_OPEN_HELD] += 1
        try:
            writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriz")
            _count(counters, await _until_answered(reader))
        finally:
            counters[HALF_OPEN_HELD] -= 1
            writer.close()


async def _stalled(port: int, head: bytes, body: bytes, counters: SynchronizedArray[int]) -> None:
    """One connection that sends all of a declared body but its last bytes, opened again whenever it
    is answered or closed."""
    while True:
        reader, writer = await _connected(port)
        held = False
        try:
            writer.write(head)
            with contextlib.suppress(OSError):
                writer.write(body)
                await writer.drain()
                held = True
                counters[BODIES_HELD] += 1
            _count(counters, await _until_answered(reader))
        finally:
            if held:
                counters[BODIES_HELD] -= 1
            writer.close()


def _metadata_requests(port: int) -> bytes:
    """As many requests of the resource's metadata as the server holds ahead of the one it answers
    (nine tenths of its bound), pipelined."""
    from s3memory.mcp.limits import DEFAULT_LIMITS

    one = f"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    return one * (DEFAULT_LIMITS.max_ahead_bytes * 9 // 10 // len(one))


async def _slow_reader(port: int, requests: bytes, counters: SynchronizedArray[int]) -> None:
    """One connection that sends ``requests`` and never reads the answers, opened again whenever the
    server closes it (seen, without reading, in the connection's TCP state)."""
    loop = asyncio.get_running_loop()
    while True:
        reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        reader.setblocking(False)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        reader.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
        try:
            await loop.sock_connect(reader, ("127.0.0.1", port))
            await loop.sock_sendall(reader, requests)
        except OSError:
            reader.close()
            await asyncio.sleep(0.1)
            continue
        counters[READERS_HELD] += 1
        try:
            while reader.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == TCP_ESTABLISHED:
                await asyncio.sleep(1)
            counters[READERS_CLOSED] += 1
        finally:
            counters[READERS_HELD] -= 1
            reader.close()


@dataclass(frozen=True)
class Crowd:
    """The attacker's connections: how many of each kind, and the stalled bodies' size."""

    half_open: int
    stalled: int
    slow_readers: int
    body_bytes: int


async def _attack(port: int, token: str, crowd: Crowd, counters: SynchronizedArray[int]) -> None:
    parent = os.getppid()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {crowd.body_bytes}\r\n\r\n"
    ).encode()
    body = b" " * (crowd.body_bytes - 10)
    requests = _metadata_requests(port)
    tasks = [asyncio.create_task(_half_open(port, counters)) for _ in range(crowd.half_open)]
    tasks += [asyncio.create_task(_stalled(port, head, body, counters)) for _ in range(crowd.stalled)]
    tasks += [asyncio.create_task(_slow_reader(port, requests, counters)) for _ in range(crowd.slow_readers)]
    while os.getppid() == parent:  # the bench stops the attacker with SIGTERM, or dies
        await asyncio.sleep(1)
    for task in tasks:
        task.cancel()


def attack(port: int, token: str, crowd: Crowd, counters: SynchronizedArray[int]) -> None:
    """The attacker process: connections held against ``port`` until it is terminated."""
    from s3memory.mcp.connections import raise_open_file_limit

    raise_open_file_limit()
    asyncio.run(_attack(port, token, crowd, counters))


# -- what the bench measures ------------------------------------------------------------------------


@dataclass
class Phase:
    """One phase's figures: bob's calls and the server's memory and descriptors."""

    name: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    descriptors: list[int] = field(default_factory=list)
    server_cpu_seconds: float = 0.0
    attacker: dict[str, int] = field(default_factory=dict)
    """The attacker's counters at the phase's end, and the most connections it held at once."""

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "phase": self.name,
            "seconds": round(self.seconds, 1),
            "calls": len(self.latencies) + len(self.failures),
            "failed_calls": dict(collections.Counter(self.failures)),
            "latency_median_s": round(statistics.median(lat), 3) if lat else None,
            "latency_p99_s": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 3) if lat else None,
            "latency_max_s": round(lat[-1], 3) if lat else None,
            "rss_max_mib": round(max(self.rss_mib), 1) if self.rss_mib else None,
            "rss_last_mib": round(self.rss_mib[-1], 1) if self.rss_mib else None,
            "descriptors_max": max(self.descriptors) if self.descriptors else None,
            "server_cpu_share": round(self.server_cpu_seconds / self.seconds, 2) if self.seconds else None,
            **{f"attacker_{name}": value for name, value in self.attacker.items()},
        }


def _rss_mib(pid: int) -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def _descriptors(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        return len(os.listdir(f"/proc/{pid}/fd"))
    return None


def _call(port: int, token: str, path: str) -> tuple[float, str | None]:
    """bob's ``tools/call``: the seconds it took, and what went wrong (None: answered 200)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory", "arguments": {"command": "view", "path": path}},
    }
    headers = {
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
    }
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=CALL_TIMEOUT_SECONDS)
    try:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        body = response.read()
        failure = None if response.status == 200 and b'"isError":false' in body else f"{response.status}"
    except OSError as error:
        failure = type(error).__name__
    finally:
        connection.close()
    return time.perf_counter() - started, failure


def _measure(
    phase: Phase, seconds: float, pid: int, call: Any, counters: SynchronizedArray[int] | None
) -> None:
    """Probe and sample for ``seconds``: calls on this thread, samples on another."""
    stop = threading.Event()
    held_most = dict.fromkeys(COUNTERS[: len(HELD)], 0)

    def sample() -> None:
        while not stop.is_set():
            rss, fds = _rss_mib(pid), _descriptors(pid)
            if rss is not None and fds is not None:
                phase.rss_mib.append(rss)
                phase.descriptors.append(fds)
            if counters is not None:
                for index in HELD:
                    held_most[COUNTERS[index]] = max(held_most[COUNTERS[index]], counters[index])
            stop.wait(SAMPLE_EVERY_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu = process_cpu(pid) or 0.0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        took, failure = call()
        if failure is None:
            phase.latencies.append(took)
        else:
            phase.failures.append(failure)
        time.sleep(max(0.0, PROBE_EVERY_SECONDS - took))
    phase.seconds = time.monotonic() - started
    phase.server_cpu_seconds = (process_cpu(pid) or 0.0) - cpu
    stop.set()
    sampler.join()
    if counters is not None:
        phase.attacker = {
            **{f"most_{name}": value for name, value in held_most.items()},
            **{name: counters[index] for index, name in enumerate(COUNTERS) if index not in HELD},
        }


# -- the server ---------------------------------------------------------------------------------------


def _die_with_parent() -> None:  # runs in the child before exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# -- the run ------------------------------------------------------------------------------------------


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.edge_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--half-open", type=int, default=2000)
    parser.add_argument("--stalled", type=int, default=200)
    parser.add_argument("--slow-readers", type=int, default=50)
    parser.add_argument("--body-mib", type=float, default=4.0)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the attack lasts")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="before, and after each attack")
    parser.add_argument("--rounds", type=int, default=2, help="attacks, each followed by a quiet phase")
    parser.add_argument("--latency-bound", type=float, default=LATENCY_BOUND_SECONDS)
    parser.add_argument("--rss-bound-mib", type=float, default=RSS_BOUND_MIB)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    return parser.parse_args(argv)


def _attacked(phase: Phase, options: argparse.Namespace, port: int, pid: int, token: str, call: Any) -> None:
    """Measure ``phase`` while an attacker process holds its connections with ``token``."""
    spawning = multiprocessing.get_context("spawn")
    counters: SynchronizedArray[int] = spawning.Array("q", len(COUNTERS), lock=False)
    crowd = Crowd(options.half_open, options.stalled, options.slow_readers, int(options.body_mib * MIB))
    attacker = spawning.Process(target=attack, args=(port, token, crowd, counters), daemon=True)
    attacker.start()
    try:
        _measure(phase, options.seconds, pid, call, counters)
    finally:
        attacker.terminate()
        attacker.join(30)


def _settled(pid: int, descriptors: int, seconds: float) -> None:
    """Wait until the server holds no more descriptors than before the attack (or ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (_descriptors(pid) or 0) > descriptors + 5:
        time.sleep(0.5)


def run(options: argparse.Namespace, log: Path) -> dict[str, Any]:
    from s3memory.assembly import make_store
    from s3memory.core.paths import UserId
    from s3memory.mcp.connections import raise_open_file_limit
    from s3memory.memory import S3Memory
    from s3memory.settings import Settings
    from tests.support.issuer import loopback_issuer
    from tests.support.mcp_servers import http_command, store_environment_named

    fake_credentials()
    raise_open_file_limit()
    with moto_backend() as backend, loopback_issuer() as issuer:
        backend.create_bucket(BUCKET)
        environment = {
            **{name: value for name, value in os.environ.items() if name.startswith("AWS_")},
            **store_environment_named(backend.endpoint_url, BUCKET, "edge-load"),
            **issuer.environ(),
        }
        settings = Settings.from_env(environment)
        path = "/memories/notes.md"
        S3Memory(make_store(settings), UserId("bob")).run(
            {"command": "create", "path": path, "file_text": "x\n"}
        )
        served = http_command(
            {**environment, "PYTHONPATH": str(REPO)}, log, cwd=REPO, preexec_fn=_die_with_parent
        )
        with served as (url, process):
            port, pid = int(url.split(":")[-1].split("/")[0]), process.pid
            bob = issuer.token("bob")

            def call() -> tuple[float, str | None]:
                return _call(port, bob, path)

            before = Phase("before")
            _measure(before, options.idle_seconds, pid, call, None)
            rounds: list[tuple[Phase, Phase]] = []
            for number in range(1, options.rounds + 1):
                under, after = Phase(f"under attack {number}"), Phase(f"after {number}")
                _attacked(under, options, port, pid, issuer.token("alice"), call)
                _settled(pid, max(before.descriptors), 60)
                _measure(after, options.idle_seconds, pid, call, None)
                rounds.append((under, after))
    bound = options.latency_bound
    checks = {"before: every call answered": not before.failures}
    for under, after in rounds:
        for phase in (under, after):
            checks[f"{phase.name}: every call answered in < {bound} s"] = (
                not phase.failures and max(phase.latencies) < bound
            )
    peaks = [max(under.rss_mib + after.rss_mib) for under, after in rounds]
    checks[f"server RSS < {options.rss_bound_mib} MiB throughout"] = max(peaks) < options.rss_bound_mib
    checks["no round's RSS peak above the first's by more than 10%"] = max(peaks) <= peaks[0] * 1.1
    phases = [before.summary(), *(phase.summary() for pair in rounds for phase in pair)]
    return {"options": {k: str(v) for k, v in vars(options).items()}, "phases": phases, "checks": checks}


def main(argv: list[str] | None = None) -> int:
    options = _arguments(argv)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"s3memory-edge-load-{os.getpid()}.log"
    figures = run(options, log)
    for phase in figures["phases"]:
        print(" ".join(f"{name}={value}" for name, value in phase.items()))
    for check, held in figures["checks"].items():
        print(f"{'ok  ' if held else 'FAIL'} {check}")
    if options.json:
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(figures["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
