"""What each S3 backend of the tests really does, where s3memory depends on S3's rules.

Each test states the outcome per backend (``"ok"`` or ``"<HTTP status> <error code>"``) as observed:
moto 5.x in-process and SeaweedFS 4.48 (``weed mini``, see ``backends.py``). Where they differ, the
SeaweedFS tier is the one that catches a mistake moto would let through. Real S3's documented rule
is noted beside each; these tests do not run against AWS.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from s3memory.storage.bucket import Bucket
from tests.support.backends import REGION, SeaweedServer
from tests.support.bucket import (
    BUCKET,
    SEAWEEDFS_SLOW,
    common_prefixes,
    empty_bucket,
    stored_keys,
)
from tests.support.server_probe import outcome

BACKENDS = ("moto", SEAWEEDFS_SLOW)


def put(s3: Any, key: str, body: bytes = b"body", **conditions: str) -> str:
    return str(s3.put_object(Bucket=BUCKET, Key=key, Body=body, **conditions)["ETag"])


def body_of(s3: Any, key: str) -> bytes:
    return bytes(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


@pytest.fixture
def other_bucket(s3: Any) -> Iterator[str]:
    """A second bucket of this test's backend, removed afterwards."""
    name = f"other-{uuid.uuid4().hex[:12]}"
    yield name
    try:
        empty_bucket(s3, name)
        s3.delete_bucket(Bucket=name)
    except ClientError as error:
        assert error.response["Error"]["Code"] == "NoSuchBucket"


# -- conditional PutObject: both honour it --------------------------------------------------------


def test_put_if_none_match_star_refuses_an_existing_key(s3: Any) -> None:
    """S3: 412 PreconditionFailed. s3memory's `create` and its key vault rely on it."""
    put(s3, "k", b"first")
    assert outcome(lambda: put(s3, "k", b"second", IfNoneMatch="*")) == "412 PreconditionFailed"
    assert outcome(lambda: put(s3, "new", b"x", IfNoneMatch="*")) == "ok"
    assert body_of(s3, "k") == b"first"


def test_put_if_match_accepts_the_current_etag_only(s3: Any) -> None:
    """S3: 412 on a stale ETag. s3memory's edits are read-modify-write with IfMatch."""
    etag = put(s3, "k", b"first")
    assert outcome(lambda: put(s3, "k", b"stale", IfMatch='"0123456789abcdef0123456789abcdef"')) == (
        "412 PreconditionFailed"
    )
    assert outcome(lambda: put(s3, "k", b"second", IfMatch=etag)) == "ok"
    assert outcome(lambda: put(s3, "k", b"third", IfMatch=etag)) == "412 PreconditionFailed"
    assert body_of(s3, "k") == b"second"


PUT_IF_MATCH_ON_A_MISSING_KEY = {"moto": "404 NoSuchKey", "seaweedfs": "412 PreconditionFailed"}


def test_put_if_match_on_a_missing_key(s3: Any, backend: str) -> None:
    """S3 documents 404 NoSuchKey; store.put treats both answers as a lost precondition."""
    assert (
        outcome(lambda: put(s3, "missing", b"x", IfMatch='"abc"')) == PUT_IF_MATCH_ON_A_MISSING_KEY[backend]
    )
    assert stored_keys(s3) == []


def test_etag_of_a_single_put_is_the_quoted_md5(s3: Any) -> None:
    body = bytes(range(256)) * 10
    assert put(s3, "k", body) == f'"{hashlib.md5(body).hexdigest()}"'


# -- CopyObject preconditions: S3 and SeaweedFS check them; moto does once patched --------------


def test_copy_object_preconditions(s3: Any) -> None:
    """S3 checks x-amz-copy-source-if-match / -if-none-match and, on the destination, If-None-Match
    and If-Match. moto alone checks only copy-source-if-none-match; the tests' moto is patched
    (``s3memory.testing.conditions_honoured``) to refuse like S3."""
    source_etag = put(s3, "source", b"source")
    put(s3, "dest", b"dest")
    source = {"Bucket": BUCKET, "Key": "source"}
    stale = '"0123456789abcdef0123456789abcdef"'
    refused = "412 PreconditionFailed"
    copy = s3.copy_object
    assert (
        outcome(lambda: copy(Bucket=BUCKET, Key="copy1", CopySource=source, CopySourceIfMatch=stale))
        == refused
    )
    assert (
        outcome(
            lambda: copy(Bucket=BUCKET, Key="copy2", CopySource=source, CopySourceIfNoneMatch=source_etag)
        )
        == refused
    )
    assert outcome(lambda: copy(Bucket=BUCKET, Key="dest", CopySource=source, IfNoneMatch="*")) == refused
    put(s3, "dest2", b"dest2")
    assert outcome(lambda: copy(Bucket=BUCKET, Key="dest2", CopySource=source, IfMatch=stale)) == refused
    assert (body_of(s3, "dest"), body_of(s3, "dest2")) == (b"dest", b"dest2")
    assert stored_keys(s3) == ["dest", "dest2", "source"]


