"""Sizes and encodings every part of the crypto package shares: AES-GCM nonce and tag sizes, the
data key size, key version numbers, and length-prefixed text for associated data."""

from __future__ import annotations

import struct

NONCE_BYTES = 12
TAG_BYTES = 16
DATA_KEY_BYTES = 32
MAX_KEY_VERSION = 999_999_999
"""The highest key version: a wrapped key's name holds at most nine digits (``core.keyvault``)."""


def key_version_named(digits: str) -> int | None:
    """The key version ``digits`` spell (decimal, from 1 to ``MAX_KEY_VERSION``, no sign or leading
    zero), or None."""
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9 or str(int(digits)) != digits:
        return None
    version = int(digits)
    return version if 1 <= version <= MAX_KEY_VERSION else None


def length_prefixed(text: str) -> bytes:
    """``text`` in UTF-8 after its length (u32, big-endian): unambiguous when joined to others."""
    data = text.encode("utf-8")
    return struct.pack(">I", len(data)) + data
