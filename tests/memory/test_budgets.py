"""S3 and KMS request budgets per command, on a warm tool without contention.

Requests are counted on the clients with a botocore ``request-created`` hook: counts are exact.
S3 is moto's (in-process) and SeaweedFS's; KMS is always moto's in-process KMS.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from bench.metrics import RequestCounter
from s3memory.clients import make_s3_client
from s3memory.core.paths import memory_path
from s3memory.crypto import KMSKeyProvider
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT, key_of, keys_of
from tests.support.bucket import BUCKET, SEAWEEDFS_SLOW
from tests.support.memories import seed
from tests.support.overlap import InFlightTogether

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)


@pytest.fixture
def kms_memory(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> tuple[S3Memory, RequestCounter, RequestCounter]:
    memory = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    memory.create(memory_path("/memories/warm.txt"), "warms the key cache")
    return primed(memory), RequestCounter(s3), RequestCounter(kms)


def primed(memory: S3Memory) -> S3Memory:
    """``memory`` once it has answered a first command (a read that teaches it no directory), and so
    written its access record: every request counted after is a command's own."""
    memory.run({"command": "view", "path": "/memories/warm.txt"})
    return memory


def run(memory: S3Memory, s3_requests: RequestCounter, command: dict[str, Any]) -> int:
    s3_requests.reset()
    memory.run(command)
    return s3_requests.total


