"""Object formats: how a memory file or an internal object is sealed and opened (AES-256-GCM with
key commitment), and format 2's place record.

Object header, formats 1 and 2 (all integers big-endian)::

    magic "S3ME" | format (0x01 or 0x02) | key version (u32) | salt (32) | commitment (32)
    | nonce (12) | ciphertext | GCM tag (16)

Per object, HKDF-SHA256 over the user's data key and the random salt gives an encryption key and a
commitment key; the commitment is stored in the header and checked in constant time before
decrypting (as the committing suites of the AWS Encryption SDK do). In format 1 the associated data
is the header plus the user id and the memory path, so a ciphertext moved to another user or path is
refused, and, for an object written by a named author, that author too (kept in the object's
metadata, so a changed, added or removed author is refused like a changed byte). In format 2 a
file's content is bound to its store and user only, and the place record in its metadata binds it to
its path and author. ``docs/format.md`` and ``docs/format-v2.md`` have the details; the bytes are
pinned by ``tests/vectors``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from s3memory.crypto._authors import AUTHOR_MAX_CHARACTERS, author_metadata, author_of, validate_author
from s3memory.crypto._fingerprints import parsed_fingerprint, path_fingerprint
from s3memory.crypto._primitives import NONCE_BYTES, TAG_BYTES, length_prefixed
from s3memory.errors import IntegrityError, ObjectRefused

if TYPE_CHECKING:
    from s3memory.crypto._providers import DataKeySource

MAGIC = b"S3ME"
FORMAT_1 = 1
"""Format 1: a file bound to its user and path inside its object, under a key named by user id."""
FORMAT_2 = 2
"""Format 2: content bound to its user and store, placed at its path by its metadata."""
HEADER_METADATA = "s3memory-header"
"""Metadata of a format-2 file: its content header (URL-safe base64), so a rename can place a copy
of it without reading the content."""
PLACE_METADATA = "s3memory-place"
"""Metadata of a format-2 file: the place record (URL-safe base64 of nonce, sealed author block and
tag) that binds the content header to the file's path and names who wrote or moved it there."""
SALT_BYTES = 32
COMMITMENT_BYTES = 32
_HEADER = struct.Struct(f">4sBI{SALT_BYTES}s{COMMITMENT_BYTES}s{NONCE_BYTES}s")
HEADER_BYTES = _HEADER.size
OVERHEAD = HEADER_BYTES + TAG_BYTES
"""Ciphertext bytes beyond the plaintext: fixed, so listings give plaintext sizes without a GET."""

_OBJECT_KEYS_INFO = b"s3memory/v1/object-keys"
_PLACE_INFO = b"s3memory/v2/place"
_PLACE_KEY_INFO = b"s3memory/v2/place-key"
_AUTHOR_BLOCK = 1 + AUTHOR_MAX_CHARACTERS
_VERSION = struct.Struct(">4sBI")
SEALED_VERSION_BYTES = _VERSION.size
"""The leading bytes of an object that name its key version."""


def plaintext_size(object_size: int) -> int:
    """The plaintext size of an object of ``object_size`` bytes in our format (0 if too small)."""
    return max(0, object_size - OVERHEAD)


def sealed_version(blob: bytes) -> int | None:
    """The key version the header of ``blob`` names (not authenticated), or None if ``blob`` does not
    begin as an object in our format (1 or 2)."""
    if len(blob) < SEALED_VERSION_BYTES:
        return None
    magic, format_version, version = _VERSION.unpack_from(blob)
    return int(version) if magic == MAGIC and format_version in (FORMAT_1, FORMAT_2) else None


def _object_keys(data_key: bytes, salt: bytes) -> tuple[bytes, bytes]:
    material = HKDF(algorithm=hashes.SHA256(), length=64, salt=salt, info=_OBJECT_KEYS_INFO).derive(data_key)
    return material[:32], material[32:]


@dataclass(frozen=True)
class Sealed:
    """An object as written: its bytes and the metadata that goes with them."""

    body: bytes
    metadata: dict[str, str]


@dataclass(frozen=True)
class Opened:
    """A memory file as read: its plaintext and the author its version names (None: unnamed)."""

    plaintext: bytes
    author: str | None


@dataclass(frozen=True)
class Place:
    """Where a format-2 object's metadata places its content: the content's header, and who wrote
    it or moved it there (None: unnamed)."""

    header: bytes
    author: str | None


