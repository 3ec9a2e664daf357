"""The s3memory side of the bench: one user's memory on a backend, and realistic file contents.

A ``Tenant`` wraps ``S3Memory`` for one user on one bucket, with the product's own S3 client
(``s3memory.clients.make_s3_client``: standard retries, 32 pooled connections). Trees are seeded
without the command path: bodies are sealed here with the user's key (``ObjectCipher``, exactly
as ``create`` seals them) and stored through the backend's fast seeding path.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from s3memory.crypto import DataKeySource, KeyOwner, KeyProvider, LocalKeyProvider, ObjectCipher
from s3memory.memory import S3Memory
from s3memory.paths import memory_path
from s3memory.store import S3Store

from .servers import REGION, Backend

MASTER_KEY = bytes(range(32))
PREFIX = "users/"
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


class _NoVault:
    """The local key provider derives keys and never touches the vault."""

    identity = "bench-seeding"

    def get_wrapped(self, version: int) -> bytes | None:
        return None

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        return False


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
    """One user's memory in one bucket, driven the way the tool drives it (raw tool inputs)."""

    def __init__(
        self,
        backend: Backend,
        client: Any,
        bucket: str,
        user_id: str,
        key_provider: KeyProvider | None = None,
    ) -> None:
        self.backend = backend
        self.client = client
        self.bucket = bucket
        self.user_id = user_id
        self.memory = S3Memory(
            S3Store(client, bucket), user_id, key_provider or LocalKeyProvider(MASTER_KEY), prefix=PREFIX
        )
        self._sealer = ObjectCipher(
            DataKeySource(LocalKeyProvider(MASTER_KEY), KeyOwner(user_id), _NoVault())
        )

    def run(self, raw: Mapping[str, Any]) -> str:
        """Run one command; its access record (written once an hour, off the answer's path) lands
        before this returns, so request counts are the same on every run."""
        try:
            return self.memory.run(dict(raw))
        finally:
            self.memory.access.wait()

    def key(self, path: str) -> str:
        return self.memory.layout.file_key(memory_path(path))

    def prefix(self, path: str) -> str:
        return self.memory.layout.directory_prefix(memory_path(path))

    def sealed(self, path: str, text: str) -> tuple[str, bytes]:
        """The object ``create`` would store for ``path`` (local master key only)."""
        parsed = memory_path(path)
        return self.memory.layout.file_key(parsed), self._sealer.seal(parsed.canonical, text.encode("utf-8"))

    def seed(self, files: Mapping[str, str]) -> None:
        self.backend.seed(self.bucket, [self.sealed(path, text) for path, text in files.items()])

    def clear(self) -> None:
        self.backend.clear(self.bucket, self.memory.layout.namespace)
