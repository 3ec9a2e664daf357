"""The fault harness itself (``faults.py``): every fault kind really reaches a boto3 client, retries
behave as botocore's standard mode says, and the proxy forwards normal traffic byte for byte."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.support.backends import REGION, SeaweedServer
from tests.support.bucket import (
    BUCKET,
    MASTER_KEY,
    SEAWEEDFS_SLOW,
    snapshot,
    stored_keys,
    temporary_bucket,
)
from tests.support.faults import (
    ALL,
    Fault,
    FaultPlan,
    FaultProxy,
    ProxyFault,
    SimulatedCrash,
    s3_error_body,
    s3_operation,
)

BACKENDS = ("moto", SEAWEEDFS_SLOW)
pytestmark = pytest.mark.usefixtures("no_back_off")


# -- the botocore hook plan ---------------------------------------------------------------------


EXPECTED_FAILURE: dict[Fault, tuple[type[BaseException], str | None]] = {
    Fault.DROP: (EndpointConnectionError, None),
    Fault.DROP_AFTER: (ConnectionClosedError, None),
    Fault.INTERNAL_ERROR: (ClientError, "InternalError"),
    Fault.SLOW_DOWN: (ClientError, "SlowDown"),
    Fault.CRASH: (SimulatedCrash, None),
    Fault.CRASH_AFTER: (SimulatedCrash, None),
}
APPLIED = {Fault.DROP_AFTER, Fault.CRASH_AFTER}


@pytest.mark.parametrize("fault", list(Fault))
def test_each_hook_fault_surfaces_without_retries(new_client: Callable[..., Any], fault: Fault) -> None:
    plan = FaultPlan().fail("PutObject", fault)
    client = plan.attach(new_client(attempts=1))
    error_type, code = EXPECTED_FAILURE[fault]
    with pytest.raises(error_type) as caught:
        client.put_object(Bucket=BUCKET, Key="k", Body=b"body")
    if code is not None:
        assert isinstance(caught.value, ClientError)
        assert caught.value.response["Error"]["Code"] == code
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == (
            500 if code == "InternalError" else 503
        )
    if fault in (Fault.CRASH, Fault.CRASH_AFTER):
        assert not isinstance(caught.value, Exception)  # no `except Exception` can swallow it
    assert [(item.operation, item.fault, item.call, item.attempt) for item in plan.injected] == [
        ("PutObject", fault, 1, 1)
    ]
    assert stored_keys(new_client()) == (["k"] if fault in APPLIED else [])


@pytest.mark.parametrize("fault", [Fault.DROP, Fault.DROP_AFTER, Fault.INTERNAL_ERROR, Fault.SLOW_DOWN])
def test_one_transient_fault_is_survived_by_standard_retries(
    new_client: Callable[..., Any], fault: Fault
) -> None:
    plan = FaultPlan().fail("PutObject", fault)
    client = plan.attach(new_client(attempts=5))
    client.put_object(Bucket=BUCKET, Key="k", Body=b"every byte \x00\xff")
    assert plan.sent == [("PutObject", 1), ("PutObject", 2)]
    assert plan.count(fault) == 1
    assert snapshot(client) == {"k": b"every byte \x00\xff"}


def test_a_fault_on_every_attempt_outlasts_the_retries(new_client: Callable[..., Any]) -> None:
    plan = FaultPlan().fail("PutObject", Fault.SLOW_DOWN, attempts=ALL)
    client = plan.attach(new_client(attempts=5))
    with pytest.raises(ClientError) as caught:
        client.put_object(Bucket=BUCKET, Key="k", Body=b"x")
    assert caught.value.response["Error"]["Code"] == "SlowDown"
    assert plan.sent == [("PutObject", attempt) for attempt in range(1, 6)]
    assert [item.attempt for item in plan.injected] == [1, 2, 3, 4, 5]
    assert stored_keys(client) == []


def test_a_lost_answer_to_a_conditional_create_comes_back_as_precondition_failed(
    new_client: Callable[..., Any],
) -> None:
    """S3 applied the write, the answer was lost, botocore retried: the retry loses to itself."""
    plan = FaultPlan().fail("PutObject", Fault.DROP_AFTER)
    client = plan.attach(new_client(attempts=5))
    with pytest.raises(ClientError) as caught:
        client.put_object(Bucket=BUCKET, Key="k", Body=b"mine", IfNoneMatch="*")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert snapshot(client) == {"k": b"mine"}


def test_ordinals_choose_the_nth_call_or_every_call_after(new_client: Callable[..., Any]) -> None:
    plan = FaultPlan()
    plan.fail("PutObject", Fault.INTERNAL_ERROR, call=3, attempts=ALL)
    plan.fail("DeleteObjects", Fault.SLOW_DOWN, after=1, attempts=ALL)
    client = plan.attach(new_client(attempts=2))
    outcomes = []
    for index in range(1, 5):
        try:
            client.put_object(Bucket=BUCKET, Key=f"k{index}", Body=b"x")
            outcomes.append("ok")
        except ClientError as error:
            outcomes.append(error.response["Error"]["Code"])
    assert outcomes == ["ok", "ok", "InternalError", "ok"]
    deletes = []
    for key in ("k1", "k2", "k4"):
        try:
            client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": key}]})
            deletes.append("ok")
        except ClientError as error:
            deletes.append(error.response["Error"]["Code"])
    assert deletes == ["ok", "SlowDown", "SlowDown"]
    assert [(item.operation, item.call, item.attempt) for item in plan.injected] == [
        ("PutObject", 3, 1),
        ("PutObject", 3, 2),
        ("DeleteObjects", 2, 1),
        ("DeleteObjects", 2, 2),
        ("DeleteObjects", 3, 1),
        ("DeleteObjects", 3, 2),
    ]
    assert sorted(stored_keys(client)) == ["k2", "k4"]


def test_where_and_times_narrow_a_rule(new_client: Callable[..., Any]) -> None:
    plan = FaultPlan().fail("*", Fault.DROP, where=lambda request: "/target" in request.url, times=2)
    client = plan.attach(new_client(attempts=1))
    client.put_object(Bucket=BUCKET, Key="other", Body=b"x")
    for _ in range(2):
        with pytest.raises(EndpointConnectionError):
            client.get_object(Bucket=BUCKET, Key="target")
    with pytest.raises(ClientError):  # the rule is spent: the request reaches S3 (no such key)
        client.get_object(Bucket=BUCKET, Key="target")
    assert [item.operation for item in plan.injected] == ["GetObject", "GetObject"]


def test_a_crash_escapes_the_memory_core_and_a_lasting_fault_is_a_clear_error(
    new_client: Callable[..., Any],
) -> None:
    crashing = FaultPlan().fail("PutObject", Fault.CRASH).attach(new_client())
    memory = S3Memory(Bucket(crashing, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=1)
    with pytest.raises(SimulatedCrash):
        memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "x"})
    assert stored_keys(new_client(), "users/alice/memories/") == []
    throttled = FaultPlan().fail("PutObject", Fault.SLOW_DOWN, attempts=ALL).attach(new_client())
    memory = S3Memory(Bucket(throttled, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=1)
    with pytest.raises(CommandError) as caught:
        memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "x"})
    assert caught.value.message.startswith("Error: S3 PutObject failed (SlowDown)")


# -- the proxy ----------------------------------------------------------------------------------


@dataclass
class Target:
    """An S3 endpoint behind the proxy, a bucket of this test on it, and a client factory."""

    endpoint: str
    bucket: str
    client: Callable[..., Any]


@pytest.fixture(params=["moto-server", SEAWEEDFS_SLOW])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """moto's threaded server or SeaweedFS, with a fresh bucket of its own."""
    bucket = f"proxy-{uuid.uuid4().hex[:12]}"
    if request.param == "seaweedfs":
        server: SeaweedServer = request.getfixturevalue("seaweedfs")

        def client(endpoint: str, attempts: int = 5, read_timeout: float = 20) -> Any:
            return server.client(attempts=attempts, endpoint=endpoint, read_timeout=read_timeout)

        endpoint = server.endpoint
    else:
        endpoint = request.getfixturevalue("moto_endpoint")

        def client(endpoint: str, attempts: int = 5, read_timeout: float = 20) -> Any:
            config = Config(
                retries={"mode": "standard", "total_max_attempts": attempts}, read_timeout=read_timeout
            )
            return boto3.client("s3", region_name=REGION, endpoint_url=endpoint, config=config)

    with temporary_bucket(client(endpoint), bucket):
        yield Target(endpoint, bucket, client)


