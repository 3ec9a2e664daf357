"""Where a user's wrapped data keys are kept: internal objects beside the memory files."""

from __future__ import annotations

from s3memory.core.paths import KeyLayout
from s3memory.crypto import key_version_named
from s3memory.errors import ConditionalConflict, PreconditionFailed
from s3memory.storage.bucket import Bucket

WRAPPED_KEY_MAX_BYTES = 64 * 1024
KEYS_PREFIX = "keys/"
"""Where the wrapped data keys lie below a user's ``internal/``: ``keys/v<version>``."""


def key_version(name: str) -> int | None:
    """The version of a wrapped data key's name below ``internal/`` (``keys/v<n>``, ``n`` from 1 to
    ``MAX_KEY_VERSION`` without leading zeros), or None."""
    digits = name.removeprefix(KEYS_PREFIX + "v")
    return None if digits == name else key_version_named(digits)


class KeyVault:
    """One user's wrapped data keys, at ``internal/keys/v<version>`` (a ``WrappedKeyVault``)."""

    def __init__(self, bucket: Bucket, layout: KeyLayout) -> None:
        self._bucket = bucket
        self._layout = layout

    @property
    def identity(self) -> str:
        return f"s3://{self._bucket.bucket}/{self._layout.namespace}"

    @property
    def prefix(self) -> str:
        """The key prefix of the user's wrapped keys."""
        return self._layout.key_of_internal(KEYS_PREFIX)

    def key(self, version: int) -> str:
        """The object key of the wrapped key of ``version``."""
        return self._layout.key_of_internal(f"{KEYS_PREFIX}v{version}")

    def version_of(self, key: str) -> int | None:
        """The version of the wrapped key stored at the object key ``key``, or None."""
        return key_version(key[len(self._layout.internal_prefix) :]) if key.startswith(self.prefix) else None

    def versions(self) -> list[int]:
        return sorted(
            version
            for page in self._bucket.pages(self.prefix)
            for listed in page.objects
            if (version := self.version_of(listed.key)) is not None
        )

    def get_wrapped(self, version: int) -> bytes | None:
        stored = self._bucket.get(self.key(version), max_bytes=WRAPPED_KEY_MAX_BYTES)
        return None if stored is None else stored.body

    def holds_files(self) -> bool:
        return self._bucket.any_below(self._layout.memories_prefix)

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        try:
            self._bucket.put(self.key(version), wrapped, if_none_match=True)
        except (PreconditionFailed, ConditionalConflict):
            return False
        return True
