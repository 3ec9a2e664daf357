"""The store of format 2: its identity, and its store key (the root of private names), wrapped again
by a rotation under a local master key (``rewrap_store_key``).

A store is a key prefix in a bucket, named by a configured store id (by default the bucket's name:
set it to the source's id to read a replica). Its identity, a digest of the id and the prefix, is
bound into every format-2 object and data key, so objects copied between stores, or between
overlapping prefixes, are refused. The store key is random, made once and kept wrapped (by KMS, or
by the local master key) at ``<prefix>s3memory.storage.bucket-key``: outside every user's namespace.
A store found without one gets a new one only if it holds no user of format 2 (``refuse_lost_key``),
whatever the format setting: a new key would show those users an empty memory and hide their names.
"""

from __future__ import annotations

import hashlib
import struct
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from s3memory.core.files import LOST, Lost, retried
from s3memory.crypto import STORE_KEY_MAGIC, KeyProvider, LocalKeyProvider
from s3memory.errors import (
    CommandError,
    ConditionalConflict,
    IntegrityError,
    PreconditionFailed,
    StorageError,
)
from s3memory.formats.names import namespace_shaped
from s3memory.storage.bucket import Bucket
from s3memory.storage.nesting import STORE_OBJECTS

STORE_KEY_NAME = "s3memory.storage.bucket-key"
"""Where, below the store's prefix, the wrapped store key lies."""
MIGRATED_NAME = "s3memory.migrated"
"""Below the store's prefix: the mark of a store with no format-1 files left (``formats.upgrade``). A
store is marked only once its store key exists, so a marked store without one has lost it (refused
while users of format 2 remain: ``refuse_lost_key``)."""
STORE_KEY_MAX_BYTES = 4096
_IDENTITY_LABEL = b"s3memory/v2/store"
_STORE_OBJECTS_AT_MOST = 16
"""Keys of the first listing of what lies below a prefix: more than a store keeps of its own (its
key, mark and record, and what a probe or two cut short left), so it almost always does."""
EMPTY_NAMESPACE_LOOKS = 16
"""Namespaces of format 2's shape with nothing below them that ``holds_format_2_users`` looks at
before it takes the store to hold a user of format 2 (only planted folders take that many)."""

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
    A store that ``missing`` says has neither key nor mark gets one without another look; one that
    has nothing below its prefix (``missing.anything``, or ``users_below``: one listing) gets one
    too, and any other only where ``refuse_lost_key`` finds no user of format 2.
    ``mark_found`` answers whether the store's mark is there from a read sent alongside the key's
    (the first look only; either order is safe, as a key found missing is read again after a mark)."""

    def attempt(number: int) -> tuple[bytes, Missing] | Lost:
        nonlocal missing
        if number > 0 or not (missing.key and missing.mark):
            key = stored_store_key(bucket, prefix, identity, provider)
            if key is not None:
                return key, NONE_MISSING
            marked = mark_found() if number == 0 and mark_found else bucket.exists(prefix + MIGRATED_NAME)
            if marked:
                # the mark is written only once the key is: read after the mark, a key still
                # missing is lost (the first read may have come before another process's write)
                key = stored_store_key(bucket, prefix, identity, provider)
                if key is not None:
                    return key, NONE_MISSING
            missing = Missing(key=True, mark=not marked)  # whatever else was missing may be there now
        if not missing.anything:
            if users_below(bucket, prefix):
                key = refuse_lost_key(bucket, prefix, identity, provider, marked=not missing.mark)
                if key is not None:
                    return key, NONE_MISSING
            else:
                missing = Missing(key=True, mark=missing.mark, anything=True)
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


def rewrap_store_key(bucket: Bucket, prefix: str, identity: str, provider: LocalKeyProvider) -> None:
    """With a local master key (a rotation's): wrap the store key (the root of every private name) again
    under the current master key if a previous one wraps it, so that dropping the previous key from
    the settings locks no name out. One conditional write; the key itself stays as it is, so what
    processes learned of it stays true."""
    name = prefix + STORE_KEY_NAME
    current = STORE_KEY_MAGIC + b"L" + struct.pack(">I", provider.version)

    def attempt(_number: int) -> Lost | None:
        stored = bucket.get(name, max_bytes=STORE_KEY_MAX_BYTES)
        if stored is None or stored.body.startswith(current):
            return None
        wrapped = provider.wrap_store_key(identity, provider.open_store_key(identity, stored.body))
        try:
            bucket.put(name, wrapped, if_match=stored.etag)
        except (PreconditionFailed, ConditionalConflict):
            return LOST  # another rotation wrapped it (read next), or it was written meanwhile
        return None

    retried(
        attempt,
        lambda: CommandError(
            "Error: The store key kept changing while it was wrapped again under the current local master "
            "key; no file was sealed again. Run the rotation again."
        ),
    )


def users_below(bucket: Bucket, prefix: str) -> bool:
    """True if an object other than the store's own (``STORE_OBJECTS``, directly at ``prefix``) lies
    below ``prefix``: a user's (a user id beginning ``s3memory.`` included) or a stray one. A folder
    with nothing in it, which SeaweedFS lists once its objects are deleted, is nothing. One listing
    without delimiter, of ``_STORE_OBJECTS_AT_MOST`` keys; past a page of only the store's own
    objects, a page of 1,000 more from its last key."""
    start: str | None = None
    size: int | None = _STORE_OBJECTS_AT_MOST
    while True:
        page = next(bucket.pages(prefix, max_keys=size, start_after=start))
        if any(not _store_object(prefix, listed.key) for listed in page.objects):
            return True
        if not page.truncated or not page.objects:
            return False
        start, size = page.objects[-1].key, None


def holds_format_2_users(bucket: Bucket, prefix: str) -> bool:
    """True if an object lies below a namespace of format 2's shape (``names.namespace_shaped``) at
    ``prefix``: a user of format 2, whose names only the store key reads. Namespaces are listed
    until the first of that shape (a listing per 1,000, as many as a store of format 1 holds: no
    number of planted names hides one); one key listed without delimiter from it answers: an object
    below it (found), none after it (none), or the first object after it, from which the
    namespaces are listed again. A folder with nothing in it (SeaweedFS lists them) is passed in one
    look with every empty folder up to the next object; past ``EMPTY_NAMESPACE_LOOKS`` looks, the
    store is taken to hold a user (only folders planted between other objects take that many, and
    an object planted below one is refused as well)."""
    start: str | None = None
    for _look in range(EMPTY_NAMESPACE_LOOKS):
        namespace = _next_shaped(bucket, prefix, start)
        if namespace is None:
            return False
        after = next(bucket.pages(prefix, max_keys=1, start_after=namespace)).objects
        if not after:
            return False
        first, slash, below = after[0].key[len(prefix) :].partition("/")
        if slash and below and namespace_shaped(first):
            return True
        start = prefix + first  # its namespace (a folder's own key, too) is listed again
    return True


def refuse_lost_key(
    bucket: Bucket, prefix: str, identity: str, provider: KeyProvider, *, marked: bool
) -> bytes | None:
    """Where the store key of a store with objects below its prefix was found missing (and its
    mark found there if ``marked``): None if the store holds no user of format 2
    (``holds_format_2_users``), so a new key hides nothing; else the key if another process made it
    meanwhile (read again: format 2 writes its key before anything of a user); else
    ``IntegrityError``, naming the key to restore. Both ``auto`` (``formats.choice``) and a format
    set to 2 (``store_key``) go by it."""
    if not holds_format_2_users(bucket, prefix):
        return None
    key = stored_store_key(bucket, prefix, identity, provider)
    if key is not None:
        return key
    if marked:
        raise IntegrityError(
            "Error: The store key is missing from a store that has one: its names cannot be read "
            f"without it. Restore {prefix}{STORE_KEY_NAME} (an earlier version, or a backup); "
            "nothing was changed."
        )
    raise IntegrityError(
        "Error: The store key is missing from a store that holds users of storage format 2: their "
        f"names cannot be read without it, and format 1 would not see them. Restore {prefix}"
        f"{STORE_KEY_NAME} (an earlier version, or a backup); nothing was changed. A store of format "
        "1 whose user ids look like format-2 names is served with S3MEMORY_STORAGE_FORMAT=1."
    )


def _store_object(prefix: str, key: str) -> bool:
    """True if ``key`` is one of the store's own objects: directly at ``prefix``, named ``s3memory.*``."""
    name = key[len(prefix) :]
    return name.startswith(STORE_OBJECTS) and "/" not in name


def _next_shaped(bucket: Bucket, prefix: str, start: str | None) -> str | None:
    """The first namespace below ``prefix`` (after ``start``) of format 2's shape, or None."""
    for page in bucket.pages(prefix, delimiter=True, start_after=start):
        for namespace in page.prefixes:
            if namespace_shaped(namespace[len(prefix) : -1]):
                return namespace
    return None
