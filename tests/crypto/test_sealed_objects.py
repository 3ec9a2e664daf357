"""Sealed objects byte by byte (``crypto/_objects.py``): every size at exactly its limit and one past
it, the exact refusals a bucket writer's bytes meet (forged, truncated, wrong-format, unknown key
version), objects built by the documented construction alone (docs/format.md, docs/format-v2.md),
and place records a key holder sealed around a malformed author block."""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from s3memory.crypto import (
    FORMAT_2,
    HEADER_BYTES,
    OVERHEAD,
    SEALED_VERSION_BYTES,
    DataKeySource,
    KeyOwner,
    LocalKeyProvider,
    ObjectCipher,
    Opened,
    Place,
    plaintext_size,
    sealed_version,
)
from s3memory.errors import IntegrityError, ObjectRefused
from tests.support.bucket import MASTER_KEY
from tests.support.ciphers import NoVault

MAGIC = b"S3ME"
HEADER_METADATA = "s3memory-header"
PLACE_METADATA = "s3memory-place"
"""The documented magic and metadata names (docs/format.md, docs/format-v2.md), not the module's."""
PATH = "/memories/notes.md"
NAME = "jobs/1.json"
STORE = "s3memory-store-a"
NEW_MASTER = bytes(range(32, 64))
ROTATED = LocalKeyProvider(NEW_MASTER, version=2, previous={1: MASTER_KEY})
"""Key version 2 current, version 1 kept: the versions a forged header may name are 1 and 2."""
UNKNOWN = 7
"""A key version no provider here has."""
BLOCK_BYTES = 1 + 128
RECORD_BYTES = 12 + BLOCK_BYTES + 16


def owner(format_: int, user: str = "alice") -> KeyOwner:
    return KeyOwner(user) if format_ == 1 else KeyOwner(user, store=STORE, namespace="ns-" + user)


class CountingSource(DataKeySource):
    """A user's data keys that count how often the cipher asks for a version's."""

    asked: int = 0

    def version(self, version: int) -> bytes:
        self.asked += 1
        return super().version(version)


def cipher(format_: int, user: str = "alice") -> ObjectCipher:
    return ObjectCipher(DataKeySource(ROTATED, owner(format_, user), NoVault()), format_)


def data_key(format_: int, version: int = 2, user: str = "alice") -> bytes:
    return ROTATED.data_key(owner(format_, user), version, NoVault())


def refused(name: str) -> str:
    return (
        f"Error: The stored object for {name} failed its integrity check (tampered, truncated, "
        "foreign, wrongly keyed or not encrypted); it was not read."
    )


def no_key(name: str, version: int) -> str:
    return (
        f"Error: The stored object for {name} names data key version {version}, which this user does "
        "not have; it was not read."
    )


def refusal(call: Callable[[], object]) -> str:
    """The message of the ``ObjectRefused`` that ``call`` raises."""
    with pytest.raises(ObjectRefused) as caught:
        call()
    return caught.value.message


