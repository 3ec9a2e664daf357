"""The bucket the tests share: its name, the master key its memories are sealed with, the backends
that serve it, and helpers that read or empty it."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

BUCKET = "agent-memory"
MASTER_KEY = bytes(range(32))
LOCAL_KEY_B64 = base64.b64encode(MASTER_KEY).decode("ascii")
"""``MASTER_KEY`` as ``S3MEMORY_LOCAL_KEY`` takes it."""
STORE_ENVIRON = {
    "S3MEMORY_BUCKET": BUCKET,
    "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
    "S3MEMORY_PREFIX": "tenants/acme/",
    "S3MEMORY_STORAGE_FORMAT": "2",
    "S3MEMORY_STORE_ID": "replica-source",
    "S3MEMORY_WEAK_SERVER": "single-writer",
}
"""The settings (``S3MEMORY_*``) of a store in ``BUCKET`` that sets each of its own settings to
other than its default: prefix, storage format, store id and weak server."""
ALL_BACKENDS = ("moto", "seaweedfs")
"""The servers every suite that names its backends runs on."""
SEAWEEDFS_SLOW = pytest.param("seaweedfs", marks=[pytest.mark.slow, pytest.mark.seaweedfs])
"""SeaweedFS as a backend of a test (``BACKENDS = ("moto", SEAWEEDFS_SLOW)``): slow, as each pytest-xdist
worker starts its own server (about 400 MiB); ``make test`` runs the test on moto, ``make test-all`` on both."""
SERVER_MATRIX = ("moto", "seaweedfs", "s3rver", "localstack")
"""The servers ``tests/storage/test_servers.py`` serves or refuses: ``ALL_BACKENDS`` and two more that
enforce less (``docs/servers.md``)."""


def stored_keys(client: Any, prefix: str = "") -> list[str]:
    """Every key in ``BUCKET`` below ``prefix``."""
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return keys


def snapshot(client: Any) -> dict[str, bytes]:
    """Every object in the bucket, key to bytes: proof that a refusal changed nothing."""
    return {key: client.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in stored_keys(client)}


@contextlib.contextmanager
def temporary_bucket(client: Any, bucket: str = BUCKET) -> Iterator[None]:
    """``bucket`` created for the block, then emptied and deleted."""
    client.create_bucket(Bucket=bucket)
    try:
        yield
    finally:
        empty_bucket(client, bucket)
        client.delete_bucket(Bucket=bucket)


def empty_bucket(client: Any, bucket: str = BUCKET) -> None:
    """Delete every object in ``bucket``, 1,000 keys a request, then the empty directories that
    SeaweedFS keeps and still lists as common prefixes (see ``test_backends.py``)."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        _delete_keys(client, bucket, [item["Key"] for item in page.get("Contents", [])])
    by_depth: dict[int, list[str]] = {}
    for prefix in common_prefixes(client, bucket):
        by_depth.setdefault(prefix.count("/"), []).append(prefix)
    for depth in sorted(by_depth, reverse=True):  # deepest first: a directory goes once it is empty
        _delete_keys(client, bucket, by_depth[depth])


def empty_bucket_key_by_key(client: Any, bucket: str = BUCKET) -> None:
    """Delete every object in ``bucket`` one request a key (s3rver fails most DeleteObjects)."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=item["Key"])


def _delete_keys(client: Any, bucket: str, keys: list[str]) -> None:
    for start in range(0, len(keys), 1000):
        objects = [{"Key": key} for key in keys[start : start + 1000]]
        answer = client.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
        assert not answer.get("Errors"), answer["Errors"]


def common_prefixes(client: Any, bucket: str = BUCKET) -> list[str]:
    """Every common prefix a ``/``-delimited listing of ``bucket`` shows, at any depth."""
    found: list[str] = []
    pending = [""]
    while pending:
        prefix = pending.pop()
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/")
        for page in pages:
            below = [item["Prefix"] for item in page.get("CommonPrefixes", [])]
            found.extend(below)
            pending.extend(below)
    return found
