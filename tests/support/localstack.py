"""LocalStack's S3 (PyPI ``localstack-core``), run on the host without Docker, on 127.0.0.1.

LocalStack is what many teams run to test against AWS locally; its S3 is its own implementation,
which follows AWS's conditional writes only in part (see ``tests/storage/test_server_matrix.py``). It runs
from a venv of its own, ``tests/servers/localstack/.venv`` (``make servers``, see
``tests/servers/servers.mk``), pinned by ``tests/servers/localstack/requirements.txt``:
localstack-core 4.13.1, the last release whose code Python 3.11 can run. Only S3 is started, by
LocalStack's own runtime entry point, with its HTTP gateway (hypercorn: the default one ignores the
listen address) bound to 127.0.0.1. Nothing is sent off the machine: analytics, its DNS server and
the TLS certificate download are off, the Docker client it makes points at nothing, and the one DNS
lookup it would make (of ``s3.<host>``, to tell whether virtual-host names resolve) is answered in
advance by the launcher. It accepts any credentials and checks no signature.
"""

from __future__ import annotations

import os
from pathlib import Path

from .loopback_server import LoopbackServer

SERVER_DIRECTORY = Path(__file__).resolve().parents[1] / "servers" / "localstack"
PYTHON_ENV = "S3MEMORY_LOCALSTACK_PYTHON"
"""Path of a Python that has localstack-core[runtime] installed, in place of the tests' own venv."""

INSTALL_HINT = "run `make servers` (a venv in tests/servers/localstack)"

LAUNCHER = """
from localstack.utils.aws import aws_stack
aws_stack.CACHE_S3_HOSTNAME_DNS_STATUS = False  # no DNS lookup of s3.127.0.0.1: clients use the endpoint
from localstack.runtime.main import main
main()
"""


def find_python() -> str | None:
    """The Python with LocalStack: $S3MEMORY_LOCALSTACK_PYTHON, then the venv ``make`` builds."""
    configured = os.environ.get(PYTHON_ENV)
    candidate = Path(configured) if configured else SERVER_DIRECTORY / ".venv" / "bin" / "python"
    return str(candidate) if os.access(candidate, os.X_OK) else None


def missing() -> str | None:
    """Why LocalStack cannot run here (None if it can)."""
    if find_python() is None:
        return f"LocalStack is not installed: {INSTALL_HINT}"
    return None


class LocalStackServer(LoopbackServer):
    """LocalStack 4.13.1, S3 only, on 127.0.0.1."""

    name = "localstack"
    stop_grace_seconds = 2.0
    """Idle, it exits 1 s after SIGTERM; while a client keeps a connection open it never does (its
    shutdown does not close them), and it keeps nothing worth a longer wait (no persistence)."""

    def arguments(self) -> list[str]:
        python = find_python()
        assert python is not None
        return [python, "-c", LAUNCHER]

    def environment(self) -> dict[str, str]:
        assert self.directory is not None
        listen = f"127.0.0.1:{self.port}"
        return {
            **super().environment(),
            "TMP": str(self.directory),  # its temporary files and object bodies (Python's tempfile)
            "FILESYSTEM_ROOT": str(self.directory / "filesystem"),
            "SERVICES": "s3",
            "EAGER_SERVICE_LOADING": "1",  # S3 loads before the first request, not during it
            "GATEWAY_SERVER": "hypercorn",
            "GATEWAY_LISTEN": listen,
            "LOCALSTACK_HOST": listen,
            "DNS_ADDRESS": "0",
            "DISABLE_EVENTS": "1",
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "PERSISTENCE": "0",
            "DOCKER_HOST": f"unix://{self.directory / 'no-docker.sock'}",  # not the machine's Docker
        }
