"""Client-side encryption: the object format, AES-256-GCM with key commitment, and key providers.

Object format, version 1 (all integers big-endian)::

    magic "S3ME" | format 0x01 | key version (u32) | salt (32) | commitment (32) | nonce (12)
    | ciphertext | GCM tag (16)

Per object, HKDF-SHA256 over the user's data key and the random salt gives an encryption key and a
commitment key; the commitment is stored in the header and checked in constant time before
decrypting (as the committing suites of the AWS Encryption SDK do). The associated data is the
header plus the user id and the memory path, so a ciphertext moved to another user or path is refused,
and, for an object written by a named author, that author too (kept in the object's metadata, so a
changed, added or removed author is refused like a changed byte). ``docs/format.md`` has the details.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .authors import AUTHOR_MAX_CHARACTERS, author_metadata, author_of, validate_author
from .errors import IntegrityError, StorageError, aws_error_code

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient

MAGIC = b"S3ME"
FORMAT_VERSION = 1
PLACED_FORMAT = 2
"""Format 2: content bound to its user and store, placed at its path by its metadata."""
HEADER_METADATA = "s3memory-header"
"""Metadata of a format-2 file: its content header (URL-safe base64), so a rename can place a copy
of it without reading the content."""
PLACE_METADATA = "s3memory-place"
"""Metadata of a format-2 file: the place record (URL-safe base64 of nonce, sealed author block and
tag) that binds the content header to the file's path and names who wrote or moved it there."""
SALT_BYTES = 32
COMMITMENT_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
_HEADER = struct.Struct(f">4sBI{SALT_BYTES}s{COMMITMENT_BYTES}s{NONCE_BYTES}s")
HEADER_BYTES = _HEADER.size
OVERHEAD = HEADER_BYTES + TAG_BYTES
"""Ciphertext bytes beyond the plaintext: fixed, so listings give plaintext sizes without a GET."""

DATA_KEY_BYTES = 32
_OBJECT_KEYS_INFO = b"s3memory/v1/object-keys"
_FINGERPRINT_INFO = b"s3memory/v1/path-fingerprint"
_PLACE_INFO = b"s3memory/v2/place"
_PLACE_KEY_INFO = b"s3memory/v2/place-key"
_AUTHOR_BLOCK = 1 + AUTHOR_MAX_CHARACTERS
_LOCAL_DATA_KEY_SALT = b"s3memory/v1/local-data-key"
WRAPPED_KEY_MAGIC = b"S3MK\x01"
STORE_KEY_MAGIC = b"S3MS\x01"
_STORE_KEY_WRAP_INFO = b"s3memory/v2/store-key-wrap"
MAX_KEY_VERSION = 999_999_999
"""The highest key version: a wrapped key's name holds at most nine digits (``keyvault``)."""
MAX_KEY_CACHE_SECONDS = 300.0
"""The longest any process keeps what it learned of a user's keys, the current version included. A
rotation removes an old version only once the switch away from it is older than this
(``docs/rotation.md``)."""
FINGERPRINT_CHARACTERS = 32
"""The hex digits of a path fingerprint's digest."""
_HEX = frozenset("0123456789abcdef")
_VERSION = struct.Struct(">4sBI")
SEALED_VERSION_BYTES = _VERSION.size
"""The leading bytes of an object that name its key version."""
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


def plaintext_size(object_size: int) -> int:
    """The plaintext size of an object of ``object_size`` bytes in our format (0 if too small)."""
    return max(0, object_size - OVERHEAD)


def sealed_version(blob: bytes) -> int | None:
    """The key version the header of ``blob`` names (not authenticated), or None if ``blob`` does not
    begin as an object in our format (1 or 2)."""
    if len(blob) < SEALED_VERSION_BYTES:
        return None
    magic, format_version, version = _VERSION.unpack_from(blob)
    return int(version) if magic == MAGIC and format_version in (FORMAT_VERSION, PLACED_FORMAT) else None


