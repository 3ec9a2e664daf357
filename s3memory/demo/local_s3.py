"""``s3memory local-s3``: a local, versioned S3 for trying s3memory, and the settings to reach it.

It serves moto's S3 on 127.0.0.1 (the demo's, ``embedded_s3``) with one versioned bucket, writes the
settings another shell needs (the endpoint, the bucket, a new random local key, moto's dummy
credentials) to an env file only this user may read, and prints how to load it. The key is printed
nowhere. It serves until interrupted; the memory lives in this process and goes with it.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import threading
from pathlib import Path
from typing import TextIO

DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
"""What moto accepts: any credentials; these keep the shell's real ones away from the local S3."""


def settings_text(endpoint: str, bucket: str, local_key: bytes) -> str:
    """The env file: ``export`` lines a POSIX shell sources."""
    settings = {
        "S3MEMORY_ENDPOINT_URL": endpoint,
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_LOCAL_KEY": base64.b64encode(local_key).decode("ascii"),
        **DUMMY_CREDENTIALS,
    }
    return "".join(f"export {name}={value}\n" for name, value in settings.items())


def write_private(path: Path, text: str) -> None:
    """``text`` in a new file at ``path`` that only this user may read (an existing file is replaced)."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)


def serve(out: TextIO, *, port: int, bucket: str, env_file: Path, stop: threading.Event | None = None) -> int:
    """Serve until SIGINT or SIGTERM (or ``stop``); the exit status."""
    from s3memory.demo.embedded_s3 import moto_server

    stop = threading.Event() if stop is None else stop
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with moto_server(bucket, port=port, versioned=True) as endpoint:
        write_private(env_file, settings_text(endpoint, bucket, secrets.token_bytes(32)))
        out.write(
            f"s3memory local-s3: moto's S3 at {endpoint}, bucket {bucket} (versioned), a new local key.\n"
            f"In another shell:\n  . {env_file}\n  s3memory users\n"
            "Stop with Ctrl-C: the memory is in this process and goes with it.\n"
        )
        out.flush()
        stop.wait()
    env_file.unlink(missing_ok=True)
    out.write("s3memory local-s3: stopped\n")
    return 0
