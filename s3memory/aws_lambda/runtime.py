"""What a warm container keeps between invocations, for both handlers.

The settings, the S3 client, the key provider (its cache of unwrapped data keys keeps warm commands
free of KMS requests), the store (``store.Store``: resolved by the first command), the token verifier (its cache of the issuer's signing keys), and one
``S3Memory`` per user, the least recently used dropped beyond ``WARM_USERS``: a user's directory
hints and quota usage survive from one invocation to the next, so a warm command lists nothing the
last one listed. Everything is built on first use and rebuilt when the settings change.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from s3memory.assembly import make_key_provider, make_s3_client, make_store
from s3memory.aws_lambda import metrics
from s3memory.core.paths import UserId
from s3memory.crypto import KeyProvider, KMSKeyProvider
from s3memory.edge.tokens import TokenVerifier
from s3memory.memories import Memories
from s3memory.memory import S3Memory
from s3memory.mounts import Mount, UserMemory, with_mounts
from s3memory.settings import Settings
from s3memory.store import Store

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class Runtime:
    """One container's clients, providers and per-user memories, for one set of settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.s3_client: S3Client = make_s3_client(settings)
        self.key_provider: KeyProvider = make_key_provider(settings)
        tokens = settings.edge.tokens
        self.tokens = None if tokens is None else TokenVerifier(tokens)
        self.store: Store = make_store(settings, self.s3_client, self.key_provider)
        """The store every user's memory lives in, resolved by the first command."""
        options = settings.limits.memory_options()
        self.memory = Memories(lambda user: S3Memory(self.store, user, **options))
        """The user's memory, kept warm (``memories.Memories``); its user id checked where the request
        came in."""
        metrics.instrument(self.s3_client, "s3")
        if isinstance(self.key_provider, KMSKeyProvider):
            metrics.instrument(self.key_provider.client, "kms")

    @contextlib.contextmanager
    def serving(
        self, user_id: UserId, fields: dict[str, Any], actor: str | None = None
    ) -> Iterator[S3Memory]:
        """The user's memory for one invocation, its writes by ``actor``; notes in ``fields`` how
        many job records it set aside in quarantine (``job_records_set_aside``). Each command's
        access record has landed before its answer (``core/last_used.py``): nothing is left in
        flight when Lambda freezes the process. ``mounted`` mounts shared memories in it."""
        memory = self.memory(user_id).acting_as(actor)
        set_aside = memory.placed.jobs.set_aside
        before = len(set_aside)
        try:
            yield memory
        finally:
            fields["job_records_set_aside"] = len(set_aside) - before

    def mounted(self, own: S3Memory, mounts: tuple[Mount, ...]) -> UserMemory:
        """``own`` with ``mounts`` mounted in it, each shared memory kept warm as a user's is."""
        return with_mounts(own, mounts, self.memory)


_lock = threading.Lock()
_runtime: Runtime | None = None
_initialized = False
"""Whether this process has built a runtime once (its container's initialisation)."""


def get_runtime(environ: Mapping[str, str] | None = None) -> Runtime:
    """The container's runtime, built on first use and rebuilt only when the settings change.

    Raises ``SettingsError`` (naming the variable) when the settings are missing or invalid.
    """
    global _runtime
    settings = Settings.from_env(os.environ if environ is None else environ)
    with _lock:
        if _runtime is None or _runtime.settings != settings:
            _runtime = _initializing(settings) if not _initialized else Runtime(settings)
        return _runtime


def _initializing(settings: Settings) -> Runtime:
    """The first runtime of the process, built with the cyclic garbage collector paused, then every
    object so far frozen out of its scans (``gc.freeze``): the modules, the botocore client and its
    service models live as long as the container, and full collections over them (hundreds of
    thousands of objects) cost a cold start about 30 ms. Garbage of that time left in a cycle is
    kept, once per process."""
    global _initialized
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        runtime = Runtime(settings)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    _initialized = True
    return runtime


def reset() -> None:
    """Forget the container's runtime (tests; the next invocation builds a new one)."""
    global _runtime
    with _lock:
        _runtime = None
