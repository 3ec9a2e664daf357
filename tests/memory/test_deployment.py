"""A store (``deployment.py``): built without a request, resolved once and lazily by the first
command, shared by the memories of a process; a store that cannot be reached is the first command's
failure, naming the bucket and the endpoint."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from anthropic.lib.tools import ToolError
from botocore.config import Config

from bench.metrics import RequestCounter
from s3memory.cli.console import Console
from s3memory.cli.main import _parser
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import RequestFailed
from s3memory.formats.store_keys import MIGRATED_NAME, STORE_KEY_NAME
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from s3memory.store import Store, forget_stores
from s3memory.tool import AsyncS3MemoryTool, S3MemoryTool
from tests.support.bucket import BUCKET, MASTER_KEY

DOWN = "http://127.0.0.1:1"
"""An endpoint where nothing listens: every connection is refused at once."""
UNREACHED = (
    f"Error: S3 GetObject failed (EndpointConnectionError): bucket {BUCKET} at {DOWN} could not be reached. "
    "Check S3MEMORY_ENDPOINT_URL (--endpoint-url), the network, and that the server is running. Nothing was "
    "reported as done; try again."
)
VIEW = {"command": "view", "path": "/memories"}


@pytest.fixture
def down() -> Any:
    """A client of ``DOWN`` that tries each request once, with short timeouts."""
    return boto3.client(
        "s3",
        endpoint_url=DOWN,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=1),
    )


def _sync_call(tool: Any) -> Any:
    return tool.call(VIEW)


def _async_call(tool: Any) -> Any:
    return asyncio.run(tool.call(VIEW))


@pytest.mark.parametrize(
    ("kind", "call"),
    [(S3MemoryTool, _sync_call), (AsyncS3MemoryTool, _async_call)],
    ids=["sync", "async"],
)
def test_a_tool_over_an_unreachable_endpoint_is_built_without_a_request_and_its_first_command_names_it(
    down: Any, kind: type[S3MemoryTool] | type[AsyncS3MemoryTool], call: Callable[[Any], Any]
) -> None:
    counter = RequestCounter(down)
    tool = kind(bucket=BUCKET, user_id="alice", key_provider=LocalKeyProvider(MASTER_KEY), s3_client=down)
    assert counter.total == 0

    with pytest.raises(ToolError) as raised:
        call(tool)

    assert raised.value.content == UNREACHED
    assert counter.calls == {"GetObject": 1}


def test_an_operator_command_on_an_unreachable_endpoint_names_it_and_exits_1(down: Any) -> None:
    counter = RequestCounter(down)
    operations = Operations(Bucket(down, BUCKET), LocalKeyProvider(MASTER_KEY))
    assert counter.total == 0
    err = io.StringIO()

    status = Console(
        _parser().parse_args(["users"]), environ={}, out=io.StringIO(), err=err, operations=operations
    ).run()

    assert status == 1
    assert err.getvalue().splitlines()[0] == (
        f"s3memory users: Error: S3 ListObjectsV2 failed (EndpointConnectionError): bucket {BUCKET} at {DOWN} "
        "could not be reached. Check S3MEMORY_ENDPOINT_URL (--endpoint-url), the network, and that the server "
        "is running. Nothing was reported as done; try again."
    )


def test_a_store_that_failed_to_resolve_resolves_on_the_next_command(s3: Any) -> None:
    """Nothing of a failed resolution is kept: the next command resolves the store again."""
    store = Store(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY))
    memory = S3Memory(store, "alice")
    get, failures = (
        store.bucket.get,
        [RequestFailed("Error: S3 GetObject failed (ConnectTimeoutError).", "ConnectTimeoutError")],
    )

    def unreachable_once(key: str, **options: Any) -> Any:
        if failures:
            raise failures.pop()
        return get(key, **options)

    store.bucket.get = unreachable_once  # type: ignore[method-assign]
    with pytest.raises(RequestFailed) as raised:
        memory.run(VIEW)
    assert raised.value.message == (
        f"Error: Could not reach the S3 server of {store.bucket.where}: S3 GetObject failed (ConnectTimeoutError)."
    )

    assert memory.run(VIEW).startswith("Here're the files and directories up to 2 levels deep in /memories")


def test_a_store_shared_by_memories_in_many_threads_resolves_once(s3: Any) -> None:
    S3Memory(Bucket(s3, BUCKET), "founder", LocalKeyProvider(MASTER_KEY), storage_format=2).run(VIEW)
    forget_stores()  # a new process, with a new key provider: nothing learned yet
    read: list[str] = []
    s3.meta.events.register(
        "provide-client-params.s3.GetObject", lambda params, **_: read.append(params["Key"])
    )
    store = Store(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY))
    start = threading.Barrier(12)
    answers: list[str] = []

    def first_command(user: str) -> None:
        memory = S3Memory(store, user)
        start.wait()
        answers.append(memory.run(VIEW))

    threads = [threading.Thread(target=first_command, args=(f"user{index}",)) for index in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(answers) == 12
    assert read.count("users/" + STORE_KEY_NAME) == 1
    assert read.count("users/" + MIGRATED_NAME) == 1


def test_stores_of_one_place_share_what_the_process_learned_until_it_is_forgotten(s3: Any) -> None:
    S3Memory(Bucket(s3, BUCKET), "founder", LocalKeyProvider(MASTER_KEY)).run(VIEW)
    provider = LocalKeyProvider(MASTER_KEY)
    Store(Bucket(s3, BUCKET), provider).resolve()
    counter = RequestCounter(s3)

    assert Store(Bucket(s3, BUCKET), provider).resolve().storage_format == 2
    assert counter.total == 0
    forget_stores()
    assert Store(Bucket(s3, BUCKET), provider).resolve().storage_format == 2
    assert counter.calls == {"GetObject": 1}  # the mark: the store key stays learned by its provider


def test_a_memory_given_a_store_takes_none_of_the_store_s_settings(s3: Any) -> None:
    store = Store(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY))
    with pytest.raises(ValueError) as raised:
        S3Memory(store, "alice", prefix="team/")

    assert str(raised.value) == (
        "key_provider, prefix, storage_format, store_id and weak_server are the Store's: give them to "
        "the Store, not to S3Memory"
    )
