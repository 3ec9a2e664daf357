"""Private names (format v2): round trips, binding to parent, user and store key, strict decoding."""

from __future__ import annotations

import base64
import random
import re
import threading

import pytest

from s3memory.formats import names
from s3memory.formats.names import (
    MAX_NAME_BYTES,
    MAX_NAMESPACE_CHARACTERS,
    MAX_TOKEN_CHARACTERS,
    NameCipher,
    namespace_of,
    token_characters,
    user_of_namespace,
)

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
CIPHER = NameCipher(KEY, "alice")
ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
BASE32 = re.compile(r"[a-z2-7]+")
NAMES = ["a", "notes.md", "naïve café.txt", "日本語のメモ", "emoji 🎉.txt", "x" * 255, "é" * 255, "a\x80"]
PARENTS: list[tuple[str, ...]] = [(), ("projects",), ("projects", "2025", "q3")]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("parent", PARENTS)
def test_names_round_trip(parent: tuple[str, ...], name: str) -> None:
    token = CIPHER.token(parent, name)
    assert BASE32.fullmatch(token)
    assert len(token) == token_characters(len(name.encode("utf-8")))
    assert NameCipher(KEY, "alice").name(parent, token) == name  # a fresh cipher: no cache
    assert CIPHER.name(parent, token) == name


def test_tokens_are_deterministic() -> None:
    token = NameCipher(KEY, "alice").token(("a",), "b.md")
    assert NameCipher(KEY, "alice").token(("a",), "b.md") == token
    assert CIPHER.token(("a",), "b.md") == token


def test_equal_names_in_different_parents_differ() -> None:
    tokens = {CIPHER.token(parent, "notes.md") for parent in [*PARENTS, ("project",), ("projects", "")]}
    assert len(tokens) == len(PARENTS) + 2


@pytest.mark.parametrize(
    ("store_key", "user"), [(KEY, "bob"), (OTHER_KEY, "alice"), (KEY, "alicE"), (KEY, "alice ")]
)
def test_other_users_and_store_keys_neither_match_nor_read(store_key: bytes, user: str) -> None:
    other = NameCipher(store_key, user)
    for name in ["notes.md", "x" * 40]:
        mine, theirs = CIPHER.token(("d",), name), other.token(("d",), name)
        assert mine != theirs
        assert other.name(("d",), mine) is None
        assert CIPHER.name(("d",), theirs) is None


def test_a_token_moved_to_another_parent_reads_as_none() -> None:
    token = CIPHER.token(("a", "b"), "secret.md")
    for parent in [(), ("a",), ("b", "a"), ("a", "b", "c"), ("A", "b")]:
        assert CIPHER.name(parent, token) is None
    assert CIPHER.name(("a", "b"), token) == "secret.md"


@pytest.mark.parametrize("name", ["a", "notes.md", "x" * 17])
def test_every_single_character_change_reads_as_none(name: str) -> None:
    token = CIPHER.token((), name)
    fresh = NameCipher(KEY, "alice")
    for index, original in enumerate(token):
        for replacement in ALPHABET.replace(original, ""):
            assert fresh.name((), token[:index] + replacement + token[index + 1 :]) is None
    assert fresh.name((), token) == name


def _non_canonical(token: str) -> list[str]:
    last = ALPHABET.index(token[-1])
    return [
        token.upper(),
        re.sub("[a-z]", lambda letter: letter[0].upper(), token, count=1),
        token + "=" * (-len(token) % 8),
        token + "=",
        token[:-1] + ALPHABET[last ^ 1],  # flips a trailing bit only: decodes to the same bytes
        token[:-1],
        token[:-2],
        token + "a",
        token + "aa",
        token[:-1] + "0",
        token[:-1] + "1",
        token[:-1] + "8",
        token[:-1] + "é",
        token[:10] + " " + token[10:],
        token + "\n",
        "-" + token[1:],
        "",
        "a" * 10_000,
        "a" * (MAX_TOKEN_CHARACTERS + 1),
        "\x00" * 60,
    ]


