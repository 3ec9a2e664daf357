"""Building AWS clients: the one place where client settings (retries, timeouts) are chosen.

Clients built here keep response timestamps as text, send PutObject bodies without
``Expect: 100-continue``, compute and check checksums only where an operation requires them, and
leave the checking of request parameters to the type checker (all for speed; see below). A client passed in by the caller is used as it is.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botocore.session import Session
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_s3 import S3Client

RETRY_ATTEMPTS = 5
CONNECT_SECONDS = 5
READ_SECONDS = 20
CHECK_SECONDS = 2
"""A quick client's connect and read timeouts (``quick=True``): one attempt of a request answers or
fails within twice this, the bound of ``s3memory mcp``'s start-up check (``mcp/startup.py``)."""
POOL_CONNECTIONS = 64
"""Connections each client keeps open: one for each request ``storage.concurrency.parallel`` may
have in flight (beyond the pool, urllib3 opens a connection per request and drops it after: a new
TCP and TLS handshake each). A socket each, far below a Lambda function's 1,024 file descriptors."""
_lock = threading.Lock()
_sessions: dict[str | None, Session] = {}
"""One session per AWS profile (None: the environment's, ``AWS_PROFILE`` or the default)."""


def _client(
    service: str,
    endpoint_url: str | None,
    region_name: str | None,
    profile_name: str | None = None,
    *,
    quick: bool = False,
) -> Any:
    """A client from one shared botocore session per profile (its loaded service models are
    reused), built under a lock: clients are thread-safe, creating them from a shared session is
    not; ``quick``: one attempt, within ``CHECK_SECONDS`` to connect and as much to read. An unknown
    ``profile_name`` raises botocore's ``ProfileNotFound``. botocore alone, not
    boto3: boto3 adds nothing s3memory calls, and building the client without its session cost a
    cold start about 15 ms less (measured side by side, bench section 4's children)."""
    import botocore.session
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": 1 if quick else RETRY_ATTEMPTS},
        connect_timeout=CHECK_SECONDS if quick else CONNECT_SECONDS,
        read_timeout=CHECK_SECONDS if quick else READ_SECONDS,
        max_pool_connections=POOL_CONNECTIONS,
        # botocore checks each request's parameters against the service model: about a tenth of
        # the client's CPU per request (0.2 ms of a CopyObject's 2). s3memory's requests are typed
        # against the same models (mypy strict, the boto3 stubs), and S3 refuses a malformed one.
        parameter_validation=False,
    )
    if "request_checksum_calculation" in Config.OPTION_DEFAULTS:  # botocore 1.36 and later
        # botocore then computes a CRC32 of every PutObject body (over HTTPS as an ``aws-chunked``
        # body with a trailer, which some S3-compatible servers refuse) and asks for and checks one
        # on every GetObject. AES-GCM authenticates each object, TLS each request (over plain HTTP,
        # SigV4 signs the body's SHA-256): checksums only where an operation requires one.
        config = config.merge(
            Config(request_checksum_calculation="when_required", response_checksum_validation="when_required")
        )
    with _lock:
        session = _sessions.get(profile_name)
        if session is None:
            session = botocore.session.Session(profile=profile_name)
            session.get_component("response_parser_factory").set_parser_defaults(
                timestamp_parser=_timestamp_text
            )
            _sessions[profile_name] = session
        return session.create_client(
            service, endpoint_url=endpoint_url, region_name=region_name, config=config
        )


def _timestamp_text(value: str) -> str:
    """Keep the timestamps of responses as the text AWS sent. s3memory reads none of them, and
    botocore's parser spends about 70 µs on each: 70 ms on a listing page of 1,000 keys."""
    return value


def _without_expect_continue(model: Any, params: dict[str, Any], **_: Any) -> None:
    """Send a PutObject body with its headers. botocore asks for ``Expect: 100-continue`` on every
    PutObject, which holds the body back until the server answers: a whole extra round trip per
    write, to save resending bodies that s3memory keeps at 1 MiB or less."""
    if model.name == "PutObject":
        params["headers"].pop("Expect", None)


def make_s3_client(
    *,
    endpoint_url: str | None = None,
    region_name: str | None = None,
    profile_name: str | None = None,
    quick: bool = False,
) -> S3Client:
    """An S3 client with botocore's standard retry mode (throttling and 5xx retried with backoff),
    that writes in one round trip (no ``Expect: 100-continue``); with the credentials and region of
    the AWS profile ``profile_name`` when given; ``quick``: one attempt, bounded (``CHECK_SECONDS``)."""
    client: S3Client = _client("s3", endpoint_url, region_name, profile_name, quick=quick)
    # After botocore's own ``before-call.s3`` handler, which adds the header.
    client.meta.events.register_last("before-call.s3", _without_expect_continue)
    return client


def make_kms_client(
    *,
    endpoint_url: str | None = None,
    region_name: str | None = None,
    profile_name: str | None = None,
    quick: bool = False,
) -> KMSClient:
    """A KMS client with the same retry settings as the S3 client (``quick``: as its quick one)."""
    client: KMSClient = _client("kms", endpoint_url, region_name, profile_name, quick=quick)
    return client


def make_secretsmanager_client(*, region_name: str | None = None) -> Any:
    """A Secrets Manager client with the same retry settings (the agent handler's API key)."""
    return _client("secretsmanager", None, region_name)
