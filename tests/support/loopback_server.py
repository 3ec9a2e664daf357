"""A test S3 server in a process of its own: on 127.0.0.1, on free ports, in a private temporary
directory, stopped with the test run even when the run is killed.

``LoopbackServer`` starts the server in a new session (its own process group) and, beside it, a
watchdog: a small Python process that reads a pipe whose only writer is the test process. When the
test process ends, however it ends, the pipe closes; the watchdog then terminates (and after
``stop_grace_seconds`` kills) the server's process group and deletes its directory. ``stop`` does
the same at once. Subclasses say how to run their server (``arguments``, ``environment``): SeaweedFS
in ``backends.py``, s3rver in ``s3rver.py``, LocalStack in ``localstack.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

import pytest

HOST = "127.0.0.1"
REGION = "us-east-1"
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 5.0
LOG_TAIL_LINES = 40

MOTO_FAKE_CREDENTIALS = ("FOOBARKEY", "FOOBARSECRET")
"""What ``mock_aws`` puts in the environment while it is active (moto.core.models.MockAWS)."""


class ServerUnavailable(Exception):
    """The server binary is missing or the server did not come up; the message says why."""


def free_ports(count: int, *, besides: frozenset[int] = frozenset()) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1, none of them in ``besides`` (all held open
    at once, so none repeats)."""
    sockets: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(held)
            held.bind((HOST, 0))
            port = held.getsockname()[1]
            if port not in besides:
                ports.append(port)
        return ports
    finally:
        for held in sockets:
            held.close()


def signing_credentials() -> list[tuple[str, str]]:
    """The access keys test clients may sign with: the environment's (conftest sets ``testing``
    unless the shell set others) and moto's, which ``mock_aws`` swaps in while it is active.
    boto3 sessions cache credentials when first used, so either can be in effect."""
    found = [
        (os.environ.get("AWS_ACCESS_KEY_ID", "testing"), os.environ.get("AWS_SECRET_ACCESS_KEY", "testing")),
        ("testing", "testing"),
        MOTO_FAKE_CREDENTIALS,
    ]
    return list(dict.fromkeys(found))


_session_lock = threading.Lock()
_session: Any = None


def _shared_session() -> Any:
    """One boto3 session for the clients made here: a new session reloads the service models."""
    global _session
    import boto3

    with _session_lock:
        if _session is None:
            _session = boto3.session.Session()
        return _session


