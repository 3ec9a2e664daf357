"""Key providers: where a user's data keys and the store-level keys come from. ``LocalKeyProvider``
derives them from local master keys; ``KMSKeyProvider`` wraps them with KMS and caches what it
learned (``MAX_KEY_CACHE_SECONDS`` at most)."""

from __future__ import annotations

import os
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from s3memory.crypto._expiring import Expiring
from s3memory.crypto._owners import STORE_KEY_PURPOSE, KeyOwner, WrappedKeyVault, purpose_data, store_context
from s3memory.crypto._primitives import (
    DATA_KEY_BYTES,
    MAX_KEY_VERSION,
    NONCE_BYTES,
    TAG_BYTES,
    length_prefixed,
)
from s3memory.errors import IntegrityError, StorageError, aws_error_code

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient

_LOCAL_DATA_KEY_SALT = b"s3memory/v1/local-data-key"
WRAPPED_KEY_MAGIC = b"S3MK\x01"
STORE_KEY_MAGIC = b"S3MS\x01"
_STORE_KEY_WRAP_INFO = b"s3memory/v2/store-key-wrap"
MAX_KEY_CACHE_SECONDS = 300.0
"""The longest any process keeps what it learned of a user's keys, the current version included. A
rotation removes an old version only once the switch away from it is older than this
(``docs/rotation.md``)."""


def _foreign_store_key(setting: str) -> IntegrityError:
    return IntegrityError(
        f"Error: The store key is not one s3memory wrapped for this store with this key; nothing was read. "
        f"Check {setting}: the key the store was created with. Check that S3MEMORY_STORE_ID and "
        "S3MEMORY_PREFIX (--store-id, --prefix) are those the store's memory was written with."
    )


LOCAL_KEY_SETTING = "S3MEMORY_LOCAL_KEY (an earlier key goes in S3MEMORY_PREVIOUS_LOCAL_KEYS)"
KMS_KEY_SETTING = "S3MEMORY_KMS_KEY_ID"
_KMS_KEY_UNUSABLE = frozenset(
    {"NotFoundException", "DisabledException", "KMSInvalidStateException", "AccessDeniedException"}
)
_KMS_CAUSES = {
    "NoRegionError": "no AWS region is set for KMS. Set AWS_DEFAULT_REGION (--region) to the KMS key's region",
    "EndpointConnectionError": "KMS could not be reached. Check the network, AWS_DEFAULT_REGION (--region) and "
    "AWS_ENDPOINT_URL_KMS if one is set",
    "ConnectTimeoutError": "KMS could not be reached in time. Check the network, AWS_DEFAULT_REGION (--region) "
    "and AWS_ENDPOINT_URL_KMS if one is set",
    "NoCredentialsError": "no AWS credentials were found. Set AWS_PROFILE (--profile), or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or run with an IAM role",
    "UnrecognizedClientException": "KMS refused the AWS credentials: they are wrong, expired or for another "
    "partition. Renew them, or choose others (AWS_PROFILE, --profile)",
    "ExpiredTokenException": "the AWS credentials have expired. Renew them, or choose others (AWS_PROFILE, --profile)",
}
"""What a KMS failure that a retry cannot mend says is misconfigured, and the fix, by error code."""


def _missing(version: int) -> IntegrityError:
    return IntegrityError(f"Error: No data key of version {version} exists for this user.")


def _keys_removed() -> IntegrityError:
    return IntegrityError(
        "Error: This memory's wrapped data keys are gone from the bucket while its files remain, so "
        "nothing is written under a new key. An operator can put them back (the objects "
        "internal/keys/v<n> of the user's namespace, from their S3 versions) or, if the user was being "
        "erased, run `s3memory erase` again to finish. Nothing was changed."
    )


