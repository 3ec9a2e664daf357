"""The store of format 2: its identity, and its store key (the root of private names).

A store is a key prefix in a bucket, named by a configured store id (by default the bucket's name:
set it to the source's id to read a replica). Its identity, a digest of the id and the prefix, is
bound into every format-2 object and data key, so objects copied between stores, or between
overlapping prefixes, are refused. The store key is random, made once and kept wrapped (by KMS, or
by the local master key) at ``<prefix>s3memory.storage.bucket-key``: outside every user's namespace.
"""

from __future__ import annotations

import hashlib
import struct
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from s3memory.core.files import LOST, Lost, retried
from s3memory.crypto import KeyProvider
from s3memory.errors import IntegrityError, StorageError
from s3memory.storage.bucket import Bucket, ConditionalConflict, PreconditionFailed

STORE_KEY_NAME = "s3memory.storage.bucket-key"
"""Where, below the store's prefix, the wrapped store key lies."""
MIGRATED_NAME = "s3memory.migrated"
"""Below the store's prefix: the mark of a store with no format-1 files left (``formats.upgrade``). A
store is marked only once its store key exists, so a marked store without one has lost it."""
STORE_KEY_MAX_BYTES = 4096
_IDENTITY_LABEL = b"s3memory/v2/store"

_learned: weakref.WeakKeyDictionary[KeyProvider, dict[tuple[str, str, str], bytes]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


@dataclass(frozen=True)
class Missing:
    """What a look at a store just found missing: its store ``key``, its ``mark``
    (``MIGRATED_NAME``), or ``anything`` below its prefix. False means not looked at (or there):
    only what was found missing lets a later step skip its own look."""

    key: bool = False
    mark: bool = False
    anything: bool = False


NONE_MISSING = Missing()
"""Nothing known to be missing: nothing was looked at."""


def store_identity(store_id: str, prefix: str) -> str:
    """The identity of the store ``store_id`` at key prefix ``prefix``: 32 hex digits of SHA-256."""
    if not isinstance(store_id, str) or not 1 <= len(store_id) <= 255 or not store_id.isprintable():
        raise ValueError("store_id must be 1 to 255 printable characters (by default the bucket's name)")
    parts = [part.encode("utf-8") for part in (store_id, prefix)]
    framed = b"".join(struct.pack(">I", len(part)) + part for part in parts)
    return hashlib.sha256(_IDENTITY_LABEL + framed).hexdigest()[:32]


def store_key(
    bucket: Bucket,
    prefix: str,
    identity: str,
    provider: KeyProvider,
    missing: Missing = NONE_MISSING,
    mark_found: Callable[[], bool] | None = None,
) -> tuple[bytes, Missing]:
    """The store key of ``identity`` at ``prefix`` in ``bucket``, made and kept on first use
    (of processes racing to make it, one stores its own; the others use the winner's), and what was
    found missing on the way. Learned once per process and provider: a store key never changes.
    A store that ``missing`` says has neither key nor mark gets one without another look.
    ``mark_found`` answers whether the store's mark is there from a read sent alongside the key's
    (the first look only; either order is safe, as a key found missing is read again after a mark)."""

    def attempt(number: int) -> tuple[bytes, Missing] | Lost:
        nonlocal missing
        if number > 0 or not (missing.key and missing.mark):
            key = stored_store_key(bucket, prefix, identity, provider)
            if key is not None:
                return key, NONE_MISSING
            if mark_found() if number == 0 and mark_found else bucket.exists(prefix + MIGRATED_NAME):
                # the mark is written only once the key is: read after the mark, a key still
                # missing is lost (the first read may have come before another process's write)
                key = stored_store_key(bucket, prefix, identity, provider)
                if key is not None:
                    return key, NONE_MISSING
                raise IntegrityError(
                    "Error: The store key is missing from a store that has one: its names cannot be read "
                    f"without it. Restore {prefix}{STORE_KEY_NAME} (an earlier version, or a backup); "
                    "nothing was changed."
                )
            missing = Missing(key=True, mark=True)  # whatever else was missing may be there now
        key, wrapped = provider.new_store_key(identity)
        try:
            bucket.put(prefix + STORE_KEY_NAME, wrapped, if_none_match=True)
        except (PreconditionFailed, ConditionalConflict):
            return LOST  # another process stored one (read next), or it was removed meanwhile
        _learn(bucket, prefix, identity, provider, key)
        return key, missing

    return retried(
        attempt,
        lambda: StorageError(
            "Error: The store key could not be read or made: its write kept losing while none could be "
            "read. Nothing was changed. Try again."
        ),
    )


def stored_store_key(bucket: Bucket, prefix: str, identity: str, provider: KeyProvider) -> bytes | None:
    """The store key of ``identity`` at ``prefix`` if one is stored, else None (no memory has been
    written to the store yet): never makes one, so what only reads (the operator's ``users``,
    ``ls``, ``verify``, expiry) writes nothing. ``IntegrityError`` when the stored key does not
    open for ``identity`` (another store id or prefix, or tampered)."""
    place = (bucket.bucket, prefix, identity)
    with _lock:
        known = _learned.get(provider, {}).get(place)
    if known is not None:
        return known
    stored = bucket.get(prefix + STORE_KEY_NAME, max_bytes=STORE_KEY_MAX_BYTES)
    if stored is None:
        return None
    key = provider.open_store_key(identity, stored.body)
    _learn(bucket, prefix, identity, provider, key)
    return key


def _learn(bucket: Bucket, prefix: str, identity: str, provider: KeyProvider, key: bytes) -> None:
    with _lock:
        _learned.setdefault(provider, {})[(bucket.bucket, prefix, identity)] = key