class ObjectCipher:
    """Seals and opens one user's objects with that user's data keys.

    Its objects carry the object format it is given (``format``, in each header), and it opens
    only those: which one a store's objects take is the storage format's choice
    (``Format.object_format``, ``formats/strategy.py``; format 2's key owner is bound to its store).
    Format 1's files are bound to their path in the associated data (``seal_bound_file``); format 2
    binds a file's content to its user and store only, and places it at its path by a sealed record
    in its metadata (``seal_placed_file``, ``PLACE_METADATA``), so a copy made on the server with a
    new record renames it. Internal objects (job records, the access record) are bound to their name
    in both formats.
    """

    def __init__(self, keys: DataKeySource, object_format: int) -> None:
        owner = keys.owner
        self.format = object_format
        self._scope = (b"" if owner.store is None else length_prefixed(owner.store)) + length_prefixed(
            owner.user_id
        )
        self._keys = keys

    def _sealed(self, plaintext: bytes, associated: Callable[[bytes], bytes]) -> bytes:
        """Our header and the ciphertext of ``plaintext``; ``associated`` gives the associated data
        for the header."""
        version, data_key = self._keys.current()
        salt = os.urandom(SALT_BYTES)
        nonce = os.urandom(NONCE_BYTES)
        encryption_key, commitment = _object_keys(data_key, salt)
        header = _HEADER.pack(MAGIC, self.format, version, salt, commitment, nonce)
        return header + AESGCM(encryption_key).encrypt(nonce, plaintext, associated(header))

    def _opened(
        self, name: str, blob: bytes, associated: Callable[[bytes], bytes], data_key: bytes | None = None
    ) -> bytes:
        """``blob`` decrypted: refused unless its header, commitment and tag check out (``data_key``:
        the key of the header's version, when the caller has it already)."""
        refused = _refused(name)
        if len(blob) < OVERHEAD:
            raise refused
        header = blob[:HEADER_BYTES]
        magic, format_version, version, salt, commitment, nonce = _HEADER.unpack(header)
        if magic != MAGIC or format_version != self.format:
            raise refused
        key = self._data_key(name, version) if data_key is None else data_key
        encryption_key, expected_commitment = _object_keys(key, salt)
        if not hmac.compare_digest(commitment, expected_commitment):
            raise refused
        try:
            return AESGCM(encryption_key).decrypt(nonce, blob[HEADER_BYTES:], associated(header))
        except InvalidTag:
            raise refused from None

    def _data_key(self, name: str, version: int) -> bytes:
        try:
            return self._keys.version(version)
        except IntegrityError:
            raise ObjectRefused(
                f"Error: The stored object for {name} names data key version {version}, which this user "
                "does not have; it was not read."
            ) from None

    def _named(self, path: str, author: str | None) -> Callable[[bytes], bytes]:
        named = b"" if author is None else length_prefixed(author)
        return lambda header: header + self._scope + length_prefixed(path) + named

    def seal(self, path: str, plaintext: bytes, author: str | None = None) -> bytes:
        """Encrypt ``plaintext`` bound to the name ``path`` (a format-1 memory path, or an internal
        object's name), written by ``author`` when one is named."""
        return self._sealed(plaintext, self._named(path, author))

    def open(self, path: str, blob: bytes, author: str | None = None) -> bytes:
        """Decrypt an object sealed by ``seal`` for ``path`` (with metadata naming ``author``, or none);
        anything not sealed by us for this user, name and author is refused."""
        return self._opened(path, blob, self._named(path, author))

    def seal_bound_file(self, path: str, plaintext: bytes, author: str | None) -> Sealed:
        """Format 1: a memory file at ``path`` written by ``author``, both bound in the object (the
        author named in its metadata too)."""
        return Sealed(self.seal(path, plaintext, author), author_metadata(author))

    def open_bound_file(self, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        """Format 1: a memory file read at ``path`` with ``metadata``; refused unless we sealed it
        for this user, this path and the author its metadata names."""
        author = author_of(metadata)
        return Opened(self.open(path, blob, author), author)

    def seal_placed_file(self, path: str, plaintext: bytes, author: str | None) -> Sealed:
        """Format 2: a memory file at ``path`` written by ``author``: its content bound to the user
        and store, placed at ``path`` by its metadata (``placed``)."""
        body = self._sealed(plaintext, lambda header: header + self._scope)
        return Sealed(body, self.placed(path, body[:HEADER_BYTES], author))

    def open_placed_file(self, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        """Format 2: a memory file read at ``path`` with ``metadata``; refused unless we sealed it
        for this user and store and it was placed at ``path``."""
        header = blob[:HEADER_BYTES]
        version = _header_version(header)
        if version is None:
            raise _refused(path)
        data_key = self._data_key(path, version)  # once: it opens the place record and the content
        author = self._placed_author(path, header, metadata.get(PLACE_METADATA), data_key)
        return Opened(self._opened(path, blob, lambda header: header + self._scope, data_key), author)

    def placed(self, path: str, header: bytes, author: str | None) -> dict[str, str]:
        """The metadata that places the format-2 content of ``header`` at ``path``, written (or
        moved there) by ``author``: the header itself, and the place record sealing the author with
        the header and the path as associated data."""
        version = _header_version(header)
        if version is None:
            raise _refused(path)
        if author is not None:
            validate_author(author)
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(_place_key(self._data_key(path, version))).encrypt(
            nonce, _author_block(author), _place_data(header, path)
        )
        return {HEADER_METADATA: _b64(header), PLACE_METADATA: _b64(nonce + sealed)}

    def header_of(self, path: str, metadata: Mapping[str, str]) -> bytes:
        """The content header a format-2 object's metadata names (``placed``); ``IntegrityError`` when
        it names none. Not authenticated here: a copy placed with a wrong one fails to open."""
        header = _unb64(metadata.get(HEADER_METADATA), HEADER_BYTES)
        if header is None or _header_version(header) is None:
            raise _refused(path)
        return header

    def place_of(self, path: str, metadata: Mapping[str, str]) -> Place:
        """The content header and the author that a format-2 object's ``metadata`` places at
        ``path``; ``IntegrityError`` unless its place record authenticates for that header and
        path. The body is not read: one that is not the header's fails when it is opened."""
        header = self.header_of(path, metadata)
        return Place(header, self._placed_author(path, header, metadata.get(PLACE_METADATA)))

    def _placed_author(
        self, path: str, header: bytes, record: str | None, data_key: bytes | None = None
    ) -> str | None:
        version = _header_version(header)
        sealed = _unb64(record, NONCE_BYTES + _AUTHOR_BLOCK + TAG_BYTES)
        if version is None or sealed is None:
            raise _refused(path)
        key = self._data_key(path, version) if data_key is None else data_key
        try:
            block = AESGCM(_place_key(key)).decrypt(
                sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], _place_data(header, path)
            )
        except InvalidTag:
            raise _refused(path) from None
        author = _author_from_block(block)
        if author is False:
            raise _refused(path)
        return author

    def is_current(self, header: bytes) -> bool:
        """True if ``header`` (of a format-2 object) names the user's current data key version:
        what a rename may copy as it is (a copy of an older one would keep a key being retired)."""
        return _header_version(header) == self._keys.current()[0]

    def fingerprint(self, path: str, version: int | None = None) -> str:
        """A keyed hash of ``path`` that names it in object metadata without revealing it:
        ``<version>:<hex>``, HMAC-SHA256 under a key derived from the data key of ``version`` (by
        default the current one). ``IntegrityError`` when the user has no key of ``version``."""
        if version is None:
            version, data_key = self._keys.current()
        else:
            data_key = self._keys.version(version)
        return path_fingerprint(data_key, version, path)

    def made_of(self, fingerprint: str | None, path: str) -> bool:
        """True if the stored ``fingerprint`` is that of ``path`` under the key version it names;
        False for anything else (no fingerprint, a malformed one, a version the user has no key of)."""
        parsed = parsed_fingerprint(fingerprint)
        if parsed is None:
            return False
        version, digest = parsed
        try:
            expected = self.fingerprint(path, version)
        except IntegrityError:
            return False
        return hmac.compare_digest(expected, f"{version}:{digest}")

    def check_key(self, version: int) -> None:
        """Refuse (``IntegrityError``) when this user's data key of ``version`` cannot be had."""
        self._keys.version(version)


def _refused(name: str) -> ObjectRefused:
    return ObjectRefused(
        f"Error: The stored object for {name} failed its integrity check (tampered, truncated, "
        "foreign, wrongly keyed or not encrypted); it was not read."
    )


def _header_version(header: bytes) -> int | None:
    """The key version of a format-2 header, or None if ``header`` is not one."""
    if len(header) != HEADER_BYTES:
        return None
    magic, format_version, version = _VERSION.unpack_from(header)
    return int(version) if magic == MAGIC and format_version == FORMAT_2 else None


def _place_key(data_key: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PLACE_KEY_INFO).derive(data_key)


def _place_data(header: bytes, path: str) -> bytes:
    return _PLACE_INFO + header + length_prefixed(path)


def _author_block(author: str | None) -> bytes:
    """``author`` in a block of fixed size, so a place record does not show its length."""
    data = b"" if author is None else author.encode("ascii")
    return bytes([len(data)]) + data.ljust(AUTHOR_MAX_CHARACTERS, b"\0")


def _author_from_block(block: bytes) -> str | Literal[False] | None:
    """The author an ``_author_block`` holds (None: unnamed), or False if it is not one."""
    size = block[0]
    data, padding = block[1 : 1 + size], block[1 + size :]
    if len(block) != _AUTHOR_BLOCK or size > AUTHOR_MAX_CHARACTERS or padding.strip(b"\0"):
        return False
    if not size:
        return None
    try:
        return validate_author(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return False


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str | None, size: int) -> bytes | None:
    """The ``size`` bytes ``text`` spells in unpadded URL-safe base64 (exactly as ``_b64`` writes
    them), or None."""
    if text is None or len(text) != len(_b64(bytes(size))):
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        return None
    return data if len(data) == size and _b64(data) == text else None