def _rss_kib(pid: int, field_name: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _signal_group(process: subprocess.Popen[bytes], number: int) -> None:
    """Signal the process group this server leads (it was started in a new session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)


WATCHDOG = """
import os, shutil, signal, sys, time
group, directory, grace = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
sys.stdin.buffer.read()  # returns when the test process closes its end or dies
for number in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(group, number)
    except ProcessLookupError:
        break
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        continue
    break
shutil.rmtree(directory, ignore_errors=True)
"""
"""The watchdog's program: argv is the server's process group, its directory, the grace period."""


@dataclass(kw_only=True)
class LoopbackServer:
    """One S3 server process on 127.0.0.1 (see the module's docstring). Its fields are keyword-only,
    so a subclass may add positional ones."""

    name = "server"
    """How logs, errors and the temporary directory name the server."""

    stop_grace_seconds = STOP_TIMEOUT_SECONDS
    """How long ``stop`` (and the watchdog) waits after SIGTERM before SIGKILL."""

    credentials: list[tuple[str, str]] = field(default_factory=signing_credentials)
    """The access keys the server takes (subclasses pass them on); ``client`` signs with the first."""
    start_timeout: float = START_TIMEOUT_SECONDS
    directory: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    watchdog: subprocess.Popen[bytes] | None = None
    port: int = 0
    """The S3 port."""
    command: list[str] = field(default_factory=list)
    startup_seconds: float = 0.0
    failure: str = ""
    _admin: Any = field(default=None, repr=False)

    # -- what subclasses define ----------------------------------------------------------------

    def arguments(self) -> list[str]:
        """The command that runs the server with S3 on ``self.port`` (free when ``start`` chose it)
        and its data in ``self.directory``."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """The server's whole environment (nothing of the test process's is passed on)."""
        assert self.directory is not None
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.directory)}

    # -- running it ------------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self.directory is not None
        return self.directory / f"{self.name}.log"

    def start(self) -> Self:
        """Start the server and wait until S3 answers ListBuckets; ServerUnavailable otherwise."""
        self.directory = Path(tempfile.mkdtemp(prefix=f"s3memory-{self.name}-"))
        (self.port,) = free_ports(1)
        try:
            self.command = self.arguments()
        except ServerUnavailable:
            self.stop()
            raise
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            try:
                self.process = subprocess.Popen(
                    self.command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=self.directory,
                    env=self.environment(),
                    start_new_session=True,
                )
            except OSError as error:
                self.stop()
                raise ServerUnavailable(f"could not run {self.command[0]}: {error}") from None
        self.watchdog = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WATCHDOG,
                str(self.process.pid),
                str(self.directory),
                str(self.stop_grace_seconds),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C of the test run reaches the tests, not the watchdog
        )
        try:
            self._wait_until_ready(started)
        except ServerUnavailable:
            tail = self.log_tail()
            self.stop()
            raise ServerUnavailable(f"{self.failure}\n--- {self.name} log (last lines) ---\n{tail}") from None
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_until_ready(self, started: float) -> None:
        client = self.client(attempts=1)
        deadline = started + self.start_timeout
        last_error = "no attempt"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                self.failure = f"{self.name} exited with status {self.process.returncode} while starting"
                raise ServerUnavailable(self.failure)
            try:
                client.list_buckets()
                return
            except Exception as error:
                last_error = f"{type(error).__name__}: {error}"
            time.sleep(0.1)
        self.failure = f"S3 did not answer within {self.start_timeout:.0f} s (last error: {last_error})"
        raise ServerUnavailable(self.failure)

    def client(self, *, attempts: int = 5, endpoint: str | None = None, read_timeout: float = 20) -> Any:
        """A new boto3 S3 client for this server (or ``endpoint``, e.g. a proxy in front of it),
        signed with the first ``credentials``; ``attempts`` is botocore's standard-mode total."""
        from botocore.config import Config

        key, secret = self.credentials[0]
        config = Config(
            retries={"mode": "standard", "total_max_attempts": attempts},
            connect_timeout=2,
            read_timeout=read_timeout,
            max_pool_connections=32,
        )
        return _shared_session().client(
            "s3",
            endpoint_url=endpoint or self.endpoint,
            region_name=REGION,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            config=config,
        )

    @property
    def admin(self) -> Any:
        """One client for setup and cleanup, made on first use (building clients costs time)."""
        if self._admin is None:
            self._admin = self.client()
        return self._admin

    def memory_kib(self) -> dict[str, int | None]:
        """Resident memory of the server process now and at its peak, in KiB (Linux /proc)."""
        if self.process is None:
            return {"rss": None, "peak": None}
        return {"rss": _rss_kib(self.process.pid, "VmRSS"), "peak": _rss_kib(self.process.pid, "VmHWM")}

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except (OSError, AssertionError):
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def stop(self) -> None:
        """Terminate (then kill) the server's process group, delete its directory, end the watchdog."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(self.stop_grace_seconds)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(STOP_TIMEOUT_SECONDS)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        watchdog, self.watchdog = self.watchdog, None
        if watchdog is not None:
            assert watchdog.stdin is not None
            watchdog.stdin.close()  # it finds the group gone and the directory deleted
            watchdog.wait(STOP_TIMEOUT_SECONDS)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


ServerT = TypeVar("ServerT", bound=LoopbackServer)


def serving(server: ServerT, missing: str | None, bucket: str) -> Generator[ServerT, None, None]:
    """For a fixture: ``server`` running, with ``bucket`` made, until the fixture ends.

    Where it cannot run (``missing`` says why) or does not start, the tests that need it are skipped
    with the reason; under CI (``CI`` set) they fail instead, with the end of the server's log.
    """
    if missing is not None:
        _unavailable(missing)
    failure = None
    try:
        server.start()
    except ServerUnavailable as error:
        failure = f"{server.name} did not start: {error}"
    if failure is not None:
        _unavailable(failure)
    try:
        server.admin.create_bucket(Bucket=bucket)
        yield server
    finally:
        server.stop()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
