"""The s3memory side of the bench: one user's memory on a backend, and realistic file contents.

A ``Tenant`` wraps ``S3Memory`` for one user on one bucket, in storage format 1 (plain keys) or 2
(private names, ``docs/format-v2.md``), with the product's own S3 client
(``s3memory.clients.make_s3_client``: standard retries, 32 pooled connections). Trees are seeded
without the command path: each file is sealed here exactly as ``create`` seals it (the memory's own
``files.encode``: the body, and on format 2 the metadata that places it at its path), at the key
the memory's layout gives it, and stored through the backend's fast seeding path.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from s3memory.core.paths import memory_path
from s3memory.crypto import FORMAT_1, FORMAT_2, KeyProvider, LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket

from .servers import REGION, Backend, SeedObject

MASTER_KEY = bytes(range(32))
PREFIX = "users/"
PRIVATE_PREFIX = "private/"
"""Format-2 tenants' store prefix (its store key lies at ``private/s3memory.storage.bucket-key``), so format-1
and format-2 users can share a bucket without sharing a prefix."""
FORMATS = {FORMAT_1: PREFIX, FORMAT_2: PRIVATE_PREFIX}
_WORDS = [
    "prefers",
    "metric",
    "units",
    "and",
    "short",
    "answers;",
    "review",
    "the",
    "deployment",
    "checklist",
    "before",
    "Friday;",
    "the",
    "staging",
    "database",
    "moved",
    "to",
    "the",
    "new",
    "cluster;",
    "keep",
    "summaries",
    "under",
    "five",
    "bullet",
    "points;",
    "ask",
    "before",
    "running",
    "migrations;",
    "release",
    "notes",
    "go",
    "in",
    "the",
    "changelog",
    "with",
    "the",
    "ticket",
    "number",
]


def note_text(seed: int, lines: int = 40, width: int = 60) -> str:
    """Deterministic note-like text: ``lines`` lines of about ``width`` characters."""
    out = []
    for line in range(lines):
        words: list[str] = []
        index = seed * 7919 + line * 104729
        while sum(len(word) + 1 for word in words) < width:
            words.append(_WORDS[index % len(_WORDS)])
            index = index * 1103515245 + 12345
            index %= 2**31
        out.append(f"- {' '.join(words)}")
    return "\n".join(out) + "\n"


def s3memory_client(backend: Backend) -> Any:
    """The product's S3 client for ``backend`` (the same factory the tool uses by default), with the
    backend's client-side latency, if any, before every HTTP attempt."""
    from s3memory.clients import make_s3_client

    client = make_s3_client(endpoint_url=backend.endpoint_url, region_name=REGION)
    if backend.client_latency_ms:
        delay = backend.client_latency_ms / 1000

        def wait(**_: Any) -> None:
            time.sleep(delay)

        client.meta.events.register("before-send.s3", wait)
    return client


class Tenant:
    """One user's memory in one bucket, driven the way the tool drives it (raw tool inputs).

    ``storage_format`` 2 keeps the store's key at ``PRIVATE_PREFIX`` of the bucket; it is made (or
    read) here, by ``client``, before anything is measured. A tenant is used only while that key
    stays: clearing the whole bucket (``backend.clear(bucket, "")``) deletes it."""

    def __init__(
        self,
        backend: Backend,
        client: Any,
        bucket: str,
        user_id: str,
        key_provider: KeyProvider | None = None,
        storage_format: int = FORMAT_1,
    ) -> None:
        self.backend = backend
        self.client = client
        self.bucket = bucket
        self.user_id = user_id
        self.storage_format = storage_format
        self.memory = S3Memory(
            Bucket(client, bucket),
            user_id,
            key_provider or LocalKeyProvider(MASTER_KEY),
            prefix=FORMATS[storage_format],
            storage_format=storage_format,
        )

    def run(self, raw: Mapping[str, Any]) -> str:
        """Run one command (its access record, written once an hour, lands before the answer)."""
        return self.memory.run(dict(raw))

    def first_use(self) -> None:
        """The store's first use, unmeasured: resolved, and what the server enforces found (its
        probe, about 15 requests once per store: ``docs/servers.md``)."""
        self.memory.resolve()
        gate = self.memory.store.bucket.gate
        if gate is not None:
            gate.enforced()

    def key(self, path: str) -> str:
        return self.memory.placed.layout.file_key(memory_path(path))

    def prefix(self, path: str) -> str:
        return self.memory.placed.layout.directory_prefix(memory_path(path))

    def sealed(self, path: str, text: str) -> SeedObject:
        """The object ``create`` would store for ``path``: its key, body and metadata (the memory's
        own sealing; with the local master key it sends no request)."""
        parsed = memory_path(path)
        sealed = self.memory.placed.files.encode(parsed, text)
        return self.memory.placed.layout.file_key(parsed), sealed.body, dict(sealed.metadata)

    def seed(self, files: Mapping[str, str]) -> None:
        self.backend.seed(self.bucket, [self.sealed(path, text) for path, text in files.items()])

    def clear(self) -> None:
        self.backend.clear(self.bucket, self.memory.placed.layout.namespace)
