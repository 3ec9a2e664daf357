"""The store an operator works on, and what every operator task shares of it: the store (resolved on
first need), its limits, who writes, its format, and one user's memory on it, refused where it cannot
exist. ``operations.Operations`` is made of the tasks built on this (``inventory``, ``verify``,
``erase``, ``transfer``).

Both storage formats are served (``docs/format-v2.md``). On format 2 ("private names") a store with
no store key yet holds no memory, and what only reads answers as for an empty store, writing nothing
(not even a store key).
"""

from __future__ import annotations

from typing import Self, Unpack

from s3memory.core.paths import SHARED_PRINCIPAL, check_owner, owner_of
from s3memory.crypto import KeyProvider
from s3memory.errors import CommandError, shown
from s3memory.formats.strategy import Format, numbered
from s3memory.memory import MemoryOptions, S3Memory
from s3memory.placed import PlacedMemory
from s3memory.settings import Limits
from s3memory.storage.bucket import Bucket
from s3memory.storage.nesting import check_no_store_at, check_not_nested
from s3memory.store import Store, StoreOptions, reaching, refuse_unknown


class StoreContext:
    """One store (bucket and prefix, in its storage format) as an operator's tasks reach it."""

    def __init__(
        self,
        bucket: Bucket,
        key_provider: KeyProvider,
        *,
        limits: Limits | None = None,
        actor: str | None = None,
        **options: Unpack[StoreOptions],
    ) -> None:
        refuse_unknown(options, StoreOptions.__optional_keys__, "Operations")
        store = Store(bucket, key_provider, **options)
        self._serve(store, limits, actor)

    @classmethod
    def over(cls, store: Store, *, limits: Limits | None = None, actor: str | None = None) -> Self:
        """The operations of the store ``store`` (one ``assembly.make_store`` built)."""
        operations = cls.__new__(cls)
        operations._serve(store, limits, actor)
        return operations

    def _serve(self, store: Store, limits: Limits | None, actor: str | None) -> None:
        self.store = store
        """The store (``store.Store``): built without a request, resolved on first need."""
        self.bucket = store.bucket
        """The store's bucket (``Bucket``)."""
        self.key_provider = store.key_provider
        self.prefix = store.prefix
        self.limits = limits or Limits()
        self.actor = actor
        """Named as the author of what restore and import write."""
        self.weak_server = store.weak_server
        self.store_id = store.store_id
        """Format 2: the store's id (None: the bucket's name), bound into every object."""
        self.store_identity = store.identity
        """The store's identity (``store_keys.store_identity``), whatever its format."""
        self._outside_other_stores = False

    @property
    def storage_format(self) -> int:
        """The format the store is served in (``auto``: found in the store, ``formats/choice.py``, on
        first need; for a new store whose server was never probed, format 2 until a write finds
        out). Never probes the server or writes."""
        return self.store.found_format()

    @property
    def format(self) -> Format:
        """The strategy of the format the store is served in (``formats.strategy``), found as
        ``storage_format`` is."""
        return numbered(self.storage_format)

    def memory_options(self) -> MemoryOptions:
        """The options of an ``S3Memory`` of this store over its bucket: where the memory lives, in
        which format (the store's options, the format's setting among them: a memory serves ``auto``
        as found here, but decides a new store's format itself, probing its server, where this found
        it only for now), and the limits (as ``assembly.memory_options`` gives them)."""
        return {**self.store.options, **self.limits.memory_options()}

    def check_nesting(self) -> None:
        """Refuse (``errors.NestedStore``) a store whose prefix lies inside another store's; looked
        at once (one listing per level of the prefix) before the first command that acts on users."""
        if not self._outside_other_stores:
            reaching(self.bucket, lambda: check_not_nested(self.bucket, self.prefix))
            self._outside_other_stores = True

    def store_key(self) -> bytes | None:
        """Format 2: the store key, or None while the store has none (never made here)."""
        return self.store.stored_key()

    def memory(self, user_id: str) -> S3Memory:
        """The user's memory, with the store's format and limits (``ValueError`` for an unusable
        user id; ``NestedStore`` where this store lies inside another's, or another store lies at
        the user's namespace). On a format-2 store without a store key, this makes one (see
        ``existing_memory``)."""
        self.check_nesting()
        options: MemoryOptions = {**self.limits.memory_options(), "actor": self.actor}
        memory = S3Memory(self.store, owner_of(user_id), **options)
        check_no_store_at(self.bucket, memory.placed.layout.namespace)
        return memory

    def existing_memory(self, user_id: str) -> S3Memory | None:
        """The user's memory, or None on a format-2 store that has no store key yet, where no user
        has any object: what only reads or deletes takes None for an empty memory and writes
        nothing. ``ValueError`` for an unusable user id, either way."""
        check_owner(user_id, self.prefix)
        self.check_nesting()
        if self.format.names_by_store_key and self.store_key() is None:
            return None
        return self.memory(user_id)

    def placed(self, user_id: str) -> PlacedMemory:
        """The user's memory placed in the store (``memory``'s): what an operator task reads, writes
        and deletes, with the model's commands left to ``memory``."""
        return self.memory(user_id).placed

    def existing_placed(self, user_id: str) -> PlacedMemory | None:
        """``existing_memory``, placed in the store (None where no memory exists)."""
        memory = self.existing_memory(user_id)
        return None if memory is None else memory.placed

    def check_exists(
        self, user_id: str, memory: PlacedMemory | None = None, *, through_time: bool = False
    ) -> None:
        """Refuse (``CommandError``, naming ``s3memory users`` or ``s3memory shared``) a user or shared
        memory that does not exist: no object lies below its namespace (``through_time``, for
        history and restore: no version and no delete marker either), as ``users`` and ``shared``
        tell. One listing of one key, never a write; a folder with nothing in it (SeaweedFS lists
        one once its objects are deleted) is nothing. ``memory``: the user's, if built already (else
        ``existing_memory``: on a format-2 store without a store key, no memory exists)."""
        if memory is None:
            memory = self.existing_placed(user_id)
        if memory is not None:
            namespace = memory.layout.namespace
            if through_time and any(next(self.bucket.versions(namespace, max_keys=1))):
                return
            if not through_time and self.bucket.any_below(namespace):
                return
        raise CommandError(no_such_memory(user_id))


def no_such_memory(user_id: str) -> str:
    """Why a command on ``user_id`` (a user id, or ``shared/<name>``) found no memory, and where the
    operator finds the names there are."""
    if user_id.startswith(SHARED_PRINCIPAL):
        what, listing = f"The shared memory {shown(user_id)}", "`s3memory shared` lists its shared memories"
    else:
        what, listing = f"The user {shown(user_id)}", "`s3memory users` lists its users"
    return f"Error: {what} does not exist in this store: {listing} (--bucket and --prefix choose the store)."
