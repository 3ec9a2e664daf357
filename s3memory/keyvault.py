"""Where a user's wrapped data keys are kept: internal objects beside the memory files."""

from __future__ import annotations

from .paths import KeyLayout
from .store import ConditionalConflict, PreconditionFailed, S3Store

WRAPPED_KEY_MAX_BYTES = 64 * 1024


class KeyVault:
    """One user's wrapped data keys, at ``internal/keys/v<version>`` (a ``WrappedKeyVault``)."""

    def __init__(self, store: S3Store, layout: KeyLayout) -> None:
        self._store = store
        self._layout = layout

    @property
    def identity(self) -> str:
        return f"s3://{self._store.bucket}/{self._layout.namespace}"

    def _key(self, version: int) -> str:
        return self._layout.key_of_internal(f"keys/v{version}")

    def get_wrapped(self, version: int) -> bytes | None:
        stored = self._store.get(self._key(version), max_bytes=WRAPPED_KEY_MAX_BYTES)
        return None if stored is None else stored.body

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        try:
            self._store.put(self._key(version), wrapped, if_none_match=True)
        except (PreconditionFailed, ConditionalConflict):
            return False
        return True