def parsed_fingerprint(stored: str | None) -> tuple[int, str] | None:
    """The key version and the hex digest of a path fingerprint as stored in metadata:
    ``<version>:<hex>``, or a bare ``<hex>`` (written before fingerprints named their version: version
    1). None for anything else."""
    if stored is None:
        return None
    digits, colon, digest = stored.rpartition(":")
    version = key_version_named(digits) if colon else 1
    if version is None or len(digest) != FINGERPRINT_CHARACTERS or not set(digest) <= _HEX:
        return None
    return version, digest


def key_version_named(digits: str) -> int | None:
    """The key version ``digits`` spell (decimal, from 1 to ``MAX_KEY_VERSION``, no sign or leading
    zero), or None."""
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9 or str(int(digits)) != digits:
        return None
    version = int(digits)
    return version if 1 <= version <= MAX_KEY_VERSION else None


def _length_prefixed(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack(">I", len(data)) + data


def _object_keys(data_key: bytes, salt: bytes) -> tuple[bytes, bytes]:
    material = HKDF(algorithm=hashes.SHA256(), length=64, salt=salt, info=_OBJECT_KEYS_INFO).derive(data_key)
    return material[:32], material[32:]


@dataclass(frozen=True)
class Sealed:
    """An object as written: its bytes and the metadata that goes with them."""

    body: bytes
    metadata: dict[str, str]


@dataclass(frozen=True)
class Opened:
    """A memory file as read: its plaintext and the author its version names (None: unnamed)."""

    plaintext: bytes
    author: str | None


@dataclass(frozen=True)
class Place:
    """Where a format-2 object's metadata places its content: the content's header, and who wrote
    it or moved it there (None: unnamed)."""

    header: bytes
    author: str | None


class ObjectCipher:
    """Seals and opens one user's objects with that user's data keys.

    Format 1 (``store`` None) binds a file to its path in the associated data. Format 2 binds a
    file's content to its user and store only, and places it at its path by a sealed record in its
    metadata (``PLACE_METADATA``), so a copy made on the server with a new record renames it.
    Internal objects (job records, the access record) are bound to their name in both formats.
    """

    def __init__(self, keys: DataKeySource) -> None:
        owner = keys.owner
        self.format = FORMAT_VERSION if owner.store is None else PLACED_FORMAT
        self._scope = (b"" if owner.store is None else _length_prefixed(owner.store)) + _length_prefixed(
            owner.user_id
        )
        self._keys = keys

    def _sealed(self, plaintext: bytes, associated: Callable[[bytes], bytes]) -> bytes:
        """Our header and the ciphertext of ``plaintext``; ``associated`` gives the associated data
        for the header."""
        version, data_key = self._keys.current()
        salt = os.urandom(SALT_BYTES)
        nonce = os.urandom(NONCE_BYTES)
        encryption_key, commitment = _object_keys(data_key, salt)
        header = _HEADER.pack(MAGIC, self.format, version, salt, commitment, nonce)
        return header + AESGCM(encryption_key).encrypt(nonce, plaintext, associated(header))

    def _opened(
        self, name: str, blob: bytes, associated: Callable[[bytes], bytes], data_key: bytes | None = None
    ) -> bytes:
        """``blob`` decrypted: refused unless its header, commitment and tag check out (``data_key``:
        the key of the header's version, when the caller has it already)."""
        refused = _refused(name)
        if len(blob) < OVERHEAD:
            raise refused
        header = blob[:HEADER_BYTES]
        magic, format_version, version, salt, commitment, nonce = _HEADER.unpack(header)
        if magic != MAGIC or format_version != self.format:
            raise refused
        key = self._data_key(name, version) if data_key is None else data_key
        encryption_key, expected_commitment = _object_keys(key, salt)
        if not hmac.compare_digest(commitment, expected_commitment):
            raise refused
        try:
            return AESGCM(encryption_key).decrypt(nonce, blob[HEADER_BYTES:], associated(header))
        except InvalidTag:
            raise refused from None

    def _data_key(self, name: str, version: int) -> bytes:
        try:
            return self._keys.version(version)
        except IntegrityError:
            raise IntegrityError(
                f"Error: The stored object for {name} names data key version {version}, which this user "
                "does not have; it was not read."
            ) from None

    def _named(self, path: str, author: str | None) -> Callable[[bytes], bytes]:
        named = b"" if author is None else _length_prefixed(author)
        return lambda header: header + self._scope + _length_prefixed(path) + named

    def seal(self, path: str, plaintext: bytes, author: str | None = None) -> bytes:
        """Encrypt ``plaintext`` bound to the name ``path`` (a format-1 memory path, or an internal
        object's name), written by ``author`` when one is named."""
        return self._sealed(plaintext, self._named(path, author))

    def open(self, path: str, blob: bytes, author: str | None = None) -> bytes:
        """Decrypt an object sealed by ``seal`` for ``path`` (with metadata naming ``author``, or none);
        anything not sealed by us for this user, name and author is refused."""
        return self._opened(path, blob, self._named(path, author))

    def seal_file(self, path: str, plaintext: bytes, author: str | None) -> Sealed:
        """A memory file at ``path`` written by ``author``: format 1 binds both in the object,
        format 2 binds the content to the user and store and places it at ``path`` in its metadata."""
        if self.format == FORMAT_VERSION:
            return Sealed(self.seal(path, plaintext, author), author_metadata(author))
        body = self._sealed(plaintext, lambda header: header + self._scope)
        return Sealed(body, self.placed(path, body[:HEADER_BYTES], author))

    def open_file(self, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        """A memory file read at ``path`` with ``metadata``; refused unless we sealed it for this
        user (and store) and it was placed at ``path``."""
        if self.format == FORMAT_VERSION:
            author = author_of(metadata)
            return Opened(self.open(path, blob, author), author)
        header = blob[:HEADER_BYTES]
        version = _header_version(header)
        if version is None:
            raise _refused(path)
        data_key = self._data_key(path, version)  # once: it opens the place record and the content
        author = self._placed_author(path, header, metadata.get(PLACE_METADATA), data_key)
        return Opened(self._opened(path, blob, lambda header: header + self._scope, data_key), author)

    def placed(self, path: str, header: bytes, author: str | None) -> dict[str, str]:
        """The metadata that places the format-2 content of ``header`` at ``path``, written (or
        moved there) by ``author``: the header itself, and the place record sealing the author with
        the header and the path as associated data."""
        version = _header_version(header)
        if version is None:
            raise _refused(path)
        if author is not None:
            validate_author(author)
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(_place_key(self._data_key(path, version))).encrypt(
            nonce, _author_block(author), _place_data(header, path)
        )
        return {HEADER_METADATA: _b64(header), PLACE_METADATA: _b64(nonce + sealed)}

    def header_of(self, path: str, metadata: Mapping[str, str]) -> bytes:
        """The content header a format-2 object's metadata names (``placed``); ``IntegrityError`` when
        it names none. Not authenticated here: a copy placed with a wrong one fails to open."""
        header = _unb64(metadata.get(HEADER_METADATA), HEADER_BYTES)
        if header is None or _header_version(header) is None:
            raise _refused(path)
        return header

    def place_of(self, path: str, metadata: Mapping[str, str]) -> Place:
        """The content header and the author that a format-2 object's ``metadata`` places at
        ``path``; ``IntegrityError`` unless its place record authenticates for that header and
        path. The body is not read: one that is not the header's fails when it is opened."""
        header = self.header_of(path, metadata)
        return Place(header, self._placed_author(path, header, metadata.get(PLACE_METADATA)))

    def _placed_author(
        self, path: str, header: bytes, record: str | None, data_key: bytes | None = None
    ) -> str | None:
        version = _header_version(header)
        sealed = _unb64(record, NONCE_BYTES + _AUTHOR_BLOCK + TAG_BYTES)
        if version is None or sealed is None:
            raise _refused(path)
        key = self._data_key(path, version) if data_key is None else data_key
        try:
            block = AESGCM(_place_key(key)).decrypt(
                sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], _place_data(header, path)
            )
        except InvalidTag:
            raise _refused(path) from None
        author = _author_from_block(block)
        if author is False:
            raise _refused(path)
        return author

    def is_current(self, header: bytes) -> bool:
        """True if ``header`` (of a format-2 object) names the user's current data key version:
        what a rename may copy as it is (a copy of an older one would keep a key being retired)."""
        return _header_version(header) == self._keys.current()[0]

    def fingerprint(self, path: str, version: int | None = None) -> str:
        """A keyed hash of ``path`` that names it in object metadata without revealing it:
        ``<version>:<hex>``, HMAC-SHA256 under a key derived from the data key of ``version`` (by
        default the current one). ``IntegrityError`` when the user has no key of ``version``."""
        if version is None:
            version, data_key = self._keys.current()
        else:
            data_key = self._keys.version(version)
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_FINGERPRINT_INFO).derive(data_key)
        digest = hmac.new(key, path.encode("utf-8"), "sha256").hexdigest()
        return f"{version}:{digest[:FINGERPRINT_CHARACTERS]}"

    def made_of(self, fingerprint: str | None, path: str) -> bool:
        """True if the stored ``fingerprint`` is that of ``path`` under the key version it names;
        False for anything else (no fingerprint, a malformed one, a version the user has no key of)."""
        parsed = parsed_fingerprint(fingerprint)
        if parsed is None:
            return False
        version, digest = parsed
        try:
            expected = self.fingerprint(path, version)
        except IntegrityError:
            return False
        return hmac.compare_digest(expected, f"{version}:{digest}")

    def check_key(self, version: int) -> None:
        """Refuse (``IntegrityError``) when this user's data key of ``version`` cannot be had."""
        self._keys.version(version)