# -- deletes -----------------------------------------------------------------------------------------


def test_delete_object_if_match(s3: Any) -> None:
    etag = put(s3, "k")
    assert (
        outcome(lambda: s3.delete_object(Bucket=BUCKET, Key="k", IfMatch='"abc"')) == "412 PreconditionFailed"
    )
    assert stored_keys(s3) == ["k"]
    assert outcome(lambda: s3.delete_object(Bucket=BUCKET, Key="k", IfMatch=etag)) == "ok"
    assert stored_keys(s3) == []


DELETE_OBJECTS_WITH_A_STALE_ETAG = {
    # moto as shipped reports no error and deletes the object anyway (``tests/storage/test_servers.py``);
    # the tests' moto refuses like S3 (``s3memory.testing.conditions_honoured``)
    "moto": ([("guarded", "PreconditionFailed")], []),
    "seaweedfs": ([("guarded", "PreconditionFailed")], []),
}


def test_delete_objects_checks_each_keys_etag(s3: Any, backend: str) -> None:
    """S3 (since 2024) honours an ETag per object in DeleteObjects and reports a mismatch in
    ``Errors``. s3memory's crash-safe jobs delete originals only if unchanged this way."""
    put(s3, "guarded", b"x")
    answer = s3.delete_objects(
        Bucket=BUCKET,
        Delete={"Objects": [{"Key": "guarded", "ETag": '"0123456789abcdef0123456789abcdef"'}], "Quiet": True},
    )
    errors = [(item["Key"], item["Code"]) for item in answer.get("Errors", [])]
    expected_errors, expected_gone = DELETE_OBJECTS_WITH_A_STALE_ETAG[backend]
    assert errors == expected_errors
    assert [key for key in ["guarded"] if key not in stored_keys(s3)] == expected_gone


DELETE_OBJECTS_OVER_1000_KEYS = {"moto": "ok", "seaweedfs": "400 InvalidArgument"}


def test_delete_objects_limit_of_1000_keys(s3: Any, backend: str) -> None:
    """S3 refuses more than 1,000 keys (400 MalformedXML); store.delete_batch never sends more."""
    keys = [{"Key": f"k{index}"} for index in range(1_001)]
    assert (
        outcome(lambda: s3.delete_objects(Bucket=BUCKET, Delete={"Objects": keys, "Quiet": True}))
        == (DELETE_OBJECTS_OVER_1000_KEYS[backend])
    )
    assert (
        outcome(lambda: s3.delete_objects(Bucket=BUCKET, Delete={"Objects": keys[:1000], "Quiet": True}))
        == "ok"
    )


def test_delete_objects_of_missing_keys_reports_no_error(s3: Any) -> None:
    put(s3, "present")
    answer = s3.delete_objects(
        Bucket=BUCKET, Delete={"Objects": [{"Key": "present"}, {"Key": "absent"}], "Quiet": False}
    )
    assert sorted(item["Key"] for item in answer.get("Deleted", [])) == ["absent", "present"]
    assert not answer.get("Errors")


DELETE_OBJECTS_WITH_AN_ETAG_OF_A_MISSING_KEY = {
    "moto": ([], ["absent"]),
    "seaweedfs": ([("absent", "NoSuchKey")], []),
}


def test_delete_objects_with_an_etag_of_a_missing_key(s3: Any, backend: str) -> None:
    """A job's retry deletes keys it may have deleted already, each with its planned ETag:
    ``store.delete_batch`` reports a ``NoSuchKey`` for such a key as gone, not as a failure."""
    etag = put(s3, "present")
    answer = s3.delete_objects(
        Bucket=BUCKET, Delete={"Objects": [{"Key": "absent", "ETag": etag}], "Quiet": False}
    )
    errors = [(item["Key"], item["Code"]) for item in answer.get("Errors", [])]
    expected_errors, expected_deleted = DELETE_OBJECTS_WITH_AN_ETAG_OF_A_MISSING_KEY[backend]
    assert errors == expected_errors
    assert [item["Key"] for item in answer.get("Deleted", [])] == expected_deleted
    outcome = Bucket(s3, BUCKET).delete_batch([("absent", etag)])
    assert (outcome.changed, outcome.gone) == ([], [key for key, _code in expected_errors])


# -- listings and directories ---------------------------------------------------------------------


