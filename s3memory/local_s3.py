"""moto's server in this process on a free loopback port: the S3 (and KMS) of the demo and the tests.

Needs the ``demo`` extra (``moto[server]``), imported when a server starts.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

_HONOURED = "_s3memory_honours_copy_conditions"
"""Set on moto's ``S3Response`` once ``honour_copy_conditions`` has wrapped its ``copy_object``."""
_honouring = 0
"""How many ``copy_conditions_honoured`` blocks are open: moto checks the conditions while any is."""
_honouring_lock = threading.Lock()


@contextlib.contextmanager
def copy_conditions_honoured() -> Iterator[None]:
    """While the block runs, moto's CopyObject refuses what S3 refuses (``honour_copy_conditions``);
    afterwards moto is as shipped again (unless another block is still open)."""
    global _honouring
    _install()
    with _honouring_lock:
        _honouring += 1
    try:
        yield
    finally:
        with _honouring_lock:
            _honouring -= 1


def honour_copy_conditions() -> None:
    """Make moto's CopyObject refuse what S3 refuses for the rest of this process; doing it again
    changes nothing.

    moto (5.2) copies regardless of ``If-None-Match``, ``If-Match`` and
    ``x-amz-copy-source-if-match`` on CopyObject; S3 enforces them, and s3memory's storage format 2
    relies on them (a conditional copy must never land over a newer object), so on moto as shipped
    s3memory serves format 1 (``docs/servers.md``). With this, moto's ``copy_object`` handler first
    checks them, with moto's own errors: 412 PreconditionFailed if ``If-None-Match: *`` finds an
    object at the destination, if ``If-Match`` names another ETag than the destination's, or if the
    source's ETag is not the one ``x-amz-copy-source-if-match`` names; 404 NoSuchKey for
    ``If-Match`` on a missing destination, as moto's PutObject answers. A missing source is left to
    moto (NoSuchKey before any condition, as S3 answers). Applies to every moto in this process:
    ``mock_aws`` and its servers alike. The embedded S3 of ``s3memory demo`` uses it.
    """
    global _honouring
    _install()
    with _honouring_lock:
        _honouring += 1


def _install() -> None:
    """Wrap moto's ``copy_object`` once, to check the conditions while honouring is on."""
    from moto.s3.responses import S3Response

    with _honouring_lock:
        if getattr(S3Response, _HONOURED, False):
            return
        original: Callable[[Any], Any] = S3Response.copy_object

        def copy_object(self: Any) -> Any:
            if _honouring:
                _refuse_unmet_copy_conditions(self)
            return original(self)

        S3Response.copy_object = copy_object  # type: ignore[method-assign]
        setattr(S3Response, _HONOURED, True)


def _same_etag(one: str, other: str) -> bool:
    return one.replace('"', "") == other.replace('"', "")


def _refuse_unmet_copy_conditions(request: Any) -> None:
    """Raise moto's error for the first condition of this CopyObject ``request`` (moto's
    ``S3Response``) that does not hold; the source is parsed as moto's ``copy_object`` does."""
    from moto.s3.exceptions import MissingKey, PreconditionFailed

    headers = request.headers
    copy_source = headers.get("x-amz-copy-source")
    if isinstance(copy_source, bytes):
        copy_source = copy_source.decode("utf-8")
    parsed = urlparse(copy_source)
    source_bucket, source_key = unquote(parsed.path).lstrip("/").split("/", 1)
    version_id = parse_qs(parsed.query).get("versionId", [None])[0]
    source = request.backend.get_object(source_bucket, source_key, version_id=version_id)
    if source is None:
        return
    source_if_match = headers.get("x-amz-copy-source-if-match")
    if source_if_match and not _same_etag(source_if_match, source.etag):
        raise PreconditionFailed("x-amz-copy-source-If-Match")
    key = request.parse_key_name()
    target = request.backend.get_object(request.bucket_name, key)
    if headers.get("If-None-Match") == "*" and target is not None:
        raise PreconditionFailed("If-None-Match")
    if_match = headers.get("If-Match")
    if if_match:
        if target is None:
            raise MissingKey(key=key)
        if not _same_etag(if_match, target.etag):
            raise PreconditionFailed("If-Match")


@contextlib.contextmanager
def moto_server(bucket: str | None = None) -> Iterator[str]:
    """moto's threaded server on 127.0.0.1, with ``bucket`` created if one is named; yields its
    endpoint URL and stops the server afterwards. werkzeug's request log, which names object keys,
    is silenced. While it runs, CopyObject's conditions hold, as on S3 (``copy_conditions_honoured``)."""
    with copy_conditions_honoured():
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
