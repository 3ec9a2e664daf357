"""Which storage format a store is served in: the setting ``auto`` (the default) and what it picks.

``auto`` serves a store in format 2 (private names, ``docs/format-v2.md``) unless the store already
holds format-1 users or its server cannot serve format 2: format 2 where the store key or the mark
of a migrated store is there; for a new store (no object below the prefix but the store's own),
the best format its server enforces the conditions of (``server_checks``); format 1 where users'
objects lie below the prefix and neither is there (a store written before format 2), unless some
of them lie in namespaces of format 2 (then the store key is missing: refused, by the rule a format
set to 2 goes by too, ``store_keys.refuse_lost_key``). A store moves from format 1 only when an
operator sets format 2 and runs ``s3memory migrate``. What a process found is kept for its life by
the store (``store.Store``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

from s3memory.crypto import FORMAT_1, FORMAT_2, KeyProvider
from s3memory.formats.store_keys import (
    MIGRATED_NAME,
    NONE_MISSING,
    Missing,
    refuse_lost_key,
    stored_store_key,
    users_below,
)
from s3memory.formats.strategy import FORMAT_TWO
from s3memory.storage.bucket import Bucket
from s3memory.storage.conditions import Enforced

AUTO_FORMAT: Literal["auto"] = "auto"
StorageFormat: TypeAlias = Literal[1, 2, "auto"]
"""A storage format setting: 1, 2, or ``"auto"`` (2 for a new store, else the store's own)."""


def checked_format(value: object) -> StorageFormat:
    """``value`` as a storage format setting; ``ValueError`` for anything but 1, 2 or ``"auto"``."""
    if value == AUTO_FORMAT or (value in (FORMAT_1, FORMAT_2) and type(value) is int):
        return value  # type: ignore[return-value]
    raise ValueError(f'storage_format must be {FORMAT_1}, {FORMAT_2} or "{AUTO_FORMAT}"')


def best_format(enforced: Enforced) -> int:
    """The best storage format a server enforcing ``enforced`` can be served in: 2 where every
    condition it needs holds (CopyObject's among them), else 1."""
    return FORMAT_2 if not enforced.missing(FORMAT_TWO.server_needs) else FORMAT_1


def look(
    bucket: Bucket,
    prefix: str,
    identity: str,
    provider: KeyProvider,
    checks: Callable[[], Enforced | None],
) -> tuple[int, Missing, bool]:
    """The format the store at ``prefix`` (of ``identity``) is in under ``auto``, what the look found
    missing (nothing where it did not look), and whether that is sure: a store key read, and on a
    store without one a HEAD of the mark, a listing (``store_keys.users_below``) and, if it finds
    objects, the store key read again and a look for users of format 2
    (``store_keys.refuse_lost_key``); for a new store, what its server enforces (``checks``, None
    where that is not known yet, when format 2 is taken for now and not sure). Format 2 writes its
    store key before anything of a user below the prefix, so users' objects with no key are format 1
    unless a key read after the listing finds one another process has just made, or a user of
    format 2 shows the key was lost."""
    if stored_store_key(bucket, prefix, identity, provider) is not None:
        return FORMAT_2, NONE_MISSING, True
    if bucket.exists(prefix + MIGRATED_NAME):
        return FORMAT_2, Missing(key=True), True
    if not users_below(bucket, prefix):
        enforced = checks()
        if enforced is not None and best_format(enforced) == FORMAT_1:
            return FORMAT_1, NONE_MISSING, True
        return FORMAT_2, Missing(key=True, mark=True, anything=True), enforced is not None
    if stored_store_key(bucket, prefix, identity, provider) is not None:
        return FORMAT_2, NONE_MISSING, True
    if refuse_lost_key(bucket, prefix, identity, provider, marked=False) is not None:
        return FORMAT_2, NONE_MISSING, True
    return FORMAT_1, NONE_MISSING, True