@pytest.fixture
def proxy(target: Target) -> Iterator[FaultProxy]:
    with FaultProxy(target.endpoint) as running:
        yield running


def test_s3_traffic_through_the_proxy_is_unchanged(target: Target, proxy: FaultProxy) -> None:
    """Signatures still verify (SeaweedFS checks them), bodies and ETags come back identical,
    including a 2 MiB body sent with ``Expect: 100-continue``."""
    via_proxy, direct = target.client(proxy.endpoint), target.client(target.endpoint)
    bodies = {"empty": b"", "bytes": bytes(range(256)) * 1200, "large": os.urandom(2 * 1024 * 1024)}
    for key, body in bodies.items():
        etag = via_proxy.put_object(Bucket=target.bucket, Key=key, Body=body)["ETag"]
        assert direct.head_object(Bucket=target.bucket, Key=key)["ETag"] == etag
        assert via_proxy.get_object(Bucket=target.bucket, Key=key)["Body"].read() == body
        assert direct.get_object(Bucket=target.bucket, Key=key)["Body"].read() == body
    listed = via_proxy.list_objects_v2(Bucket=target.bucket)
    assert sorted(item["Key"] for item in listed["Contents"]) == sorted(bodies)
    with pytest.raises(ClientError) as caught:
        via_proxy.put_object(Bucket=target.bucket, Key="empty", Body=b"again", IfNoneMatch="*")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    answer = via_proxy.delete_objects(Bucket=target.bucket, Delete={"Objects": [{"Key": "bytes"}]})
    assert not answer.get("Errors")
    assert proxy.faults() == []
    assert [event.operation for event in proxy.events][:3] == ["PutObject", "GetObject", "PutObject"]


