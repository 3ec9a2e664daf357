"""Shared fixtures: S3 (and KMS) served by moto, in-process or on a loopback port; tool factories; the
scripted Messages API. Helpers that are not fixtures live in ``support/``.

S3 backends: every test gets in-process moto through ``s3``. A test module that sets
``BACKENDS = ("moto", SEAWEEDFS_SLOW)`` runs each of its tests once per backend: the ``backend``
fixture is parametrized for it, and ``s3`` then yields a client of SeaweedFS (a real S3 server,
started once per session by ``seaweedfs``; see ``support/backends.py``) for the ``seaweedfs``
run, which is marked slow. Either way ``BUCKET`` exists and is empty when the test starts. How a
test says it is slow or takes the storage format: ``docs/development.md``; this file names no test
module.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import boto3
import moto.s3.urls as moto_s3_urls
import pytest
from botocore.config import Config
from hypothesis import Phase, settings
from moto import mock_aws
from moto.s3.models import S3Backend
from moto.s3.responses import S3Response

from s3memory.clients import make_s3_client
from s3memory.core import paths
from s3memory.core.paths import MEMORY_ROOT, memory_path
from s3memory.crypto import KeyProvider, LocalKeyProvider
from s3memory.formats.store_keys import MIGRATED_NAME, STORE_KEY_NAME
from s3memory.memory import S3Memory
from s3memory.storage import server_checks
from s3memory.storage.bucket import Bucket
from s3memory.storage.server_checks import SERVER_RECORD_NAME
from s3memory.store import Store, forget_stores
from s3memory.testing import conditions_honoured, install_condition_checks
from s3memory.testing.embedded_s3 import moto_server
from s3memory.testing.scripted_claude import ScriptedClaude
from s3memory.tool import AsyncS3MemoryTool, S3MemoryTool

from .support import probe_once
from .support.backends import REGION, SeaweedServer
from .support.backends import missing as seaweedfs_missing
from .support.bucket import (
    BUCKET,
    LOCAL_KEY_B64,
    MASTER_KEY,
    SERVER_MATRIX,
    empty_bucket,
    empty_bucket_key_by_key,
    temporary_bucket,
)
from .support.faults import instant_retries
from .support.formats import DEFAULT_FORMAT
from .support.localstack import LocalStackServer
from .support.localstack import missing as localstack_missing
from .support.loopback_server import LoopbackServer, serving
from .support.s3rver import S3rverServer
from .support.s3rver import missing as s3rver_missing

ToolT = TypeVar("ToolT", S3MemoryTool, AsyncS3MemoryTool)

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

# Under mutmut (`make mutation`, which sets MUTANT_UNDER_TEST) a property test draws the same examples in
# every run, so a mutant is killed or survives the same way each time; no database, no deadline, and no
# shrinking (one failing example kills a mutant; shrinking it on moto took up to mutmut's time limit).
settings.register_profile(
    "mutation", derandomize=True, database=None, deadline=None, phases=(Phase.explicit, Phase.generate)
)
if "MUTANT_UNDER_TEST" in os.environ:
    settings.load_profile("mutation")
MUTANT_WAIT_SECONDS = 60
"""Under mutmut, a test still running after this long is a mutant that made it wait (a lock never
released, a future never answered): the process ends with status 1, which mutmut counts as killed.
mutmut's own limit counts CPU time, which a waiting process does not spend."""


