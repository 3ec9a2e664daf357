"""Path fingerprints: a keyed hash that names a memory path in object metadata without revealing
it, ``<version>:<hex>`` (HMAC-SHA256 under a key derived from the data key of ``version``)."""

from __future__ import annotations

import hmac

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from s3memory.crypto._primitives import key_version_named

_FINGERPRINT_INFO = b"s3memory/v1/path-fingerprint"
FINGERPRINT_CHARACTERS = 32
"""The hex digits of a path fingerprint's digest."""
_HEX = frozenset("0123456789abcdef")


def path_fingerprint(data_key: bytes, version: int, path: str) -> str:
    """The fingerprint of ``path`` under ``data_key``, the user's data key of ``version``."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_FINGERPRINT_INFO).derive(data_key)
    digest = hmac.new(key, path.encode("utf-8"), "sha256").hexdigest()
    return f"{version}:{digest[:FINGERPRINT_CHARACTERS]}"


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