def _checked_version(version: object, name: str) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_KEY_VERSION:
        raise ValueError(f"{name} must be a key version: a whole number from 1 to {MAX_KEY_VERSION:,}")
    return version


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

    def check(self, store: str) -> None:
        """Raise the ``StorageError`` the first key of the store identity ``store`` would meet, making
        and changing no key. A local master key meets none: its setting was checked when read."""
        return None


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
            nonce, key, head + length_prefixed(store) + purpose_data(purpose)
        )

    def open_store_key(self, store: str, wrapped: bytes, purpose: str = STORE_KEY_PURPOSE) -> bytes:
        local = len(STORE_KEY_MAGIC) + 1 + 4
        refused = _foreign_store_key(LOCAL_KEY_SETTING)
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
                head[local:], wrapped[len(head) :], head + length_prefixed(store) + purpose_data(purpose)
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
        self._keys: Expiring[tuple[str, str, int], bytes] = Expiring(cache_entries, clock)
        self._currents: Expiring[tuple[str, str], int] = Expiring(cache_entries, clock)

    def __repr__(self) -> str:
        return f"KMSKeyProvider(key_id={self.key_id!r})"

    @property
    def client(self) -> KMSClient:
        if self._client is None:
            from s3memory.clients import make_kms_client

            self._client = make_kms_client()
        return self._client

    def current(self, owner: KeyOwner, vault: WrappedKeyVault) -> tuple[int, bytes]:
        """The highest version stored, learned at most ``cache_seconds`` ago; the user's first data
        key (version 1) is created when none is stored and no memory file is there either: files
        without a key had one that was removed (``IntegrityError``; a new key would leave them
        unreadable for good, and unreadable again under it once the old one is put back)."""
        place = (vault.identity, owner.user_id)
        version = self._currents.get(place)
        if version is None:
            expires = self._clock() + self._cache_seconds
            stored = vault.versions()
            if not stored and vault.holds_files():
                stored = vault.versions()  # the first key of another process, written before its file
                if not stored:
                    raise _keys_removed()
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
            EncryptionContext=store_context(store, purpose),
        )
        return bytes(generated["Plaintext"]), STORE_KEY_MAGIC + b"K" + generated["CiphertextBlob"]

    def open_store_key(self, store: str, wrapped: bytes, purpose: str = STORE_KEY_PURPOSE) -> bytes:
        if not wrapped.startswith(STORE_KEY_MAGIC + b"K"):
            raise _foreign_store_key(KMS_KEY_SETTING)
        unwrapped = self._kms(
            "Decrypt",
            CiphertextBlob=wrapped[len(STORE_KEY_MAGIC) + 1 :],
            EncryptionContext=store_context(store, purpose),
            KeyId=self.key_id,
        )
        key = bytes(unwrapped["Plaintext"])
        if len(key) != DATA_KEY_BYTES:
            raise _foreign_store_key(KMS_KEY_SETTING)
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

    def check(self, store: str) -> None:
        """A ``GenerateDataKey`` dry run (``DryRun``) with the encryption context of ``store``'s store
        key, the grants' condition (``terraform/kms.tf``): KMS checks that the key exists, is enabled
        and may be used so by these credentials, and makes no key (moto, which ignores ``DryRun``,
        makes one and forgets it). On the provider's client if it was given one, else on a quick one
        (one attempt, bounded: ``clients.CHECK_SECONDS``). KMS's answer that the request would have
        succeeded (``DryRunOperationException``) is success."""
        try:
            self._kms(
                "GenerateDataKey",
                quick=True,
                KeyId=self.key_id,
                KeySpec="AES_256",
                EncryptionContext=store_context(store, STORE_KEY_PURPOSE),
                DryRun=True,
            )
        except _DryRunSucceeded:
            return

    def _kms(self, operation: str, *, quick: bool = False, **arguments: Any) -> Any:
        """Send ``operation`` on the provider's client (``quick``: on a quick one unless it was given
        one); a failure is the error that names its cause and the fix."""
        from botocore.exceptions import BotoCoreError, ClientError

        from s3memory.clients import make_kms_client

        try:
            sender = make_kms_client(quick=True) if quick and self._client is None else self.client
            if operation == "GenerateDataKey":
                return sender.generate_data_key(**arguments)
            return sender.decrypt(**arguments)
        except (ClientError, BotoCoreError) as error:
            code = aws_error_code(error)
            if code == "DryRunOperationException":
                raise _DryRunSucceeded from None
            if code in ("InvalidCiphertextException", "IncorrectKeyException"):
                raise IntegrityError(
                    "Error: A wrapped key was refused by KMS (tampered, or for another user, store or KMS key)."
                ) from None
            if code in _KMS_KEY_UNUSABLE:
                raise StorageError(
                    f"Error: KMS {operation} failed ({code}): the KMS key {self.key_id} does not exist in "
                    "this account and region, is disabled, or may not be used by these credentials; no data "
                    f"was changed. Check {KMS_KEY_SETTING} (--kms-key-id), the region (AWS_DEFAULT_REGION) and the "
                    "key policy (docs/deploy.md)."
                ) from None
            cause = _KMS_CAUSES.get(code)
            if cause is None:
                raise StorageError(f"Error: KMS {operation} failed ({code}); no data was changed.") from None
            raise StorageError(
                f"Error: KMS {operation} failed ({code}): {cause}; no data was changed."
            ) from None


class _DryRunSucceeded(Exception):
    """KMS's answer to a dry run that would have succeeded."""


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
