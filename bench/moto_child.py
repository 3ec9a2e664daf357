"""The moto S3/KMS server the bench talks to, in a child process of its own.

Runs moto's server application (the one ``ThreadedMotoServer`` runs: werkzeug, a thread per
connection) on 127.0.0.1, so the server's CPU work does not share the bench's interpreter lock.
Two additions, both outside the S3 API:

- ``--latency-ms``: every S3/KMS request waits that long before moto handles it (a sleep, so
  concurrent requests wait concurrently), to model a real endpoint's round trip. A request that
  sends ``Expect: 100-continue`` waits that long for its ``100 Continue`` too: on a real endpoint
  the client holds its body back for that answer, one more round trip.
- ``POST /__bench__/seed``: stores many objects at once straight into moto's backend, so trees
  of 10,000 objects are seeded in a second instead of minutes: ``{"bucket": ..., "objects":
  [[key, base64 body, {metadata name: value}], ...]}`` (metadata names without ``x-amz-meta-``,
  as boto3's ``Metadata``). Never used while measuring.

Prints ``PORT <n>`` when ready and serves until its standard input closes.

    python -m bench.moto_child [--latency-ms 10]
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

SEED_PATH = "/__bench__/seed"


def _seed(payload: dict[str, Any]) -> int:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    bucket = payload["bucket"]
    for key, body, *rest in payload["objects"]:
        stored = backend.put_object(bucket, key, base64.b64decode(body))
        metadata = rest[0] if rest else {}
        if metadata:  # as a PutObject's x-amz-meta-* headers leave them
            stored.set_metadata({f"x-amz-meta-{name.lower()}": value for name, value in metadata.items()})
    return len(payload["objects"])


class BenchApp:
    """moto's WSGI application, with an optional per-request latency and the seeding endpoint."""

    def __init__(self, app: Callable[..., Iterable[bytes]], latency_seconds: float) -> None:
        self._app = app
        self._latency = latency_seconds

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == SEED_PATH and environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            stored = _seed(json.loads(environ["wsgi.input"].read(length)))
            body = json.dumps({"stored": stored}).encode()
            start_response(
                "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body]
        if self._latency:
            time.sleep(self._latency)
        return self._app(environ, start_response)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    arguments = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    from s3memory.testing import honour_conditions

    honour_conditions()  # it refuses what S3 refuses (CopyObject, DeleteObjects)
    latency = arguments.latency_ms / 1000

    class Handler(MotoRequestHandler):
        def handle_expect_100(self) -> bool:
            if latency:
                time.sleep(latency)
            return bool(super().handle_expect_100())

    app = BenchApp(DomainDispatcherApplication(create_backend_app), latency)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_port}", flush=True)
    sys.stdin.read()  # the parent closes our stdin (or dies): stop
    server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
