"""The path policy: traversal in every spelling, the key mapping, and namespace validation."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3memory.core.confusables import DEFAULT_IGNORABLE
from s3memory.core.paths import (
    DRAWN_BLANK,
    ROOT,
    KeyLayout,
    MemoryPath,
    SharedName,
    UserId,
    check_memory_path,
    check_new_name,
    check_owner,
    check_user_id,
    memory_path,
    owner_of,
    shown_name,
    shown_path,
    validate_namespace,
)
from s3memory.errors import CommandError, shown

LAYOUT = KeyLayout(validate_namespace("alice", "users/"))


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("/memories", ()),
        ("/memories/", ()),
        ("/memories/a.txt", ("a.txt",)),
        ("/memories/a/b/c.md", ("a", "b", "c.md")),
        ("/memories/dir/", ("dir",)),
        ("/memories/.hidden", (".hidden",)),
        ("/memories/a..b/...", ("a..b", "...")),
        ("/memories/naïve café.txt", ("naïve café.txt",)),
        ("/memories/100%", ("100%",)),
    ],
)
def test_valid_paths(path: str, segments: tuple[str, ...]) -> None:
    assert check_memory_path(path) == segments


@pytest.mark.parametrize(
    "path", ["", "memories/a", "/memoriesX/a", "/memories2", "/etc/passwd", "/Memories/a"]
)
def test_paths_outside_the_root_are_refused_in_the_sdks_words(path: str) -> None:
    with pytest.raises(CommandError) as caught:
        check_memory_path(path)
    assert caught.value.message == (
        f"Error: Path must start with /memories, got: {path} "
        "(a memory path is /memories or starts with /memories/)"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/memories/..",
        "/memories/../etc",
        "/memories/a/../../x",
        "/memories/./a",
        "/memories/a/.",
        "/memories/%2e%2e/x",
        "/memories/%2E%2E/x",
        "/memories/%252e%252e/x",
        "/memories/%25252e%25252e",
        "/memories/.%2e/x",
        "/memories/\u2024\u2024/x",
        "/memories/\uff0e\uff0e/x",
        "/memories/\uff0e",
        "/memories/a\uff0f..\uff0fb",
    ],
)
def test_dot_segments_in_any_spelling_are_refused_in_the_sdks_words(path: str) -> None:
    with pytest.raises(CommandError) as caught:
        check_memory_path(path)
    assert caught.value.message == (
        f"Error: Path {path} would escape /memories directory "
        "('.' and '..' segments are refused, also percent-encoded or as look-alike characters)"
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memories/a%2fb", "percent-encoded '/' and '\\' are refused"),
        ("/memories/a%2F..", "percent-encoded '/' and '\\' are refused"),
        ("/memories/a%5cb", "percent-encoded '/' and '\\' are refused"),
        ("/memories/a%252fb", "percent-encoded '/' and '\\' are refused"),
        ("/memories/a\\b", "backslashes are refused"),
        ("/memories/..\\x", "backslashes are refused"),
        ("/memories/a\ufe68b", "backslashes are refused"),
        ("/memories/a\x00b", "NUL and other control characters are refused"),
        ("/memories/a%00b", "NUL and other control characters are refused"),
        ("/memories/a\nb", "NUL and other control characters are refused"),
        ("/memories/a\tb", "NUL and other control characters are refused"),
        ("/memories/a\x7f", "NUL and other control characters are refused"),
        ("/memories//a", "empty path segments ('//') are refused"),
        ("/memories/a//b", "empty path segments ('//') are refused"),
        ("/memories/bad\ud800", "it is not valid UTF-8 text"),
        ("/memories/%ff", "it is not valid UTF-8 text"),
        ("/memories/%" + "25" * 16 + "2e", "too many layers of percent-encoding"),
    ],
)
def test_other_refused_paths_say_why(path: str, reason: str) -> None:
    with pytest.raises(CommandError) as caught:
        check_memory_path(path)
    assert caught.value.message == f"Error: The path {shown(path)} is not allowed: {reason}."


@pytest.mark.parametrize(
    "path",
    [
        "/memories/" + "a" * 1015,
        "/memories/" + "é" * 508,
        "/etc/" + "x" * 5_000_000,
        "/memories/../" + "x" * 2000,
        "/memories/a\x00" + "%25" * 400_000,
        "/memories/" + "\ud800" * 400,
    ],
)
def test_paths_longer_than_an_s3_key_are_refused_before_any_other_check(path: str) -> None:
    with pytest.raises(CommandError) as caught:
        check_memory_path(path)
    assert caught.value.message == (
        f"Error: The path {shown(path)} is too long: its storage key would exceed 1024 bytes (prefixes included)."
    )
    assert len(caught.value.message) < 400


def test_a_path_of_exactly_the_key_limit_is_checked_further() -> None:
    assert check_memory_path("/memories/" + "a" * 1014) == ("a" * 1014,)
    with pytest.raises(CommandError, match="would escape"):
        check_memory_path("/memories/../" + "a" * 1011)


def test_refusals_echo_hostile_paths_safely() -> None:
    with pytest.raises(CommandError) as caught:
        check_memory_path("/memories/a\x00\n" + "x" * 5000)
    assert caught.value.message.isprintable()
    assert len(caught.value.message) < 400


def test_file_keys_live_under_the_users_memories_prefix() -> None:
    assert LAYOUT.file_key(memory_path("/memories/a/b.txt")) == "users/alice/memories/a/b.txt"
    assert LAYOUT.directory_prefix(memory_path("/memories/a/")) == "users/alice/memories/a/"
    assert LAYOUT.directory_prefix(memory_path("/memories")) == "users/alice/memories/"
    assert LAYOUT.key_of_internal("keys/v1") == "users/alice/internal/keys/v1"


def test_keys_longer_than_s3_allows_are_refused() -> None:
    room = 1024 - len("users/alice/memories/")
    assert len(LAYOUT.file_key(memory_path("/memories/" + "a" * room))) == 1024
    with pytest.raises(CommandError, match="exceed 1024 bytes"):
        LAYOUT.file_key(memory_path("/memories/" + "a" * (room + 1)))
    with pytest.raises(CommandError, match="exceed 1024 bytes"):
        LAYOUT.file_key(memory_path("/memories/" + "é" * (room // 2 + 1)))


def test_keys_map_back_to_paths_and_invalid_keys_to_none() -> None:
    found = LAYOUT.path_of_key("users/alice/memories/a/b.txt")
    assert found is not None and found.text == "/memories/a/b.txt" and found.segments == ("a", "b.txt")
    for key in (
        "users/alice/memories/a//b",
        "users/alice/memories/../x",
        "users/alice/memories/d/",
        "users/bob/x",
        "users/alice/memories/",
        "users/alice/memories",
        "users/alice/memories//",
        "users/alice/memoriesa",
    ):
        assert LAYOUT.path_of_key(key) is None


@pytest.mark.parametrize(
    ("path", "character"),
    [
        ("/memories/te\u200bam/rules.md", "U+200B ZERO WIDTH SPACE"),
        ("/memories/a\u2060b", "U+2060 WORD JOINER"),
        ("/memories/soft\u00adhyphen", "U+00AD SOFT HYPHEN"),
        ("/memories/\u2066x\u2069", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("/memories/\ufeffbom", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("/memories/a%E2%80%8Bb", "U+200B ZERO WIDTH SPACE"),
        ("/memories/a%25E2%2580%258Bb", "U+200B ZERO WIDTH SPACE"),
        ("/memories/ok/te\U000e0001am", "U+E0001 LANGUAGE TAG"),
        ("/memories/rul\u034fes.md", "U+034F COMBINING GRAPHEME JOINER"),
        ("/memories/rul%CD%8Fes.md", "U+034F COMBINING GRAPHEME JOINER"),
        ("/memories/rules\ufe0f.md", "U+FE0F VARIATION SELECTOR-16"),
        ("/memories/proj\u115fects/plan.md", "U+115F HANGUL CHOSEONG FILLER"),
        ("/memories/a/\u2800", "U+2800 BRAILLE PATTERN BLANK"),
        ("/memories/team\U0001d159", "U+1D159 MUSICAL SYMBOL NULL NOTEHEAD"),
        ("/memories/pl\u17b4an\u200b.md", "U+17B4 KHMER VOWEL INHERENT AQ"),  # the first one
        ("/memories/a\u2065b", "U+2065"),  # reserved: no name yet
    ],
)
def test_an_invisible_character_is_refused_in_a_new_name_but_reaches_a_stored_one(
    path: str, character: str
) -> None:
    assert check_memory_path(path) == tuple(path.split("/")[2:])
    with pytest.raises(CommandError) as caught:
        check_new_name(memory_path(path))
    assert caught.value.message == (
        f"Error: The path {shown(path)} is not allowed: a name may not hold {character}, an invisible "
        "character with which one name can pass for another; use a name without it."
    )
    stored = LAYOUT.path_of_key("users/alice/memories/" + path.removeprefix("/memories/"))
    assert stored is not None and stored.canonical == path


def test_a_name_without_one_is_made() -> None:
    for path in (
        "/memories/team",
        "/memories/caf\u00e9/\U0001f642",
        "/memories/100%",
        "/memories/a\u00a0b",
        "/memories/\u2764",
        "/memories/\ud55c\uad6d\uc5b4/\u1100\u1161",  # Hangul syllables and conjoining jamo
        "/memories/\u1780\u17b6",  # a Khmer letter and vowel sign
    ):
        assert check_new_name(memory_path(path)).canonical == path


def test_every_default_ignorable_code_point_and_blank_is_refused_and_shown_escaped() -> None:
    """The whole set, beside the format characters: Unicode's Default_Ignorable_Code_Point and the
    characters drawn blank that ``str.isprintable`` passes."""
    codes = {code for low, high in DEFAULT_IGNORABLE for code in range(low, high + 1)} | set(DRAWN_BLANK)
    for code in codes:
        name = f"a{chr(code)}b"
        with pytest.raises(CommandError, match=f"a name may not hold U\\+{code:04X}"):
            check_new_name(memory_path(f"/memories/{name}"))
        assert shown_name(name) == "a" + json.dumps(chr(code), ensure_ascii=True)[1:-1] + "b", hex(code)


@pytest.mark.parametrize(
    ("name", "shown_as", "whole"),
    [
        ("notes.md", "notes.md", "\\u006e\\u006f\\u0074\\u0065\\u0073\\u002e\\u006d\\u0064"),
        ("caf\u00e9 \U0001f642", "caf\u00e9 \U0001f642", "\\u0063\\u0061\\u0066\\u00e9\\u0020\\ud83d\\ude42"),
        ("te\u200bam", "te\\u200bam", "\\u0074\\u0065\\u200b\\u0061\\u006d"),
        ("a\u00a0b\u2028c", "a\\u00a0b\\u2028c", "\\u0061\\u00a0\\u0062\\u2028\\u0063"),
        ("x\U000e0001", "x\\udb40\\udc01", "\\u0078\\udb40\\udc01"),
        ("rul\u034fes", "rul\\u034fes", "\\u0072\\u0075\\u006c\\u034f\\u0065\\u0073"),
        ("\u3164\u2800\U0001d159", "\\u3164\\u2800\\ud834\\udd59", "\\u3164\\u2800\\ud834\\udd59"),
    ],
)
def test_names_are_shown_with_what_is_unseen_escaped_as_json_writes_it(
    name: str, shown_as: str, whole: str
) -> None:
    assert shown_name(name) == shown_as
    assert shown_name(name, whole=True) == whole
    assert json.loads(f'"{shown_as}"') == json.loads(f'"{whole}"') == name  # copied into JSON: the name
    assert shown_path(f"/memories/{name}/{name}", (), lookalike=True) == f"/memories/{whole}/{shown_as}"
    assert memory_path(f"/memories/{name}/").quoted == f"/memories/{shown_as}/"


NOT_A_STRING = "user_id must be a non-empty string"
SEPARATOR = "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'"
TOO_LONG = "user_id must be at most 256 bytes of UTF-8"
RESERVED = (
    "user_id must not begin with 's3memory.', which names the store's own objects; choose another user id"
)
PREFIX = "prefix must be empty or plain segments each ending in '/', like 'users/'"


@pytest.mark.parametrize(
    ("user_id", "message"),
    [
        ("", NOT_A_STRING),
        (7, NOT_A_STRING),
        (None, NOT_A_STRING),
        (b"alice", NOT_A_STRING),
        (".", SEPARATOR),
        ("..", SEPARATOR),
        ("a/b", SEPARATOR),
        ("/", SEPARATOR),
        ("a\\b", SEPARATOR),
        ("\\", SEPARATOR),
        ("a\x00", SEPARATOR),
        ("tab\there", SEPARATOR),
        ("\x7f", SEPARATOR),
        ("a\ud800", SEPARATOR),  # a lone surrogate: no UTF-8 key holds it
        ("\udfffb", SEPARATOR),
        ("\uff0e", SEPARATOR),  # '.' after NFKC, as the path policy refuses it (FULLWIDTH FULL STOP)
        ("\uff0e\uff0e", SEPARATOR),
        ("\u2025", SEPARATOR),  # TWO DOT LEADER: '..' after NFKC
        ("\ufe52", SEPARATOR),  # SMALL FULL STOP
        ("x" * 257, TOO_LONG),
        ("\u00e9" * 128 + "x", TOO_LONG),
        ("\U0001f642" * 64 + "x", TOO_LONG),
        ("s3memory.", RESERVED),
        ("s3memory.notes", RESERVED),
    ],
)
def test_user_ids_that_could_change_the_prefix_are_refused_naming_the_rule(
    user_id: object, message: str
) -> None:
    for check in (lambda: validate_namespace(user_id, "users/"), lambda: UserId(user_id)):
        with pytest.raises(ValueError) as refused:
            check()
        assert str(refused.value) == message


@pytest.mark.parametrize(
    "user_id",
    [
        "a",
        "x" * 256,
        "\u00e9" * 128,
        "\U0001f642" * 64,
        "a.",
        ".a",
        "...",
        "a..b",
        "\u3002",
        "s3memory",
        "S3MEMORY.x",
    ],
)
def test_user_ids_up_to_256_bytes_that_keep_the_prefix_are_taken(user_id: str) -> None:
    assert validate_namespace(user_id, "users/") == f"users/{user_id}/"
    made = UserId(user_id)
    assert made == user_id and not made.reserved


def test_an_operator_names_a_reserved_user_id_and_nothing_else_the_rules_refuse() -> None:
    for name in ("s3memory.", "s3memory.notes"):
        for owner in (UserId.named_by_operator(name), owner_of(name)):
            assert isinstance(owner, UserId) and owner == name and owner.reserved
        assert check_user_id(name, reserved=True) == name
    for name, message in (
        ("a/b", SEPARATOR),
        ("\uff0e", SEPARATOR),
        ("x" * 257, TOO_LONG),
        ("", NOT_A_STRING),
    ):
        for refuse in (UserId.named_by_operator, owner_of):
            with pytest.raises(ValueError) as refused:
                refuse(name)
            assert str(refused.value) == message
    user = UserId("alice")
    assert UserId(user) is user and UserId.named_by_operator(user) is user and owner_of(user) is user


@pytest.mark.parametrize(
    "prefix",
    [
        "users",
        "/users/",
        "users//",
        "../",
        "a/../",
        "a/./",
        "\uff0e/",
        "a\\b/",
        "a\x00/",
        "a\ud800/",
        "/",
        3,
        None,
    ],
)
def test_bad_prefixes_are_refused(prefix: object) -> None:
    with pytest.raises(ValueError) as refused:
        validate_namespace("alice", prefix)
    assert str(refused.value) == ("prefix must be a string" if not isinstance(prefix, str) else PREFIX)
    with pytest.raises(ValueError) as refused_too:
        check_owner("alice", prefix)
    assert str(refused_too.value) == str(refused.value)


def test_good_namespaces() -> None:
    assert validate_namespace("alice", "users/") == "users/alice/"
    assert validate_namespace("alice@example.com", "") == "alice@example.com/"
    assert validate_namespace("a.b", "tenants/acme/") == "tenants/acme/a.b/"
    assert validate_namespace("a", ".a/b../") == ".a/b../a/"
    assert check_owner("alice", "users/") == "alice"


SHARED_NAME = (
    "a shared memory's name must be 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"
)


@pytest.mark.parametrize(
    "name", ["", "a" * 64, "-a", ".a", "_a", "Team", "a b", "a/b", "\u00e9", "a\n", 7, None]
)
def test_a_shared_name_outside_its_alphabet_or_over_63_is_refused(name: object) -> None:
    with pytest.raises(ValueError) as refused:
        SharedName(name)
    assert str(refused.value) == SHARED_NAME
    if isinstance(name, str):
        with pytest.raises(ValueError) as refused_too:
            owner_of(f"shared/{name}")
        assert str(refused_too.value) == SHARED_NAME


@pytest.mark.parametrize("name", ["a", "0", "a" * 63, "team-acme", "a.b_c-9", "9-"])
def test_a_shared_name_of_1_to_63_is_taken_and_its_principal_is_no_users(name: str) -> None:
    shared = SharedName(name)
    assert shared == name and SharedName(shared) is shared
    assert shared.principal == f"shared/{name}"
    owner = owner_of(f"shared/{name}")
    assert isinstance(owner, SharedName) and owner == name and owner_of(shared) is shared
    with pytest.raises(ValueError, match="must not contain '/'"):
        UserId(shared.principal)


_PATH_ALPHABET = st.sampled_from(
    ["/", ".", "..", "%", "2e", "2f", "5c", "25", "a", "memories", "\\", "\x00", "\uff0e", "\u2024", "é", " "]
)


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=3000)
@given(st.lists(_PATH_ALPHABET, max_size=14).map("".join), st.booleans())
def test_no_path_maps_outside_the_users_memories_prefix(tail: str, rooted: bool) -> None:
    path = ("/memories" if rooted else "") + tail
    try:
        parsed = memory_path(path)
        key = LAYOUT.directory_prefix(parsed)
    except CommandError:
        return
    assert key.startswith("users/alice/memories/")
    relative = key[len("users/alice/memories/") :]
    assert all(segment not in ("", ".", "..") for segment in relative.split("/")[:-1])
    assert "\\" not in key and "\x00" not in key


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=500)
@given(st.text())
def test_arbitrary_text_is_a_valid_path_or_a_clear_refusal(text: str) -> None:
    try:
        segments = check_memory_path("/memories/" + text)
    except CommandError as error:
        assert error.message.startswith(("Error: The path ", "Error: Path /memories/"))
        return
    assert all(segment not in ("", ".", "..") for segment in segments)


def test_the_first_invisible_character_of_the_path_as_sent_is_named_before_a_decoded_ones() -> None:
    for path, character in (
        ("/memories/a%E2%80%8Bb\u2060", "U+2060 WORD JOINER"),  # sent, though U+200B comes first decoded
        ("/memories/a%E2%80%8Bb%E2%81%A0", "U+200B ZERO WIDTH SPACE"),
        ("/memories/a\u0600b", "U+0600 ARABIC NUMBER SIGN"),  # a format character, not default-ignorable
        ("/memories/a\ufffbb", "U+FFFB INTERLINEAR ANNOTATION TERMINATOR"),
    ):
        with pytest.raises(CommandError) as caught:
            check_new_name(memory_path(path))
        assert caught.value.message == (
            f"Error: The path {shown(path)} is not allowed: a name may not hold {character}, an invisible "
            "character with which one name can pass for another; use a name without it."
        )


def test_fifteen_layers_of_percent_encoding_are_decoded_and_sixteen_are_too_many() -> None:
    assert check_memory_path("/memories/%" + "25" * 14 + "41") == ("%" + "25" * 14 + "41",)
    with pytest.raises(CommandError, match="would escape /memories directory"):
        check_memory_path("/memories/%" + "25" * 14 + "2e")
    for path in ("/memories/%" + "25" * 15 + "41", "/memories/%" + "25" * 15 + "2e"):
        with pytest.raises(CommandError) as caught:
            check_memory_path(path)
        assert (
            caught.value.message
            == f"Error: The path {path} is not allowed: too many layers of percent-encoding."
        )


def test_nfkc_keeps_every_dot_slash_and_backslash_so_its_form_holds_every_dot_segment() -> None:
    """Why the checks look at the NFKC form alone: no character decomposes to '.', '/' or '\\' followed
    by more, so none composes with the character after it and each stays where it was."""
    starts = {
        hex(code)
        for code in range(0x110000)
        if len(decomposed := unicodedata.normalize("NFD", chr(code))) > 1 and decomposed[0] in "./\\"
    }
    assert starts == set()
    for text in ("a/../b\u0338", "..\u0301/x", "\\\u0338", "./\u20d2"):
        assert [char for char in unicodedata.normalize("NFKC", text) if char in "./\\"] == [
            char for char in text if char in "./\\"
        ]


class Tokens:
    """Private names for a test: each segment's token is ``t-`` and its reverse; ``bad`` maps to none."""

    def tokens(self, segments: tuple[str, ...]) -> tuple[str, ...]:
        return tuple("t-" + segment[::-1] for segment in segments)

    def segments(self, tokens: tuple[str, ...]) -> tuple[str, ...] | None:
        if not all(token.startswith("t-") for token in tokens):
            return None
        return tuple(token[2:][::-1] for token in tokens)


