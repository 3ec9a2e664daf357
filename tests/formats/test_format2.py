"""Format 2: content bound to its user and store, placed at its path (and its author) by a sealed
record in its metadata; internal objects, key owners and wrapped store keys of format-2 stores."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from s3memory.crypto import (
    FORMAT_1,
    FORMAT_2,
    HEADER_BYTES,
    HEADER_METADATA,
    MAGIC,
    OVERHEAD,
    PLACE_METADATA,
    STORE_KEY_MAGIC,
    WRAPPED_KEY_MAGIC,
    DataKeySource,
    KeyOwner,
    KMSKeyProvider,
    LocalKeyProvider,
    ObjectCipher,
    Opened,
    Sealed,
)
from s3memory.errors import IntegrityError
from tests.support.bucket import MASTER_KEY

PATH = "/memories/notes.md"
OTHER = "/memories/moved/notes.md"
STORE = "s3memory-store-a"
REFUSED = "failed its integrity check"
NEW_MASTER = bytes(range(32, 64))
RECORD_BYTES = 12 + 1 + 128 + 16  # nonce, author block (size byte, 128 characters), tag


class _Vault:
    """Wrapped keys in a dict (a local provider never asks)."""

    identity = "test"

    def __init__(self) -> None:
        self.keys: dict[int, bytes] = {}

    def versions(self) -> list[int]:
        return sorted(self.keys)

    def get_wrapped(self, version: int) -> bytes | None:
        return self.keys.get(version)

    def holds_files(self) -> bool:
        return False

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        return self.keys.setdefault(version, wrapped) is wrapped


def token(user: str) -> str:
    """A stand-in for the user's namespace token (lowercase base32, like ``names``')."""
    return base64.b32encode(user.encode()).decode().lower().rstrip("=")


def owner(user: str = "alice", store: str | None = STORE) -> KeyOwner:
    return KeyOwner(user) if store is None else KeyOwner(user, store=store, namespace=token(user))


def cipher(user: str = "alice", store: str | None = STORE) -> ObjectCipher:
    """``user``'s cipher: format 2's bound to ``store``, format 1's without one."""
    keys = DataKeySource(LocalKeyProvider(MASTER_KEY), owner(user, store), _Vault())
    return ObjectCipher(keys, FORMAT_1 if store is None else FORMAT_2)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]


def _with_place(sealed: Sealed, place: str | None) -> dict[str, str]:
    metadata = {k: v for k, v in sealed.metadata.items() if k != PLACE_METADATA}
    return metadata if place is None else {**metadata, PLACE_METADATA: place}


ALICE = cipher()
V1 = ALICE.seal_placed_file(PATH, b"first version", "ada")
V2 = ALICE.seal_placed_file(PATH, b"second version", "ada")
ELSEWHERE = ALICE.seal_placed_file(OTHER, b"another file", "ada")
FORMAT1 = cipher(store=None).seal_bound_file(PATH, b"first version", "ada")
_RECORD = V2.metadata[PLACE_METADATA]
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# 157 bytes: the last character carries 2 bits and 4 unused ones; flipping one of those spells the
# same bytes differently.
_NON_CANONICAL = _RECORD[:-1] + _ALPHABET[_ALPHABET.index(_RECORD[-1]) ^ 1]


@pytest.mark.parametrize("author", [None, "ada", "agent:planner/7"])
@pytest.mark.parametrize("plaintext", [b"", b"hello", bytes(range(256)) * 9])
def test_a_file_opens_at_its_path_with_its_author(author: str | None, plaintext: bytes) -> None:
    sealed = ALICE.seal_placed_file(PATH, plaintext, author)
    assert ALICE.format == 2 and cipher(store=None).format == 1
    assert sealed.body.startswith(MAGIC + b"\x02\x00\x00\x00\x01")
    assert len(sealed.body) - OVERHEAD == len(plaintext)
    assert set(sealed.metadata) == {HEADER_METADATA, PLACE_METADATA}
    assert ALICE.header_of(PATH, sealed.metadata) == sealed.body[:HEADER_BYTES]
    assert cipher().open_placed_file(PATH, sealed.body, sealed.metadata) == Opened(plaintext, author)


