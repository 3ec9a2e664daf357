"""Whose data keys: key owners, with the KMS encryption contexts and local derivation info that
bind a key to its owner, where their wrapped keys are kept, and what a store-level key is for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from s3memory.crypto._primitives import length_prefixed


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

    def holds_files(self) -> bool:
        """Whether a memory file lies in the user's namespace (one one-key listing)."""
        ...

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        """Store ``wrapped`` unless a key of that version exists; True if this call stored it."""
        ...


STORE_KEY_PURPOSE = "store-key"
"""What a store-level key is for: the store key (the root of private names)."""
SERVER_RECORD_PURPOSE = "server-record"
"""What a store-level key is for: sealing the record of what the S3 server enforces."""


def store_context(store: str, purpose: str) -> dict[str, str]:
    """The KMS encryption context of a store-level key for ``purpose`` (``s3memory:user`` is never
    a namespace token)."""
    return {"s3memory:store": store, "s3memory:user": purpose, "s3memory:key_version": "0"}


def purpose_data(purpose: str) -> bytes:
    """What a local wrapping binds besides the store: nothing for the store key (as it always
    has), the purpose for any other store-level key."""
    return b"" if purpose == STORE_KEY_PURPOSE else length_prefixed(purpose)


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
        return b"s3memory/v2/local-data-key" + length_prefixed(self.store) + length_prefixed(self.user_id)
