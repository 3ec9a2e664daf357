"""What the key rotation tests of both storage formats share: an operator's and a serving process of
either format, the files they seed, with their authors, a moment past the rotation's wait, the files
read back through a memory, the user's wrapped keys and records by name, and a serving process that
dies renaming."""

from __future__ import annotations

import time
from typing import Any

import pytest

from s3memory.core.paths import KeyLayout, memory_path
from s3memory.crypto import KeyProvider, KMSKeyProvider
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.ops.rotation import ROTATION_WAIT_SECONDS
from s3memory.storage.bucket import Bucket

from .faults import ProcessDeath, SimulatedCrash
from .versions import all_versions, sealed_with

NEW_MASTER_KEY = bytes(range(64, 96))
FILES = {
    "/memories/notes.md": ("alpha\n", None),
    "/memories/projects/plan.md": ("beta\n", "session:1"),
    "/memories/projects/deep/todo.md": ("gamma\n", "agent:helper"),
    "/memories/ünï.md": ("delta\n", "operator:ann"),
}


def seed(operations: Operations, user: str = "alice") -> KeyLayout:
    """The files of ``FILES``, each written by its author; the user's layout."""
    memory = operations.memory(user)
    for path, (text, author) in FILES.items():
        memory.acting_as(author).run({"command": "create", "path": path, "file_text": text})
    return memory.placed.layout


def later() -> float:
    """A moment when a switch made now is older than the wait."""
    return time.time() + ROTATION_WAIT_SECONDS + 60


def contents(
    memory: S3Memory, files: dict[str, tuple[str, str | None]] = FILES
) -> dict[str, tuple[str, str | None]]:
    """Each file's text and author, read and authenticated through ``memory``."""
    found: dict[str, tuple[str, str | None]] = {}
    for path in files:
        read = memory.placed.files.read(memory_path(path))
        assert read is not None, path
        found[path] = (read.text, read.author)
    return found


def kms_operations(s3: Any, bucket: str, kms: Any, key_id: str, storage_format: int) -> Operations:
    """An operator's process of a store of ``storage_format`` (a store and a KMS provider of its own)."""
    return Operations(
        Bucket(s3, bucket), KMSKeyProvider(key_id, kms_client=kms), storage_format=storage_format
    )


def seeded(s3: Any, bucket: str, kms: Any, key_id: str, storage_format: int) -> tuple[Operations, KeyLayout]:
    """An operator's process (KMS) of a store of ``storage_format`` with ``FILES`` seeded; the user's layout."""
    operations = kms_operations(s3, bucket, kms, key_id, storage_format)
    return operations, seed(operations)


def serving(
    s3: Any, bucket: str, provider: KeyProvider, storage_format: int, user: str = "alice"
) -> S3Memory:
    """A serving process of ``user`` on a store of ``storage_format``, with ``provider``."""
    return S3Memory(Bucket(s3, bucket), user, provider, storage_format=storage_format)


def wrapped_keys(s3: Any, bucket: str, layout: KeyLayout) -> list[str]:
    """Every S3 version of the user's wrapped keys, by name (``keys/v<n>``)."""
    keys = layout.key_of_internal("keys/")
    return [key.removeprefix(layout.internal_prefix) for key, _ in all_versions(s3, bucket, keys)]


def records(s3: Any, bucket: str, layout: KeyLayout) -> dict[str, int | None]:
    """The key version each internal object but the wrapped keys names, by name (``access``, ``jobs/...``)."""
    return {
        key.removeprefix(layout.internal_prefix): version
        for key, version in sealed_with(s3, bucket, layout.internal_prefix).items()
        if not key.startswith(layout.key_of_internal("keys/"))
    }


def dies_renaming(client: Any, bucket: str, provider: KeyProvider, storage_format: int) -> None:
    """A serving process that records a rename of ``/memories/projects`` and dies before its first copy:
    format 1 copies through the client (its first PutObject is the job's record), format 2 on the
    server (CopyObject)."""
    doomed = serving(client, bucket, provider, storage_format)
    doomed.run({"command": "view", "path": "/memories"})
    death = ProcessDeath(client, *(("PutObject", 2) if storage_format == 1 else ("CopyObject", 1)))
    with pytest.raises(SimulatedCrash):
        doomed.run({"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/done"})
    assert death.dead