def test_a_placed_copy_opens_at_its_new_path_only_and_the_original_at_its_own() -> None:
    moved = ALICE.placed(OTHER, ALICE.header_of(PATH, V2.metadata), "bob")
    assert moved[HEADER_METADATA] == V2.metadata[HEADER_METADATA]
    assert ALICE.open_placed_file(OTHER, V2.body, moved) == Opened(b"second version", "bob")
    assert ALICE.open_placed_file(PATH, V2.body, V2.metadata) == Opened(b"second version", "ada")
    for path, metadata in ((OTHER, V2.metadata), (PATH, moved)):
        with pytest.raises(IntegrityError, match=REFUSED):
            ALICE.open_placed_file(path, V2.body, metadata)
    placed_from_v1 = ALICE.placed(OTHER, ALICE.header_of(PATH, V1.metadata), "bob")
    with pytest.raises(IntegrityError, match=REFUSED):  # a rename told a wrong header places nothing
        ALICE.open_placed_file(OTHER, V2.body, placed_from_v1)
    with pytest.raises(IntegrityError, match=REFUSED):
        ALICE.header_of(PATH, FORMAT1.metadata)


def _v2(place: str | None) -> dict[str, str]:
    return _with_place(V2, place)


def _forged(name: str, body: bytes, metadata: dict[str, str], reader: ObjectCipher = ALICE) -> Any:
    return pytest.param(reader, body, metadata, id=name)


@pytest.mark.parametrize(
    ("reader", "body", "metadata"),
    [
        _forged("another user", V2.body, V2.metadata, cipher("bob")),
        _forged("another store", V2.body, V2.metadata, cipher(store="s3memory-store-b")),
        _forged("record of another path", V2.body, _v2(ELSEWHERE.metadata[PLACE_METADATA])),
        _forged("record of an earlier version", V2.body, _v2(V1.metadata[PLACE_METADATA])),
        _forged("body of an earlier version", V1.body, V2.metadata),
        _forged("body moved from another path", ELSEWHERE.body, V2.metadata),
        _forged("record stripped", V2.body, _v2(None)),
        _forged("record empty", V2.body, _v2("")),
        _forged("record padded", V2.body, _v2(_RECORD + "==")),
        _forged("record too long", V2.body, _v2(_RECORD + "A")),
        _forged("record too short", V2.body, _v2(_RECORD[:-1])),
        _forged("record short a group", V2.body, _v2(_RECORD[:-4])),
        _forged("record with '!'", V2.body, _v2("!" + _RECORD[1:])),
        _forged("record with '+'", V2.body, _v2("+" + _RECORD[1:])),
        _forged("record with a space", V2.body, _v2(" " + _RECORD[1:])),
        _forged("record not ascii", V2.body, _v2("é" + _RECORD[1:])),
        _forged("record in padded base64", V2.body, _v2(base64.b64encode(_unb64(_RECORD)).decode())),
        _forged("record non-canonical tail", V2.body, _v2(_NON_CANONICAL)),
        _forged("body truncated", V2.body[:-1], V2.metadata),
        _forged("body empty", b"", V2.metadata),
        _forged("format 1 read by format 2", FORMAT1.body, FORMAT1.metadata),
        _forged("format 1 body, format 2 record", FORMAT1.body, V1.metadata),
        _forged("format 2 read by format 1", V2.body, V2.metadata, cipher(store=None)),
        _forged("format 2 body, format 1 metadata", V1.body, FORMAT1.metadata, cipher(store=None)),
    ],
)
def test_a_bucket_writers_moves_and_edits_are_refused(
    reader: ObjectCipher, body: bytes, metadata: dict[str, str]
) -> None:
    with pytest.raises(IntegrityError, match=REFUSED):
        # each reader opens files as its own format does
        (reader.open_placed_file if reader.format == 2 else reader.open_bound_file)(PATH, body, metadata)


