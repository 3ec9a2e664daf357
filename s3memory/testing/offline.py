"""A test's AWS, offline: the environment that keeps it off AWS, and the bucket on moto it gets.

The fixtures of :mod:`s3memory.testing.fixtures` apply :func:`offline_aws_environment` and
:meth:`MotoBucket.environment` for one test; the demo applies the first for its run. Nothing here
imports moto, pytest or ``anthropic``: the tools are built on first use.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from s3memory.crypto import LocalKeyProvider
    from s3memory.memory import MemoryOptions
    from s3memory.mounts import Mount
    from s3memory.tool import AsyncS3MemoryTool, S3MemoryTool

REGION = "us-east-1"
DUMMY_AWS_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_LOOPBACK = "127.0.0.1,localhost"


def loopback_unproxied(environ: Mapping[str, str]) -> dict[str, str]:
    """``NO_PROXY`` (both spellings) with loopback added, so that a proxy set in ``environ`` never
    carries a request to a server on 127.0.0.1."""
    changes = {}
    for name in ("NO_PROXY", "no_proxy"):
        existing = environ.get(name, "")
        changes[name] = ",".join(part for part in (existing, _LOOPBACK) if part)
    return changes


def offline_aws_environment(environ: Mapping[str, str]) -> dict[str, str | None]:
    """The changes to ``environ`` (``None``: remove) that keep AWS clients off AWS and off the
    user's own credentials: every ``AWS_*`` variable removed (profiles, session tokens, roles,
    endpoints), dummy keys, no AWS config or credentials file, no instance metadata, region
    ``us-east-1``; loopback never proxied."""
    changes: dict[str, str | None] = {name: None for name in environ if name.startswith("AWS_")}
    changes.update(
        DUMMY_AWS_CREDENTIALS,
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
    )
    changes.update(loopback_unproxied(environ))
    return changes


@dataclass(frozen=True)
class MotoBucket:
    """A bucket on moto for one test: its ``name``, an S3 ``client`` of that moto, and the local
    ``master_key`` its tools seal with (random for each test)."""

    name: str
    client: S3Client
    master_key: bytes = field(repr=False)

    @property
    def key_provider(self) -> LocalKeyProvider:
        """The key provider of ``master_key``: what a memory of this bucket is sealed with."""
        from s3memory.crypto import LocalKeyProvider

        return LocalKeyProvider(self.master_key)

    def tool(
        self, user_id: str = "alice", *, mounts: Sequence[Mount] = (), **options: Unpack[MemoryOptions]
    ) -> S3MemoryTool:
        """A new ``S3MemoryTool`` of ``user_id``'s memory in this bucket, with ``mounts`` and the
        memory's ``options`` (``docs/library.md``)."""
        from s3memory.tool import S3MemoryTool

        return S3MemoryTool(**self._tool_arguments(user_id, mounts), **options)

    def async_tool(
        self, user_id: str = "alice", *, mounts: Sequence[Mount] = (), **options: Unpack[MemoryOptions]
    ) -> AsyncS3MemoryTool:
        """The same as :meth:`tool`, for ``AsyncAnthropic``."""
        from s3memory.tool import AsyncS3MemoryTool

        return AsyncS3MemoryTool(**self._tool_arguments(user_id, mounts), **options)

    def _tool_arguments(self, user_id: str, mounts: Sequence[Mount]) -> dict[str, Any]:
        return {
            "bucket": self.name,
            "user_id": user_id,
            "key_provider": self.key_provider,
            "s3_client": self.client,
            "mounts": mounts,
        }

    def environment(self, environ: Mapping[str, str]) -> dict[str, str | None]:
        """The changes to ``environ`` (``None``: remove) after which ``Settings.from_env()`` names this
        bucket and key, and nothing else of the user's: every other ``S3MEMORY_*`` removed."""
        changes: dict[str, str | None] = {name: None for name in environ if name.startswith("S3MEMORY_")}
        changes.update(
            S3MEMORY_BUCKET=self.name,
            S3MEMORY_LOCAL_KEY=base64.b64encode(self.master_key).decode("ascii"),
        )
        return changes


__all__ = ["DUMMY_AWS_CREDENTIALS", "REGION", "MotoBucket", "loopback_unproxied", "offline_aws_environment"]
