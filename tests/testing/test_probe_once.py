"""``make test``'s shortcut (``tests/support/probe_once.py``) answers a probe with what in-process moto
said to the first one in the same state, and probes for real wherever a test could tell the difference."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.s3.responses import S3Response

from s3memory.storage import server_checks
from s3memory.storage.bucket import Bucket
from s3memory.storage.conditions import Enforced
from tests.support import probe_once
from tests.support.bucket import BUCKET

PROBES_EACH_STORE = True
"""This module calls the shortcut itself; no store's first use is patched around it."""
SECOND = "probe-once-second"


@pytest.fixture
def real_probes(s3: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The shortcut as in a worker that has probed nothing yet; the buckets of the probes that went
    to the server, in order. A second empty bucket, ``SECOND``, is made beside ``BUCKET``."""
    went: list[str] = []

    def real(bucket: Bucket, prefix: str) -> Enforced:
        went.append(bucket.bucket)
        return server_checks.probe(bucket, prefix)

    monkeypatch.setattr(probe_once, "_found", {})
    monkeypatch.setattr(probe_once, "_real_probe", real)
    s3.create_bucket(Bucket=SECOND)
    yield went
    s3.delete_bucket(Bucket=SECOND)


def plain() -> Any:
    """A client of in-process moto as a test makes one, with no hook of its own."""
    return boto3.client("s3", region_name="us-east-1")


def test_the_next_store_is_answered_with_what_the_first_probe_found(s3: Any, real_probes: list[str]) -> None:
    first = probe_once.probe(Bucket(s3, BUCKET), "users/")

    answered = probe_once.probe(Bucket(plain(), SECOND), "users/")

    assert real_probes == [BUCKET]
    assert answered == first == server_checks.probe(Bucket(plain(), SECOND), "users/")
    assert plain().list_objects_v2(Bucket=SECOND)["KeyCount"] == 0


def test_a_client_with_a_hook_on_the_probes_requests_is_probed_for_real(
    s3: Any, real_probes: list[str]
) -> None:
    probe_once.probe(Bucket(s3, BUCKET), "users/")
    hooked = plain()
    hooked.meta.events.register("before-send.s3.CopyObject", lambda **_: None)  # a fault plan's hook

    probe_once.probe(Bucket(hooked, SECOND), "users/")

    assert real_probes == [BUCKET, SECOND]


def test_moto_as_shipped_is_probed_apart_from_moto_honouring_conditions(
    s3: Any, real_probes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    honoured = probe_once.probe(Bucket(s3, BUCKET), "users/")  # the suite's default
    monkeypatch.setattr("s3memory.testing._honouring", 0)

    shipped = probe_once.probe(Bucket(plain(), SECOND), "users/")

    assert real_probes == [BUCKET, SECOND]
    assert shipped != honoured  # moto as shipped ignores CopyObject's conditions


def test_moto_with_a_handler_swapped_is_probed_for_real(
    s3: Any, real_probes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    probe_once.probe(Bucket(s3, BUCKET), "users/")
    original = S3Response.copy_object
    monkeypatch.setattr(S3Response, "copy_object", lambda *args, **kwargs: original(*args, **kwargs))

    probe_once.probe(Bucket(plain(), SECOND), "users/")

    assert real_probes == [BUCKET, SECOND]
