"""The SDK adapters: base classes, ToolError for every failure, async, clear_all_memory, light import."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Any

import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import BetaMemoryTool20250818ViewCommand
from botocore.exceptions import EndpointConnectionError

from s3memory import AsyncS3MemoryTool, S3MemoryTool
from s3memory.crypto import LocalKeyProvider
from tests.conftest import key_of, memory_tool, prefix_of, store_objects
from tests.support.bucket import BUCKET, MASTER_KEY, stored_keys

pytestmark = [pytest.mark.takes_format]


def make_tool(s3: Any, **options: Any) -> S3MemoryTool:
    return memory_tool(s3, **options)


def test_the_tools_are_the_sdks_memory_tools(s3: Any) -> None:
    tool = make_tool(s3)
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"
    cached = make_tool(s3, cache_control={"type": "ephemeral"})
    assert cached.to_dict() == {
        "type": "memory_20250818",
        "name": "memory",
        "cache_control": {"type": "ephemeral"},
    }
    async_tool = memory_tool(s3, kind=AsyncS3MemoryTool)
    assert isinstance(async_tool, BetaAsyncAbstractMemoryTool)


def test_a_tool_over_an_existing_memory_shares_it(s3: Any) -> None:
    """A warm Lambda container keeps one ``S3Memory`` per user and hands it to each invocation's tool."""
    first = make_tool(s3)
    second = S3MemoryTool.over(first.memory, cache_control={"type": "ephemeral"})
    async_tool = AsyncS3MemoryTool.over(first.memory)
    assert second.memory is first.memory and async_tool.memory is first.memory
    assert second.to_dict()["cache_control"] == {"type": "ephemeral"}
    assert isinstance(async_tool, BetaAsyncAbstractMemoryTool)
    first.call({"command": "create", "path": "/memories/a.md", "file_text": "shared"})
    assert "shared" in second.call({"command": "view", "path": "/memories/a.md"})
    assert "shared" in asyncio.run(async_tool.call({"command": "view", "path": "/memories/a.md"}))
    layout = first.memory.placed.layout
    assert stored_keys(s3) == sorted(  # one record
        [*store_objects(), layout.key_of_internal("access"), key_of(first.memory, "/memories/a.md")]
    )


def test_the_sdks_typed_dispatch_reaches_the_core(s3: Any) -> None:
    tool = make_tool(s3)
    command = BetaMemoryTool20250818ViewCommand(command="view", path="/memories")
    assert tool.execute(command).startswith("Here're the files and directories")


@pytest.mark.parametrize(
    "bad",
    [
        None,
        42,
        [],
        "view",
        {"command": None},
        {"command": "view", "path": ["/memories"]},
        {"command": "view", "path": "/x"},
    ],
)
def test_every_bad_input_is_a_tool_error(s3: Any, bad: Any) -> None:
    with pytest.raises(ToolError) as caught:
        make_tool(s3).call(bad)
    assert isinstance(caught.value.content, str) and caught.value.content.startswith("Error:")


def test_storage_failures_are_tool_errors(s3: Any) -> None:
    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://s3.invalid")

    tool = make_tool(s3)
    tool.memory.resolve()  # a store reached before (an unreached one: tests/memory/test_deployment.py)
    s3.meta.events.register("before-send.s3", unreachable)
    with pytest.raises(ToolError) as caught:
        tool.call({"command": "view", "path": "/memories/a.txt"})
    assert caught.value.content == (
        f"Error: S3 GetObject failed (EndpointConnectionError): bucket {BUCKET} at {s3.meta.endpoint_url} could "
        "not be reached. Check S3MEMORY_ENDPOINT_URL (--endpoint-url), the network, and that the server is "
        "running. Nothing was reported as done; try again."
    )


