"""A memory's options are declared once: ``store.StoreOptions`` (the store's) and
``memory.MemoryOptions`` (those and the memory's own), each option's default where it is taken
(``Store``, ``S3Memory``). Every constructor that takes them takes them all through that one
declaration, every place that gives them gives them all, and each one is taken and checked: an
option added in one place and not the others fails here."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from s3memory.assembly import make_store, memory_options, store_options
from s3memory.core.guard import ContentGuard
from s3memory.crypto import LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.settings import Settings
from s3memory.storage.bucket import Bucket
from s3memory.store import Store
from s3memory.tool import AsyncS3MemoryTool, S3MemoryTool
from tests.support.bucket import BUCKET, MASTER_KEY, STORE_ENVIRON

TOOL_OWN = {"bucket", "user_id", "key_provider", "s3_client", "cache_control", "mounts"}
"""What the SDK adapters take beside the memory's options."""
NOT_SETTINGS = {"actor", "clock"}
"""The options no ``S3MEMORY_*`` variable sets: who writes, and the clock, are the caller's."""
BAD = {
    "prefix": "users",
    "storage_format": 3,
    "store_id": "\n",
    "weak_server": "loose",
    "max_file_bytes": 0,
    "content_guard": "refuse",
    "quota": 10,
    "actor": "two words",
    "clock": 1.0,
}
"""A value of each option that its check refuses, with a ``ValueError`` that names it."""
ENVIRON = {
    **STORE_ENVIRON,
    "S3MEMORY_QUOTA_FILES": "3",
    "S3MEMORY_GUARD": "redact",
    "S3MEMORY_MAX_FILE_BYTES": "2048",
}
"""Every setting of a memory, none at its default."""
OTHER_STORE: dict[str, Any] = {
    "prefix": "tenants/",
    "storage_format": 1,
    "store_id": "elsewhere",
    "weak_server": "single-writer",
}
"""A value of each of the store's options, none its default."""


def accepted(function: Callable[..., object]) -> set[str]:
    """The keywords ``function`` takes (``self`` left out): its named parameters, and the keys of
    the ``TypedDict`` its ``**options`` unpack (an untyped ``**options`` fails)."""
    hints = typing.get_type_hints(function, localns={"S3Client": object})
    names: set[str] = set()
    for parameter in list(inspect.signature(function).parameters.values())[1:]:
        if parameter.kind is not inspect.Parameter.VAR_KEYWORD:
            names.add(parameter.name)
            continue
        hint = hints[parameter.name]
        assert typing.get_origin(hint) is typing.Unpack, f"{function.__qualname__}: **{parameter.name}"
        (declared,) = typing.get_args(hint)
        names |= declared.__required_keys__ | declared.__optional_keys__
    return names


MEMORY_OPTIONS = accepted(S3Memory.__init__) - {"store", "user_id", "key_provider"}
STORE_OPTIONS = accepted(Store.__init__) - {"bucket", "key_provider"}


@pytest.fixture
def client() -> Iterator[Any]:
    """An S3 client that answers no request: building any of these sends none."""
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client):
        yield client


def store_of(memory: S3Memory) -> Store:
    """The store a memory lives in, whatever its attribute is named."""
    (store,) = [value for value in vars(memory).values() if isinstance(value, Store)]
    return store


def guard_mode(guard: object) -> str | None:
    """The mode of a content guard (a new one each time settings give it), None for none."""
    return guard.mode if isinstance(guard, ContentGuard) else None


def test_the_tools_take_the_memorys_options_and_their_own() -> None:
    assert {"prefix", "max_file_bytes", "content_guard", "quota", "actor", "weak_server"} < MEMORY_OPTIONS
    for tool in (S3MemoryTool, AsyncS3MemoryTool):
        assert accepted(tool.__init__) == MEMORY_OPTIONS | TOOL_OWN


def test_the_store_and_operations_take_the_stores_options() -> None:
    assert STORE_OPTIONS < MEMORY_OPTIONS
    assert accepted(Operations.__init__) == STORE_OPTIONS | {"bucket", "key_provider", "limits", "actor"}


