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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

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


def plaintext_size(object_size: int) -> int:
    """The plaintext size of an object of ``object_size`` bytes in our format (0 if too small)."""
    return max(0, object_size - OVERHEAD)


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

    def fingerprint(self, path: str) -> str:
        """A keyed hash of ``path`` (HMAC-SHA256 under a key derived from the data key): names a path
        in object metadata without revealing it."""
        _version, data_key = self._keys.current()
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_FINGERPRINT_INFO).derive(data_key)
        return hmac.new(key, path.encode("utf-8"), "sha256").hexdigest()[:32]

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

    def get_wrapped(self, version: int) -> bytes | None: ...

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        """Store ``wrapped`` unless a key of that version exists; True if this call stored it."""
        ...


class KeyProvider(ABC):
    """Hands out a user's data keys. Subclasses decide where the keys come from."""

    current_version = 1

    @abstractmethod
    def data_key(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        """The user's data key of ``version``; creates the current version if it is missing."""


class LocalKeyProvider(KeyProvider):
    """Data keys derived per user from one local master key (HKDF). For local use and tests."""

    def __init__(self, master_key: bytes) -> None:
        if not isinstance(master_key, bytes) or len(master_key) != DATA_KEY_BYTES:
            raise ValueError("LocalKeyProvider needs master_key: exactly 32 bytes (bytes, not str)")
        self._master_key = master_key

    def __repr__(self) -> str:
        return "LocalKeyProvider(master_key=<redacted>)"

    def data_key(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        if version != self.current_version:
            raise IntegrityError(f"Error: No data key of version {version} exists for this user.")
        return HKDF(
            algorithm=hashes.SHA256(),
            length=DATA_KEY_BYTES,
            salt=_LOCAL_DATA_KEY_SALT,
            info=user_id.encode("utf-8"),
        ).derive(self._master_key)


class KMSKeyProvider(KeyProvider):
    """Envelope keys: one data key per user from KMS ``GenerateDataKey``, stored only wrapped.

    Unwrapped keys are cached in process for ``cache_seconds`` (bounded in count too), so warm
    commands make no KMS request. Of processes racing to create a user's first key, exactly one
    stores its wrapped key (``IfNoneMatch``); the others use the winner's.
    """

    def __init__(
        self,
        key_id: str,
        kms_client: KMSClient | None = None,
        *,
        cache_seconds: float = 300.0,
        cache_entries: int = 1024,
    ) -> None:
        if not isinstance(key_id, str) or not key_id:
            raise ValueError("KMSKeyProvider needs key_id: a KMS key id, ARN or alias")
        self.key_id = key_id
        self._client = kms_client
        self._cache_seconds = cache_seconds
        self._cache_entries = cache_entries
        self._cache: OrderedDict[tuple[str, str, int], tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

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

    def data_key(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        cache_key = (vault.identity, user_id, version)
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None and cached[0] > time.monotonic():
                self._cache.move_to_end(cache_key)
                return cached[1]
        key = self._load_or_create(user_id, version, vault)
        with self._lock:
            self._cache[cache_key] = (time.monotonic() + self._cache_seconds, key)
            self._cache.move_to_end(cache_key)
            while len(self._cache) > self._cache_entries:
                self._cache.popitem(last=False)
        return key

    def _load_or_create(self, user_id: str, version: int, vault: WrappedKeyVault) -> bytes:
        context = self.encryption_context(user_id, version)
        wrapped = vault.get_wrapped(version)
        if wrapped is None:
            if version != self.current_version:
                raise IntegrityError(f"Error: No data key of version {version} exists for this user.")
            generated = self._kms(
                "GenerateDataKey", KeyId=self.key_id, KeySpec="AES_256", EncryptionContext=context
            )
            if vault.put_wrapped_if_absent(version, WRAPPED_KEY_MAGIC + generated["CiphertextBlob"]):
                return bytes(generated["Plaintext"])
            wrapped = vault.get_wrapped(version)
            if wrapped is None:
                raise StorageError(
                    "Error: The user's data key vanished while it was being created; try again."
                )
        if not wrapped.startswith(WRAPPED_KEY_MAGIC):
            raise IntegrityError("Error: The user's wrapped data key is not in a format s3memory wrote.")
        unwrapped = self._kms(
            "Decrypt",
            CiphertextBlob=wrapped[len(WRAPPED_KEY_MAGIC) :],
            EncryptionContext=context,
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
        version = self.provider.current_version
        return version, self.provider.data_key(self.user_id, version, self.vault)

    def version(self, version: int) -> bytes:
        return self.provider.data_key(self.user_id, version, self.vault)
