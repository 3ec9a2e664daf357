"""Private names (storage format v2): object keys that show neither user ids nor memory path segments.

Pure functions, no I/O. A user's namespace and each segment of a memory path are encrypted with
AES-SIV (deterministic, authenticated) under keys derived by HKDF-SHA256 from a 32-byte store key,
and written as lowercase unpadded base32 (``a-z2-7``). A segment's associated data is its parent's
canonical path, and its key is the user's own, so a token read under another directory, user or store
key is refused.

What the keys still show: the length of each name and user id in 16-byte steps (names are padded, ISO/IEC 7816-4, to a
multiple of 16 bytes), whether two names in one directory of one user are equal (the same name gives
the same token there), and the shape of the tree (how many entries each directory holds, and how deep).
"""

from __future__ import annotations

import base64
import struct
import threading
from collections import OrderedDict

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from s3memory.core.paths import MEMORY_ROOT, S3_MAX_KEY_BYTES

STORE_KEY_BYTES = 32
_SIV_KEY_BYTES = 64
_BLOCK = 16
_TAG_BYTES = 16
_NAMESPACE_KEY_INFO = b"s3memory/v2/namespace-key"
_NAME_KEY_INFO = b"s3memory/v2/name-key"
_NAMESPACE_AD = b"s3memory/v2/namespace"
_NAME_AD = b"s3memory/v2/name"
CACHE_ENTRIES = 16_384
"""The most names one ``NameCipher`` remembers in each direction: (parent, token) -> name and
(parent, name) -> token."""
MAX_USER_ID_BYTES = 256
_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_AS_DIGITS = str.maketrans(_ALPHABET, "0123456789abcdefghijklmnopqrstuv")


