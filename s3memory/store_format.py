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
    store without one a HEAD of the mark and a one-key listing)."""
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
    found, missing = PLACED_FORMAT, NONE_MISSING
    if stored_store_key(store, prefix, identity, provider) is None:
        missing = Missing(key=True)
        if not store.exists(prefix + MIGRATED_NAME):
            missing = Missing(key=True, mark=True, anything=not store.any_below(prefix))
            if not missing.anything:
                found = FORMAT_VERSION
    with _lock:
        _served[place] = found
    return found, missing
