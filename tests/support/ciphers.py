"""Object ciphers for tests that seal and open objects with a local key provider, outside any store:
a local provider derives its data keys and keeps no wrapped keys, so its vault is ``NoVault``."""

from __future__ import annotations

from s3memory.crypto import FORMAT_1, FORMAT_2, DataKeySource, KeyOwner, KeyProvider, ObjectCipher


class NoVault:
    """A local key provider's vault: it needs none, so any use of it fails the test."""

    identity = "none"

    def versions(self) -> list[int]:
        raise AssertionError("a local key provider needs no vault")

    def get_wrapped(self, version: int) -> bytes | None:
        raise AssertionError("a local key provider needs no vault")

    def holds_files(self) -> bool:
        raise AssertionError("a local key provider needs no vault")

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        raise AssertionError("a local key provider needs no vault")


def local_cipher(provider: KeyProvider, owner: KeyOwner) -> ObjectCipher:
    """The cipher of ``owner``'s objects under ``provider``'s data keys (a local provider's), in the
    object format of the storage format that makes such an owner: 2 for one bound to a store, else 1
    (``Format.placement``, ``Format.object_format``)."""
    return ObjectCipher(
        DataKeySource(provider, owner, NoVault()), FORMAT_1 if owner.store is None else FORMAT_2
    )
