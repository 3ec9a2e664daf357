"""moto's S3 server in this process on a free loopback port: the tests', the demo's and
``s3memory local-s3``'s (``demo/local_s3.py``, which guards it: ``demo/guarded_s3.py``).

Needs moto's S3 and Flask (the ``demo`` extra), imported when a server starts.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from s3memory.testing import conditions_honoured

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

HOST = "127.0.0.1"
LISTEN_BACKLOG = 128
"""Connections the listening socket queues (werkzeug's own)."""


class Operator(Protocol):
    """Whom alone a server answers (``demo.guarded_s3.Credentials``): the keys its requests are signed
    with, and the guard that refuses every other request to ``host``."""

    @property
    def access_key_id(self) -> str: ...

    @property
    def secret_access_key(self) -> str: ...

    def guard(self, application: WSGIApplication, host: str) -> WSGIApplication: ...


class PortUnavailable(Exception):
    """``moto_server`` could not listen on the port it was given; nothing was started."""

    def __init__(self, port: int, error: OSError) -> None:
        super().__init__(f"{HOST}:{port}: {error.strerror}")
        self.port = port
        self.errno = error.errno
        self.strerror = error.strerror


@contextlib.contextmanager
def moto_server(
    bucket: str | None = None,
    *,
    port: int = 0,
    versioned: bool = False,
    credentials: Operator | None = None,
) -> Iterator[str]:
    """moto's threaded server on 127.0.0.1 (on ``port``; 0: a free one), with ``bucket`` created if
    one is named (with versioning on if ``versioned``); yields its endpoint URL and stops the server
    afterwards. werkzeug's request log, which names object keys, is silenced. While it runs, moto
    refuses what S3 refuses (``conditions_honoured``).

    With ``credentials``, it answers only its operator (``credentials.guard``; ``s3memory local-s3``'s:
    requests for its own address and port, from no web page, signed with these credentials). Without, it answers anyone
    and any signature, as moto does (the tests' clients sign with moto's dummy ``testing``).

    :class:`PortUnavailable` if ``port`` cannot be listened on (in use, or not this user's to use);
    then no thread was started."""
    with conditions_honoured():
        yield from _moto_server(bucket, port, versioned, credentials)


def _moto_server(
    bucket: str | None, port: int, versioned: bool, credentials: Operator | None
) -> Iterator[str]:
    """The server ``ThreadedMotoServer`` runs, on a socket bound here first: moto's binds in its
    thread, where a port in use ends the thread (werkzeug prints and exits it) while ``start`` waits
    for ever for a server that never comes."""
    import boto3
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    try:
        listening = socket.create_server((HOST, port), backlog=LISTEN_BACKLOG)
    except OSError as error:
        raise PortUnavailable(port, error) from None
    address = f"{HOST}:{listening.getsockname()[1]}"
    application: WSGIApplication = DomainDispatcherApplication(create_backend_app)
    if credentials is not None:
        application = credentials.guard(application, address)
    with listening:  # the server listens on a duplicate of it
        server = make_server(
            HOST,
            port,
            application,
            threaded=True,
            request_handler=MotoRequestHandler,
            fd=listening.fileno(),
        )
    thread = threading.Thread(target=server.serve_forever, name=f"moto S3 on {address}", daemon=True)
    thread.start()
    try:
        endpoint = f"http://{address}"
        if bucket is not None:
            key_id, secret = (
                ("testing", "testing")
                if credentials is None
                else (
                    credentials.access_key_id,
                    credentials.secret_access_key,
                )
            )
            client = boto3.client(
                "s3",
                endpoint_url=endpoint,
                region_name="us-east-1",
                aws_access_key_id=key_id,
                aws_secret_access_key=secret,
            )
            client.create_bucket(Bucket=bucket)
            if versioned:
                client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        yield endpoint
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