def test_listing_pages_and_delimiters(s3: Any) -> None:
    keys = ["a/1", "a/2", "a/b/3", "c", "d/4"]
    for key in keys:
        put(s3, key)
    seen, token, pages = [], None, 0
    while True:
        extra = {"ContinuationToken": token} if token else {}
        page = s3.list_objects_v2(Bucket=BUCKET, MaxKeys=2, **extra)
        pages += 1
        seen.extend(item["Key"] for item in page.get("Contents", []))
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated"):
            break
    assert (seen, pages) == (keys, 3)
    level = s3.list_objects_v2(Bucket=BUCKET, Delimiter="/")
    assert [item["Key"] for item in level["Contents"]] == ["c"]
    assert [item["Prefix"] for item in level["CommonPrefixes"]] == ["a/", "d/"]
    below = s3.list_objects_v2(Bucket=BUCKET, Prefix="a/", Delimiter="/")
    assert [item["Key"] for item in below["Contents"]] == ["a/1", "a/2"]
    assert [item["Prefix"] for item in below["CommonPrefixes"]] == ["a/b/"]


EMPTIED_DIRECTORY_STILL_LISTED = {"moto": [], "seaweedfs": ["gone/", "gone/deeper/"]}
HEAD_OF_AN_EMPTIED_DIRECTORY_KEY = {"moto": "404 404", "seaweedfs": "ok"}


def test_a_prefix_outlives_its_last_object_on_seaweedfs(s3: Any, backend: str) -> None:
    """S3 has no directories: a common prefix exists while an object lies below it. SeaweedFS keeps
    the emptied directory (seen for at least a minute) and still lists it as a common prefix, and
    HEAD of ``dir/`` answers 200. A delimited listing (``view`` of a directory over 1,000 objects)
    can therefore show a directory that was deleted; listings without a delimiter are exact."""
    put(s3, "gone/deeper/file")
    put(s3, "kept")
    s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "gone/deeper/file"}], "Quiet": True})
    assert stored_keys(s3) == ["kept"]
    assert sorted(common_prefixes(s3)) == EMPTIED_DIRECTORY_STILL_LISTED[backend]
    assert (
        outcome(lambda: s3.head_object(Bucket=BUCKET, Key="gone/deeper/"))
        == HEAD_OF_AN_EMPTIED_DIRECTORY_KEY[backend]
    )
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="gone/", MaxKeys=1).get("KeyCount") == 0


def test_missing_objects_and_buckets(s3: Any) -> None:
    assert outcome(lambda: s3.get_object(Bucket=BUCKET, Key="nope")) == "404 NoSuchKey"
    assert outcome(lambda: s3.head_object(Bucket=BUCKET, Key="nope")) == "404 404"
    assert outcome(lambda: s3.list_objects_v2(Bucket="no-such-bucket-here")) == "404 NoSuchBucket"


# -- buckets and credentials ----------------------------------------------------------------------

CREATE_AN_OWNED_BUCKET_AGAIN = {"moto": "ok", "seaweedfs": "409 BucketAlreadyOwnedByYou"}


def test_bucket_rules(s3: Any, backend: str, other_bucket: str) -> None:
    """S3 (us-east-1) answers 200 to re-creating one's own bucket, elsewhere 409
    BucketAlreadyOwnedByYou; DeleteBucket of a non-empty bucket is 409 BucketNotEmpty (SeaweedFS
    runs with ``-s3.allowDeleteBucketNotEmpty=false`` for that)."""
    assert outcome(lambda: s3.create_bucket(Bucket=other_bucket)) == "ok"
    assert outcome(lambda: s3.create_bucket(Bucket=other_bucket)) == CREATE_AN_OWNED_BUCKET_AGAIN[backend]
    s3.put_object(Bucket=other_bucket, Key="k", Body=b"x")
    assert outcome(lambda: s3.delete_bucket(Bucket=other_bucket)) == "409 BucketNotEmpty"


UNKNOWN_ACCESS_KEY = {"moto": "ok", "seaweedfs": "403 InvalidAccessKeyId"}


def test_signatures_are_checked_on_seaweedfs_only(
    backend: str, s3: Any, request: pytest.FixtureRequest
) -> None:
    endpoint = None
    if backend == "seaweedfs":
        server: SeaweedServer = request.getfixturevalue("seaweedfs")
        endpoint = server.endpoint
    stranger = boto3.session.Session().client(
        "s3",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="AKIDUNKNOWN",
        aws_secret_access_key="not-a-secret",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )
    assert outcome(lambda: stranger.list_objects_v2(Bucket=BUCKET)) == UNKNOWN_ACCESS_KEY[backend]