def test_every_byte_of_the_place_record_and_the_body_is_checked() -> None:
    assert _NON_CANONICAL != _RECORD and _unb64(_NON_CANONICAL) == _unb64(_RECORD)  # refused above
    record = _unb64(_RECORD)
    assert len(record) == RECORD_BYTES
    for at in range(len(record)):
        with pytest.raises(IntegrityError, match=REFUSED):
            ALICE.open_placed_file(PATH, V2.body, _with_place(V2, _b64(_flip(record, at))))
    for at in range(len(V2.body)):  # bytes 5 to 8 name the key version, which this user has no other of
        with pytest.raises(IntegrityError, match="names data key version" if 5 <= at < 9 else REFUSED):
            ALICE.open_placed_file(PATH, _flip(V2.body, at), V2.metadata)


def test_an_author_cannot_be_changed_without_the_key() -> None:
    header = V2.body[:HEADER_BYTES]
    records = {author: ALICE.placed(PATH, header, author) for author in (None, "ada", "bob", "ad")}
    for author, metadata in records.items():
        assert ALICE.open_placed_file(PATH, V2.body, metadata) == Opened(b"second version", author)
    by_bob = ALICE.seal_placed_file(PATH, b"second version", "bob")
    for body, forged in (
        (by_bob.body, _with_place(by_bob, _RECORD)),
        (V2.body, _with_place(V2, by_bob.metadata[PLACE_METADATA])),
    ):
        with pytest.raises(IntegrityError, match=REFUSED):
            ALICE.open_placed_file(PATH, body, forged)
    # GCM is a stream cipher: knowing the block layout, turn "ada" into "bob" or into no author.
    record = _unb64(records["ada"][PLACE_METADATA])
    nonce, sealed, tag = record[:12], record[12:-16], record[-16:]
    for block in (b"\x03bob", b"\x02ad\x00", b"\x00\x00\x00\x00"):
        delta = bytes(a ^ b for a, b in zip(b"\x03ada", block, strict=True))
        forged_block = bytes(s ^ d for s, d in zip(sealed, delta, strict=False)) + sealed[len(delta) :]
        with pytest.raises(IntegrityError, match=REFUSED):
            ALICE.open_placed_file(PATH, V2.body, {PLACE_METADATA: _b64(nonce + forged_block + tag)})


@pytest.mark.parametrize("author", [None, "a", "a" * 128, "agent:planner/7"])
def test_the_place_record_does_not_show_the_authors_length(author: str | None) -> None:
    sealed = ALICE.seal_placed_file(PATH, b"same", author)
    assert {k: len(v) for k, v in sealed.metadata.items()} == {HEADER_METADATA: 114, PLACE_METADATA: 210}
    assert len(_unb64(sealed.metadata[PLACE_METADATA])) == RECORD_BYTES
    assert ALICE.open_placed_file(PATH, sealed.body, sealed.metadata).author == author


@pytest.mark.parametrize("author", ["", "a" * 129, "agent 7"])
def test_seal_file_refuses_an_author_it_could_not_open(author: str) -> None:
    with pytest.raises(ValueError, match="an author"):
        ALICE.seal_placed_file(PATH, b"text", author)


def test_internal_objects_are_bound_to_name_store_and_user() -> None:
    blob = ALICE.seal("jobs/1.json", b"{}")
    assert blob.startswith(MAGIC + b"\x02") and len(blob) == OVERHEAD + 2
    assert cipher().open("jobs/1.json", blob) == b"{}"
    for reader, name in (
        (ALICE, "jobs/2.json"),
        (cipher(store="s3memory-store-b"), "jobs/1.json"),
        (cipher("bob"), "jobs/1.json"),
        (cipher(store=None), "jobs/1.json"),
    ):
        with pytest.raises(IntegrityError, match=REFUSED):
            reader.open(name, blob)
    with pytest.raises(IntegrityError, match=REFUSED):  # and the other way round
        ALICE.open("jobs/1.json", cipher(store=None).seal("jobs/1.json", b"{}"))
    with pytest.raises(IntegrityError, match=REFUSED):  # a file's body is no internal object
        ALICE.open(PATH, V2.body)


def test_key_owners_name_a_format_2_user_to_kms_only_by_store_and_token() -> None:
    assert owner().kms_context(3) == {
        "s3memory:store": STORE,
        "s3memory:user": token("alice"),
        "s3memory:key_version": "3",
    }
    assert "alice" not in owner().kms_context(3).values()
    assert owner(store=None).kms_context(3) == {"s3memory:user": "alice", "s3memory:key_version": "3"}
    assert owner(store=None).local_info == b"alice"
    provider, vault = LocalKeyProvider(MASTER_KEY), _Vault()
    keys = [
        provider.data_key(who, 1, vault)
        for who in (owner(), owner(store="s3memory-store-b"), owner(store=None), owner("bob"))
    ]
    assert len(set(keys)) == 4 and all(len(key) == 32 for key in keys)