def _refused(name: str) -> IntegrityError:
    return IntegrityError(
        f"Error: The stored object for {name} failed its integrity check (tampered, truncated, "
        "foreign, wrongly keyed or not encrypted); it was not read."
    )


def _header_version(header: bytes) -> int | None:
    """The key version of a format-2 header, or None if ``header`` is not one."""
    if len(header) != HEADER_BYTES:
        return None
    magic, format_version, version = _VERSION.unpack_from(header)
    return int(version) if magic == MAGIC and format_version == PLACED_FORMAT else None


def _place_key(data_key: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PLACE_KEY_INFO).derive(data_key)


def _place_data(header: bytes, path: str) -> bytes:
    return _PLACE_INFO + header + _length_prefixed(path)


def _author_block(author: str | None) -> bytes:
    """``author`` in a block of fixed size, so a place record does not show its length."""
    data = b"" if author is None else author.encode("ascii")
    return bytes([len(data)]) + data.ljust(AUTHOR_MAX_CHARACTERS, b"\0")


def _author_from_block(block: bytes) -> str | Literal[False] | None:
    """The author an ``_author_block`` holds (None: unnamed), or False if it is not one."""
    size = block[0]
    data, padding = block[1 : 1 + size], block[1 + size :]
    if len(block) != _AUTHOR_BLOCK or size > AUTHOR_MAX_CHARACTERS or padding.strip(b"\0"):
        return False
    if not size:
        return None
    try:
        return validate_author(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return False


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str | None, size: int) -> bytes | None:
    """The ``size`` bytes ``text`` spells in unpadded URL-safe base64 (exactly as ``_b64`` writes
    them), or None."""
    if text is None or len(text) != len(_b64(bytes(size))):
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        return None
    return data if len(data) == size and _b64(data) == text else None


