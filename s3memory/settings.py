"""Settings from the environment: the one place that turns ``S3MEMORY_*`` variables into a key
provider and an S3 client.

| variable | meaning |
| --- | --- |
| ``S3MEMORY_BUCKET`` | the bucket (required) |
| ``S3MEMORY_PREFIX`` | the key prefix of the user namespaces (default ``users/``) |
| ``S3MEMORY_KMS_KEY_ID`` | KMS key id, ARN or alias for envelope keys |
| ``S3MEMORY_LOCAL_KEY`` | base64 of exactly 32 bytes: a local master key, for local use and tests only |
| ``S3MEMORY_ENDPOINT_URL`` | an S3 endpoint (local S3, tests); optional |

Exactly one of ``S3MEMORY_KMS_KEY_ID`` and ``S3MEMORY_LOCAL_KEY`` must be set. Empty values count
as unset, except ``S3MEMORY_PREFIX``, where an empty value means no prefix. Every error names the
variable, never the value of a key.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .crypto import DATA_KEY_BYTES, KeyProvider, KMSKeyProvider, LocalKeyProvider
from .paths import validate_namespace

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

BUCKET = "S3MEMORY_BUCKET"
PREFIX = "S3MEMORY_PREFIX"
KMS_KEY_ID = "S3MEMORY_KMS_KEY_ID"
LOCAL_KEY = "S3MEMORY_LOCAL_KEY"
ENDPOINT_URL = "S3MEMORY_ENDPOINT_URL"
DEFAULT_PREFIX = "users/"


class SettingsError(ValueError):
    """A missing or invalid setting; the message names the variable and never a key's value."""


def _get(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{name} must be a string")
    return value if value.strip() else None


def _has_space_or_control(value: str) -> bool:
    return any(character.isspace() or not character.isprintable() for character in value)


def _decode_local_key(value: str) -> bytes:
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SettingsError(f"{LOCAL_KEY} is not valid base64") from None
    if len(key) != DATA_KEY_BYTES:
        raise SettingsError(
            f"{LOCAL_KEY} must be the base64 of exactly {DATA_KEY_BYTES} bytes (it decodes to {len(key)})"
        )
    return key


@dataclass(frozen=True)
class Settings:
    """Validated settings; equal settings build equal providers and clients (a usable cache key)."""

    bucket: str
    prefix: str = DEFAULT_PREFIX
    kms_key_id: str | None = None
    local_key: bytes | None = field(default=None, repr=False)
    endpoint_url: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read and validate the ``S3MEMORY_*`` variables of ``environ``."""
        bucket = _get(environ, BUCKET)
        if bucket is None:
            raise SettingsError(f"{BUCKET} is required: the S3 bucket that holds the memory")
        if "/" in bucket or _has_space_or_control(bucket):
            raise SettingsError(f"{BUCKET} must be a bucket name, without '/', spaces or control characters")

        raw_prefix = environ.get(PREFIX)
        prefix = DEFAULT_PREFIX if raw_prefix is None else raw_prefix
        try:
            validate_namespace("user", prefix)
        except ValueError:
            raise SettingsError(
                f"{PREFIX} must be empty or plain segments each ending in '/', like 'users/'"
            ) from None

        kms_key_id = _get(environ, KMS_KEY_ID)
        raw_local_key = _get(environ, LOCAL_KEY)
        if kms_key_id is not None and raw_local_key is not None:
            raise SettingsError(
                f"{KMS_KEY_ID} and {LOCAL_KEY} are both set; set exactly one "
                f"({KMS_KEY_ID} in AWS, {LOCAL_KEY} for local use only)"
            )
        if kms_key_id is None and raw_local_key is None:
            raise SettingsError(
                f"{KMS_KEY_ID} or {LOCAL_KEY} must be set "
                f"({KMS_KEY_ID} in AWS, {LOCAL_KEY} for local use only)"
            )
        if kms_key_id is not None and _has_space_or_control(kms_key_id):
            raise SettingsError(f"{KMS_KEY_ID} must be a KMS key id, ARN or alias, without spaces")
        local_key = None if raw_local_key is None else _decode_local_key(raw_local_key)

        endpoint_url = _get(environ, ENDPOINT_URL)
        if endpoint_url is not None and (
            not endpoint_url.startswith(("http://", "https://")) or _has_space_or_control(endpoint_url)
        ):
            raise SettingsError(f"{ENDPOINT_URL} must be an http:// or https:// URL")

        return cls(
            bucket=bucket,
            prefix=prefix,
            kms_key_id=kms_key_id,
            local_key=local_key,
            endpoint_url=endpoint_url,
        )

    @property
    def key_source(self) -> str:
        """``"kms"`` or ``"local"``: which kind of key provider these settings build."""
        return "kms" if self.kms_key_id is not None else "local"

    def make_key_provider(self) -> KeyProvider:
        """A ``KMSKeyProvider`` or a ``LocalKeyProvider``. Build it once and share it: the KMS
        provider's cache of unwrapped keys is what keeps warm commands free of KMS requests."""
        if self.kms_key_id is not None:
            return KMSKeyProvider(self.kms_key_id)
        if self.local_key is None:  # pragma: no cover - from_env guarantees one of the two
            raise SettingsError(f"{KMS_KEY_ID} or {LOCAL_KEY} must be set")
        return LocalKeyProvider(self.local_key)

    def make_s3_client(self) -> S3Client:
        """An S3 client with our standard client settings (see ``s3memory.clients``)."""
        from .clients import make_s3_client

        return make_s3_client(endpoint_url=self.endpoint_url)
