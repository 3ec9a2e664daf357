"""Adapters for the Anthropic SDK's tool runner: the only module that imports ``anthropic``.

``call`` hands the raw input to the core and turns every failure into ``ToolError``, so the runner
answers the model with ``is_error: true`` and a clear message, whatever the input or the fault.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self, Unpack

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import BetaCacheControlEphemeralParam

from s3memory.assembly import make_memory
from s3memory.crypto import KeyProvider
from s3memory.edge.answers import answer as answered
from s3memory.errors import CommandError
from s3memory.memory import MemoryOptions, S3Memory
from s3memory.mounts import Mount, UserMemory, with_mounts
from s3memory.storage.bucket import Bucket
from s3memory.store import refuse_unknown

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from s3memory.settings import Settings


def answer(memory: UserMemory, raw_input: object) -> str:
    """Run one input; every failure becomes ``ToolError`` with a message that names no content
    (``answers.answer``; within ``answers.remote``, nothing of the operator's either)."""
    text, is_error = answered(memory, raw_input)
    if is_error:
        raise ToolError(text)
    return text


def clear(memory: UserMemory) -> str:
    """``clear_all_memory`` for both adapters: storage failures become ``ToolError``."""
    try:
        return memory.clear_all()
    except CommandError as error:
        raise ToolError(error.message) from None


def _as_input(command: Any) -> object:
    return command.to_dict() if hasattr(command, "to_dict") else command


class _S3Configured:
    """The constructor both adapters share: one user's memory in one bucket, with the shared memories
    ``mounts`` names mounted in it (``docs/shared.md``; the application decides them), built without a
    request (the first command resolves the store: ``store.Store``). Beside its own arguments it
    takes the memory's options (``MemoryOptions``) and hands them to ``S3Memory``."""

    memory: UserMemory

    def __init__(
        self,
        *,
        bucket: str,
        user_id: str,
        key_provider: KeyProvider,
        s3_client: S3Client | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        mounts: Sequence[Mount] = (),
        **options: Unpack[MemoryOptions],
    ) -> None:
        refuse_unknown(options, MemoryOptions.__optional_keys__, type(self).__name__)
        super().__init__(cache_control=cache_control)  # type: ignore[call-arg]
        if not isinstance(bucket, str) or not bucket:
            raise ValueError("bucket must be a non-empty string")
        if s3_client is None:
            from s3memory.clients import make_s3_client

            s3_client = make_s3_client()
        own = S3Memory(Bucket(s3_client, bucket), user_id, key_provider, **options)
        self.memory = with_mounts(own, mounts)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        user_id: str,
        mounts: Sequence[Mount] = (),
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> Self:
        """A tool over ``assembly.make_memory(settings, user_id, mounts)``: the store, key and limits
        of the settings the command line and the Lambda functions read (``Settings.from_env``)."""
        return cls.over(make_memory(settings, user_id, mounts), cache_control=cache_control)

    @classmethod
    def over(cls, memory: UserMemory, *, cache_control: BetaCacheControlEphemeralParam | None = None) -> Self:
        """A tool over an existing memory (a warm Lambda container keeps one per user), mounts and all."""
        tool = cls.__new__(cls)
        super(_S3Configured, tool).__init__(cache_control=cache_control)  # type: ignore[call-arg]
        tool.memory = memory
        return tool


class S3MemoryTool(_S3Configured, BetaAbstractMemoryTool):
    """Claude's memory tool backed by S3, encrypted on the client; one instance serves one user."""

    def call(self, input: object) -> str:
        return answer(self.memory, input)

    def view(self, command: Any) -> str:
        return self.call(_as_input(command))

    def create(self, command: Any) -> str:
        return self.call(_as_input(command))

    def str_replace(self, command: Any) -> str:
        return self.call(_as_input(command))

    def insert(self, command: Any) -> str:
        return self.call(_as_input(command))

    def delete(self, command: Any) -> str:
        return self.call(_as_input(command))

    def rename(self, command: Any) -> str:
        return self.call(_as_input(command))

    def clear_all_memory(self) -> str:
        return clear(self.memory)


class AsyncS3MemoryTool(_S3Configured, BetaAsyncAbstractMemoryTool):
    """The async twin: each command runs the sync core in a worker thread.

    boto3 clients are thread-safe, so offloading keeps one tested code path and adds no dependency.
    """

    async def call(self, input: object) -> str:
        return await asyncio.to_thread(answer, self.memory, input)

    async def view(self, command: Any) -> str:
        return await self.call(_as_input(command))

    async def create(self, command: Any) -> str:
        return await self.call(_as_input(command))

    async def str_replace(self, command: Any) -> str:
        return await self.call(_as_input(command))

    async def insert(self, command: Any) -> str:
        return await self.call(_as_input(command))

    async def delete(self, command: Any) -> str:
        return await self.call(_as_input(command))

    async def rename(self, command: Any) -> str:
        return await self.call(_as_input(command))

    async def clear_all_memory(self) -> str:
        return await asyncio.to_thread(clear, self.memory)
