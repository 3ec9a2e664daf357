"""``Bucket.copy_new``: a server-side copy with new metadata, only onto a free key and only from the
source version planned; on moto (with ``s3memory.testing.conditions_honoured``) and on SeaweedFS alike."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from s3memory import testing
from s3memory.errors import PreconditionFailed
from s3memory.storage.bucket import Bucket
from s3memory.testing import install_condition_checks
from tests.support.backends import REGION
from tests.support.bucket import BUCKET, SEAWEEDFS_SLOW, snapshot, stored_keys, temporary_bucket

BACKENDS = ("moto", SEAWEEDFS_SLOW)
PROBES_EACH_STORE = True
"""The probe runs for each test's store, as for a user's (``support/probe_once.py``): these tests are
of a store's first use."""

SOURCE = "users/alice/memories/notes über 100%?.md"
"""A key with a space, a non-ASCII letter, ``%`` and ``?``: the copy source must reach the server whole."""
TARGET = "users/alice/memories/renamed.md"
STALE = '"0123456789abcdef0123456789abcdef"'


@pytest.fixture
def bucket(s3: Any) -> Bucket:
    return Bucket(s3, BUCKET)


def put(s3: Any, key: str, body: bytes, metadata: dict[str, str] | None = None) -> str:
    return str(s3.put_object(Bucket=BUCKET, Key=key, Body=body, Metadata=metadata or {})["ETag"])


def stored(s3: Any, key: str) -> tuple[bytes, dict[str, str], str]:
    """The object's bytes, user metadata and ETag."""
    response = s3.get_object(Bucket=BUCKET, Key=key)
    return response["Body"].read(), dict(response["Metadata"]), str(response["ETag"])


def test_the_copy_lands_with_exactly_the_new_metadata_and_the_same_bytes(s3: Any, bucket: Bucket) -> None:
    source_etag = put(s3, SOURCE, b"the bytes", {"old": "1", "kept": "no"})
    etag = bucket.copy_new(SOURCE, TARGET, source_etag=source_etag, metadata={"new": "2"})
    assert stored(s3, TARGET) == (b"the bytes", {"new": "2"}, source_etag)
    assert etag == s3.head_object(Bucket=BUCKET, Key=TARGET)["ETag"] == source_etag
    assert stored(s3, SOURCE) == (b"the bytes", {"old": "1", "kept": "no"}, source_etag)  # a copy, not a move


def test_an_existing_destination_is_refused_and_left_as_it_was(s3: Any, bucket: Bucket) -> None:
    source_etag = put(s3, SOURCE, b"source", {"who": "source"})
    target_etag = put(s3, TARGET, b"target", {"who": "target"})
    with pytest.raises(PreconditionFailed) as refused:
        bucket.copy_new(SOURCE, TARGET, source_etag=source_etag, metadata={"who": "copy"})
    assert not refused.value.after_retry
    assert stored(s3, TARGET) == (b"target", {"who": "target"}, target_etag)


def test_a_changed_source_is_refused_and_nothing_is_written(s3: Any, bucket: Bucket) -> None:
    planned = put(s3, SOURCE, b"planned")
    put(s3, SOURCE, b"edited since")
    with pytest.raises(PreconditionFailed):
        bucket.copy_new(SOURCE, TARGET, source_etag=planned, metadata={"new": "2"})
    assert stored_keys(s3) == [SOURCE]


def test_a_missing_source_returns_none_and_writes_nothing(s3: Any, bucket: Bucket) -> None:
    assert bucket.copy_new(SOURCE, TARGET, source_etag=STALE, metadata={"new": "2"}) is None
    assert stored_keys(s3) == []


def test_a_missing_source_is_reported_before_an_existing_destination(s3: Any, bucket: Bucket) -> None:
    """S3 looks the source up first: NoSuchKey, whatever the destination's conditions."""
    put(s3, TARGET, b"target")
    before = snapshot(s3)
    assert bucket.copy_new(SOURCE, TARGET, source_etag=STALE, metadata={"new": "2"}) is None
    assert snapshot(s3) == before


# -- the moto patch (moto only: these tests take no ``backend``) ---------------------------------


@pytest.fixture
def moto_s3(session_s3: Any) -> Iterator[Any]:
    """In-process moto's client, with ``BUCKET`` created for the test and removed afterwards."""
    with temporary_bucket(session_s3):
        yield session_s3