def put_raw(s3: Any, bucket: str, keys: list[str], *, workers: int) -> None:
    """Write small objects straight to S3, ``workers`` at a time (seeding only: nothing is counted)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(s3.put_object, Bucket=bucket, Key=key, Body=b"\0" * 120) for key in keys]:
            future.result()


def test_per_command_budgets_and_no_kms_when_warm(
    kms_memory: tuple[S3Memory, RequestCounter, RequestCounter],
) -> None:
    memory, s3_requests, kms_requests = kms_memory
    kms_requests.reset()
    seed(memory, ["/memories/a.txt", "/memories/dir/b.txt", "/memories/dir/c.txt"])
    assert run(memory, s3_requests, {"command": "view", "path": "/memories/a.txt"}) == 1
    assert run(memory, s3_requests, {"command": "view", "path": "/memories/dir"}) == 1  # seen as a directory
    assert run(memory, s3_requests, {"command": "view", "path": "/memories"}) == 1
    edit = {"command": "str_replace", "path": "/memories/a.txt", "old_str": "content", "new_str": "text"}
    assert run(memory, s3_requests, edit) == 2
    insert = {"command": "insert", "path": "/memories/a.txt", "insert_line": 1, "insert_text": "more"}
    assert run(memory, s3_requests, insert) == 2
    rename = {"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories/moved/a.txt"}
    assert run(memory, s3_requests, rename) == 6
    assert run(memory, s3_requests, {"command": "delete", "path": "/memories/moved/a.txt"}) == 3
    assert kms_requests.total == 0


class Asked:
    """What each request one client sends asks of S3: its operation, the key or prefix it names, and
    its condition or bound (``IfNoneMatch``, ``IfMatch``, ``MaxKeys``), as the client was called."""

    def __init__(self, client: Any) -> None:
        self.requests: list[tuple[str, str, str]] = []
        client.meta.events.register("provide-client-params.s3", self._note)

    def _note(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        bounds = ("IfNoneMatch", "IfMatch", "MaxKeys", "Delimiter", "StartAfter")
        asked = " ".join(f"{name}={params[name]}" for name in bounds if name in params)
        self.requests.append((model.name, params.get("Key", params.get("Prefix", "")), asked))


@pytest.mark.parametrize(
    "path",
    ["/memories/top.txt", "/memories/d2/new.txt", "/memories/d2/e/f/g.txt", "/memories/dir/new.txt"],
    ids=["root", "new-directory", "three-new-directories", "known-directory"],
)
def test_create_sends_a_head_per_ancestor_a_one_key_listing_below_and_its_conditional_put(
    kms_memory: tuple[S3Memory, RequestCounter, RequestCounter], path: str
) -> None:
    """create's exact requests on a warm tool, sent together (``test_the_write_and_the_checks_of_a_
    command_are_in_flight_together``): a HEAD of each ancestor (is it a file?), a listing of one key
    below the path (is a directory there?) and the PUT only if no object is at the path; the same
    in a directory this process has seen and written in (a hint is no proof: docs/storage.md), and
    no KMS request. Nothing else: the access record is written once an hour, not per command."""
    memory, _, kms_requests = kms_memory
    seed(memory, ["/memories/dir/a.txt"])
    memory.run({"command": "view", "path": "/memories/dir"})  # seen as a directory
    asked = Asked(memory.store.bucket.client)
    kms_requests.reset()
    memory.run({"command": "create", "path": path, "file_text": "x"})
    key, layout = key_of(memory, path), memory.placed.layout
    assert sorted(asked.requests) == sorted(
        [("HeadObject", layout.file_key(ancestor), "") for ancestor in memory_path(path).ancestors()]
        + [("ListObjectsV2", key + "/", "MaxKeys=1"), ("PutObject", key, "IfNoneMatch=*")]
    )
    assert kms_requests.total == 0


@pytest.mark.parametrize("files", [1, 7, 40])
@pytest.mark.parametrize("seen_before", [True, False], ids=["seen", "new-process"])
def test_directory_delete_and_rename_budgets(
    kms_memory: tuple[S3Memory, RequestCounter, RequestCounter],
    make_memory: Callable[..., S3Memory],
    files: int,
    seen_before: bool,
) -> None:
    memory, s3_requests, kms_requests = kms_memory
    seed(memory, [f"/memories/big/sub{index % 3}/f{index}.txt" for index in range(files)])
    if not seen_before:  # a process that has never seen the directory reads the path first
        memory = primed(make_memory(key_provider=memory.store.key_provider))
    kms_requests.reset()
    rename = {"command": "rename", "old_path": "/memories/big", "new_path": "/memories/archive/big"}
    if STORAGE_FORMAT == 1:  # each file read and written again, and a HEAD of the job's record
        # before the deletes (J11)
        assert run(memory, s3_requests, rename) == 2 * files + (9 if seen_before else 10)
        assert s3_requests.calls["PutObject"] == files + 1  # the copies and the job record
    else:  # a copy per file, made on the server, a HEAD first for each file this process did not
        # write, and a HEAD of the job's record before the deletes (docs/format-v2.md P8, P11; J11)
        assert run(memory, s3_requests, rename) == (files + 9 if seen_before else 2 * files + 10)
        assert (s3_requests.calls["PutObject"], s3_requests.calls["CopyObject"]) == (1, files)
        # two for the destination (no file at /memories/archive/big nor /memories/archive), one
        # for the record; in a process that has not seen the directory, one for the source as a
        # file, and one per file it did not write
        assert s3_requests.calls["HeadObject"] == (3 if seen_before else files + 4)
    # the record's HEAD before the deletes (J11)
    assert run(memory, s3_requests, {"command": "delete", "path": "/memories/archive"}) == 6
    assert s3_requests.calls["HeadObject"] == 1
    assert kms_requests.total == 0


def test_the_write_and_the_checks_of_a_command_are_in_flight_together(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    seed(make_memory(), ["/memories/dir/a.txt", "/memories/dir/sub/b.txt", "/memories/c.txt"])
    overlaps = [
        # (command, how many requests overlap, of which operations)
        (
            {"command": "create", "path": "/memories/dir/new.txt", "file_text": "x"},
            3,
            "PutObject",
            "HeadObject",
            "ListObjectsV2",
        ),
        # the pending-jobs listing, the destination's checks and the source read
        (
            {"command": "rename", "old_path": "/memories/c.txt", "new_path": "/memories/d/c.txt"},
            4,
            "GetObject",
            "HeadObject",
            "ListObjectsV2",
        ),
        # the same, with the source directory's listing for the read, and a HEAD of the destination
        (
            {"command": "rename", "old_path": "/memories/dir", "new_path": "/memories/e/dir"},
            5,
            "HeadObject",
            "ListObjectsV2",
        ),
        # the job record is written while the sources are read (format 1; format 2 verified them
        # with the plan's HEADs, so its copies wait for the record and no request overlaps it)
        (
            {"command": "rename", "old_path": "/memories/e/dir", "new_path": "/memories/f"},
            2 if STORAGE_FORMAT == 1 else 0,
            "PutObject",
            "GetObject",
        ),
        ({"command": "delete", "path": "/memories/f"}, 2, "ListObjectsV2"),
    ]
    for command, count, *operations in overlaps:
        memory = make_memory()
        memory.run({"command": "view", "path": "/memories"})  # a conversation starts with the root
        if not count:
            memory.run(command)
            continue
        with InFlightTogether(memory.store.bucket.client, count, *operations) as together:
            memory.run(command)
        assert together.met, command


def test_view_cost_does_not_grow_below_level_two(
    kms_memory: tuple[S3Memory, RequestCounter, RequestCounter], s3: Any, backend: str
) -> None:
    memory, s3_requests, _ = kms_memory
    memory.store.bucket.page_size = 10  # a page of 10 keys stands for S3's 1,000: more than a page, then two
    workers = 1 if backend == "moto" else 8  # in-process moto gains nothing from threads

    def deep(indices: range) -> list[str]:
        return [f"/memories/top/mid/deep/f{index:05d}" for index in indices]

    put_raw(s3, memory.store.bucket.bucket, keys_of(memory, deep(range(11))), workers=workers)
    small = run(memory, s3_requests, {"command": "view", "path": "/memories"})
    put_raw(s3, memory.store.bucket.bucket, keys_of(memory, deep(range(11, 22))), workers=workers)
    large = run(memory, s3_requests, {"command": "view", "path": "/memories"})
    assert small == large
    assert large == 3  # the namespace's first page, then levels 1 and 2 with a delimiter
    listing = memory.run({"command": "view", "path": "/memories"})
    assert listing.splitlines()[2:] == [
        "4.0K\t/memories/top/",
        "4.0K\t/memories/top/mid/",
        "19B\t/memories/warm.txt",
    ]


def ours_and_plain(s3: Any, backend: str) -> tuple[Any, Any]:
    """A client of ``s3memory.clients`` for this backend, and a plain boto3 client of the same endpoint."""
    ours = s3 if backend == "seaweedfs" else make_s3_client(region_name="us-east-1")
    return ours, boto3.client("s3", region_name="us-east-1", endpoint_url=ours.meta.endpoint_url)


def test_writes_send_their_bodies_at_once(s3: Any, backend: str, local_keys: Any) -> None:
    """botocore's ``Expect: 100-continue`` holds a PutObject body back for a round trip to the
    server; the clients s3memory builds drop it (a plain boto3 client, for contrast, sends it)."""
    ours, plain = ours_and_plain(s3, backend)
    expects: dict[str, list[object]] = {"ours": [], "plain": []}
    for name, client in (("ours", ours), ("plain", plain)):
        client.meta.events.register(
            "before-send.s3.PutObject",
            lambda request, name=name, **_: expects[name].append(request.headers.get("Expect")),
        )
    memory = S3Memory(Bucket(ours, BUCKET), "alice", local_keys, storage_format=1)
    for command in [
        {"command": "create", "path": "/memories/d/a.md", "file_text": "a\n"},
        {"command": "str_replace", "path": "/memories/d/a.md", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "/memories/d/a.md", "insert_line": 0, "insert_text": "top"},
        {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"},
    ]:
        memory.run(command)
    plain.put_object(Bucket=BUCKET, Key="plain", Body=b"x")
    # the store's first use (the probe's 5 and the server record), 3 writes, a job record, a copy,
    # and the access record the first command wrote
    assert len(expects["ours"]) == 12 and set(expects["ours"]) == {None}
    assert expects["plain"] == [b"100-continue"]


def test_our_clients_send_checksums_only_where_an_operation_requires_one(s3: Any, backend: str) -> None:
    """botocore computes a CRC32 of every PutObject body and asks for a checksum on every GetObject
    (checked as the body is read); AES-GCM authenticates each object, so the clients s3memory builds
    send them only where S3 requires one (DeleteObjects), where a plain boto3 client sends both."""
    ours, plain = ours_and_plain(s3, backend)
    headers: dict[str, list[tuple[str, set[str]]]] = {"ours": [], "plain": []}
    for name, client in (("ours", ours), ("plain", plain)):
        client.meta.events.register(
            "before-send.s3",
            lambda request, name=name, **_: headers[name].append(
                (
                    request.method,
                    {
                        h.lower()
                        for h in request.headers
                        if h.lower().startswith(("x-amz-checksum", "x-amz-sdk-checksum"))
                    },
                )
            ),
        )
        client.put_object(Bucket=BUCKET, Key=f"{name}-k", Body=b"x" * 100, IfNoneMatch="*")
        client.get_object(Bucket=BUCKET, Key=f"{name}-k")["Body"].read()
        client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": f"{name}-k"}], "Quiet": True})
    assert [(method, bool(sent)) for method, sent in headers["ours"]] == [
        ("PUT", False),
        ("GET", False),
        ("POST", True),
    ]
    assert all(sent for _method, sent in headers["plain"])


def test_our_clients_leave_response_timestamps_unparsed(s3: Any, backend: str) -> None:
    """botocore parses every timestamp of a response (each key of a listing page has one) at about
    70 µs each; s3memory reads none, so the clients it builds keep them as text."""
    ours, plain = ours_and_plain(s3, backend)
    ours.put_object(Bucket=BUCKET, Key="k", Body=b"x")
    listed = ours.list_objects_v2(Bucket=BUCKET)["Contents"][0]["LastModified"]
    read = ours.get_object(Bucket=BUCKET, Key="k")["LastModified"]
    assert isinstance(listed, str) and isinstance(read, str)
    assert not isinstance(plain.list_objects_v2(Bucket=BUCKET)["Contents"][0]["LastModified"], str)