def forged(format_: int, version: int, *, magic: bytes = MAGIC, size: int = OVERHEAD) -> bytes:
    """``size`` bytes as a bucket writer could write them, opening as a header naming ``format_`` and
    ``version`` (zeros after)."""
    return (magic + bytes([format_]) + struct.pack(">I", version)).ljust(size, b"\0")[:size]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def lp(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack(">I", len(data)) + data


# --- sizes -------------------------------------------------------------------------------------


def test_the_fixed_sizes_are_the_documented_ones() -> None:
    """docs/format.md: a header of 85 bytes, 101 bytes of overhead, the key version in bytes 5 to 8."""
    assert (HEADER_BYTES, OVERHEAD, SEALED_VERSION_BYTES) == (85, 101, 9)


@pytest.mark.parametrize(
    ("size", "plaintext"), [(0, 0), (OVERHEAD - 1, 0), (OVERHEAD, 0), (OVERHEAD + 1, 1), (OVERHEAD + 9, 9)]
)
def test_plaintext_size_at_the_overhead(size: int, plaintext: int) -> None:
    assert plaintext_size(size) == plaintext


@pytest.mark.parametrize(
    ("blob", "version"),
    [
        pytest.param(MAGIC + b"\x01\x00\x00\x00", None, id="8 bytes"),
        pytest.param(MAGIC + b"\x01\x00\x00\x00\x07", 7, id="9 bytes"),
        pytest.param(MAGIC + b"\x02\x00\x00\x00\x07" + b"rest", 7, id="format 2"),
        pytest.param(MAGIC + b"\x02\xff\xff\xff\xff", 2**32 - 1, id="largest u32"),
        pytest.param(MAGIC + b"\x00\x00\x00\x00\x07", None, id="format 0"),
        pytest.param(MAGIC + b"\x03\x00\x00\x00\x07", None, id="format 3"),
        pytest.param(b"S3MF\x01\x00\x00\x00\x07", None, id="another magic"),
    ],
)
def test_sealed_version_reads_nine_bytes_of_format_1_or_2(blob: bytes, version: int | None) -> None:
    assert sealed_version(blob) == version


@pytest.mark.parametrize("format_", [1, 2])
def test_an_empty_plaintext_makes_an_object_of_exactly_the_overhead(format_: int) -> None:
    blob = cipher(format_).seal(NAME, b"")
    assert len(blob) == OVERHEAD
    assert cipher(format_).open(NAME, blob) == b""
    assert refusal(lambda: cipher(format_).open(NAME, blob[:-1])) == refused(NAME)
    placed = cipher(2).seal_placed_file(PATH, b"", None)
    assert len(placed.body) == OVERHEAD
    assert cipher(2).open_placed_file(PATH, placed.body, placed.metadata) == Opened(b"", None)
    assert refusal(lambda: cipher(2).open_placed_file(PATH, placed.body[:-1], placed.metadata)) == refused(
        PATH
    )


# --- what is refused before a key is looked for --------------------------------------------------


@pytest.mark.parametrize("reader", [1, 2])
@pytest.mark.parametrize(
    ("blob_of", "answer"),
    [
        pytest.param(lambda f: forged(f, UNKNOWN), "no key", id="our header, a version the user lacks"),
        pytest.param(lambda f: forged(f, UNKNOWN, size=OVERHEAD - 1), "refused", id="one byte short"),
        pytest.param(lambda f: forged(f, UNKNOWN, size=HEADER_BYTES), "refused", id="header alone"),
        pytest.param(lambda f: forged(f, UNKNOWN, size=SEALED_VERSION_BYTES), "refused", id="nine bytes"),
        pytest.param(lambda f: forged(f, UNKNOWN, magic=b"S3MF"), "refused", id="another magic"),
        pytest.param(lambda f: forged(3 - f, UNKNOWN), "refused", id="the other format"),
        pytest.param(lambda f: forged(0, UNKNOWN), "refused", id="format 0"),
        pytest.param(lambda f: forged(3, UNKNOWN), "refused", id="format 3"),
    ],
)
def test_a_forged_header_is_refused_before_its_key_version_is_looked_for(
    reader: int, blob_of: Callable[[int], bytes], answer: str
) -> None:
    """Only a whole object in the reader's own format gets as far as naming its key version; any
    other is refused as tampered, whatever version it names (and no key is fetched for it)."""
    expected = no_key(NAME, UNKNOWN) if answer == "no key" else refused(NAME)
    assert refusal(lambda: cipher(reader).open(NAME, blob_of(reader))) == expected


@pytest.mark.parametrize(
    ("blob", "answer"),
    [
        pytest.param(forged(2, UNKNOWN, size=HEADER_BYTES - 1), refused(PATH), id="84 bytes"),
        pytest.param(forged(2, UNKNOWN, size=HEADER_BYTES), no_key(PATH, UNKNOWN), id="85 bytes"),
        pytest.param(forged(2, UNKNOWN), no_key(PATH, UNKNOWN), id="101 bytes"),
        pytest.param(forged(2, UNKNOWN, magic=b"S3MF"), refused(PATH), id="another magic"),
        pytest.param(forged(1, UNKNOWN), refused(PATH), id="format 1"),
        pytest.param(forged(3, UNKNOWN), refused(PATH), id="format 3"),
    ],
)
def test_a_placed_file_needs_a_whole_format_2_header_before_its_key_version_is_looked_for(
    blob: bytes, answer: str
) -> None:
    metadata = cipher(2).seal_placed_file(PATH, b"text", "ada").metadata
    assert refusal(lambda: cipher(2).open_placed_file(PATH, blob, metadata)) == answer


def test_a_placed_file_asks_for_its_data_key_once() -> None:
    sealed = cipher(2).seal_placed_file(PATH, b"text", "ada")
    source = CountingSource(ROTATED, owner(2), NoVault())
    opened = ObjectCipher(source, FORMAT_2).open_placed_file(PATH, sealed.body, sealed.metadata)
    assert opened == Opened(b"text", "ada")
    assert source.asked == 1


# --- the documented construction ------------------------------------------------------------------


def object_keys(key: bytes, salt: bytes) -> tuple[bytes, bytes]:
    material = HKDF(algorithm=hashes.SHA256(), length=64, salt=salt, info=b"s3memory/v1/object-keys").derive(
        key
    )
    return material[:32], material[32:]


def built(format_: int, plaintext: bytes, associated: bytes, *, commitment: bytes | None = None) -> bytes:
    """An object made from docs/format.md alone: header, HKDF keys, AES-256-GCM over the header and
    ``associated``."""
    salt, nonce = os.urandom(32), os.urandom(12)
    encryption_key, expected = object_keys(data_key(format_), salt)
    head = MAGIC + bytes([format_]) + struct.pack(">I", 2) + salt + (commitment or expected) + nonce
    return head + AESGCM(encryption_key).encrypt(nonce, plaintext, head + associated)


def opened_as_documented(format_: int, blob: bytes, associated: bytes) -> bytes:
    """``blob`` (sealed under key version 2) checked and decrypted by docs/format.md alone."""
    encryption_key, commitment = object_keys(data_key(format_), blob[9:41])
    assert blob[:9] == MAGIC + bytes([format_]) + b"\x00\x00\x00\x02" and blob[41:73] == commitment
    head, nonce = blob[:HEADER_BYTES], blob[73:HEADER_BYTES]
    return AESGCM(encryption_key).decrypt(nonce, blob[HEADER_BYTES:], head + associated)


@pytest.mark.parametrize("author", [None, "ada"])
def test_a_format_1_object_is_the_documented_construction(author: str | None) -> None:
    """docs/format.md: associated data header | len user user | len path path | [len author author]."""
    associated = lp("alice") + lp(PATH) + (b"" if author is None else lp(author))
    assert cipher(1).open(PATH, built(1, b"hello", associated), author) == b"hello"
    assert opened_as_documented(1, cipher(1).seal(PATH, b"hello", author), associated) == b"hello"


def test_a_format_2_object_is_the_documented_construction() -> None:
    """docs/format-v2.md: the content's associated data is header | store identity | user id (and an
    internal object's name after them)."""
    associated = lp(STORE) + lp("alice")
    assert cipher(2).open(NAME, built(2, b"{}", associated + lp(NAME))) == b"{}"
    assert opened_as_documented(2, cipher(2).seal(NAME, b"{}"), associated + lp(NAME)) == b"{}"
    sealed = cipher(2).seal_placed_file(PATH, b"hello", None)
    assert opened_as_documented(2, sealed.body, associated) == b"hello"
    assert sealed.metadata[HEADER_METADATA] == b64(sealed.body[:HEADER_BYTES])


@pytest.mark.parametrize("format_", [1, 2])
def test_a_ciphertext_under_a_wrong_commitment_is_refused_though_its_tag_is_good(format_: int) -> None:
    """Key commitment: the object's tag is valid (made with the key), but its commitment is not the
    one its key and salt give, so it is not opened."""
    scope = lp("alice") if format_ == 1 else lp(STORE) + lp("alice")
    blob = built(format_, b"hello", scope + lp(NAME), commitment=bytes(32))
    assert refusal(lambda: cipher(format_).open(NAME, blob)) == refused(NAME)


def test_no_author_and_an_empty_author_are_different_objects() -> None:
    alice = cipher(1)
    unnamed = alice.seal(PATH, b"hello")
    empty = built(1, b"hello", lp("alice") + lp(PATH) + lp(""))
    assert refusal(lambda: alice.open(PATH, unnamed, "")) == refused(PATH)
    assert refusal(lambda: alice.open(PATH, empty)) == refused(PATH)
    assert alice.open(PATH, empty, "") == b"hello"


# --- place records ----------------------------------------------------------------------------------


def place_key(key: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"s3memory/v2/place-key").derive(key)


def record(head: bytes, block: bytes, path: str = PATH) -> str:
    """A place record a holder of the key seals around ``block`` (docs/format-v2.md)."""
    nonce = os.urandom(12)
    sealed = AESGCM(place_key(data_key(2))).encrypt(nonce, block, b"s3memory/v2/place" + head + lp(path))
    return b64(nonce + sealed)


def block(author: bytes, size: int | None = None, padding: bytes = b"") -> bytes:
    """An author block: its size byte (``size``, by default the author's length), the author, and
    the padding (zeros to 129 bytes unless given)."""
    body = author + (padding or bytes(128 - len(author)))
    return bytes([len(author) if size is None else size]) + body


SEALED = cipher(2).seal_placed_file(PATH, b"text", "ada")
HEAD = SEALED.body[:HEADER_BYTES]


def test_a_place_record_is_the_documented_construction() -> None:
    metadata = SEALED.metadata
    raw = base64.urlsafe_b64decode(metadata[PLACE_METADATA] + "==")
    assert len(metadata[PLACE_METADATA]) == 210 and len(raw) == RECORD_BYTES
    opened = AESGCM(place_key(data_key(2))).decrypt(
        raw[:12], raw[12:], b"s3memory/v2/place" + HEAD + lp(PATH)
    )
    assert opened == block(b"ada")
    for author in ("ada", "a" * 128):
        placed = {HEADER_METADATA: b64(HEAD), PLACE_METADATA: record(HEAD, block(author.encode()))}
        assert cipher(2).place_of(PATH, placed) == Place(HEAD, author)
        assert cipher(2).open_placed_file(PATH, SEALED.body, placed) == Opened(b"text", author)
    unnamed = {HEADER_METADATA: b64(HEAD), PLACE_METADATA: record(HEAD, block(b""))}
    assert cipher(2).place_of(PATH, unnamed) == Place(HEAD, None)


@pytest.mark.parametrize(
    "malformed",
    [
        pytest.param(block(b"a" * 128, size=129), id="size 129"),
        pytest.param(block(b"a" * 128, size=255), id="size 255"),
        pytest.param(block(b"ada", size=2), id="size short of the author"),
        pytest.param(block(b"", padding=b"X" + bytes(127)), id="no author, padding not zero"),
        pytest.param(block(b"ada", padding=bytes(124) + b"X"), id="last padding byte not zero"),
        pytest.param(block(b"ad\xe9"), id="not ascii"),
        pytest.param(block(b"agent 7"), id="a character no author holds"),
        pytest.param(block(b"ada")[:-1], id="block of 128 bytes"),
        pytest.param(block(b"ada") + b"\0", id="block of 130 bytes"),
    ],
)
def test_a_place_record_sealed_around_a_malformed_author_block_is_refused(malformed: bytes) -> None:
    """Even with the key: a block that is not exactly what ``placed`` writes (129 bytes, a size byte of
    at most 128, an author the format holds, zeros after it) names no author."""
    placed = {HEADER_METADATA: b64(HEAD), PLACE_METADATA: record(HEAD, malformed)}
    assert refusal(lambda: cipher(2).place_of(PATH, placed)) == refused(PATH)
    assert refusal(lambda: cipher(2).open_placed_file(PATH, SEALED.body, placed)) == refused(PATH)


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param({}, id="none"),
        pytest.param({HEADER_METADATA: b64(HEAD[:-1])}, id="84 bytes"),
        pytest.param({HEADER_METADATA: b64(HEAD + b"\0")}, id="86 bytes"),
        pytest.param({HEADER_METADATA: b64(forged(1, 2, size=HEADER_BYTES))}, id="a format-1 header"),
        pytest.param(
            {HEADER_METADATA: b64(forged(2, 2, magic=b"S3MF", size=HEADER_BYTES))}, id="another magic"
        ),
        pytest.param({HEADER_METADATA: b64(HEAD) + "="}, id="padded"),
        pytest.param({HEADER_METADATA: b64(HEAD)[:-1] + "B"}, id="non-canonical tail"),
        pytest.param({HEADER_METADATA: "!" + b64(HEAD)[1:]}, id="not base64"),
        pytest.param({HEADER_METADATA: "é" + b64(HEAD)[1:]}, id="not ascii"),
    ],
)
def test_metadata_naming_no_format_2_header_is_refused(metadata: dict[str, str]) -> None:
    with_record = {**metadata, PLACE_METADATA: SEALED.metadata[PLACE_METADATA]}
    assert refusal(lambda: cipher(2).header_of(PATH, metadata)) == refused(PATH)
    assert refusal(lambda: cipher(2).place_of(PATH, with_record)) == refused(PATH)


