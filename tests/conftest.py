"""Shared fixtures: S3 (and KMS) served in-process by moto, request counters, tool factories."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.s3.responses import S3Response

from s3memory.crypto import KeyProvider, LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.store import S3Store

BUCKET = "agent-memory"
MASTER_KEY = bytes(range(32))

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


class RequestCounter:
    """Counts HTTP requests a botocore client sends, by operation (a ``request-created`` hook)."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        client.meta.events.register("request-created", self._count)

    def _count(self, operation_name: str, **_: Any) -> None:
        self.calls[operation_name] += 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        self.calls.clear()


@pytest.fixture(scope="session", autouse=True)
def atomic_moto_writes() -> Iterator[None]:
    """Make moto's conditional PutObject atomic, as S3's is.

    moto checks ``If-None-Match``/``If-Match`` and then writes, without a lock, so two racing
    threads can both pass the check. S3 never lets that happen; the race tests need S3's rule.
    """
    original = S3Response.put_object
    lock = threading.Lock()

    def put_object(self: S3Response) -> Any:
        with lock:
            return original(self)

    S3Response.put_object = put_object  # type: ignore[method-assign]
    yield
    S3Response.put_object = original  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def aws() -> Iterator[None]:
    """moto for the whole session: starting it per test costs half a second."""
    with mock_aws():
        yield


@pytest.fixture(scope="session")
def session_s3(aws: None) -> Any:
    return boto3.client("s3", region_name="us-east-1")


@pytest.fixture
def s3(session_s3: Any) -> Iterator[Any]:
    """A fresh, empty bucket on a fresh client (so event hooks do not leak between tests)."""
    session_s3.create_bucket(Bucket=BUCKET)
    client = boto3.client("s3", region_name="us-east-1")
    yield client
    for key in stored_keys(session_s3):
        session_s3.delete_object(Bucket=BUCKET, Key=key)
    session_s3.delete_bucket(Bucket=BUCKET)


@pytest.fixture
def local_keys() -> LocalKeyProvider:
    return LocalKeyProvider(MASTER_KEY)


@pytest.fixture
def make_memory(s3: Any, local_keys: LocalKeyProvider) -> Callable[..., S3Memory]:
    def make(user_id: str = "alice", key_provider: KeyProvider | None = None, **options: Any) -> S3Memory:
        return S3Memory(S3Store(s3, BUCKET), user_id, key_provider or local_keys, **options)

    return make


@pytest.fixture
def memory(make_memory: Callable[..., S3Memory]) -> S3Memory:
    return make_memory()


def stored_keys(client: Any, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return keys


def snapshot(client: Any) -> dict[str, bytes]:
    """Every object in the bucket, key to bytes: proof that a refusal changed nothing."""
    return {key: client.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in stored_keys(client)}