def test_non_canonical_base32_reads_as_none() -> None:
    token = CIPHER.token(("d",), "notes.md")
    assert len(token) % 8 not in (0, 1, 3, 6) and ALPHABET.index(token[-1]) % 2 == 0  # bits 0 unused
    fresh = NameCipher(KEY, "alice")
    for bad in _non_canonical(token):
        assert bad != token
        assert fresh.name(("d",), bad) is None
        assert CIPHER.name(("d",), bad) is None  # the cache holds the canonical token only


def _reference_decoded(token: str) -> bytes | None:
    try:
        data = base64.b32decode(token.upper() + "=" * (-len(token) % 8))
    except ValueError:
        return None
    return data if base64.b32encode(data).decode().rstrip("=").lower() == token else None


def test_decoding_agrees_with_base64_decode_and_reencode() -> None:
    generator = random.Random(7)
    for size in range(40):
        data = generator.randbytes(size)
        assert names._decoded(base64.b32encode(data).decode().rstrip("=").lower()) == data
    for _ in range(20_000):
        characters = ALPHABET + "AZ=018 _-+é" if generator.random() < 0.3 else ALPHABET
        token = "".join(generator.choice(characters) for _ in range(generator.randrange(14)))
        assert names._decoded(token) == _reference_decoded(token), token


def test_trailing_bits_are_refused() -> None:
    token = CIPHER.token((), "notes.md")  # 52 characters: 260 bits for 256, so 4 spare bits
    assert len(token) == 52
    spare = [c for c in ALPHABET if ALPHABET.index(c) >> 4 == ALPHABET.index(token[-1]) >> 4]
    assert len(spare) == 16
    for character in spare:
        expected = "notes.md" if character == token[-1] else None
        assert NameCipher(KEY, "alice").name((), token[:-1] + character) == expected


def test_padding_shows_lengths_only_in_16_byte_steps() -> None:
    short = {len(CIPHER.token((), "a" * n)) for n in range(1, 16)} | {len(CIPHER.token((), ""))}
    assert short == {token_characters(0)}
    assert len(CIPHER.token((), "a" * 16)) > token_characters(0)
    assert len(CIPHER.token((), "a" * 16)) == len(CIPHER.token((), "a" * 31)) == token_characters(16)
    assert CIPHER.name((), CIPHER.token((), "")) == ""


@pytest.mark.parametrize("padded", [b"abc", b"abc\x80\x00\x01" + b"\x00" * 10, b"abc" + b"\x00" * 13, b""])
def test_unpadding_is_strict(padded: bytes) -> None:
    assert names._unpadded(padded) is None
    assert names._unpadded(b"x" * 16 + b"\x80" + b"\x00" * 15) == b"x" * 16
    assert names._unpadded(b"\x80" + b"\x00" * 16) is None  # 0x80 not within the last 16 bytes