class WrappedKeyVault(Protocol):
    """Where a user's wrapped data keys are kept (internal objects beside the memory files)."""

    @property
    def identity(self) -> str:
        """Names the user's key space uniquely (bucket and namespace), for caching."""
        ...

    def versions(self) -> list[int]:
        """The versions of the wrapped keys stored now (one listing)."""
        ...

    def get_wrapped(self, version: int) -> bytes | None: ...

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        """Store ``wrapped`` unless a key of that version exists; True if this call stored it."""
        ...


STORE_KEY_PURPOSE = "store-key"
"""What a store-level key is for: the store key (the root of private names)."""
SERVER_RECORD_PURPOSE = "server-record"
"""What a store-level key is for: sealing the record of what the S3 server enforces."""


def _store_context(store: str, purpose: str) -> dict[str, str]:
    """The KMS encryption context of a store-level key for ``purpose`` (``s3memory:user`` is never
    a namespace token)."""
    return {"s3memory:store": store, "s3memory:user": purpose, "s3memory:key_version": "0"}


def _purpose_data(purpose: str) -> bytes:
    """What a local wrapping binds besides the store: nothing for the store key (as it always
    has), the purpose for any other store-level key."""
    return b"" if purpose == STORE_KEY_PURPOSE else _length_prefixed(purpose)


