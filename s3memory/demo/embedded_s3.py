"""The demo's S3: moto's server in this process on a free loopback port (the tests use it too).

Needs the ``demo`` extra (``moto[server]``), imported when a server starts.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from s3memory.testing import conditions_honoured


@contextlib.contextmanager
def moto_server(bucket: str | None = None) -> Iterator[str]:
    """moto's threaded server on 127.0.0.1, with ``bucket`` created if one is named; yields its
    endpoint URL and stops the server afterwards. werkzeug's request log, which names object keys,
    is silenced. While it runs, moto refuses what S3 refuses (``conditions_honoured``)."""
    with conditions_honoured():
        yield from _moto_server(bucket)


def _moto_server(bucket: str | None) -> Iterator[str]:
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        if bucket is not None:
            boto3.client(
                "s3",
                endpoint_url=endpoint,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            ).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()
