"""What each S3 server of the test matrix does with the requests s3memory relies on.

The servers: moto 5.2 as shipped (``mock_aws``, in a fresh interpreter, so no patch of the tests'
``conftest.py`` applies), SeaweedFS 4.48 (``weed mini``, see ``support/backends.py``), s3rver 3.7.1
(npm, ``support/s3rver.py``) and LocalStack 4.13.1 (``localstack-core``, S3 only, without Docker,
``support/localstack.py``). Each runs every probe of ``support/server_probe.py`` once, and the
outcomes must be exactly those of ``EXPECTED``: `docs/real-s3.md`'s table of servers is read off it. An
outcome is ``"ok"`` or the refusal's ``"<HTTP status> <error code>"``, then what the request left
(``kept``, ``replaced``, ``created``, ``absent``, ``deleted``). AWS S3's own answers are in the
first column of each row's comment; these tests do not run against AWS.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import server_probe
from tests.support.bucket import BUCKET
from tests.support.localstack import LocalStackServer
from tests.support.localstack import missing as localstack_missing
from tests.support.loopback_server import serving
from tests.support.processes import run_python_json
from tests.support.s3rver import S3rverServer
from tests.support.s3rver import missing as s3rver_missing

pytestmark = [pytest.mark.slow, pytest.mark.server_matrix]

SERVERS = ("moto", "seaweedfs", "s3rver", "localstack")

REFUSED = "412 PreconditionFailed"
LISTED = "after b: c/1,c/2,d; pages: a,b | c/1,c/2 | d; level: a,b,d + c/"
VERSIONED = "2 versions, 1 markers, latest marker; first version read back; removed for good"
NOT_ASSERTED = None
"""An outcome left out of the comparison: the race it reports is lost or won by chance."""

EXPECTED: dict[str, tuple[str | None, str | None, str | None, str | None]] = {
    # probe: (moto, seaweedfs, s3rver, localstack)
    "round_trip": ("ok; bytes and metadata read back",) * 4,
    # AWS: 412 on an existing key, 412 on a stale ETag, 404 NoSuchKey for If-Match on a missing key.
    "put_if_none_match_on_an_existing_key": (
        f"{REFUSED}; kept",
        f"{REFUSED}; kept",
        "ok; replaced",
        f"{REFUSED}; kept",
    ),
    "put_if_none_match_on_a_new_key": ("ok; created",) * 4,
    "put_if_match_with_a_stale_etag": (
        f"{REFUSED}; kept",
        f"{REFUSED}; kept",
        "ok; replaced",
        f"{REFUSED}; kept",
    ),
    "put_if_match_with_the_current_etag": ("ok; replaced",) * 4,
    "put_if_match_on_a_missing_key": (
        "404 NoSuchKey; absent",
        f"{REFUSED}; absent",
        "ok; created",
        "404 NoSuchKey; absent",
    ),
    # AWS: exactly one of racing conditional writes wins. moto checks, then writes, without a lock.
    "racing_creates": (NOT_ASSERTED, "one winner each round", "up to 4 winners", "one winner each round"),
    "racing_updates": (NOT_ASSERTED, "one winner each round", "up to 4 winners", "one winner each round"),
    # AWS (since 2025): CopyObject checks If-None-Match / If-Match on the destination and
    # x-amz-copy-source-if-match on the source.
    "copy_if_none_match_onto_an_existing_key": (
        "ok; replaced",
        f"{REFUSED}; kept",
        "ok; replaced",
        "ok; replaced",
    ),
    "copy_if_none_match_onto_a_new_key": ("ok; created",) * 4,
    "copy_source_if_match_with_a_stale_etag": (
        "ok; created",
        f"{REFUSED}; absent",
        "ok; created",
        f"{REFUSED}; absent",
    ),
    "copy_source_if_match_with_the_current_etag": ("ok; created",) * 4,
    "copy_of_a_missing_source": ("404 NoSuchKey; absent",) * 4,
    "copy_if_match_with_a_stale_etag": ("ok; replaced", f"{REFUSED}; kept", "ok; replaced", "ok; replaced"),
    "copy_replaces_metadata": ("ok; metadata replaced",) * 4,
    "copy_replaces_tags_with_none": ("ok; untagged",) * 4,
    "copy_keeps_the_etag": (
        "same ETag, answer quoted",
        "same ETag, answer unquoted",
        "same ETag, answer quoted",
        "same ETag, answer quoted",
    ),
    # The CopyObject of format 2's rename (Bucket.copy_new): all of the above at once.
    "store_copy_onto_a_new_key": ("ok; created",) * 4,
    "store_copy_onto_an_existing_key": ("ok; replaced", f"{REFUSED}; kept", "ok; replaced", "ok; replaced"),
    "store_copy_of_a_changed_source": (
        "ok; created",
        f"{REFUSED}; absent",
        "ok; created",
        f"{REFUSED}; absent",
    ),
    # AWS: DeleteObject If-Match 412 on a stale ETag; DeleteObjects reports a stale ETag per key.
    "delete_if_match_with_a_stale_etag": (
        f"{REFUSED}; kept",
        f"{REFUSED}; kept",
        "ok; deleted",
        "501 NotImplemented; kept",
    ),
    "delete_if_match_with_the_current_etag": (
        "ok; deleted",
        "ok; deleted",
        "ok; deleted",
        "501 NotImplemented; kept",
    ),
    "delete_if_match_on_a_missing_key": ("404 NoSuchKey", REFUSED, "ok", "501 NotImplemented"),
    "delete_objects_with_a_stale_etag": (
        "errors []; deleted",
        "errors [PreconditionFailed]; kept",
        "errors []; deleted",
        "errors []; deleted",
    ),
    "delete_objects_with_the_current_etag": ("errors []; deleted",) * 4,
    # s3rver answers 500 InternalError to most such requests, after deleting every key.
    "delete_objects_below_one_prefix": ("ok; 0 left", "ok; 0 left", NOT_ASSERTED, "ok; 0 left"),
    "delete_objects_over_1000_keys": ("ok", "400 InvalidArgument", "ok", "ok"),  # AWS: 400 MalformedXML
    # AWS: tags change neither bytes, ETag nor metadata, and never undo a write.
    "tagging_keeps_the_object": ("ok; tags read back; object kept",) * 4,
    "tagging_a_missing_key": ("put 404 NoSuchKey; get 404 NoSuchKey",) * 4,
    # SeaweedFS's tagging writes back the object it read: it undoes a racing write now and then.
    "tagging_races_a_put": (
        "0 of 20 acknowledged puts undone",
        NOT_ASSERTED,
        "0 of 20 acknowledged puts undone",
        "0 of 20 acknowledged puts undone",
    ),
    "versions_of_an_unversioned_bucket": (
        "ok; version ids ['null']",
        "ok; version ids ['null']",
        "405 MethodNotAllowed",
        "ok; version ids ['null']",
    ),
    "versioning": (VERSIONED, VERSIONED, "PutBucketVersioning 409 BucketAlreadyExists", VERSIONED),
    "listings": (LISTED,) * 4,
}

MOTO_AS_SHIPPED = """
import json
import boto3
from moto import mock_aws
from tests.support import server_probe
with mock_aws():
    client = boto3.client("s3", region_name="us-east-1")
    print(json.dumps(server_probe.run(server_probe.prepare(client, "probe-plain", "probe-versioned"))))
