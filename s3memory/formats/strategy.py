"""The storage formats: one strategy per format, holding every decision that differs between them.

Format 1 (``FormatOne``) names users and paths in plain keys, binds each file to its path inside the
object, and moves a file by reading it and sealing it again at its new path. Format 2
(``FormatTwo``) names them privately under the store key, places each file at its path by a sealed
record in its metadata, moves a file by a copy made on the server, and moves a user's format-1 files
before their first command. ``docs/format-v2.md`` has the details.

The format a store is served in is chosen once (``formats.choice`` under ``auto``, resolved by
``store.Store``); ``numbered`` turns its number into the strategy, and every other module asks
the strategy: what the server must enforce (``server_needs``), the object format ``crypto`` seals
in (``object_format``, the version byte it writes and checks in each header), where a user's
objects live. No module outside this one (and ``formats.choice``, the chooser) compares a format
number, and none outside ``s3memory/formats`` indexes by one or picks one:
``tests/formats/test_format_seam.py`` fails on either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import ClassVar

from s3memory.core.files import ORIGIN_METADATA, MemoryFiles
from s3memory.core.keyvault import KeyVault
from s3memory.core.moves import Mover, RewriteMover, ServerCopyMover
from s3memory.core.paths import KeyLayout, MemoryPath, SharedName, UserId, validate_namespace
from s3memory.core.quota import Usage
from s3memory.crypto import (
    FORMAT_1,
    FORMAT_2,
    DataKeySource,
    KeyOwner,
    KeyProvider,
    LocalKeyProvider,
    ObjectCipher,
    Opened,
    Sealed,
)
from s3memory.formats.names import NameCipher, namespace_of
from s3memory.formats.store_keys import rewrap_store_key
from s3memory.formats.upgrade import SettledUsers, Upgrade, born_in_format_2
from s3memory.storage import conditions
from s3memory.storage.bucket import Bucket

__all__ = ["FORMATS", "Format", "FormatOne", "FormatTwo", "numbered"]


class Format(ABC):
    """What one storage format decides: where a user's objects live and whose keys seal them, how
    a file is sealed, opened and moved, and what the operator's work does differently."""

    storage_format: ClassVar[int]
    """The format's number, as settings and reports give it (``PlacedMemory.format.storage_format``)."""
    object_format: ClassVar[int]
    """The object format its objects are sealed in (``crypto.ObjectCipher``): the version byte of
    each object's header (``docs/format.md``, ``docs/format-v2.md``; frozen by ``tests/vectors``)."""
    server_needs: ClassVar[frozenset[str]]
    """The request conditions (``storage.conditions``) the S3 server must enforce for this format to
    keep every write it acknowledges: the store's gate refuses to serve it where one does not hold
    (``docs/servers.md``). ``BATCH_DELETE_ETAGS`` is needed by neither format: without it, batches
    become conditional deletes of one key each."""
    places_files: ClassVar[bool]
    """True if a file is placed at its path by a place record in its metadata (format 2), so a
    header read, written or copied there can be remembered as verified (``files.VerifiedHeaders``)."""
    keeps_origins: ClassVar[bool]
    """True if a moved file's metadata names the path it came from (``files.ORIGIN_METADATA``),
    which history shows as ``renamed_from`` (format 1)."""
    has_store_identity: ClassVar[bool]
    """True if the store's identity and store key are bound into its objects (format 2)."""
    names_outlive_data_keys: ClassVar[bool]
    """True if erasing a user's data keys leaves the user's private names readable with the store
    key, which stays (format 2)."""
    moves_older_formats: ClassVar[bool]
    """True if a user's files of an older format are moved into this one (``upgrade``; the
    operator's ``migrate`` moves every user's) (format 2)."""
    settles_after_rotation: ClassVar[bool]
    """True if a rotation lists the files again once every file is sealed anew, for copies made on
    the server meanwhile (format 2, ``rotation._settle``)."""
    names_by_store_key: ClassVar[bool]
    """True if a user's namespace is a token made with the store key (format 2), not the user id:
    an operator finds the users by decrypting every namespace, and a store without a store key holds
    no user yet (what only reads answers as for an empty store, and makes none)."""
    serves_shared_memories: ClassVar[bool]
    """True if a shared memory (``paths.SharedName``) can live here with its name as private as a
    user id: sealed into a namespace token no user's can equal (format 2). Format 1 would write
    the name in plain text, inside the namespace of a user called ``shared``."""

    @property
    def name(self) -> str:
        """The format as refusals name it: ``storage format <number>``."""
        return f"storage format {self.storage_format}"

    @abstractmethod
    def placement(
        self, prefix: str, identity: str, key: bytes | None, user_id: str
    ) -> tuple[KeyLayout, KeyOwner]:
        """Where ``user_id``'s objects live below ``prefix`` and whose data keys seal them, in a store
        of ``identity`` with the store key ``key`` (format 2)."""

    @abstractmethod
    def seal_file(self, cipher: ObjectCipher, path: str, plaintext: bytes, author: str | None) -> Sealed:
        """A memory file at ``path`` written by ``author``, sealed as this format seals one."""

    @abstractmethod
    def open_file(self, cipher: ObjectCipher, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        """A memory file read at ``path``, opened as this format opens one (refused unless it was
        sealed for this user and placed at ``path``)."""

    @abstractmethod
    def mover(self, files: MemoryFiles, clock: Callable[[], float]) -> Mover:
        """How ``files`` move to a new path, timing copies by ``clock``."""

    def origin_metadata(self, cipher: ObjectCipher, origin: MemoryPath) -> dict[str, str]:
        """The metadata that names ``origin`` on a file moved from it (none unless ``keeps_origins``)."""
        return {}

    def kept_origin(self, metadata: Mapping[str, str]) -> str | None:
        """The origin a file sealed again keeps from its ``metadata`` (None unless ``keeps_origins``)."""
        return None

    def upgrade(
        self,
        bucket: Bucket,
        user_id: str,
        prefix: str,
        provider: KeyProvider,
        marked: Callable[[], bool],
        files: MemoryFiles,
        clock: Callable[[], float],
        settled: SettledUsers,
        max_file_bytes: int,
    ) -> Upgrade | None:
        """The move of ``user_id``'s files of an older format into ``files`` (None where this format
        moves none: ``moves_older_formats``). Format 2 moves the user's format-1 files (up to
        ``max_file_bytes`` each) before the first command unless the store is marked as holding
        none (``upgrade.Upgrade``): read as format 1 sealed them, never written there."""
        if not self.moves_older_formats:
            return None
        layout, owner = FORMAT_ONE.placement(prefix, "", None, user_id)
        cipher = ObjectCipher(
            DataKeySource(provider, owner, KeyVault(bucket, layout)), FORMAT_ONE.object_format
        )
        legacy = MemoryFiles(bucket, layout, cipher, FORMAT_ONE, max_file_bytes, Usage(None, lambda: (0, 0)))
        return Upgrade(legacy, FORMAT_ONE.mover, marked, files, clock, settled)

    def rewrap_store_key(
        self, bucket: Bucket, prefix: str, identity: str, provider: LocalKeyProvider
    ) -> None:
        """Wrap the store key at ``prefix`` again under ``provider``'s current master key, if a
        previous one wraps it (``store_keys.rewrap_store_key``: a local rotation's, so that dropping
        the previous key locks no name out); nothing where the format has no store key
        (``has_store_identity``)."""
        if self.has_store_identity:
            rewrap_store_key(bucket, prefix, identity, provider)

    def older_layouts(
        self,
        bucket: Bucket,
        prefix: str,
        identity: str,
        key: Callable[[], bytes | None],
        owner: UserId | SharedName,
    ) -> list[KeyLayout]:
        """Where an older format may have left ``owner``'s objects below ``prefix`` (files not moved
        yet, wrapped keys, history), which erasing the user removes too: none where this format
        moves none (``moves_older_formats``); format 2: the user's format-1 namespace, unless the
        store's mark authenticates (with the store key, ``key()``) as born in format 2 (a shared
        memory has none)."""
        if (
            self.moves_older_formats
            and not born_in_format_2(bucket, prefix, identity, key())
            and isinstance(owner, UserId)
        ):
            return [FORMAT_ONE.placement(prefix, "", None, owner)[0]]
        return []


class FormatOne(Format):
    """Format 1: plain names, each file bound to its path and author inside its object."""

    storage_format = 1
    object_format = FORMAT_1
    server_needs = frozenset(
        {conditions.PUT_IF_NONE_MATCH, conditions.PUT_IF_MATCH, conditions.DELETE_IF_MATCH}
    )
    places_files = False
    keeps_origins = True
    has_store_identity = False
    names_outlive_data_keys = False
    moves_older_formats = False
    settles_after_rotation = False
    names_by_store_key = False
    serves_shared_memories = False

    def placement(
        self, prefix: str, identity: str, key: bytes | None, user_id: str
    ) -> tuple[KeyLayout, KeyOwner]:
        return KeyLayout(validate_namespace(user_id, prefix)), KeyOwner(user_id)

    def seal_file(self, cipher: ObjectCipher, path: str, plaintext: bytes, author: str | None) -> Sealed:
        return cipher.seal_bound_file(path, plaintext, author)

    def open_file(self, cipher: ObjectCipher, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        return cipher.open_bound_file(path, blob, metadata)

    def mover(self, files: MemoryFiles, clock: Callable[[], float]) -> Mover:
        return RewriteMover(files, clock)

    def origin_metadata(self, cipher: ObjectCipher, origin: MemoryPath) -> dict[str, str]:
        return {ORIGIN_METADATA: cipher.fingerprint(origin.canonical)}

    def kept_origin(self, metadata: Mapping[str, str]) -> str | None:
        return metadata.get(ORIGIN_METADATA)


class FormatTwo(Format):
    """Format 2: private names under the store key, files placed by records, moved on the server."""

    storage_format = 2
    object_format = FORMAT_2
    server_needs = FormatOne.server_needs | {
        conditions.COPY_IF_NONE_MATCH,
        conditions.COPY_SOURCE_IF_MATCH,
        conditions.COPY_REPLACES_METADATA,
    }
    """Format 1's, and CopyObject's conditions: a file moves by a copy made on the server."""
    places_files = True
    keeps_origins = False
    has_store_identity = True
    names_outlive_data_keys = True
    moves_older_formats = True
    settles_after_rotation = True
    names_by_store_key = True
    serves_shared_memories = True

    def placement(
        self, prefix: str, identity: str, key: bytes | None, user_id: str
    ) -> tuple[KeyLayout, KeyOwner]:
        if key is None:
            raise ValueError("format 2 places a user's memory with the store key")
        token = namespace_of(key, user_id)
        return KeyLayout(f"{prefix}{token}/", NameCipher(key, user_id)), KeyOwner(user_id, identity, token)

    def seal_file(self, cipher: ObjectCipher, path: str, plaintext: bytes, author: str | None) -> Sealed:
        return cipher.seal_placed_file(path, plaintext, author)

    def open_file(self, cipher: ObjectCipher, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        return cipher.open_placed_file(path, blob, metadata)

    def mover(self, files: MemoryFiles, clock: Callable[[], float]) -> Mover:
        return ServerCopyMover(files, clock)


FORMAT_ONE = FormatOne()
FORMAT_TWO = FormatTwo()
FORMATS: Mapping[int, Format] = {FORMAT_ONE.storage_format: FORMAT_ONE, FORMAT_TWO.storage_format: FORMAT_TWO}
"""Every format this version serves, by number."""


def numbered(storage_format: int) -> Format:
    """The strategy of format ``storage_format`` (``ValueError`` for a format this version does not
    serve)."""
    try:
        return FORMATS[storage_format]
    except KeyError:
        raise ValueError(f"storage format {storage_format} is not served by this version") from None