def test_unexpected_failures_are_tool_errors_too(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = make_tool(s3)

    def broken(_: object) -> str:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(tool.memory, "run", broken)
    with pytest.raises(ToolError) as caught:
        tool.call({"command": "view", "path": "/memories"})
    assert caught.value.content == (
        "Error: s3memory failed unexpectedly (ZeroDivisionError); the command may not have run."
    )


@pytest.mark.slow
@pytest.mark.scale
def test_clear_all_memory_removes_every_memory_file_in_batches(s3: Any) -> None:
    tool = make_tool(s3)
    for index in range(1_005):
        s3.put_object(Bucket=BUCKET, Key=key_of(tool.memory, f"/memories/bulk/f{index}"), Body=b"x")
    tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "x"})
    other = memory_tool(s3, "bob")
    other.call({"command": "create", "path": "/memories/b.txt", "file_text": "x"})
    assert tool.clear_all_memory() == "All memory cleared"
    assert stored_keys(s3, prefix_of(tool.memory)) == []
    assert stored_keys(s3, prefix_of(other.memory)) == [key_of(other.memory, "/memories/b.txt")]


def test_the_async_tool_runs_commands_off_the_event_loop(s3: Any) -> None:
    tool = memory_tool(s3, kind=AsyncS3MemoryTool)
    loop_threads: set[int] = set()
    request_threads: set[int] = set()
    s3.meta.events.register("request-created.s3", lambda **_: request_threads.add(threading.get_ident()))

    async def session() -> tuple[str, str]:
        loop_threads.add(threading.get_ident())
        created = await tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "hi"})
        with pytest.raises(ToolError, match=r"^Error: File /memories/a.txt already exists$"):
            await tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "again"})
        viewed = await tool.execute(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/a.txt"))
        assert await tool.clear_all_memory() == "All memory cleared"
        return created, str(viewed)

    created, viewed = asyncio.run(session())
    assert created == "File created successfully at: /memories/a.txt"
    assert viewed.endswith("     1\thi")
    assert request_threads and loop_threads.isdisjoint(request_threads)


@pytest.mark.parametrize(
    "options",
    [
        {"bucket": ""},
        {"user_id": ".."},
        {"user_id": "a/b"},
        {"prefix": "../"},
        {"max_file_bytes": 0},
        {"key_provider": "k"},
    ],
)
def test_bad_configuration_is_refused_when_the_tool_is_built(s3: Any, options: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {
        "bucket": BUCKET,
        "user_id": "alice",
        "key_provider": LocalKeyProvider(MASTER_KEY),
        "s3_client": s3,
    }
    with pytest.raises(ValueError):
        S3MemoryTool(**{**arguments, **options})


def test_import_s3memory_is_light() -> None:
    probe = (
        "import sys, s3memory, s3memory.memory, s3memory.crypto; "
        "print(sorted(m for m in ('anthropic', 'moto') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_each_public_name_comes_from_the_package_and_an_unknown_one_is_refused() -> None:
    """The public API is ``from s3memory import ...``: each name of ``__all__``, loaded on first use."""
    import s3memory
    from s3memory.memory import S3Memory
    from s3memory.storage.bucket import Bucket
    from s3memory.store import Store

    assert (s3memory.Store, s3memory.Bucket, s3memory.S3Memory) == (Store, Bucket, S3Memory)
    assert all(getattr(s3memory, name) is not None for name in s3memory.__all__)
    with pytest.raises(AttributeError, match=r"^module 's3memory' has no attribute 'S3Store'$"):
        _ = s3memory.S3Store  # type: ignore[attr-defined]


class _FailingMemory:
    """A memory whose command fails in a way nobody foresaw, with content, a path and a user id in
    the exception's message."""

    message = "users/alice/memories/secret.md holds: my PIN is 1234"

    def run(self, raw_input: object) -> str:
        raise KeyError(self.message)


def test_an_unexpected_failure_is_logged_by_its_type_and_frames_never_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from typing import cast

    from s3memory.edge.answers import Answer, answer
    from s3memory.memory import S3Memory

    with caplog.at_level("ERROR", logger="s3memory"):
        result = answer(cast(S3Memory, _FailingMemory()), {"command": "view", "path": "/memories"})
    assert result == Answer(
        "Error: s3memory failed unexpectedly (KeyError); the command may not have run.", True
    )
    assert "unexpected KeyError (its message left out)" in caplog.text and "in run" in caplog.text
    assert not [word for word in ("alice", "secret", "PIN", "1234") if word in caplog.text]