def test_tokens_hide_names_and_the_user() -> None:
    cipher = NameCipher(KEY, "carolyn")
    for name in ["carolyn", "diary", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa"]:
        for token in cipher.tokens(("carolyn", name, name)):
            assert name not in token and "carolyn" not in token
    assert "carolyn" not in namespace_of(KEY, "carolyn")


def test_whole_paths_round_trip_and_bind_each_segment_to_its_parents() -> None:
    path = ("projects", "s3memory", "notes.md")
    tokens = CIPHER.tokens(path)
    assert tokens == tuple(CIPHER.token(path[:depth], name) for depth, name in enumerate(path))
    assert NameCipher(KEY, "alice").segments(tokens) == path
    assert CIPHER.segments(()) == () and CIPHER.tokens(()) == ()
    assert CIPHER.segments((tokens[0], tokens[2])) is None
    assert CIPHER.segments(tokens[1:]) is None
    assert CIPHER.segments((*tokens[:2], tokens[2] + "a")) is None


@pytest.mark.parametrize("user", ["alice", "Zoë", "ü" * 128, "u" * 256, "用户-42"])
def test_namespaces_round_trip(user: str) -> None:
    token = namespace_of(KEY, user)
    assert BASE32.fullmatch(token) and token == namespace_of(KEY, user)
    assert len(token) == token_characters(len(user.encode("utf-8"))) <= MAX_NAMESPACE_CHARACTERS
    assert user_of_namespace(KEY, token) == user
    assert user_of_namespace(OTHER_KEY, token) is None
    assert token != namespace_of(OTHER_KEY, user)


def test_namespace_tokens_are_not_name_tokens() -> None:
    assert NameCipher(KEY, "alice").token((), "alice") != namespace_of(KEY, "alice")
    assert NameCipher(KEY, "alice").name((), namespace_of(KEY, "alice")) is None
    assert user_of_namespace(KEY, NameCipher(KEY, "alice").token((), "alice")) is None


def test_namespace_refusals() -> None:
    token = namespace_of(KEY, "alice")
    for bad in [*_non_canonical(token), "a" * (MAX_NAMESPACE_CHARACTERS + 1), "x" * 1_000_000]:
        assert user_of_namespace(KEY, bad) is None
    for index in range(len(token)):
        changed = token[:index] + ("b" if token[index] == "a" else "a") + token[index + 1 :]
        assert user_of_namespace(KEY, changed) is None
    with pytest.raises(ValueError, match="256 bytes"):
        namespace_of(KEY, "u" * 257)


@pytest.mark.parametrize("bad_key", [b"", b"k" * 31, b"k" * 33, "k" * 32])
def test_store_keys_must_be_32_bytes(bad_key: bytes) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        NameCipher(bad_key, "alice")
    with pytest.raises(ValueError, match="32 bytes"):
        namespace_of(bad_key, "alice")


def test_token_characters() -> None:
    lengths = {n: token_characters(n) for n in (0, 1, 15, 16, 100, 255, 256)}
    assert lengths == {0: 52, 1: 52, 15: 52, 16: 77, 100: 205, 255: 436, 256: 461}
    assert MAX_NAMESPACE_CHARACTERS == 461
    for n in [0, 1, 15, 16, 17, 100, 255, MAX_NAME_BYTES, MAX_NAME_BYTES + 1]:
        assert len(CIPHER.token(("d",), "n" * n)) == token_characters(n)
    assert token_characters(MAX_NAME_BYTES) == MAX_TOKEN_CHARACTERS < token_characters(MAX_NAME_BYTES + 1)
    with pytest.raises(ValueError):
        token_characters(-1)


def test_longest_names_read_back_and_longer_ones_are_refused() -> None:
    longest, longer = "n" * MAX_NAME_BYTES, "n" * (MAX_NAME_BYTES + 1)
    assert NameCipher(KEY, "alice").name((), CIPHER.token((), longest)) == longest
    assert NameCipher(KEY, "alice").name((), CIPHER.token((), longer)) is None


def test_repr_hides_keys_and_user() -> None:
    text = repr(NameCipher(KEY, "alice-secret-user"))
    assert "alice-secret-user" not in text and KEY.hex() not in text and repr(KEY) not in text
    assert "NameCipher" in text


def test_cache_is_bounded_and_threads_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "CACHE_ENTRIES", 64)
    cipher = NameCipher(KEY, "alice")
    tokens = [cipher.token(("d",), f"file-{i}") for i in range(200)]
    assert len(cipher._names) == len(cipher._tokens) == 64
    results: list[tuple[str | None, ...]] = []

    def read() -> None:
        results.append(tuple(cipher.name(("d",), token) for token in tokens))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [tuple(f"file-{i}" for i in range(200))] * 8
    assert len(cipher._names) == len(cipher._tokens) == 64