def test_a_place_of_a_header_naming_a_key_the_user_lacks_is_refused_naming_the_version() -> None:
    head = forged(2, UNKNOWN, size=HEADER_BYTES)
    placed = {HEADER_METADATA: b64(head), PLACE_METADATA: SEALED.metadata[PLACE_METADATA]}
    assert refusal(lambda: cipher(2).place_of(PATH, placed)) == no_key(PATH, UNKNOWN)


def test_header_of_reads_the_header_placed() -> None:
    assert cipher(2).header_of(PATH, SEALED.metadata) == HEAD
    unauthenticated = forged(2, UNKNOWN, size=HEADER_BYTES)  # checked when the record is opened
    assert cipher(2).header_of(PATH, {HEADER_METADATA: b64(unauthenticated)}) == unauthenticated


@pytest.mark.parametrize(
    ("size", "fits"), [(RECORD_BYTES - 1, False), (RECORD_BYTES, True), (RECORD_BYTES + 1, False)]
)
def test_a_place_record_is_exactly_157_bytes(size: int, fits: bool) -> None:
    raw = base64.urlsafe_b64decode(SEALED.metadata[PLACE_METADATA] + "==")
    placed = {HEADER_METADATA: b64(HEAD), PLACE_METADATA: b64((raw + bytes(1))[:size])}
    if fits:
        assert cipher(2).place_of(PATH, placed) == Place(HEAD, "ada")
    else:
        assert refusal(lambda: cipher(2).place_of(PATH, placed)) == refused(PATH)


