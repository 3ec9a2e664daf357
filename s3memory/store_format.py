"""Which storage format a store is served in: the setting ``auto`` (the default) and what it picks.

``auto`` serves a store in format 2 (private names, ``docs/format-v2.md``) unless the store already
holds format-1 users: format 2 where the store key or the mark of a migrated store is there, or
nothing is below the prefix yet (a new store); format 1 where objects lie below the prefix and
neither is there (a store written before format 2). A store moves from format 1 only when an
operator sets format 2 and runs ``s3memory migrate``. What a process found is kept for its life.
"""

from __future__ import annotations

import threading
from typing import Literal, TypeAlias

from .crypto import FORMAT_VERSION, PLACED_FORMAT, KeyProvider
from .store import S3Store
from .store_keys import MIGRATED_NAME, NONE_MISSING, Missing, stored_store_key

AUTO_FORMAT: Literal["auto"] = "auto"
StorageFormat: TypeAlias = Literal[1, 2, "auto"]
"""A storage format setting: 1, 2, or ``"auto"`` (2 for a new store, else the store's own)."""

_served: dict[tuple[str, str], int] = {}
_lock = threading.Lock()


def checked_format(value: object) -> StorageFormat:
    """``value`` as a storage format setting; ``ValueError`` for anything but 1, 2 or ``"auto"``."""
    if value == AUTO_FORMAT or (value in (FORMAT_VERSION, PLACED_FORMAT) and type(value) is int):
        return value  # type: ignore[return-value]
    raise ValueError(f'storage_format must be {FORMAT_VERSION}, {PLACED_FORMAT} or "{AUTO_FORMAT}"')


def served_format(
    store: S3Store, prefix: str, identity: str, provider: KeyProvider, setting: StorageFormat
) -> int:
    """The format the store at ``prefix`` (of ``identity``) is served in under ``setting``: the
    setting itself unless it is ``auto``; then found once per process (a store key read, and on a
    store without one a HEAD of the mark, a one-key listing and, if it finds objects, the store key
    read again)."""
    return serve(store, prefix, identity, provider, setting)[0]


def serve(
    store: S3Store, prefix: str, identity: str, provider: KeyProvider, setting: StorageFormat
) -> tuple[int, Missing]:
    """``served_format``, and what finding it found missing (nothing where it did not look)."""
    if setting != AUTO_FORMAT:
        return setting, NONE_MISSING
    place = (store.bucket, prefix)
    with _lock:
        known = _served.get(place)
    if known is not None:
        return known, NONE_MISSING
    found, missing = _look(store, prefix, identity, provider)
    with _lock:
        _served[place] = found
    return found, missing


def _look(store: S3Store, prefix: str, identity: str, provider: KeyProvider) -> tuple[int, Missing]:
    """The format the store is in, and what the look found missing. Format 2 writes its store key
    before anything else below the prefix, so objects with no key are format 1 unless a key read
    after the listing finds one another process has just made."""
    if stored_store_key(store, prefix, identity, provider) is not None:
        return PLACED_FORMAT, NONE_MISSING
    if store.exists(prefix + MIGRATED_NAME):
        return PLACED_FORMAT, Missing(key=True)
    if not store.any_below(prefix):
        return PLACED_FORMAT, Missing(key=True, mark=True, anything=True)
    if stored_store_key(store, prefix, identity, provider) is not None:
        return PLACED_FORMAT, NONE_MISSING
    return FORMAT_VERSION, NONE_MISSING