def _foreign_store_key() -> IntegrityError:
    return IntegrityError(
        "Error: The store key is not one s3memory wrapped for this store; nothing was read."
    )


def _missing(version: int) -> IntegrityError:
    return IntegrityError(f"Error: No data key of version {version} exists for this user.")


def _checked_version(version: object, name: str) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_KEY_VERSION:
        raise ValueError(f"{name} must be a key version: a whole number from 1 to {MAX_KEY_VERSION:,}")
    return version


@dataclass(frozen=True)
class KeyOwner:
    """Whose data keys these are: a user of a format-1 store, known by id; or a user of a format-2
    store, known to KMS only by the store's identity and the user's namespace token (the id itself
    never reaches KMS or its logs)."""

    user_id: str
    store: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        if (self.store is None) != (self.namespace is None):
            raise ValueError("a format-2 key owner names both its store and its namespace token")

    def kms_context(self, version: int) -> dict[str, str]:
        """The KMS encryption context of this owner's data key of ``version``."""
        if self.store is None:
            return {"s3memory:user": self.user_id, "s3memory:key_version": str(version)}
        return {
            "s3memory:store": self.store,
            "s3memory:user": str(self.namespace),
            "s3memory:key_version": str(version),
        }

    @property
    def local_info(self) -> bytes:
        """The HKDF info that derives this owner's data keys from a local master key."""
        if self.store is None:
            return self.user_id.encode("utf-8")
        return b"s3memory/v2/local-data-key" + _length_prefixed(self.store) + _length_prefixed(self.user_id)


class KeyProvider(ABC):
    """Hands out a user's data keys. Subclasses decide where the keys come from."""

    @abstractmethod
    def current(self, owner: KeyOwner, vault: WrappedKeyVault) -> tuple[int, bytes]:
        """The version the owner's new objects are sealed with, and its data key."""

    @abstractmethod
    def data_key(self, owner: KeyOwner, version: int, vault: WrappedKeyVault) -> bytes:
        """The owner's data key of ``version``; ``IntegrityError`` when there is none."""

    @abstractmethod
    def new_store_key(self, store: str, purpose: str = STORE_KEY_PURPOSE) -> tuple[bytes, bytes]:
        """A new random key of the store identity ``store`` for ``purpose`` (by default the store
        key), and the wrapped form to keep; a key wrapped for one purpose opens for no other."""

    @abstractmethod
    def open_store_key(self, store: str, wrapped: bytes, purpose: str = STORE_KEY_PURPOSE) -> bytes:
        """The key of ``store`` for ``purpose`` from its wrapped form; ``IntegrityError`` for
        anything else."""

    @abstractmethod
    def forget(self, owner: KeyOwner, vault: WrappedKeyVault) -> None:
        """Drop what this process learned of the user's current version (a rotation switched it)."""


