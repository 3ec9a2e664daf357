"""s3rver (npm ``s3rver``), a small S3 server in Node.js that stores objects as files, on 127.0.0.1.

It is the S3 that ignores conditions: it answers PutObject, CopyObject and DeleteObject as if no
``If-Match``/``If-None-Match`` had been sent (see ``tests/storage/test_server_matrix.py``), so it
stands in the tests for an S3 server that predates conditional writes; s3memory must refuse it clearly.

It is installed by ``make servers`` (``tests/servers/servers.mk``) with ``npm ci`` into
``tests/servers/s3rver/node_modules``, pinned by the committed ``package-lock.json``, and run by
``tests/servers/s3rver/serve.js`` under the machine's ``node``. It checks no SigV4 signature, but
refuses an access key id it does not know: ``serve.js`` registers the tests' keys.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .loopback_server import LoopbackServer

SERVER_DIRECTORY = Path(__file__).resolve().parents[1] / "servers" / "s3rver"
SCRIPT = SERVER_DIRECTORY / "serve.js"
MODULE = SERVER_DIRECTORY / "node_modules" / "s3rver" / "package.json"
NODE_ENV = "S3MEMORY_NODE"
"""Path of the ``node`` binary, when it is not on PATH."""

INSTALL_HINT = "run `make servers` (npm ci in tests/servers/s3rver)"


def find_node() -> str | None:
    """``node``: $S3MEMORY_NODE, then PATH."""
    configured = os.environ.get(NODE_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("node")


def missing() -> str | None:
    """Why s3rver cannot run here (None if it can)."""
    if find_node() is None:
        return "the `node` binary was not found (Debian package nodejs, or set S3MEMORY_NODE)"
    if not MODULE.is_file():
        return f"s3rver is not installed: {INSTALL_HINT}"
    return None


class S3rverServer(LoopbackServer):
    """``node serve.js`` (s3rver 3.7.1) on 127.0.0.1."""

    name = "s3rver"

    def arguments(self) -> list[str]:
        node = find_node()
        assert node is not None and self.directory is not None
        data = self.directory / "data"
        data.mkdir()
        # s3rver seals continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider:
        # without it every truncated listing answers 500 InternalError.
        return [node, "--openssl-legacy-provider", str(SCRIPT), str(data), str(self.port)]

    def environment(self) -> dict[str, str]:
        keys = ",".join(f"{key}:{secret}" for key, secret in self.credentials)
        return {**super().environment(), "S3RVER_KEYS": keys}