def test_the_settings_and_operations_give_every_option_a_setting_sets(client: Any) -> None:
    settings = Settings.from_env(ENVIRON)
    options = memory_options(settings)
    assert set(options) == MEMORY_OPTIONS - NOT_SETTINGS
    assert set(store_options(settings)) == STORE_OPTIONS
    assert store_options(settings) == {
        "prefix": "tenants/acme/",
        "storage_format": 2,
        "store_id": "replica-source",
        "weak_server": "single-writer",
    }
    assert make_store(settings, client).options == store_options(settings)
    given = Operations.from_settings(settings, client).memory_options()
    assert {**given, "content_guard": "redact"} == {**options, "content_guard": "redact"}
    assert guard_mode(given["content_guard"]) == guard_mode(options["content_guard"]) == "redact"
    memory = S3Memory(Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), **options)
    assert store_of(memory).options == store_options(settings)
    tool = S3MemoryTool(
        bucket=BUCKET, user_id="alice", key_provider=LocalKeyProvider(MASTER_KEY), s3_client=client, **options
    )
    assert store_of(tool.memory).options == store_options(settings)
    assert guard_mode(tool.memory.limits.content_guard) == "redact"


def test_a_store_built_with_no_option_gives_each_its_default(client: Any) -> None:
    store = Store(Bucket(client, BUCKET), LocalKeyProvider(MASTER_KEY))
    assert store.options == {
        "prefix": "users/",
        "storage_format": "auto",
        "store_id": None,
        "weak_server": "refuse",
    }
    assert set(store.options) == STORE_OPTIONS
    memory = S3Memory(Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY))
    assert store_of(memory).options == store.options


def test_each_option_has_a_value_its_check_refuses() -> None:
    assert set(BAD) == MEMORY_OPTIONS


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("kind", ["S3Memory", "S3MemoryTool", "AsyncS3MemoryTool"])
def test_each_option_is_taken_and_checked_by_each_constructor(client: Any, kind: str, name: str) -> None:
    keys = LocalKeyProvider(MASTER_KEY)
    build: dict[str, Callable[[], object]] = {
        "S3Memory": lambda: S3Memory(Bucket(client, BUCKET), "alice", keys, **{name: BAD[name]}),
        "S3MemoryTool": lambda: S3MemoryTool(
            bucket=BUCKET, user_id="alice", key_provider=keys, s3_client=client, **{name: BAD[name]}
        ),
        "AsyncS3MemoryTool": lambda: AsyncS3MemoryTool(
            bucket=BUCKET, user_id="alice", key_provider=keys, s3_client=client, **{name: BAD[name]}
        ),
    }
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        build[kind]()


@pytest.mark.parametrize("name", sorted(OTHER_STORE))
def test_a_memory_over_a_store_refuses_each_of_the_stores_options(client: Any, name: str) -> None:
    assert set(OTHER_STORE) == STORE_OPTIONS
    store = Store(Bucket(client, BUCKET), LocalKeyProvider(MASTER_KEY))
    with pytest.raises(
        ValueError, match=r"^key_provider, prefix, storage_format, store_id and weak_server are"
    ):
        S3Memory(store, "alice", **{name: OTHER_STORE[name]})
    assert store_of(S3Memory(store, "alice", **{name: None})) is store  # None: not given


def test_an_unknown_option_is_refused_as_python_refuses_one(client: Any) -> None:
    keys = LocalKeyProvider(MASTER_KEY)
    bucket = Bucket(client, BUCKET)
    builds: list[tuple[str, Callable[[], object]]] = [
        ("S3Memory", lambda: S3Memory(bucket, "alice", keys, colour="blue")),
        ("S3Memory", lambda: S3Memory(Store(bucket, keys), "alice", colour="blue")),
        ("Store", lambda: Store(bucket, keys, colour="blue")),
        ("Operations", lambda: Operations(bucket, keys, colour="blue")),
        ("Store", lambda: Store(bucket, keys, max_file_bytes=10)),
        (
            "S3MemoryTool",
            lambda: S3MemoryTool(bucket=BUCKET, user_id="a", key_provider=keys, s3_client=client, colour=1),
        ),
        (
            "AsyncS3MemoryTool",
            lambda: AsyncS3MemoryTool(
                bucket=BUCKET, user_id="a", key_provider=keys, s3_client=client, colour=1
            ),
        ),
    ]
    for taker, build in builds:
        with pytest.raises(
            TypeError, match=rf"^{taker}\(\) got an unexpected keyword argument '(colour|max_file_bytes)'$"
        ):
            build()