class LocalKeyProvider(KeyProvider):
    """Data keys derived per user (HKDF) from a local master key. The current master key, of
    ``version``, seals; ``previous`` master keys (by version) still open what they sealed, as
    MultiFernet's older keys do, until a rotation has sealed it again. For local use and tests."""

    def __init__(
        self, master_key: bytes, *, version: int = 1, previous: Mapping[int, bytes] | None = None
    ) -> None:
        if not isinstance(master_key, bytes) or len(master_key) != DATA_KEY_BYTES:
            raise ValueError("LocalKeyProvider needs master_key: exactly 32 bytes (bytes, not str)")
        self.version = _checked_version(version, "LocalKeyProvider's version")
        if previous is not None and not isinstance(previous, Mapping):
            raise ValueError("LocalKeyProvider's previous must map key versions to master keys")
        masters = {self.version: master_key}
        for old, key in (previous or {}).items():
            _checked_version(old, "each of LocalKeyProvider's previous versions")
            if old in masters:
                raise ValueError(f"LocalKeyProvider's previous holds version {old}, the current version")
            if not isinstance(key, bytes) or len(key) != DATA_KEY_BYTES:
                raise ValueError(
                    f"LocalKeyProvider's previous master key of version {old} must be exactly 32 bytes"
                )
            masters[old] = key
        if len(set(masters.values())) != len(masters):
            raise ValueError("LocalKeyProvider needs a different master key for each version")
        self._masters = masters

    @property
    def previous_versions(self) -> list[int]:
        """The versions of the previous master keys, which open but never seal."""
        return sorted(version for version in self._masters if version != self.version)

    def __repr__(self) -> str:
        return (
            f"LocalKeyProvider(master_key=<redacted>, version={self.version}, "
            f"previous_versions={self.previous_versions})"
        )

    def current(self, owner: KeyOwner, vault: WrappedKeyVault) -> tuple[int, bytes]:
        return self.version, self.data_key(owner, self.version, vault)

    def forget(self, owner: KeyOwner, vault: WrappedKeyVault) -> None:
        """Nothing to drop: the current version is the configured one."""

    def new_store_key(self, store: str, purpose: str = STORE_KEY_PURPOSE) -> tuple[bytes, bytes]:
        """A random store-level key wrapped (AES-256-GCM, the store identity and the purpose as
        associated data) under a key derived from the current master key; a rotation of the master
        key wraps the store key again."""
        key = os.urandom(DATA_KEY_BYTES)
        return key, self.wrap_store_key(store, key, purpose)

    def wrap_store_key(self, store: str, key: bytes, purpose: str = STORE_KEY_PURPOSE) -> bytes:
        """``key`` wrapped for ``store`` and ``purpose`` under the current master key."""
        nonce = os.urandom(NONCE_BYTES)
        head = STORE_KEY_MAGIC + b"L" + struct.pack(">I", self.version) + nonce
        return head + AESGCM(self._store_wrapping_key(self.version)).encrypt(
            nonce, key, head + _length_prefixed(store) + _purpose_data(purpose)
        )

    def open_store_key(self, store: str, wrapped: bytes, purpose: str = STORE_KEY_PURPOSE) -> bytes:
        local = len(STORE_KEY_MAGIC) + 1 + 4
        refused = _foreign_store_key()
        if len(wrapped) != local + NONCE_BYTES + DATA_KEY_BYTES + TAG_BYTES or not wrapped.startswith(
            STORE_KEY_MAGIC + b"L"
        ):
            raise refused
        (version,) = struct.unpack(">I", wrapped[local - 4 : local])
        if version not in self._masters:
            raise IntegrityError(
                f"Error: The store key is wrapped under local master key version {version}, which is "
                "not configured."
            )
        head = wrapped[: local + NONCE_BYTES]
        try:
            return AESGCM(self._store_wrapping_key(version)).decrypt(
                head[local:], wrapped[len(head) :], head + _length_prefixed(store) + _purpose_data(purpose)
            )
        except InvalidTag:
            raise refused from None

    def _store_wrapping_key(self, version: int) -> bytes:
        return HKDF(
            algorithm=hashes.SHA256(), length=32, salt=_LOCAL_DATA_KEY_SALT, info=_STORE_KEY_WRAP_INFO
        ).derive(self._masters[version])

    def data_key(self, owner: KeyOwner, version: int, vault: WrappedKeyVault) -> bytes:
        master = self._masters.get(version)
        if master is None:
            raise _missing(version)
        return HKDF(
            algorithm=hashes.SHA256(),
            length=DATA_KEY_BYTES,
            salt=_LOCAL_DATA_KEY_SALT,
            info=owner.local_info,
        ).derive(master)


