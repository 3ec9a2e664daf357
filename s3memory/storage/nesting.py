"""Stores inside stores: a store whose key prefix lies inside another's in the same bucket.

A store is a key prefix in a bucket. Every store, once used, keeps objects of its own directly at
``<prefix>s3memory.<name>`` (format 2's store key and mark, the record of the server it was
checked on), and nothing else of s3memory lies directly below a prefix: a user's objects are in
``<prefix><namespace>/internal/`` and ``.../memories/``. A store whose prefix lies inside another's
would be taken for that store's users (format 1 names a user by the first segment below the
prefix), listed, read and erased with them, and would take the other's folders for users of its
own; on format 1, where nothing binds an object to its prefix, objects also replay between the two.
This module finds such a nesting in a number of requests bounded by the prefix's depth: the
protocol and its invariants are ``docs/operations.md`` "Stores inside stores".
"""

from __future__ import annotations

from s3memory.errors import AccessDenied, NestedStore, shown
from s3memory.storage.bucket import Bucket
from s3memory.storage.concurrency import parallel

STORE_OBJECTS = "s3memory."
"""How the name of every object a store keeps of its own (directly below its prefix) begins."""
PAGE = 1000
"""Keys (and common prefixes) one look at a prefix reads: the first page of its listing."""


def enclosing_prefixes(prefix: str) -> list[str]:
    """The prefixes a store at ``prefix`` lies inside, outermost first: the bucket's root (``""``)
    and each run of its leading segments (``"a/b/"``: ``""``, ``"a/"``); none for the root."""
    segments = prefix.split("/")[:-1]
    return ["".join(segment + "/" for segment in segments[:depth]) for depth in range(len(segments))]


def store_objects_at(bucket: Bucket, prefix: str) -> list[str] | None:
    """The keys of the objects a store keeps of its own at ``prefix`` (one delimited listing, its
    first page), or None where this role may not list there (its permissions stop at its own
    prefix: it cannot see a store there)."""
    try:
        page = next(bucket.pages(prefix + STORE_OBJECTS, delimiter=True, max_keys=PAGE))
    except AccessDenied:
        return None
    return [listed.key for listed in page.objects]


def check_not_nested(bucket: Bucket, prefix: str) -> None:
    """Refuse (``NestedStore``) a store at ``prefix`` that lies inside another store's prefix: one
    whose objects (``STORE_OBJECTS``) lie at any prefix enclosing this one. One listing per
    enclosing prefix (the depth of ``prefix``: one for ``users/``, none for the root), in parallel;
    an enclosing prefix this role may not list is passed over."""
    above = enclosing_prefixes(prefix)
    found: dict[str, list[str] | None] = {}
    parallel(lambda outer: found.update({outer: store_objects_at(bucket, outer)}), above)
    for outer in above:
        keys = found[outer]
        if keys:
            fix = (
                "each would list, read and erase the other's objects as its own users'. Give this store a "
                "prefix outside every other store's (S3MEMORY_PREFIX, --prefix), or a bucket of its own. "
                "Nothing was changed."
            )
            inside = f"Error: This store's prefix {_named(prefix)} lies inside {_named(outer)}, the prefix of"
            raise NestedStore(
                f"{inside} another store ({shown(keys[0])} is there): {fix}", f"{inside} another store: {fix}"
            )


def check_no_store_at(bucket: Bucket, namespace: str) -> None:
    """Refuse (``NestedStore``) to act on a user whose namespace holds another store's objects
    (one listing): that store lies inside this one's prefix, and nothing there is the user's."""
    keys = store_objects_at(bucket, namespace)
    if keys:
        raise NestedStore(
            f"Error: Another store lies at {_named(namespace)}, this user's namespace "
            f"({shown(keys[0])} is there): it is not the user's, and nothing was read, written or "
            "erased there. Move that store to a prefix outside this one's (its S3MEMORY_PREFIX), or "
            f"delete {shown(keys[0])} if no store of yours wrote it. Nothing was changed.",
            "Error: Another store lies in a user's namespace: it is not the user's, and nothing was read, "
            "written or erased there. Move that store to a prefix outside this one's (its S3MEMORY_PREFIX). "
            "Nothing was changed.",
        )


def _named(prefix: str) -> str:
    return f"'{shown(prefix)}'" if prefix else "the bucket's root"