PROXY_FAILURE: dict[ProxyFault, tuple[type[BaseException], str | None]] = {
    ProxyFault.DROP_BEFORE: (ConnectionClosedError, None),
    ProxyFault.DROP_AFTER: (ConnectionClosedError, None),
    ProxyFault.INTERNAL_ERROR: (ClientError, "InternalError"),
    ProxyFault.SLOW_DOWN: (ClientError, "SlowDown"),
    ProxyFault.STALL: (ReadTimeoutError, None),
}


@pytest.mark.parametrize("fault", list(ProxyFault))
def test_each_proxy_fault_surfaces_without_retries(
    target: Target, proxy: FaultProxy, fault: ProxyFault
) -> None:
    proxy.add(fault, method="PUT", path=r"/k$", stall_seconds=1.5)
    # A short read timeout only where the stall must outlast it: a loaded server may be slow too.
    client = target.client(proxy.endpoint, attempts=1, read_timeout=0.5 if fault is ProxyFault.STALL else 20)
    error_type, code = PROXY_FAILURE[fault]
    with pytest.raises(error_type) as caught:
        client.put_object(Bucket=target.bucket, Key="k", Body=b"body")
    if code is not None:
        assert isinstance(caught.value, ClientError)
        assert caught.value.response["Error"]["Code"] == code
    assert [(event.operation, event.call, event.attempt, event.fault) for event in proxy.faults()] == [
        ("PutObject", 1, 1, fault)
    ]
    direct = target.client(target.endpoint)
    applied = fault in (ProxyFault.DROP_AFTER, ProxyFault.STALL)  # a stalled request still lands, late
    deadline = time.monotonic() + 10
    while applied and not stored_keys_in(direct, target.bucket) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stored_keys_in(direct, target.bucket) == (["k"] if applied else [])


def stored_keys_in(client: Any, bucket: str) -> list[str]:
    return [item["Key"] for item in client.list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_proxy_faults_and_standard_retries(target: Target, proxy: FaultProxy) -> None:
    client = target.client(proxy.endpoint, attempts=5)
    proxy.add(ProxyFault.SLOW_DOWN, operation="PutObject", call=1)
    client.put_object(Bucket=target.bucket, Key="survived", Body=b"x")
    assert [(event.attempt, event.fault) for event in proxy.events] == [(1, ProxyFault.SLOW_DOWN), (2, None)]
    proxy.clear()
    proxy.add(ProxyFault.INTERNAL_ERROR, operation="DeleteObjects", attempts=ALL)
    with pytest.raises(ClientError) as caught:
        client.delete_objects(Bucket=target.bucket, Delete={"Objects": [{"Key": "survived"}]})
    assert caught.value.response["Error"]["Code"] == "InternalError"
    assert [event.attempt for event in proxy.faults()] == [1, 2, 3, 4, 5]
    assert stored_keys_in(client, target.bucket) == ["survived"]


def test_the_proxy_stops_cleanly_even_mid_stall(target: Target) -> None:
    proxy = FaultProxy(target.endpoint).start()
    proxy.add(ProxyFault.STALL, operation="GetObject", stall_seconds=30)
    client = target.client(proxy.endpoint, attempts=1, read_timeout=60)
    client.put_object(Bucket=target.bucket, Key="k", Body=b"x")  # a pooled keep-alive connection
    errors: list[BaseException] = []

    def stalled_get() -> None:
        try:
            client.get_object(Bucket=target.bucket, Key="k")
        except BaseException as error:
            errors.append(error)

    getter = threading.Thread(target=stalled_get)
    getter.start()
    deadline = time.monotonic() + 5
    while not proxy.faults() and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    proxy.stop()
    getter.join(10)
    assert time.monotonic() - started < 5
    assert not getter.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], ConnectionClosedError)
    host, port = proxy.endpoint.removeprefix("http://").split(":")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=1).close()
    assert not any(thread.name == "fault-proxy" and thread.is_alive() for thread in threading.enumerate())