class _Expiring(Generic[_Key, _Value]):
    """A map bounded in count whose entries lapse at a time of ``clock``; least recently used go first."""

    def __init__(self, entries: int, clock: Callable[[], float]) -> None:
        self._entries = entries
        self._clock = clock
        self._items: OrderedDict[_Key, tuple[float, float, _Value]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key) -> _Value | None:
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] <= self._clock() or item[1] <= time.time():
                return None
            self._items.move_to_end(key)
            return item[2]

    def put(self, key: _Key, value: _Value, expires: float) -> None:
        """Keep ``value`` until ``expires`` by the clock, or as long by the wall clock, whichever
        comes first: a monotonic clock stands still while the machine sleeps."""
        with self._lock:
            self._items[key] = (expires, time.time() + (expires - self._clock()), value)
            self._items.move_to_end(key)
            while len(self._items) > self._entries:
                self._items.popitem(last=False)

    def drop(self, key: _Key) -> None:
        with self._lock:
            self._items.pop(key, None)


class KMSKeyProvider(KeyProvider):
    """Envelope keys: per user, data keys from KMS ``GenerateDataKey``, stored only wrapped, one per
    version; the current version is the highest one stored (a listing of the user's keys).

    Unwrapped keys and the current version are cached in process for ``cache_seconds`` (at most
    ``MAX_KEY_CACHE_SECONDS``, counted from before the request that learned them; bounded in count
    too), so warm commands make no KMS request and no key request. Of processes racing to create a
    user's first key, exactly one stores its wrapped key (``IfNoneMatch``); the others use the winner's.
    """

    def __init__(
        self,
        key_id: str,
        kms_client: KMSClient | None = None,
        *,
        cache_seconds: float = MAX_KEY_CACHE_SECONDS,
        cache_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(key_id, str) or not key_id:
            raise ValueError("KMSKeyProvider needs key_id: a KMS key id, ARN or alias")
        if (
            isinstance(cache_seconds, bool)
            or not isinstance(cache_seconds, int | float)
            or not 0 <= cache_seconds <= MAX_KEY_CACHE_SECONDS
        ):
            raise ValueError(
                f"KMSKeyProvider's cache_seconds must be from 0 to {MAX_KEY_CACHE_SECONDS:g}: a key "
                "rotation waits that long for every process to learn the new version"
            )
        self.key_id = key_id
        self._client = kms_client
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._keys: _Expiring[tuple[str, str, int], bytes] = _Expiring(cache_entries, clock)
        self._currents: _Expiring[tuple[str, str], int] = _Expiring(cache_entries, clock)

    def __repr__(self) -> str:
        return f"KMSKeyProvider(key_id={self.key_id!r})"

    @property
    def client(self) -> KMSClient:
        if self._client is None:
            from .clients import make_kms_client

            self._client = make_kms_client()
        return self._client

    def current(self, owner: KeyOwner, vault: WrappedKeyVault) -> tuple[int, bytes]:
        """The highest version stored, learned at most ``cache_seconds`` ago; the user's first data
        key (version 1) is created when none is stored."""
        place = (vault.identity, owner.user_id)
        version = self._currents.get(place)
        if version is None:
            expires = self._clock() + self._cache_seconds
            stored = vault.versions()
            version = max(stored, default=1)
            if not stored:
                self.create(owner, version, vault)
            self._currents.put(place, version, expires)
        return version, self.data_key(owner, version, vault)

    def forget(self, owner: KeyOwner, vault: WrappedKeyVault) -> None:
        self._currents.drop((vault.identity, owner.user_id))

    def new_store_key(self, store: str, purpose: str = STORE_KEY_PURPOSE) -> tuple[bytes, bytes]:
        """A data key from KMS ``GenerateDataKey`` with the store's encryption context for ``purpose``."""
        generated = self._kms(
            "GenerateDataKey",
            KeyId=self.key_id,
            KeySpec="AES_256",
            EncryptionContext=_store_context(store, purpose),
        )
        return bytes(generated["Plaintext"]), STORE_KEY_MAGIC + b"K" + generated["CiphertextBlob"]

    def open_store_key(self, store: str, wrapped: bytes, purpose: str = STORE_KEY_PURPOSE) -> bytes:
        if not wrapped.startswith(STORE_KEY_MAGIC + b"K"):
            raise _foreign_store_key()
        unwrapped = self._kms(
            "Decrypt",
            CiphertextBlob=wrapped[len(STORE_KEY_MAGIC) + 1 :],
            EncryptionContext=_store_context(store, purpose),
            KeyId=self.key_id,
        )
        key = bytes(unwrapped["Plaintext"])
        if len(key) != DATA_KEY_BYTES:
            raise _foreign_store_key()
        return key

    def data_key(self, owner: KeyOwner, version: int, vault: WrappedKeyVault) -> bytes:
        cached = self._keys.get((vault.identity, owner.user_id, version))
        if cached is not None:
            return cached
        expires = self._clock() + self._cache_seconds
        key = self._unwrap(owner, version, vault)
        self._keys.put((vault.identity, owner.user_id, version), key, expires)
        return key

    def create(self, owner: KeyOwner, version: int, vault: WrappedKeyVault) -> bool:
        """Generate the user's data key of ``version`` and store it wrapped unless one of that
        version is stored already; True if this call stored it."""
        expires = self._clock() + self._cache_seconds
        generated = self._kms(
            "GenerateDataKey",
            KeyId=self.key_id,
            KeySpec="AES_256",
            EncryptionContext=owner.kms_context(version),
        )
        if not vault.put_wrapped_if_absent(version, WRAPPED_KEY_MAGIC + generated["CiphertextBlob"]):
            return False
        self._keys.put((vault.identity, owner.user_id, version), bytes(generated["Plaintext"]), expires)
        return True

    def _unwrap(self, owner: KeyOwner, version: int, vault: WrappedKeyVault) -> bytes:
        wrapped = vault.get_wrapped(version)
        if wrapped is None:
            raise _missing(version)
        if not wrapped.startswith(WRAPPED_KEY_MAGIC):
            raise IntegrityError("Error: The user's wrapped data key is not in a format s3memory wrote.")
        unwrapped = self._kms(
            "Decrypt",
            CiphertextBlob=wrapped[len(WRAPPED_KEY_MAGIC) :],
            EncryptionContext=owner.kms_context(version),
            KeyId=self.key_id,
        )
        plaintext = bytes(unwrapped["Plaintext"])
        if len(plaintext) != DATA_KEY_BYTES:
            raise IntegrityError("Error: The user's data key has the wrong length.")
        return plaintext

    def _kms(self, operation: str, **arguments: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            if operation == "GenerateDataKey":
                return self.client.generate_data_key(**arguments)
            return self.client.decrypt(**arguments)
        except (ClientError, BotoCoreError) as error:
            code = aws_error_code(error)
            if code in ("InvalidCiphertextException", "IncorrectKeyException"):
                raise IntegrityError(
                    "Error: A wrapped key was refused by KMS (tampered, or for another user, store or KMS key)."
                ) from None
            raise StorageError(f"Error: KMS {operation} failed ({code}); no data was changed.") from None


@dataclass
class DataKeySource:
    """One user's data keys, as the cipher asks for them."""

    provider: KeyProvider
    owner: KeyOwner
    vault: WrappedKeyVault

    def current(self) -> tuple[int, bytes]:
        return self.provider.current(self.owner, self.vault)

    def version(self, version: int) -> bytes:
        return self.provider.data_key(self.owner, version, self.vault)
