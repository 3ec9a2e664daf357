"""Which storage format a store is served in: the setting ``auto`` (the default) and what it picks.

``auto`` serves a store in format 2 (private names, ``docs/format-v2.md``) unless the store already
holds format-1 users or its server cannot serve format 2: format 2 where the store key or the mark
of a migrated store is there; for a new store (nothing below the prefix but the store's own
objects), the best format its server enforces the conditions of (``server_checks``); format 1
where users' objects lie below the prefix and neither is there (a store written before format 2),
unless some of them lie in namespaces of format 2 (then the store key is missing: refused). A store
moves from format 1 only when an operator sets format 2 and runs ``s3memory migrate``. What a
process found is kept for its life by the store (``store.Store``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

from s3memory.crypto import FORMAT_VERSION, PLACED_FORMAT, KeyProvider
from s3memory.errors import IntegrityError
from s3memory.formats.names import namespace_shaped
from s3memory.formats.store_keys import MIGRATED_NAME, NONE_MISSING, STORE_KEY_NAME, Missing, stored_store_key
from s3memory.storage.bucket import Bucket
from s3memory.storage.conditions import Enforced
from s3memory.storage.nesting import STORE_OBJECTS

AUTO_FORMAT: Literal["auto"] = "auto"
StorageFormat: TypeAlias = Literal[1, 2, "auto"]
"""A storage format setting: 1, 2, or ``"auto"`` (2 for a new store, else the store's own)."""

_STORE_OBJECTS_AT_MOST = 16
"""Keys per page when looking past the store's own objects: more than a store keeps (its key, mark
and record, and what a probe or two cut short left), so one page almost always does."""


def checked_format(value: object) -> StorageFormat:
    """``value`` as a storage format setting; ``ValueError`` for anything but 1, 2 or ``"auto"``."""
    if value == AUTO_FORMAT or (value in (FORMAT_VERSION, PLACED_FORMAT) and type(value) is int):
        return value  # type: ignore[return-value]
    raise ValueError(f'storage_format must be {FORMAT_VERSION}, {PLACED_FORMAT} or "{AUTO_FORMAT}"')


def look(
    bucket: Bucket,
    prefix: str,
    identity: str,
    provider: KeyProvider,
    checks: Callable[[], Enforced | None],
) -> tuple[int, Missing, bool]:
    """The format the store at ``prefix`` (of ``identity``) is in under ``auto``, what the look found
    missing (nothing where it did not look), and whether that is sure: a store key read, and on a
    store without one a HEAD of the mark, a listing or two and, if they find objects, the store key
    read again and a listing of namespaces; for a new store, what its server enforces (``checks``,
    None where that is not known yet, when format 2 is taken for now and not sure). Format 2
    writes its store key before anything of a user below the prefix, so users' objects with no key
    are format 1 unless a key read after the listing finds one another process has just made, or a
    namespace of format 2 shows the key was lost."""
    if stored_store_key(bucket, prefix, identity, provider) is not None:
        return PLACED_FORMAT, NONE_MISSING, True
    if bucket.exists(prefix + MIGRATED_NAME):
        return PLACED_FORMAT, Missing(key=True), True
    if not users_below(bucket, prefix):
        enforced = checks()
        if enforced is not None and enforced.best_format() == FORMAT_VERSION:
            return FORMAT_VERSION, NONE_MISSING, True
        return PLACED_FORMAT, Missing(key=True, mark=True, anything=True), enforced is not None
    if stored_store_key(bucket, prefix, identity, provider) is not None:
        return PLACED_FORMAT, NONE_MISSING, True
    if _any_namespace_shaped(bucket, prefix):
        raise IntegrityError(
            "Error: The store key is missing from a store that holds users of storage format 2: their "
            f"names cannot be read without it, and format 1 would not see them. Restore {prefix}"
            f"{STORE_KEY_NAME} (an earlier version, or a backup); nothing was changed. A store of format "
            "1 whose user ids look like format-2 names is served with S3MEMORY_STORAGE_FORMAT=1."
        )
    return FORMAT_VERSION, NONE_MISSING, True


def users_below(bucket: Bucket, prefix: str) -> bool:
    """True if anything but the store's own objects (``STORE_OBJECTS``, directly at ``prefix``) lies
    below ``prefix``: a namespace (a user id beginning ``s3memory.`` included) or a stray object.
    One delimited listing, unless a page of it holds only the store's own objects (a few)."""
    for page in bucket.pages(prefix, delimiter=True, max_keys=_STORE_OBJECTS_AT_MOST):
        strays = [listed for listed in page.objects if not listed.key.startswith(prefix + STORE_OBJECTS)]
        if page.prefixes or strays:
            return True
    return False


def _any_namespace_shaped(bucket: Bucket, prefix: str) -> bool:
    """True if a namespace below ``prefix`` has format 2's shape (``names.namespace_shaped``): every
    page of namespaces until one is found, so that no number of planted names can hide one. Only a
    store of format 1 under ``auto`` pays it, once per process: a listing per 1,000 users."""
    return any(
        namespace_shaped(name[len(prefix) : -1])
        for page in bucket.pages(prefix, delimiter=True)
        for name in page.prefixes
    )