def test_a_format_2_kms_data_key_is_wrapped_under_the_store_and_token(kms: Any, key_id: str) -> None:
    vault = _Vault()
    source = DataKeySource(KMSKeyProvider(key_id, kms_client=kms), owner(), vault)
    sealed = ObjectCipher(source, FORMAT_2).seal_placed_file(PATH, b"text", "ada")
    opened = ObjectCipher(source, FORMAT_2).open_placed_file(PATH, sealed.body, sealed.metadata)
    assert opened == Opened(b"text", "ada")
    blob = vault.keys[1][len(WRAPPED_KEY_MAGIC) :]
    context = {"s3memory:store": STORE, "s3memory:user": token("alice"), "s3memory:key_version": "1"}
    assert len(kms.decrypt(CiphertextBlob=blob, EncryptionContext=context)["Plaintext"]) == 32
    with pytest.raises(kms.exceptions.InvalidCiphertextException):
        kms.decrypt(CiphertextBlob=blob, EncryptionContext={**context, "s3memory:user": "alice"})


def test_local_store_keys_open_only_for_their_store() -> None:
    provider = LocalKeyProvider(MASTER_KEY)
    key, wrapped = provider.new_store_key(STORE)
    assert len(key) == 32 and key != provider.new_store_key(STORE)[0]
    assert wrapped.startswith(STORE_KEY_MAGIC + b"L\x00\x00\x00\x01") and key not in wrapped
    assert provider.open_store_key(STORE, wrapped) == key
    forgeries = [_flip(wrapped, at) for at in range(len(wrapped))] + [
        wrapped[:-1],
        wrapped + b"\x00",
        b"",
        STORE_KEY_MAGIC + b"K" + wrapped[len(STORE_KEY_MAGIC) + 1 :],
    ]
    for forged in forgeries:
        with pytest.raises(IntegrityError):
            provider.open_store_key(STORE, forged)
    for reader, store in ((provider, "s3memory-store-b"), (LocalKeyProvider(NEW_MASTER), STORE)):
        with pytest.raises(IntegrityError, match="not one s3memory wrapped for this store"):
            reader.open_store_key(store, wrapped)


def test_a_store_key_outlives_a_local_master_key_rotation() -> None:
    key, wrapped = LocalKeyProvider(MASTER_KEY).new_store_key(STORE)
    rotated = LocalKeyProvider(NEW_MASTER, version=2, previous={1: MASTER_KEY})
    assert rotated.open_store_key(STORE, wrapped) == key
    rewrapped = rotated.wrap_store_key(STORE, key)
    assert rewrapped.startswith(STORE_KEY_MAGIC + b"L\x00\x00\x00\x02")
    assert LocalKeyProvider(NEW_MASTER, version=2).open_store_key(STORE, rewrapped) == key
    with pytest.raises(IntegrityError) as refused:
        LocalKeyProvider(NEW_MASTER, version=2).open_store_key(STORE, wrapped)
    assert str(refused.value) == (
        "Error: The store key is wrapped under local master key version 1, which is not configured."
    )


def test_kms_store_keys_open_only_for_their_store(kms: Any, key_id: str) -> None:
    provider = KMSKeyProvider(key_id, kms_client=kms)
    key, wrapped = provider.new_store_key(STORE)
    assert len(key) == 32 and wrapped.startswith(STORE_KEY_MAGIC + b"K") and key not in wrapped
    assert KMSKeyProvider(key_id, kms_client=kms).open_store_key(STORE, wrapped) == key
    with pytest.raises(IntegrityError):
        provider.open_store_key("s3memory-store-b", wrapped)
    with pytest.raises(IntegrityError, match="not one s3memory wrapped for this store"):
        provider.open_store_key(STORE, LocalKeyProvider(MASTER_KEY).new_store_key(STORE)[1])