def copy_outcome(s3: Any, bucket: str, target: str, **conditions: str) -> str:
    """``"ok"``, or the HTTP status and S3 error code of a refused copy of ``source`` to ``target``."""
    try:
        s3.copy_object(
            Bucket=bucket, Key=target, CopySource={"Bucket": bucket, "Key": "source"}, **conditions
        )
    except ClientError as error:
        return f"{error.response['ResponseMetadata']['HTTPStatusCode']} {error.response['Error']['Code']}"
    return "ok"


def test_honouring_twice_wraps_moto_once(moto_s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    s3 = moto_s3
    from moto.s3.responses import S3Response

    handler = S3Response.copy_object
    install_condition_checks()
    install_condition_checks()
    assert S3Response.copy_object is handler
    checks: list[str] = []
    check = testing._refuse_unmet_copy_conditions

    def counted(request: Any) -> None:
        checks.append(request.parse_key_name())
        check(request)

    monkeypatch.setattr(testing, "_refuse_unmet_copy_conditions", counted)
    put(s3, "source", b"source")
    put(s3, "taken", b"taken")
    assert copy_outcome(s3, BUCKET, "taken", IfNoneMatch="*") == "412 PreconditionFailed"
    assert copy_outcome(s3, BUCKET, "free", IfNoneMatch="*") == "ok"
    assert checks == ["taken", "free"]
    assert snapshot(s3) == {"source": b"source", "taken": b"taken", "free": b"source"}


def test_moto_alone_would_have_copied_over(moto_s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the checks moto lands every one of these copies: the patch is what refuses them."""
    s3 = moto_s3
    monkeypatch.setattr(testing, "_refuse_unmet_copy_conditions", lambda request: None)
    put(s3, "source", b"source")
    put(s3, "taken", b"taken")
    assert copy_outcome(s3, BUCKET, "taken", IfNoneMatch="*") == "ok"
    assert copy_outcome(s3, BUCKET, "taken", IfMatch=STALE) == "ok"
    assert copy_outcome(s3, BUCKET, "other", CopySourceIfMatch=STALE) == "ok"


@pytest.fixture
def served_bucket(moto_endpoint: str) -> Iterator[tuple[Any, str]]:
    """A client of moto's threaded server (``moto_server``) and a bucket of its own there."""
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION)
    bucket = f"copy-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    yield client, bucket
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)


def test_moto_server_refuses_what_s3_refuses(served_bucket: tuple[Any, str]) -> None:
    client, bucket = served_bucket
    source_etag = str(client.put_object(Bucket=bucket, Key="source", Body=b"source")["ETag"])
    client.put_object(Bucket=bucket, Key="taken", Body=b"taken")
    assert copy_outcome(client, bucket, "taken", IfNoneMatch="*") == "412 PreconditionFailed"
    assert copy_outcome(client, bucket, "taken", IfMatch=STALE) == "412 PreconditionFailed"
    assert copy_outcome(client, bucket, "absent", IfMatch=STALE) == "404 NoSuchKey"
    assert copy_outcome(client, bucket, "other", CopySourceIfMatch=STALE) == "412 PreconditionFailed"
    assert copy_outcome(client, bucket, "other", CopySourceIfMatch=source_etag.strip('"')) == "ok"
    taken_etag = str(client.head_object(Bucket=bucket, Key="taken")["ETag"])
    assert copy_outcome(client, bucket, "taken", IfMatch=taken_etag) == "ok"
    keys = sorted(item["Key"] for item in client.list_objects_v2(Bucket=bucket)["Contents"])
    assert keys == ["other", "source", "taken"]
    assert client.get_object(Bucket=bucket, Key="taken")["Body"].read() == b"source"


def test_honoured_moto_keeps_a_key_whose_etag_a_delete_objects_does_not_name(moto_s3: Any) -> None:
    """S3 keeps a key of a DeleteObjects whose ETag is not the one named, reporting it; moto as
    shipped deletes it; moto honouring the conditions (the tests', ``s3memory.testing``) keeps it."""
    s3 = moto_s3
    fresh = put(s3, "fresh", b"fresh")
    put(s3, "changed", b"changed")
    answer = s3.delete_objects(
        Bucket=BUCKET,
        Delete={
            "Objects": [{"Key": "fresh", "ETag": fresh}, {"Key": "changed", "ETag": STALE}],
            "Quiet": True,
        },
    )
    assert [(item["Key"], item["Code"]) for item in answer.get("Errors", [])] == [
        ("changed", "PreconditionFailed")
    ]
    assert snapshot(s3) == {"changed": b"changed"}