"""


@pytest.fixture(scope="module")
def s3rver() -> Iterator[S3rverServer]:
    """s3rver on 127.0.0.1 for this module (skipped where it is not installed, failed under CI)."""
    yield from serving(S3rverServer(), s3rver_missing(), BUCKET)


@pytest.fixture(scope="module")
def localstack() -> Iterator[LocalStackServer]:
    """LocalStack's S3 on 127.0.0.1 for this module (skipped where it is not installed, failed under CI)."""
    yield from serving(LocalStackServer(), localstack_missing(), BUCKET)


def probe_outcomes(server: str, request: pytest.FixtureRequest) -> dict[str, str]:
    if server == "moto":
        outcomes: dict[str, str] = run_python_json(MOTO_AS_SHIPPED)
        return outcomes
    client: Any = request.getfixturevalue(server).client(attempts=1)
    probe = server_probe.prepare(client, "probe-plain", "probe-versioned")
    try:
        return server_probe.run(probe)
    finally:
        server_probe.remove(probe)


def test_every_probe_has_an_expected_outcome() -> None:
    assert list(EXPECTED) == [probe.__name__ for probe in server_probe.PROBES]


@pytest.mark.parametrize("server", SERVERS)
def test_what_the_server_does(server: str, request: pytest.FixtureRequest) -> None:
    column = SERVERS.index(server)
    expected = {name: row[column] for name, row in EXPECTED.items() if row[column] is not NOT_ASSERTED}
    outcomes = probe_outcomes(server, request)
    assert {name: outcomes[name] for name in expected} == expected, json.dumps(outcomes, indent=1)
