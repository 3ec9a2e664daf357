"""s3memory: Claude's memory tool (``memory_20250818``) on Amazon S3, encrypted on the client.

``import s3memory`` is light: the SDK adapters (which import ``anthropic``) and the core are
loaded on first use of their names. ``s3memory.__version__`` is the package's version.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from s3memory._version import __version__

if TYPE_CHECKING:
    from s3memory.core.paths import SharedName
    from s3memory.crypto import KeyProvider, KMSKeyProvider, LocalKeyProvider
    from s3memory.errors import CommandError
    from s3memory.memory import S3Memory
    from s3memory.mounts import Mount, MountedMemory
    from s3memory.ops.operations import Operations
    from s3memory.settings import Settings
    from s3memory.storage.bucket import Bucket
    from s3memory.store import Store
    from s3memory.tool import AsyncS3MemoryTool, S3MemoryTool

__all__ = [
    "AsyncS3MemoryTool",
    "Bucket",
    "CommandError",
    "KMSKeyProvider",
    "KeyProvider",
    "LocalKeyProvider",
    "Mount",
    "MountedMemory",
    "Operations",
    "S3Memory",
    "S3MemoryTool",
    "Settings",
    "SharedName",
    "Store",
    "__version__",
]

_HOMES = {
    "AsyncS3MemoryTool": ".tool",
    "S3MemoryTool": ".tool",
    "KMSKeyProvider": ".crypto",
    "KeyProvider": ".crypto",
    "LocalKeyProvider": ".crypto",
    "CommandError": ".errors",
    "S3Memory": ".memory",
    "Mount": ".mounts",
    "MountedMemory": ".mounts",
    "Operations": ".ops.operations",
    "SharedName": ".core.paths",
    "Settings": ".settings",
    "Bucket": ".storage.bucket",
    "Store": ".store",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 's3memory' has no attribute {name!r}")
    return getattr(import_module(home, __name__), name)
