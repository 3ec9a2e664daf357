"""``make test``'s shortcut: what in-process moto enforces, probed once per worker instead of once per
test (``S3MEMORY_TEST_PROBE_ONCE=1``, set by the Makefile's ``test`` target only).

Every test's bucket is new, so each test's first memory probes the server (``server_checks.probe``:
a dozen requests, about 70 ms of CPU on in-process moto, a quarter of the fast suite's CPU). In-process
moto answers the probe the same way each time, given whether its conditions are honoured, so the
fast suite asks it once per worker and answers later probes with what it found. Everything else of
a store's first use runs as it does for a user (the record is read, not found, written; the store
key; the migration mark). A probe goes to the server as always where the client is not in-process
moto's, where a test registered a hook on the client's requests (a fault plan, a counter: they see
every request of a first use), and in a module that sets ``PROBES_EACH_STORE`` (the probe's own
tests, and tests that change what moto enforces). ``make test-all``, which CI runs, never takes the
shortcut.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
from moto.s3.responses import S3Response

import s3memory.testing as testing
from s3memory.clients import make_s3_client
from s3memory.storage import server_checks
from s3memory.storage.bucket import Bucket
from s3memory.storage.conditions import Enforced

ENABLED = os.environ.get("S3MEMORY_TEST_PROBE_ONCE") == "1"
"""Whether this run takes the shortcut (``make test`` sets it)."""
_AWS_ENDPOINT = "https://s3.amazonaws.com"
"""The endpoint of a client of in-process moto (no endpoint given: AWS's, intercepted by moto)."""
_HOOKED_EVENTS = tuple(
    f"{event}.s3.{operation}"
    for event in ("before-send", "before-call", "after-call", "request-created", "needs-retry")
    for operation in ("PutObject", "CopyObject", "HeadObject", "GetObject", "DeleteObject", "DeleteObjects")
)
"""The events of the probe's requests on which a test's fault plan or counter hangs its handler (one
registered for the service or for all requests is counted in each)."""

_MOTO_HANDLERS = (
    "put_object",
    "get_object",
    "head_object",
    "delete_object",
    "copy_object",
    "_bucket_response_delete_keys",
)
"""moto's handlers of the probe's requests: a test that swaps one changes what moto enforces."""

_real_probe = server_checks.probe
_found: dict[tuple[bool, tuple[int, ...]], Enforced] = {}
_plain_handlers: list[dict[str, int]] = []


def probe(bucket: Bucket, prefix: str) -> Enforced:
    """``server_checks.probe``, answered from this worker's first probe of in-process moto in the
    same state (its conditions honoured or not, its handlers the same) where nothing can tell the
    difference; else the probe itself."""
    if bucket.client.meta.endpoint_url != _AWS_ENDPOINT or _hooked(bucket.client):
        return _real_probe(bucket, prefix)
    state = (testing._honouring > 0, tuple(id(getattr(S3Response, name)) for name in _MOTO_HANDLERS))
    if state not in _found:
        _found[state] = _real_probe(bucket, prefix)
    return _found[state]


def _hooked(client: Any) -> bool:
    """Whether a handler was registered on ``client``'s request events since it was made (counted
    against clients fresh from boto3 and from ``make_s3_client``, which adds its own)."""
    if not _plain_handlers:
        for plain in (boto3.client("s3", region_name="us-east-1"), make_s3_client(region_name="us-east-1")):
            _plain_handlers.append({event: _handlers(plain, event) for event in _HOOKED_EVENTS})
    counts = {event: _handlers(client, event) for event in _HOOKED_EVENTS}
    return counts not in _plain_handlers


def _handlers(client: Any, event: str) -> int:
    """How many handlers ``client``'s emitter calls for ``event`` (botocore's own and moto's included)."""
    return len(list(client.meta.events._emitter._handlers.prefix_search(event)))
