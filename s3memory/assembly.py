"""What the settings build: the S3 client, the key provider, the store and a user's memory, for the
Lambda handlers, the MCP server, the console, ``Operations`` and the SDK adapters.

``settings`` reads the environment and builds nothing; this module builds from its ``Settings`` and
reads nothing. Each function is the one place its object is made from settings: the same settings
make the same store, wherever a process starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError

from s3memory import clients
from s3memory.crypto import KeyProvider, KMSKeyProvider, LocalKeyProvider
from s3memory.memory import MemoryOptions, S3Memory
from s3memory.mounts import Mount, UserMemory, with_mounts
from s3memory.settings import ENDPOINT_URL, KMS_KEY_ID, LOCAL_KEY, Settings, SettingsError
from s3memory.storage.bucket import Bucket
from s3memory.store import Store, StoreOptions

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def store_options(settings: Settings) -> StoreOptions:
    """The options of the store ``settings`` name (``make_store``)."""
    return {
        "prefix": settings.prefix,
        "storage_format": settings.storage_format,
        "store_id": settings.store_id,
        "weak_server": settings.weak_server,
    }


def memory_options(settings: Settings) -> MemoryOptions:
    """The options of an ``S3Memory`` over the bucket ``settings`` name: where the memory lives, in
    which format (``store_options``), and the limits."""
    return {**store_options(settings), **settings.limits.memory_options()}


def make_s3_client(settings: Settings, *, quick: bool = False) -> S3Client:
    """An S3 client with our standard client settings (see ``s3memory.clients``; ``quick``: one
    attempt, bounded); ``SettingsError`` naming what botocore refused where it cannot build one
    (a profile, a region, an endpoint)."""
    try:
        return clients.make_s3_client(endpoint_url=settings.endpoint_url, quick=quick)
    except (BotoCoreError, ValueError) as error:  # botocore's words name the value, never a secret
        raise SettingsError(
            f"the S3 client could not be built ({type(error).__name__}): {error} (check AWS_PROFILE, "
            f"AWS_DEFAULT_REGION and {ENDPOINT_URL})"
        ) from None


def make_key_provider(settings: Settings) -> KeyProvider:
    """A ``KMSKeyProvider`` or a ``LocalKeyProvider``. Build it once and share it: the KMS
    provider's cache of unwrapped keys is what keeps warm commands free of KMS requests."""
    if settings.kms_key_id is not None:
        return KMSKeyProvider(settings.kms_key_id)
    if settings.local_key is None:  # pragma: no cover - from_env guarantees one of the two
        raise SettingsError(f"{KMS_KEY_ID} or {LOCAL_KEY} must be set")
    return LocalKeyProvider(
        settings.local_key, version=settings.local_key_version, previous=dict(settings.previous_local_keys)
    )


def make_store(
    settings: Settings, s3_client: S3Client | None = None, key_provider: KeyProvider | None = None
) -> Store:
    """The store ``settings`` name (``store.Store``): the one place where the bucket, prefix,
    storage format, store id and weak-server mode become a store. ``s3_client`` and
    ``key_provider``: ones already built from these settings, to share (the provider's cache keeps
    warm commands free of KMS requests); built here when not given."""
    return Store(
        Bucket(s3_client or make_s3_client(settings), settings.bucket),
        key_provider or make_key_provider(settings),
        **store_options(settings),
    )


def make_memory(settings: Settings, user_id: str, mounts: Sequence[Mount] = ()) -> UserMemory:
    """``user_id``'s memory in the store ``settings`` name, with their limits, and the shared
    memories ``mounts`` names mounted in it; building it sends no request. Keep it: a process
    serves every command of the user with one (its clients, its cache of keys)."""
    own = S3Memory(make_store(settings), user_id, **settings.limits.memory_options())
    return with_mounts(own, mounts)