def test_a_key_too_long_is_refused_naming_the_path_and_with_private_names_the_fix() -> None:
    private = KeyLayout("users/alice/", Tokens())
    room = 1024 - len("users/alice/memories/")
    longest = private.file_key(memory_path("/memories/ab/" + "c" * (room - 7)))
    assert longest == "users/alice/memories/t-ba/t-" + "c" * (room - 7) and len(longest) == 1024
    plain = "Error: The path {} is too long: its storage key would exceed 1024 bytes (prefixes included)."
    for layout, name, extra in (
        (LAYOUT, "a" * (room + 1), ""),
        (LAYOUT, "\u00e9" * (room // 2 + 1), ""),
        (
            private,
            "a" * (room - 1),
            " With private names each name is stored encrypted, about 1.6 times its length and at least 52 "
            "characters, so use fewer or shorter names.",
        ),
    ):
        with pytest.raises(CommandError) as caught:
            layout.file_key(memory_path(f"/memories/{name}"))
        assert caught.value.message == plain.format(shown(f"/memories/{name}")) + extra
    with pytest.raises(CommandError) as quoted:
        LAYOUT.file_key(memory_path("/memories/a\u200b" + "b" * room + "/"))
    assert quoted.value.message == plain.format(shown("/memories/a\\u200b" + "b" * room + "/"))


def test_the_root_has_no_file_key_and_its_directory_prefix_is_the_memories_prefix() -> None:
    for text in ("/memories", "/memories/"):
        with pytest.raises(CommandError) as caught:
            LAYOUT.file_key(memory_path(text))
        assert caught.value.message == f"Error: {text} is the memory root directory, not a file."
        assert LAYOUT.directory_prefix(memory_path(text)) == "users/alice/memories/"
    assert (
        LAYOUT.memories_prefix == "users/alice/memories/"
        and LAYOUT.internal_prefix == "users/alice/internal/"
    )


def test_private_names_map_keys_to_paths_and_back_and_a_token_of_no_name_to_none() -> None:
    layout = KeyLayout("users/alice/", Tokens())
    path = memory_path("/memories/ab/cd.md")
    assert layout.file_key(path) == "users/alice/memories/t-ba/t-dm.dc"
    assert layout.directory_prefix(path) == "users/alice/memories/t-ba/t-dm.dc/"
    found = layout.path_of_key("users/alice/memories/t-ba/t-dm.dc")
    assert found == path and found is not None and found.text == "/memories/ab/cd.md"
    for key in (
        "users/alice/memories/t-ba/bad",
        "users/alice/memories/t-ba/t-",
        "users/alice/memories/t-../t-x",
        "users/alice/memorie/t-ba",
        "users/alice/internal/t-ba",
    ):
        assert layout.path_of_key(key) is None, key


def test_a_memory_path_names_its_ancestors_and_joins_keeping_its_mount_and_lookalike() -> None:
    path = MemoryPath("/memories/team/a/b/c.md", ("a", "b", "c.md"), ("team",), lookalike=True)
    ancestors = path.ancestors()
    assert [(p.text, p.segments, p.mount, p.lookalike) for p in ancestors] == [
        ("/memories/team/a", ("a",), ("team",), True),
        ("/memories/team/a/b", ("a", "b"), ("team",), True),
    ]
    assert memory_path("/memories/a").ancestors() == [] and ROOT.ancestors() == []
    joined = ancestors[0].joined(("x", "y"))
    assert (joined.text, joined.segments, joined.mount, joined.lookalike) == (
        "/memories/team/a/x/y",
        ("a", "x", "y"),
        ("team",),
        True,
    )
    assert path.is_within(ancestors[0]) and path.is_within(path) and path.is_within(ROOT)
    assert not ancestors[0].is_within(path) and not memory_path("/memories/ab").is_within(
        memory_path("/memories/a")
    )
    assert path.relative_to(ancestors[0]) == ("b", "c.md") and path.relative_to(ROOT) == path.segments
    assert path.canonical == "/memories/a/b/c.md" and ROOT.canonical == "/memories"
    assert ROOT.is_root and memory_path("/memories/").is_root and not path.is_root


@pytest.mark.parametrize(
    ("path", "shown_as", "quoted"),
    [
        (MemoryPath("/memories/a/", ("a",)), "/memories/a", "/memories/a/"),
        (MemoryPath("/memories/a", ("a",)), "/memories/a", "/memories/a"),
        (MemoryPath("/memories/a\u200b", ("a\u200b",)), "/memories/a\\u200b", "/memories/a\\u200b"),
        (MemoryPath("/memories/a\u200b/", ("a\u200b",)), "/memories/a\\u200b", "/memories/a\\u200b/"),
        (MemoryPath("/memories/t/b", ("b",), ("t",)), "/memories/t/b", "/memories/t/b"),
        (
            MemoryPath("/memories/t/b", ("t", "b"), lookalike=True),
            "/memories/\\u0074/b",
            "/memories/\\u0074/b",
        ),
        (MemoryPath("/memories/t/", ("t",), lookalike=True), "/memories/\\u0074", "/memories/\\u0074/"),
    ],
)
def test_a_path_is_shown_and_quoted_as_answers_show_it(path: MemoryPath, shown_as: str, quoted: str) -> None:
    assert path.shown == shown_as
    assert path.quoted == quoted


def test_shown_path_escapes_the_first_name_whole_only_for_a_lookalike() -> None:
    assert shown_path("/memories/a/b", ("t",)) == "/memories/t/a/b"
    assert shown_path("/memories/a/b", ("t",), lookalike=True) == "/memories/\\u0074/a/b"
    assert shown_path("/memories/a/b", (), lookalike=True) == "/memories/\\u0061/b"
    assert shown_path("/memories", (), lookalike=True) == shown_path("/memories", ()) == "/memories"
    assert shown_path("/memories/a\u00a0", ()) == "/memories/a\\u00a0"


@pytest.mark.parametrize(
    "code", [0x00, 0x7F, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x103FF, 0x10400, 0x1F642, 0x10FFFF]
)
def test_a_name_escaped_whole_is_what_json_writes_on_both_sides_of_the_bmp(code: int) -> None:
    assert shown_name(chr(code), whole=True) == json.dumps(chr(code))[1:-1]
    assert json.loads(f'"{shown_name(chr(code), whole=True)}"') == chr(code)


def test_a_path_that_is_no_string_is_refused_naming_its_field() -> None:
    for value, field, named in (
        (7, None, "path"),
        (None, "old_path", "old_path"),
        (b"/memories", "path", "path"),
    ):
        with pytest.raises(CommandError) as caught:
            memory_path(value) if field is None else memory_path(value, field)
        assert caught.value.message == f"Error: `{named}` must be a string starting with /memories."