@pytest.mark.parametrize(
    ("head", "answer"),
    [
        pytest.param(HEAD[:-1], refused(PATH), id="84 bytes"),
        pytest.param(HEAD + b"\0", refused(PATH), id="86 bytes"),
        pytest.param(forged(1, 2, size=HEADER_BYTES), refused(PATH), id="format 1"),
        pytest.param(forged(2, 2, magic=b"S3MF", size=HEADER_BYTES), refused(PATH), id="another magic"),
        pytest.param(
            forged(2, UNKNOWN, size=HEADER_BYTES), no_key(PATH, UNKNOWN), id="a version the user lacks"
        ),
    ],
)
def test_placing_needs_a_whole_format_2_header_of_a_key_the_user_has(head: bytes, answer: str) -> None:
    assert refusal(lambda: cipher(2).placed(PATH, head, "ada")) == answer


@pytest.mark.parametrize(
    ("author", "message"),
    [
        ("", "an author must be a non-empty string of at most 128 characters"),
        ("a" * 129, "an author is at most 128 characters, got 129"),
        ("agent 7", "an author may hold only ASCII letters, digits and . _ : @ / + = -"),
        ("adé", "an author may hold only ASCII letters, digits and . _ : @ / + = -"),
    ],
)
def test_placing_refuses_an_author_the_block_cannot_hold(author: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        cipher(2).placed(PATH, HEAD, author)
    assert str(caught.value) == message


def test_placing_the_same_header_elsewhere_names_the_new_path_and_author() -> None:
    moved = cipher(2).placed("/memories/moved.md", HEAD, None)
    assert moved[HEADER_METADATA] == SEALED.metadata[HEADER_METADATA]
    assert cipher(2).place_of("/memories/moved.md", moved) == Place(HEAD, None)
    assert refusal(lambda: cipher(2).place_of(PATH, moved)) == refused(PATH)


# --- key versions, fingerprints -------------------------------------------------------------------


def test_is_current_names_the_current_key_version_only() -> None:
    old = ObjectCipher(DataKeySource(LocalKeyProvider(MASTER_KEY), owner(2), NoVault()), FORMAT_2)
    assert cipher(2).is_current(HEAD)
    assert not cipher(2).is_current(old.seal_placed_file(PATH, b"text", None).body[:HEADER_BYTES])
    assert not cipher(2).is_current(HEAD[:-1])


def test_a_fingerprint_is_made_under_the_version_it_names() -> None:
    alice = cipher(2)
    current, older = alice.fingerprint(PATH), alice.fingerprint(PATH, 1)
    assert current == alice.fingerprint(PATH, 2) and current.startswith("2:") and older.startswith("1:")
    assert current[2:] != older[2:]
    with pytest.raises(IntegrityError) as caught:
        alice.fingerprint(PATH, UNKNOWN)
    assert caught.value.message == f"Error: No data key of version {UNKNOWN} exists for this user."


@pytest.mark.parametrize(
    ("fingerprint", "made"),
    [
        pytest.param(lambda c: c.fingerprint(PATH), True, id="current version"),
        pytest.param(lambda c: c.fingerprint(PATH, 1), True, id="older version"),
        pytest.param(lambda c: c.fingerprint("/memories/other.md"), False, id="another path"),
        pytest.param(lambda c: cipher(2, "bob").fingerprint(PATH), False, id="another user"),
        pytest.param(lambda c: "1:" + c.fingerprint(PATH)[2:], False, id="digest of another version"),
        pytest.param(lambda c: f"{UNKNOWN}:" + c.fingerprint(PATH)[2:], False, id="a version the user lacks"),
        pytest.param(lambda c: None, False, id="none"),
        pytest.param(lambda c: "garbage", False, id="malformed"),
    ],
)
def test_made_of_knows_a_path_by_its_fingerprint_only(
    fingerprint: Callable[[Any], str | None], made: bool
) -> None:
    alice = cipher(2)
    assert alice.made_of(fingerprint(alice), PATH) is made


def test_check_key_refuses_only_a_version_the_user_lacks() -> None:
    assert cipher(2).check_key(1) is None
    with pytest.raises(IntegrityError) as caught:
        cipher(2).check_key(UNKNOWN)
    assert caught.value.message == f"Error: No data key of version {UNKNOWN} exists for this user."


# --- format 1's files ---------------------------------------------------------------------------


@pytest.mark.parametrize("author", [None, "ada", "a" * 128])
def test_a_format_1_file_names_its_author_in_metadata_and_in_its_associated_data(author: str | None) -> None:
    sealed = cipher(1).seal_bound_file(PATH, b"text", author)
    assert sealed.metadata == ({} if author is None else {"s3memory-author": author})
    assert len(sealed.body) == OVERHEAD + 4 and sealed.body[:9] == MAGIC + b"\x01\x00\x00\x00\x02"
    assert cipher(1).open(PATH, sealed.body, author) == b"text"
    assert cipher(1).open_bound_file(PATH, sealed.body, sealed.metadata) == Opened(b"text", author)


@pytest.mark.parametrize(
    ("author", "metadata"),
    [
        pytest.param("ada", {}, id="author removed"),
        pytest.param("ada", {"s3memory-author": "bob"}, id="author changed"),
        pytest.param("ada", {"s3memory-author": ""}, id="author emptied"),
        pytest.param(None, {"s3memory-author": "ada"}, id="author added"),
    ],
)
def test_a_format_1_file_whose_metadata_names_another_author_is_refused(
    author: str | None, metadata: dict[str, str]
) -> None:
    sealed = cipher(1).seal_bound_file(PATH, b"text", author)
    assert refusal(lambda: cipher(1).open_bound_file(PATH, sealed.body, metadata)) == refused(PATH)


@pytest.mark.parametrize(
    ("reader", "path"),
    [
        pytest.param(cipher(1, "bob"), PATH, id="another user"),
        pytest.param(cipher(1), "/memories/other.md", id="another path"),
        pytest.param(cipher(2), PATH, id="a format-2 reader"),
    ],
)
def test_a_format_1_file_opens_for_its_user_and_path_only(reader: ObjectCipher, path: str) -> None:
    sealed = cipher(1).seal_bound_file(PATH, b"text", "ada")
    assert refusal(lambda: reader.open_bound_file(path, sealed.body, sealed.metadata)) == refused(path)
