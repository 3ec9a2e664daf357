"""The demo's S3: moto's server in this process on a free loopback port (the tests use it too).

Needs the ``demo`` extra (moto's S3 and Flask), imported when a server starts; ``s3memory local-s3``
serves one for operators (``local_s3.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from s3memory.testing import conditions_honoured


@contextlib.contextmanager
def moto_server(bucket: str | None = None, *, port: int = 0, versioned: bool = False) -> Iterator[str]:
    """moto's threaded server on 127.0.0.1 (on ``port``; 0: a free one), with ``bucket`` created if
    one is named (with versioning on if ``versioned``); yields its endpoint URL and stops the server
    afterwards. werkzeug's request log, which names object keys, is silenced. While it runs, moto
    refuses what S3 refuses (``conditions_honoured``)."""
    with conditions_honoured():
        yield from _moto_server(bucket, port, versioned)


def _moto_server(bucket: str | None, port: int, versioned: bool) -> Iterator[str]:
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        host, bound = server.get_host_and_port()
        endpoint = f"http://{host}:{bound}"
        if bucket is not None:
            client = boto3.client(
                "s3",
                endpoint_url=endpoint,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            client.create_bucket(Bucket=bucket)
            if versioned:
                client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        yield endpoint
    finally:
        server.stop()