@pytest.fixture(autouse=True)
def _under_mutmut() -> Iterator[None]:
    """Under mutmut: the test ends its process if it waits too long, and checks its paths afresh (mutmut
    forks each mutant from a process whose tests filled the path cache with the unmutated answers)."""
    if "MUTANT_UNDER_TEST" not in os.environ:
        yield
        return
    paths._remembered_check.cache_clear()
    faulthandler.dump_traceback_later(MUTANT_WAIT_SECONDS, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


install_condition_checks()  # before ``atomic_moto_writes`` wraps moto: a check and its write are one
_server_report: dict[str, Any] = {}


@pytest.fixture(scope="session", autouse=True)
def atomic_moto_writes() -> Iterator[None]:
    """Make moto's object requests atomic, as S3's are.

    moto checks ``If-None-Match``/``If-Match`` and then writes, without a lock, so two racing
    threads can both pass the check; a GET racing a delete of the same key can read a buffer the
    delete has just closed; and a listing racing a delete looks up a key the delete has just removed
    (``KeyError``, as a 500). S3 never lets any happen; the race tests need S3's rules, so these
    handlers run one at a time.
    """
    lock = threading.RLock()
    names = (
        "put_object",
        "get_object",
        "head_object",
        "delete_object",
        "copy_object",  # its conditions are checked (where honoured), then it copies
        "_bucket_response_delete_keys",  # the same for DeleteObjects' per-key ETags
        "list_objects",
        "list_objects_v2",
        "list_object_versions",
    )
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


@pytest.fixture(scope="session", autouse=True)
def moto_url_table_once() -> Iterator[None]:
    """moto's table of S3 URLs, read once for the session instead of once per request.

    moto (5.2) reloads ``moto.s3.urls`` on every request it answers, in case its settings
    (``MOTO_S3_CUSTOM_ENDPOINTS``) changed; nothing here changes them, so the table it rebuilds is
    the same each time and each request is answered as before: the reload alone was about a tenth of
    the CPU of the tests' S3 requests."""
    urls = importlib.reload(moto_s3_urls)
    original = S3Backend._url_module
    S3Backend._url_module = property(lambda self: urls)  # type: ignore[method-assign,assignment]
    yield
    S3Backend._url_module = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def new_process_for_migration() -> None:
    """What this process learned of stores (``store.forget_stores``: the format ``auto`` serves
    each in, its mark, its users with no format-1 files, what its server enforces), forgotten for
    each test: each test's bucket is new. So the first format-2 memory of a test looks for
    format-1 users and marks the store, whatever ran before."""
    forget_stores()


@pytest.fixture(autouse=True)
def probe_once_per_worker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make test`` only: in-process moto's enforcement probed once per worker, not once per test's
    store (``support/probe_once.py``), except in a module that sets ``PROBES_EACH_STORE``."""
    if probe_once.ENABLED and not getattr(request.module, "PROBES_EACH_STORE", False):
        monkeypatch.setattr(server_checks, "probe", probe_once.probe)


@pytest.fixture(autouse=True)
def moto_semantics(request: pytest.FixtureRequest) -> Iterator[None]:
    """moto refuses what S3 refuses (``s3memory.testing``, as users may have it), except in the
    suites that run on moto as shipped (a module with ``MOTO_AS_SHIPPED`` true; one that makes its
    memories in ``STORAGE_FORMAT`` sets it only on a format moto as shipped can serve): there
    s3memory finds out itself what moto does not enforce (``docs/servers.md``)."""
    if getattr(request.module, "MOTO_AS_SHIPPED", False):
        yield
        return
    with conditions_honoured():
        yield


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """moto's threaded server on 127.0.0.1 for a module's tests (no bucket made): its endpoint URL."""
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def moto_endpoint_with_bucket(request: pytest.FixtureRequest) -> Iterator[str]:
    """moto's threaded server on 127.0.0.1 for a module's tests, with the module's ``BUCKET`` created:
    its endpoint URL. The server shares in-process moto's state, so a module that keeps a bucket
    for all its tests names one of its own."""
    with moto_server(request.module.BUCKET) as endpoint:
        yield endpoint


@pytest.fixture
def no_back_off() -> Iterator[None]:
    """botocore retries without their back-off sleeps (``usefixtures`` it in a module of faults)."""
    with instant_retries():
        yield


@pytest.fixture
def api() -> Iterator[ScriptedClaude]:
    """The scripted stand-in for the Messages API, on 127.0.0.1."""
    with ScriptedClaude() as stand_in:
        yield stand_in


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
    assert name in SERVER_MATRIX, name
    return name


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[SeaweedServer]:
    """SeaweedFS on 127.0.0.1 for the whole session, with ``BUCKET`` made; skipped where ``weed`` is
    missing or does not start, failed under CI (``support/loopback_server.serving``). Its start,
    stop and memory go to the session's summary."""
    served = serving(SeaweedServer(), seaweedfs_missing(), BUCKET)
    server = next(served)
    _server_report.update(startup=server.startup_seconds)
    yield server
    _server_report.update(memory=server.memory_kib())
    stopping = time.monotonic()
    served.close()
    _server_report.update(stop=time.monotonic() - stopping)


@pytest.fixture(scope="session")
def s3rver() -> Iterator[S3rverServer]:
    """s3rver on 127.0.0.1 for the session, with ``BUCKET`` made; skipped where it is not installed,
    failed under CI (``support/loopback_server.serving``)."""
    yield from serving(S3rverServer(), s3rver_missing(), BUCKET)


@pytest.fixture(scope="session")
def localstack() -> Iterator[LocalStackServer]:
    """LocalStack's S3 on 127.0.0.1 for the session, with ``BUCKET`` made; skipped where it is not
    installed, failed under CI."""
    yield from serving(LocalStackServer(), localstack_missing(), BUCKET)


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
    if backend in ("s3rver", "localstack"):
        loopback: LoopbackServer = request.getfixturevalue(backend)
        empty_bucket_key_by_key(loopback.admin)
        yield loopback.client()
        empty_bucket_key_by_key(loopback.admin)
        return
    with temporary_bucket(request.getfixturevalue("session_s3")):
        yield boto3.client("s3", region_name="us-east-1")


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
def kms(aws: None) -> Any:
    """A client of moto's in-process KMS."""
    return boto3.client("kms", region_name="us-east-1")


@pytest.fixture
def key_id(kms: Any) -> str:
    """A new KMS key's id."""
    return str(kms.create_key()["KeyMetadata"]["KeyId"])


@pytest.fixture
def local_env(monkeypatch: pytest.MonkeyPatch, s3: Any) -> Any:
    """The Lambda handlers' settings for ``BUCKET``, a local master key and ``STORAGE_FORMAT``;
    returns the test's S3 client (bucket created)."""
    monkeypatch.setenv("S3MEMORY_BUCKET", BUCKET)
    monkeypatch.setenv("S3MEMORY_LOCAL_KEY", LOCAL_KEY_B64)
    monkeypatch.setenv("S3MEMORY_STORAGE_FORMAT", str(STORAGE_FORMAT))
    return s3


@pytest.fixture
def new_client(backend: str, s3: Any, request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``new_client(attempts)``: a fresh client on this test's backend, standard retry mode."""
    if backend != "moto":
        server: LoopbackServer = request.getfixturevalue(backend)
        return lambda attempts=5: server.client(attempts=attempts)

    def moto_client(attempts: int = 5) -> Any:
        config = Config(retries={"mode": "standard", "total_max_attempts": attempts})
        return boto3.client("s3", region_name=REGION, config=config)

    return moto_client


@pytest.fixture
def local_keys() -> LocalKeyProvider:
    return LocalKeyProvider(MASTER_KEY)


@pytest.fixture
def store(s3: Any, local_keys: LocalKeyProvider) -> Store:
    """A format-2 store of the test's bucket: shared memories need format 2."""
    return Store(Bucket(s3, BUCKET), local_keys, storage_format=2)


STORAGE_FORMAT = int(os.environ.get("S3MEMORY_TEST_STORAGE_FORMAT", DEFAULT_FORMAT))
"""The storage format of the memories ``make_memory`` makes unless a test names one: the format the
library's default (``auto``) gives a new store, unless S3MEMORY_TEST_STORAGE_FORMAT names another
(``make test-format1`` sets 1 for the modules that take it: marked ``takes_format``)."""


def key_of(memory: S3Memory, path: str) -> str:
    """The object key of the memory file at ``path`` in ``memory``'s format: the plain path below
    the user's namespace on format 1, a token per segment below the user's token on format 2."""
    return memory.placed.layout.file_key(memory_path(path))


def prefix_of(memory: S3Memory, path: str = MEMORY_ROOT) -> str:
    """The key prefix of the directory ``path`` (default: the memory root) in ``memory``'s format."""
    return memory.placed.layout.directory_prefix(memory_path(path))


def keys_of(memory: S3Memory, paths: Iterable[str]) -> list[str]:
    """The keys of ``paths`` (``key_of`` each), sorted as a listing returns them."""
    return sorted(key_of(memory, path) for path in paths)


def store_objects(prefix: str = "users/", *, written: bool = True) -> list[str]:
    """The keys of the objects a store of ``STORAGE_FORMAT`` keeps beside its users' namespaces at
    ``prefix``: the record of what its server enforces (``server_checks.py``), once a memory has
    ``written`` to it conditionally (format 2's first memory always has: its store key); on format 2
    also the wrapped store key (``store_keys.py``) and, once a format-2 memory found no format-1
    user there, the mark that none is left (``migration.py``)."""
    if STORAGE_FORMAT == 1:
        return [prefix + SERVER_RECORD_NAME] if written else []
    return sorted([prefix + SERVER_RECORD_NAME, prefix + STORE_KEY_NAME, prefix + MIGRATED_NAME])


def plant(s3: Any, memory: S3Memory, path: str, text: str) -> str:
    """Write the file ``path`` straight to S3 (no checks, no listing), sealed as ``memory`` seals it
    (format 2: with its place record); its key."""
    key = key_of(memory, path)
    sealed = memory.placed.files.encode(memory_path(path), text)
    s3.put_object(Bucket=BUCKET, Key=key, Body=sealed.body, Metadata=sealed.metadata)
    return key


def rename_crash_point(operation: str, ordinal: int) -> tuple[str, int]:
    """A crash point of a rename, named by format 1's requests, in ``STORAGE_FORMAT``'s requests.

    Format 1 moves each file through the client: after the job's record (PutObject 1), a GetObject
    reads it and a PutObject writes it anew. Format 2 copies on the server: a HeadObject per file,
    then a CopyObject (docs/format-v2.md, P8). So the k-th copy (PutObject k + 1) is CopyObject k, and
    the k-th read GetObject k is HeadObject k; every other request is the same."""
    if STORAGE_FORMAT == 1:
        return operation, ordinal
    if operation == "PutObject" and ordinal >= 2:
        return "CopyObject", ordinal - 1
    if operation == "GetObject":
        return "HeadObject", ordinal
    return operation, ordinal


def format_1_only(reason: str) -> pytest.MarkDecorator:
    """Run this test only when the suites run on format 1 (``STORAGE_FORMAT``), for ``reason``."""
    return pytest.mark.skipif(STORAGE_FORMAT != 1, reason=f"format 1 only: {reason}")


def memory_tool(
    s3: Any,
    user_id: str = "alice",
    *,
    kind: type[ToolT] = S3MemoryTool,
    cache_control: Any = None,
    **options: Any,
) -> ToolT:
    """A tool (``kind``: ``S3MemoryTool`` or ``AsyncS3MemoryTool``) for ``user_id`` in ``BUCKET``,
    sealed with ``MASTER_KEY``, in ``STORAGE_FORMAT`` unless ``options`` name one."""
    options.setdefault("storage_format", STORAGE_FORMAT)
    return kind(
        bucket=BUCKET,
        user_id=user_id,
        key_provider=LocalKeyProvider(MASTER_KEY),
        s3_client=s3,
        cache_control=cache_control,
        **options,
    )


@pytest.fixture
def make_memory(s3: Any, local_keys: LocalKeyProvider) -> Callable[..., S3Memory]:
    """A memory of the test's bucket, placed (its store resolved) as by its first command: what
    resolving costs is not counted in what a test counts of its commands."""

    def make(user_id: str = "alice", key_provider: KeyProvider | None = None, **options: Any) -> S3Memory:
        options.setdefault("storage_format", STORAGE_FORMAT)
        memory = S3Memory(Bucket(s3, BUCKET), user_id, key_provider or local_keys, **options)
        memory.resolve()
        return memory

    return make


@pytest.fixture
def memory(make_memory: Callable[..., S3Memory]) -> S3Memory:
    return make_memory()


@pytest.fixture
def versioned(s3: Any) -> Iterator[str]:
    """A new bucket with versioning on (on the test's backend), removed afterwards, every version."""
    bucket = f"erase-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    try:
        yield bucket
    finally:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
                s3.delete_object(Bucket=bucket, Key=item["Key"], VersionId=item["VersionId"])
        s3.delete_bucket(Bucket=bucket)