def token_characters(name_bytes: int) -> int:
    """The characters of the token of a name (or user id) of ``name_bytes`` bytes of UTF-8."""
    if name_bytes < 0:
        raise ValueError("name_bytes must not be negative")
    sealed = _TAG_BYTES + _BLOCK * (name_bytes // _BLOCK + 1)
    return -(-sealed * 8 // 5)


MAX_NAMESPACE_CHARACTERS = token_characters(MAX_USER_ID_BYTES)
"""The characters of the namespace token of the longest user id (256 bytes)."""
MAX_TOKEN_CHARACTERS = S3_MAX_KEY_BYTES
"""The longest segment token ``NameCipher.name`` reads: no longer one fits in an S3 key."""
MAX_NAME_BYTES = max(n for n in range(S3_MAX_KEY_BYTES) if token_characters(n) <= MAX_TOKEN_CHARACTERS)
"""The longest name (bytes of UTF-8) whose token ``NameCipher.name`` reads back (623)."""


def _derived(store_key: bytes, info: bytes) -> bytes:
    if not isinstance(store_key, bytes) or len(store_key) != STORE_KEY_BYTES:
        raise ValueError(f"the store key must be exactly {STORE_KEY_BYTES} bytes (bytes, not str)")
    return HKDF(algorithm=hashes.SHA256(), length=_SIV_KEY_BYTES, salt=None, info=info).derive(store_key)


def _name_key_info(user_id: str) -> bytes:
    data = user_id.encode("utf-8")
    return _NAME_KEY_INFO + struct.pack(">I", len(data)) + data


def _padded(data: bytes) -> bytes:
    data += b"\x80"
    return data + b"\x00" * (-len(data) % _BLOCK)


def _unpadded(data: bytes) -> bytes | None:
    stripped = data.rstrip(b"\x00")
    if not stripped or stripped[-1] != 0x80 or len(data) - len(stripped) >= _BLOCK:
        return None
    return stripped[:-1]


def _encoded(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _decoded(token: str) -> bytes | None:
    """The bytes a canonical token spells (lowercase, unpadded, no stray trailing bits), or None.
    The answers of ``base64`` decoding and then requiring that re-encoding gives ``token`` back
    (tested against it), several times faster."""
    if token.strip(_ALPHABET):
        return None
    bits = 5 * len(token)
    size, spare = divmod(bits, 8)
    if spare >= 5:
        return None
    value = int(token.translate(_AS_DIGITS), 32) if token else 0
    if value & ((1 << spare) - 1):
        return None
    return (value >> spare).to_bytes(size, "big")


def _sealed(siv: AESSIV, text: str, associated_data: list[bytes]) -> str:
    return _encoded(siv.encrypt(_padded(text.encode("utf-8")), associated_data))


def _opened(siv: AESSIV, token: str, limit: int, associated_data: list[bytes]) -> str | None:
    if not isinstance(token, str) or len(token) > limit:
        return None
    sealed = _decoded(token)
    if sealed is None or len(sealed) < _TAG_BYTES + _BLOCK or len(sealed) % _BLOCK:
        return None
    try:
        padded = siv.decrypt(sealed, associated_data)
    except InvalidTag:
        return None
    data = _unpadded(padded)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def namespace_of(store_key: bytes, user_id: str) -> str:
    """The token naming ``user_id``'s namespace under ``store_key``. ``ValueError`` for a user id of
    more than 256 bytes of UTF-8."""
    if len(user_id.encode("utf-8")) > MAX_USER_ID_BYTES:
        raise ValueError(f"user_id must be at most {MAX_USER_ID_BYTES} bytes of UTF-8")
    siv = AESSIV(_derived(store_key, _NAMESPACE_KEY_INFO))
    return _sealed(siv, user_id, [_NAMESPACE_AD])


def namespace_shaped(name: str) -> bool:
    """True if ``name`` has the shape of a namespace token (some store key's seal of a user id):
    canonical lowercase base32 of a tag and whole padded blocks, no longer than the longest."""
    if len(name) > MAX_NAMESPACE_CHARACTERS:
        return False
    sealed = _decoded(name)
    return sealed is not None and len(sealed) >= _TAG_BYTES + _BLOCK and not len(sealed) % _BLOCK


def user_of_namespace(store_key: bytes, token: str) -> str | None:
    """The user id whose namespace ``token`` names under ``store_key``, or None for any string that
    is not such a token."""
    siv = AESSIV(_derived(store_key, _NAMESPACE_KEY_INFO))
    return _opened(siv, token, MAX_NAMESPACE_CHARACTERS, [_NAMESPACE_AD])


class NameCipher:
    """Encrypts and decrypts one user's path segments, each bound to its parent directory.

    Answers are remembered (bounded LRU, thread-safe); refusals are not.
    """

    def __init__(self, store_key: bytes, user_id: str) -> None:
        self._siv = AESSIV(_derived(store_key, _name_key_info(user_id)))
        self._lock = threading.Lock()
        self._names: OrderedDict[tuple[tuple[str, ...], str], str] = OrderedDict()
        self._tokens: OrderedDict[tuple[tuple[str, ...], str], str] = OrderedDict()

    def __repr__(self) -> str:
        return "<NameCipher (keys and user withheld)>"

    def _remembered(
        self, cache: OrderedDict[tuple[tuple[str, ...], str], str], parent: tuple[str, ...], key: str
    ) -> str | None:
        with self._lock:
            value = cache.get((parent, key))
            if value is not None:
                cache.move_to_end((parent, key))
            return value

    def _remember(self, parent: tuple[str, ...], name: str, token: str) -> None:
        with self._lock:
            for cache, key, value in ((self._names, token, name), (self._tokens, name, token)):
                cache[(parent, key)] = value
                cache.move_to_end((parent, key))
                while len(cache) > CACHE_ENTRIES:
                    cache.popitem(last=False)

    @staticmethod
    def _associated_data(parent: tuple[str, ...]) -> list[bytes]:
        """The parent's canonical path: unambiguous, as the path policy keeps '/' out of segments."""
        return [_NAME_AD, "/".join((MEMORY_ROOT, *parent)).encode("utf-8")]

    def token(self, parent: tuple[str, ...], name: str) -> str:
        """The token of the segment ``name`` in the directory ``parent`` (segments below the root).
        A name of more than ``MAX_NAME_BYTES`` bytes gives a token too long for an S3 key, which
        ``name`` refuses."""
        parent = tuple(parent)
        cached = self._remembered(self._tokens, parent, name)
        if cached is not None:
            return cached
        token = _sealed(self._siv, name, self._associated_data(parent))
        self._remember(parent, name, token)
        return token

    def name(self, parent: tuple[str, ...], token: str) -> str | None:
        """The segment ``token`` names in the directory ``parent``, or None when this cipher did not
        make ``token`` for ``parent`` (tampered, malformed, too long, or of another directory, user or
        store key)."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARACTERS:
            return None
        parent = tuple(parent)
        cached = self._remembered(self._names, parent, token)
        if cached is not None:
            return cached
        name = _opened(self._siv, token, MAX_TOKEN_CHARACTERS, self._associated_data(parent))
        if name is not None:
            self._remember(parent, name, token)
        return name

    def tokens(self, segments: tuple[str, ...]) -> tuple[str, ...]:
        """The tokens of a whole path's segments, each under the segments before it."""
        return tuple(self.token(tuple(segments[:depth]), name) for depth, name in enumerate(segments))

    def segments(self, tokens: tuple[str, ...]) -> tuple[str, ...] | None:
        """The segments a whole path of tokens names, or None if any token is refused."""
        names: list[str] = []
        for token in tokens:
            name = self.name(tuple(names), token)
            if name is None:
                return None
            names.append(name)
        return tuple(names)
