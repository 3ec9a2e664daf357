"""Where a user's wrapped data keys are kept: internal objects beside the memory files."""

from __future__ import annotations

from .paths import KeyLayout
from .store import ConditionalConflict, PreconditionFailed, S3Store

WRAPPED_KEY_MAX_BYTES = 64 * 1024
KEYS_PREFIX = "keys/"
"""Where the wrapped data keys lie below a user's ``internal/``: ``keys/v<version>``."""


def key_version(name: str) -> int | None:
    """The version of a wrapped data key's name below ``internal/`` (``keys/v<n>``), or None."""
    digits = name.removeprefix(KEYS_PREFIX + "v")
    if digits == name or not digits.isascii() or not digits.isdigit() or len(digits) > 9:
        return None
    return int(digits)


class KeyVault:
    """One user's wrapped data keys, at ``internal/keys/v<version>`` (a ``WrappedKeyVault``)."""

    def __init__(self, store: S3Store, layout: KeyLayout) -> None:
        self._store = store
        self._layout = layout

    @property
    def identity(self) -> str:
        return f"s3://{self._store.bucket}/{self._layout.namespace}"

    def _key(self, version: int) -> str:
        return self._layout.key_of_internal(f"{KEYS_PREFIX}v{version}")

    def get_wrapped(self, version: int) -> bytes | None:
        stored = self._store.get(self._key(version), max_bytes=WRAPPED_KEY_MAX_BYTES)
        return None if stored is None else stored.body

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        try:
            self._store.put(self._key(version), wrapped, if_none_match=True)
        except (PreconditionFailed, ConditionalConflict):
            return False
        return True