# -- byte-exact forwarding, checked on the wire --------------------------------------------------


class RecordingUpstream:
    """A tiny HTTP server that records every byte it receives and replies with canned raw bytes."""

    def __init__(self, replies: list[bytes]) -> None:
        self.replies = list(replies)
        self.received = b""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._listener.getsockname()
        return f"http://{host}:{port}"

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.settimeout(5)
            for reply in self.replies:
                while not _complete_request(self.received):
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    self.received += chunk
                self.received += b"\0REPLIED\0"  # before the reply: once it arrives, the record is whole
                connection.sendall(reply)

    def close(self) -> None:
        self._listener.close()
        self._thread.join(5)


def _complete_request(data: bytes) -> bool:
    """True when ``data`` ends with a whole request (Content-Length framed) after the last marker."""
    tail = data.rsplit(b"\0REPLIED\0", 1)[-1]
    if b"\r\n\r\n" not in tail:
        return False
    head, body = tail.split(b"\r\n\r\n", 1)
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def test_the_proxy_forwards_requests_and_responses_byte_for_byte() -> None:
    body = bytes(range(256)) * 3
    requests = [
        b"PUT /bucket/k%20%FF?x=1&y HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-Odd-Case: A  b\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
        b"HEAD /bucket/k HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n",
        b"GET /bucket/k HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n",
    ]
    replies = [
        b'HTTP/1.1 200 OK\r\nETag: "abc"\r\nContent-Length: 0\r\n\r\n',
        b"HTTP/1.1 200 OK\r\nContent-Length: 768\r\nx-amz-meta-a: b\r\n\r\n",  # HEAD: a length, no body
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"100\r\n"
        + body[:256]
        + b"\r\n200;ext=1\r\n"
        + body[256:768]
        + b"\r\n0\r\nX-Trailer: t\r\n\r\n",
    ]
    upstream = RecordingUpstream(replies)
    try:
        with FaultProxy(upstream.endpoint) as proxy:
            host, port = proxy.endpoint.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port)), timeout=5) as connection:
                received = []
                for raw_request, reply in zip(requests, replies, strict=True):
                    connection.sendall(raw_request)
                    answer = b""
                    while len(answer) < len(reply):
                        answer += connection.recv(65536)
                    received.append(answer)
            assert received == replies
            assert upstream.received == b"".join(raw + b"\0REPLIED\0" for raw in requests)
            assert [event.operation for event in proxy.events] == ["PutObject", "HeadObject", "GetObject"]
    finally:
        upstream.close()


def test_operation_names_and_error_bodies() -> None:
    assert s3_operation("POST", "/b?delete", {}) == "DeleteObjects"
    assert s3_operation("GET", "/b?list-type=2&prefix=a%2F", {}) == "ListObjectsV2"
    assert s3_operation("PUT", "/b/a/b.txt", {"x-amz-copy-source": "/b/x"}) == "CopyObject"
    assert s3_operation("PUT", "/b/a/b.txt", {}) == "PutObject"
    assert s3_operation("DELETE", "/b/k", {}) == "DeleteObject"
    assert s3_operation("PUT", "/b", {}) == "CreateBucket"
    assert s3_operation("GET", "/", {}) == "ListBuckets"
    assert b"<Code>SlowDown</Code>" in s3_error_body(503)
    assert b"<Code>InternalError</Code>" in s3_error_body(500)
