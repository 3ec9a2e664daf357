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

import hmac
import os
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .errors import IntegrityError, StorageError, aws_error_code

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient

MAGIC = b"S3ME"
FORMAT_VERSION = 1
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
_LOCAL_DATA_KEY_SALT = b"s3memory/v1/local-data-key"
WRAPPED_KEY_MAGIC = b"S3MK\x01"
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
    begin as an object in our format."""
    if len(blob) < SEALED_VERSION_BYTES:
        return None
    magic, format_version, version = _VERSION.unpack_from(blob)
    return int(version) if magic == MAGIC and format_version == FORMAT_VERSION else None


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


class ObjectCipher:
    """Seals and opens one user's memory objects with that user's data key."""

    def __init__(self, user_id: str, keys: DataKeySource) -> None:
        self._user = _length_prefixed(user_id)
        self._keys = keys

    def _associated_data(self, header: bytes, path: str, author: str | None) -> bytes:
        named = b"" if author is None else _length_prefixed(author)
        return header + self._user + _length_prefixed(path) + named

    def seal(self, path: str, plaintext: bytes, author: str | None = None) -> bytes:
        """Encrypt ``plaintext`` for the memory ``path``, written by ``author`` when one is named."""
        version, data_key = self._keys.current()
        salt = os.urandom(SALT_BYTES)
        nonce = os.urandom(NONCE_BYTES)
        encryption_key, commitment = _object_keys(data_key, salt)
        header = _HEADER.pack(MAGIC, FORMAT_VERSION, version, salt, commitment, nonce)
        return header + AESGCM(encryption_key).encrypt(
            nonce, plaintext, self._associated_data(header, path, author)
        )

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

    def open(self, path: str, blob: bytes, author: str | None = None) -> bytes:
        """Decrypt an object read at ``path`` whose metadata names ``author`` (or none); anything not
        sealed by us for this user, path and author is refused."""
        refused = IntegrityError(
            f"Error: The stored object for {path} failed its integrity check (tampered, truncated, "
            "foreign, wrongly keyed or not encrypted); it was not read."
        )
        if len(blob) < OVERHEAD:
            raise refused
        header = blob[:HEADER_BYTES]
        magic, format_version, version, salt, commitment, nonce = _HEADER.unpack(header)
        if magic != MAGIC or format_version != FORMAT_VERSION:
            raise refused
        try:
            data_key = self._keys.version(version)
        except IntegrityError:
            raise IntegrityError(
                f"Error: The stored object for {path} names data key version {version}, which this user "
                "does not have; it was not read."
            ) from None
        encryption_key, expected_commitment = _object_keys(data_key, salt)
        if not hmac.compare_digest(commitment, expected_commitment):
            raise refused
        try:
            return AESGCM(encryption_key).decrypt(
                nonce, blob[HEADER_BYTES:], self._associated_data(header, path, author)
            )
        except InvalidTag:
            raise refused from None


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


def _missing(version: int) -> IntegrityError:
    return IntegrityError(f"Error: No data key of version {version} exists for this user.")


def _checked_version(version: object, name: str) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_KEY_VERSION:
        raise ValueError(f"{name} must be a key version: a whole number from 1 to {MAX_KEY_VERSION:,}")
    return version


class KeyProvider(ABC):
    """Hands out a user's data keys. Subclasses decide where the keys come from."""

    @abstractmethod
    def current(self, user_id: str, vault: WrappedKeyVault) -> tuple[int, bytes]:
        """The version the user's new objects are sealed with, and its data key."""

    @abstractmethod
    def data_key(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        """The user's data key of ``version``; ``IntegrityError`` when there is none."""

    @abstractmethod
    def forget(self, user_id: str, vault: WrappedKeyVault) -> None:
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

    def current(self, user_id: str, vault: WrappedKeyVault) -> tuple[int, bytes]:
        return self.version, self.data_key(user_id, self.version, vault)

    def forget(self, user_id: str, vault: WrappedKeyVault) -> None:
        """Nothing to drop: the current version is the configured one."""

    def data_key(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        master = self._masters.get(version)
        if master is None:
            raise _missing(version)
        return HKDF(
            algorithm=hashes.SHA256(),
            length=DATA_KEY_BYTES,
            salt=_LOCAL_DATA_KEY_SALT,
            info=user_id.encode("utf-8"),
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

    @staticmethod
    def encryption_context(user_id: str, version: int) -> dict[str, str]:
        return {"s3memory:user": user_id, "s3memory:key_version": str(version)}

    def current(self, user_id: str, vault: WrappedKeyVault) -> tuple[int, bytes]:
        """The highest version stored, learned at most ``cache_seconds`` ago; the user's first data
        key (version 1) is created when none is stored."""
        place = (vault.identity, user_id)
        version = self._currents.get(place)
        if version is None:
            expires = self._clock() + self._cache_seconds
            stored = vault.versions()
            version = max(stored, default=1)
            if not stored:
                self.create(user_id, version, vault)
            self._currents.put(place, version, expires)
        return version, self.data_key(user_id, version, vault)

    def forget(self, user_id: str, vault: WrappedKeyVault) -> None:
        self._currents.drop((vault.identity, user_id))

    def data_key(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        cached = self._keys.get((vault.identity, user_id, version))
        if cached is not None:
            return cached
        expires = self._clock() + self._cache_seconds
        key = self._unwrap(user_id, version, vault)
        self._keys.put((vault.identity, user_id, version), key, expires)
        return key

    def create(self, user_id: str, version: int, vault: WrappedKeyVault) -> bool:
        """Generate the user's data key of ``version`` and store it wrapped unless one of that
        version is stored already; True if this call stored it."""
        expires = self._clock() + self._cache_seconds
        generated = self._kms(
            "GenerateDataKey",
            KeyId=self.key_id,
            KeySpec="AES_256",
            EncryptionContext=self.encryption_context(user_id, version),
        )
        if not vault.put_wrapped_if_absent(version, WRAPPED_KEY_MAGIC + generated["CiphertextBlob"]):
            return False
        self._keys.put((vault.identity, user_id, version), bytes(generated["Plaintext"]), expires)
        return True

    def _unwrap(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        wrapped = vault.get_wrapped(version)
        if wrapped is None:
            raise _missing(version)
        if not wrapped.startswith(WRAPPED_KEY_MAGIC):
            raise IntegrityError("Error: The user's wrapped data key is not in a format s3memory wrote.")
        unwrapped = self._kms(
            "Decrypt",
            CiphertextBlob=wrapped[len(WRAPPED_KEY_MAGIC) :],
            EncryptionContext=self.encryption_context(user_id, version),
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
                    "Error: The user's wrapped data key was refused by KMS (tampered, or for another user or key)."
                ) from None
            raise StorageError(f"Error: KMS {operation} failed ({code}); no data was changed.") from None


@dataclass
class DataKeySource:
    """One user's data keys, as the cipher asks for them."""

    provider: KeyProvider
    user_id: str
    vault: WrappedKeyVault

    def current(self) -> tuple[int, bytes]:
        return self.provider.current(self.user_id, self.vault)

    def version(self, version: int) -> bytes:
        return self.provider.data_key(self.user_id, version, self.vault)
