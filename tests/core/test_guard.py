"""The content guard: secrets never reach memory, whatever the command, spelling or edit."""

from __future__ import annotations

import logging
import random
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from s3memory.core.guard import (
    EDIT_MARGIN,
    FORMAT_RANGES,
    ContentGuard,
    Detector,
    default_detectors,
    luhn_valid,
)
from s3memory.core.text import Edit, edit_snippet, insert_at, replace_unique
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from tests.support.bucket import snapshot

pytestmark = [pytest.mark.takes_format]

# Fake but well-formed secrets, assembled so that no scanner mistakes this file for a leak.
AWS_KEY_ID = "AKIA" + "Z7QXEXAMPLE2FAKE"
AWS_SECRET = "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEfake\nline\n-----END RSA PRIVATE KEY-----"
ANTHROPIC_KEY = "sk-ant-" + "api03-" + "a" * 40
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CARD = "4111 1111 1111 1111"
KEY_START, KEY_END = "AKIA" + "IOSFO", "DNN7EXAMPLE"

SECRETS = {
    "AWS access key id": AWS_KEY_ID,
    "AWS secret access key": AWS_SECRET,
    "private key block": PRIVATE_KEY,
    "Anthropic API key": ANTHROPIC_KEY,
    "GitHub token": GITHUB_TOKEN,
    "payment card number": CARD,
}
REFUSED_KEY = (
    "Error: The write to /memories/k.txt was refused: it contains what looks like a secret (AWS access key id). "
    "Secrets must not be stored in memory; nothing was changed."
)
REFUSE, REDACT = ContentGuard(), ContentGuard(mode="redact")


@pytest.mark.parametrize(("kind", "secret"), SECRETS.items(), ids=list(SECRETS))  # no "/" in an id (mutmut)
def test_each_default_detector_refuses_and_names_the_kind_not_the_secret(
    memory: S3Memory, s3: Any, kind: str, secret: str
) -> None:
    memory.run({"command": "create", "path": "/memories/notes.txt", "file_text": "safe\n"})
    before = snapshot(s3)
    for command in (
        {"command": "create", "path": "/memories/new.txt", "file_text": f"note: {secret}\n"},
        {"command": "str_replace", "path": "/memories/notes.txt", "old_str": "safe", "new_str": secret},
        {"command": "insert", "path": "/memories/notes.txt", "insert_line": 0, "insert_text": secret},
    ):
        with pytest.raises(CommandError) as caught:
            memory.run(command)
        assert caught.value.message.startswith("Error: The write to /memories/")
        assert f"looks like a secret ({kind})" in caught.value.message
        assert secret not in caught.value.message
    assert snapshot(s3) == before


def test_redact_mode_stores_the_text_without_the_secret(make_memory: Callable[..., S3Memory]) -> None:
    memory = make_memory(content_guard=ContentGuard(mode="redact"))
    memory.run(
        {"command": "create", "path": "/memories/n.txt", "file_text": f"key {AWS_KEY_ID} and card {CARD}.\n"}
    )
    shown = memory.run({"command": "view", "path": "/memories/n.txt"})
    assert shown.endswith("     1\tkey [REDACTED AWS access key id] and card [REDACTED payment card number].")


def test_the_guard_logs_nothing_it_matched(
    make_memory: Callable[..., S3Memory], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    memory = make_memory()
    with pytest.raises(CommandError):
        memory.run({"command": "create", "path": "/memories/n.txt", "file_text": ANTHROPIC_KEY})
    assert ANTHROPIC_KEY not in caplog.text


def test_ordinary_text_and_numbers_pass(memory: S3Memory) -> None:
    text = "Order 1234-5678, phone +44 20 7946 0958, build 4111111111111112, sk-short, AKIA lowercase akia\n"
    assert memory.run({"command": "create", "path": "/memories/ok.txt", "file_text": text}).startswith(
        "File created"
    )


def test_the_guard_can_be_configured_or_switched_off(make_memory: Callable[..., S3Memory]) -> None:
    only_cards = ContentGuard(
        [detector for detector in default_detectors() if detector.kind == "payment card number"]
    )
    relaxed = make_memory(content_guard=only_cards)
    relaxed.run({"command": "create", "path": "/memories/a.txt", "file_text": AWS_KEY_ID})
    with pytest.raises(CommandError, match="payment card number"):
        relaxed.run({"command": "create", "path": "/memories/b.txt", "file_text": CARD})
    make_memory(content_guard=None).run({"command": "create", "path": "/memories/c.txt", "file_text": CARD})
    with pytest.raises(ValueError, match="mode"):
        ContentGuard(mode="shout")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("number", "valid"),
    [
        ("4111111111111111", True),
        ("4111111111111112", False),
        ("5500 0000 0000 0004", True),
        ("1234", False),
        ("0" * 20, False),
    ],
)
def test_luhn(number: str, valid: bool) -> None:
    assert luhn_valid(number) is valid


@pytest.mark.slow
@pytest.mark.fuzz
@given(st.text(max_size=200))
def test_redaction_leaves_no_detectable_secret(text: str) -> None:
    redacted = REDACT.screen("/memories/x", text + " " + GITHUB_TOKEN)
    assert GITHUB_TOKEN not in redacted
    assert REDACT.screen("/memories/x", redacted) == redacted


# Format characters (Unicode category Cf)


def test_the_format_ranges_are_category_cf_of_the_running_python() -> None:
    listed = {code for low, high in FORMAT_RANGES for code in range(low, high + 1)}
    expected = {code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cf"}
    assert listed == expected, f"regenerate FORMAT_RANGES for Unicode {unicodedata.unidata_version}"
    assert min(listed) > 0x7F  # none in ASCII text, whose scan the guard skips


@pytest.mark.parametrize(
    "hidden", ["\u200b", "\u200c\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\U000e0041"]
)
def test_format_characters_inside_a_secret_hide_nothing(hidden: str) -> None:
    with pytest.raises(CommandError) as caught:
        REFUSE.screen("/memories/k.txt", f"key AKIA{hidden}IOSFO{hidden}{KEY_END} here")
    assert caught.value.message == REFUSED_KEY


def test_a_format_character_beside_a_secret_hides_nothing() -> None:
    with pytest.raises(CommandError, match="AWS access key id"):
        REFUSE.screen("/memories/k.txt", f"key\u200b{KEY_START}{KEY_END}")


def test_redaction_covers_the_original_characters_of_a_secret_written_with_format_characters() -> None:
    text = f"\u200bkey {KEY_START}\u200b\u200d{KEY_END}\u2060 and \u00adcard 4111\u200b 1111 1111 1111\u200b."
    assert REDACT.screen("/memories/k.txt", text) == (
        "\u200bkey [REDACTED AWS access key id]\u2060 and \u00adcard [REDACTED payment card number]\u200b."
    )


# Edits: what is stored, not only what a command adds


def test_an_edit_that_completes_a_secret_is_refused() -> None:
    content = f"key {KEY_START}\n"
    assert REFUSE.screen("/memories/k.txt", content) == content
    assert REFUSE.screen("/memories/k.txt", f"{KEY_END}\n") == f"{KEY_END}\n"
    edit = replace_unique("/memories/k.txt", content, "\n", f"{KEY_END}\n")
    with pytest.raises(CommandError) as caught:
        REFUSE.screen_edit("/memories/k.txt", edit)
    assert caught.value.message == REFUSED_KEY


def test_a_deletion_that_joins_a_secret_is_refused() -> None:
    edit = replace_unique("/memories/k.txt", f"{KEY_START}--{KEY_END}\n", "--", "")
    assert edit.start == edit.end
    with pytest.raises(CommandError, match="AWS access key id"):
        REFUSE.screen_edit("/memories/k.txt", edit)


def test_an_edit_beside_a_secret_that_completes_it_is_refused() -> None:
    content = f"pay {CARD}5 now\n"
    assert REFUSE.screen("/memories/k.txt", content) == content
    with pytest.raises(CommandError, match="payment card number"):
        REFUSE.screen_edit("/memories/k.txt", replace_unique("/memories/k.txt", content, "5 now", " now"))


def test_format_characters_do_not_stretch_the_window() -> None:
    content = f"key {KEY_START}" + "\u200b" * (3 * EDIT_MARGIN) + "\n"
    edit = replace_unique("/memories/k.txt", content, "\n", f"{KEY_END}\n")
    with pytest.raises(CommandError, match="AWS access key id"):
        REFUSE.screen_edit("/memories/k.txt", edit)


def test_an_inserted_secret_is_refused() -> None:
    with pytest.raises(CommandError, match="GitHub token"):
        REFUSE.screen_edit("/memories/k.txt", insert_at("/memories/k.txt", "a\nb\n", 1, GITHUB_TOKEN))


def test_only_the_window_around_an_edit_is_screened() -> None:
    content = f"{AWS_KEY_ID}\n" + "x" * EDIT_MARGIN + "\nnote\n"
    edit = replace_unique("/memories/k.txt", content, "note", "done")
    assert REFUSE.screen_edit("/memories/k.txt", edit) is edit
    near = replace_unique("/memories/k.txt", f"{AWS_KEY_ID}\nnote\n", "note", "done")
    assert REFUSE.screen_edit("/memories/k.txt", near) is near


def test_redacting_an_edit_moves_its_span_over_the_marker() -> None:
    content = "first\nsecond\nthird\n" + "\n".join(f"line {n}" for n in range(5)) + "\n"
    edit = REDACT.screen_edit(
        "/memories/k.txt", replace_unique("/memories/k.txt", content, "second", f"id {AWS_KEY_ID}\nthen")
    )
    assert edit.text == content.replace("second", "id [REDACTED AWS access key id]\nthen")
    assert edit.text[edit.start : edit.end] == "id [REDACTED AWS access key id]\nthen"
    assert edit_snippet(edit).splitlines()[1:] == [
        "     1\tfirst",
        "     2\tid [REDACTED AWS access key id]",
        "     3\tthen",
        "     4\tthird",
        "     5\tline 0",
    ]


def test_redacting_an_edit_that_completes_a_secret_covers_the_old_part_too() -> None:
    content = f"a\nkey {KEY_START}\nb\n"
    edit = REDACT.screen_edit(
        "/memories/k.txt", replace_unique("/memories/k.txt", content, "\nb", f"{KEY_END}\nb")
    )
    assert edit == Edit("a\nkey [REDACTED AWS access key id]\nb\n", 6, 36)
    assert edit.text[edit.start : edit.end] == "[REDACTED AWS access key id]\nb"


@given(
    st.text(alphabet="ab \n\u200b", max_size=30),
    st.text(alphabet="ab \n\u200b", max_size=30),
    st.sampled_from(list(SECRETS.values())),
    st.integers(min_value=0, max_value=200),
)
def test_screening_an_edit_agrees_with_screening_the_stored_text(
    before: str, after: str, secret: str, cut: int
) -> None:
    cut = cut % (len(secret) + 1)
    content = f"{before}{secret[:cut]}@{secret[cut:]}{after}"
    assume(REDACT.screen("/memories/k.txt", content) == content)
    edit = replace_unique("/memories/k.txt", content, "@", "")
    stored = REDACT.screen("/memories/k.txt", edit.text)
    redacted = REDACT.screen_edit("/memories/k.txt", edit)
    assert redacted.text == stored
    if stored == edit.text:
        assert REFUSE.screen_edit("/memories/k.txt", edit) is edit
        return
    assert "[REDACTED " in redacted.text[redacted.start : redacted.end]
    with pytest.raises(CommandError):
        REFUSE.screen_edit("/memories/k.txt", edit)


# The default patterns as first written, each with its word boundary first: the detectors check the
# boundary behind a prefix instead (so ``re`` searches for the prefix), and must match exactly as these.
AS_WRITTEN = {
    "AWS access key id": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "Anthropic API key": r"\bsk-ant-[A-Za-z0-9_\-]{20,}",
    "OpenAI API key": r"\bsk-(?:proj-)?[A-Za-z0-9]{20,}[A-Za-z0-9_\-]*",
    "GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "Slack token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    "Google API key": r"\bAIza[0-9A-Za-z_\-]{35}",
    "Stripe secret key": r"\b[rs]k_live_[0-9A-Za-z]{16,}",
    "payment card number": r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])",
}
# Pieces that make near misses and matches of every rewritten pattern: its prefixes, word and
# non-word characters on either side (Unicode letters and digits are word characters too), runs.
PIECES = (
    *("AKIA", "ASIA", "ABIA", "ACCA", "sk-", "sk-ant-", "proj-", "gh", "ghp_", "ghs_", "github_pat_"),
    *("xox", "xoxb-", "AIza", "sk_live_", "rk_live_", "k_live_", "-", "_", " ", "\n", "é", "日", "٣", "x"),
    *("A1B2C3D4E5F6G7H8", "a" * 10, "Z" * 20, "0" * 13, "4111 1111 1111 1111", "1-", "9 ", "7"),
)


def test_the_default_patterns_are_written_for_speed_as_written_for_sense() -> None:
    detectors = {detector.kind: detector.pattern for detector in default_detectors()}
    written = {kind: re.compile(pattern) for kind, pattern in AS_WRITTEN.items()}
    shuffled = random.Random(20250818)
    texts = ["".join(shuffled.choices(PIECES, k=shuffled.randint(1, 12))) for _ in range(20_000)]
    texts += [
        prefix + AWS_KEY_ID + suffix for prefix in ("", "a", "é", "-", "٣") for suffix in ("", "Z", "!")
    ]
    matched = 0
    for text in texts:
        for kind, pattern in written.items():
            spans = [match.span() for match in pattern.finditer(text)]
            assert [match.span() for match in detectors[kind].finditer(text)] == spans, (kind, text)
            matched += len(spans)
    assert matched > 1_000  # the corpus reaches matches, not only near misses


@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join))
def test_each_rewritten_pattern_finds_what_its_written_form_finds(text: str) -> None:
    detectors = {detector.kind: detector.pattern for detector in default_detectors()}
    for kind, pattern in AS_WRITTEN.items():
        expected = [match.span() for match in re.finditer(pattern, text)]
        assert [match.span() for match in detectors[kind].finditer(text)] == expected


# Each pattern's limits, at exactly N and N+1 (the detectors built in the test, as a guard builds them)


def luhn_completed(payload: str) -> str:
    """``payload`` and the check digit that makes it pass Luhn (computed here, not by the guard)."""
    doubled = (sum(divmod(int(digit) * (2 - index % 2), 10)) for index, digit in enumerate(reversed(payload)))
    return payload + str(-sum(doubled) % 10)


def card(digits: int) -> str:
    """A Luhn-valid number of ``digits`` digits."""
    return luhn_completed(("4" + "1234567890" * 2)[: digits - 1])


def grouped(number: str, separator: str) -> str:
    return separator.join(number[index : index + 4] for index in range(0, len(number), 4))


TOKEN_SAMPLES = {  # kind: (the shortest match, it one character short)
    "Anthropic API key": ("sk-ant-" + "a_-Z9" * 4, "sk-ant-" + "a_-Z9" * 3 + "a_-Z"),
    "OpenAI API key": ("sk-" + "aZ9" * 6 + "aZ", "sk-" + "aZ9" * 6 + "a"),
    "GitHub token": ("ghp_" + "aZ9" * 12, "ghp_" + "aZ9" * 11 + "aZ"),
    "Slack token": ("xoxb-" + "a-Z9" * 2 + "ab", "xoxb-" + "a-Z9" * 2 + "a"),
    "Google API key": ("AIza" + "a_-Z9" * 7, "AIza" + "a_-Z9" * 6 + "a_-Z"),
    "Stripe secret key": ("sk_live_" + "aZ9x" * 4, "sk_live_" + "aZ9x" * 3 + "aZ9"),
    "AWS access key id": ("AKIA" + "Z9" * 8, "AKIA" + "Z9" * 7 + "Z"),
}
AWS_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE+"  # 40 characters

BOUNDARIES: list[tuple[str, str, list[tuple[int, int]]]] = [
    # AWS access key id: each prefix, 16 more of [0-9A-Z], a whole word
    *[("AWS access key id", prefix + "Z9" * 8, [(0, 20)]) for prefix in ("AKIA", "ASIA", "ABIA", "ACCA")],
    ("AWS access key id", "AKIB" + "Z9" * 8, []),
    ("AWS access key id", "AKIA" + "Z9" * 8 + "Z", []),
    ("AWS access key id", "AKIA" + "Z9" * 7 + "Zz", []),
    ("AWS access key id", "AKIA" + "Z9" * 8 + "_", []),
    ("AWS access key id", "-AKIA" + "Z9" * 8 + "-", [(1, 21)]),
    # AWS secret access key: "aws", at most 24, "secret", at most 24, a separator, at most 32 spaces,
    # a quote, 40 key characters and no 41st: at most 131 characters
    (
        "AWS secret access key",
        "aws" + "x" * 24 + "secret" + "x" * 24 + "=" + " " * 32 + "'" + AWS_SECRET_KEY,
        [(0, 131)],
    ),
    ("AWS secret access key", "aws" + "x" * 25 + "secret=" + AWS_SECRET_KEY, []),
    ("AWS secret access key", "aws secret" + "x" * 25 + "=" + AWS_SECRET_KEY, []),
    ("AWS secret access key", "aws secret=" + " " * 56 + AWS_SECRET_KEY, [(0, 107)]),
    ("AWS secret access key", "aws secret=" + " " * 57 + AWS_SECRET_KEY, []),
    ("AWS secret access key", "AWS_SECRET:" + AWS_SECRET_KEY + ".", [(0, 51)]),
    *[("AWS secret access key", f"aws secret{sep}" + AWS_SECRET_KEY, [(0, 51)]) for sep in "\"'=: \t\n"],
    ("AWS secret access key", "aws secret=" + AWS_SECRET_KEY[:39], []),
    ("AWS secret access key", "aws secret=" + AWS_SECRET_KEY + "/", []),
    ("AWS secret access key", 'aws secret="' + AWS_SECRET_KEY + '"', [(0, 52)]),
    # private key block: a label of at most 40 of [A-Z0-9 ], through the first END line after it
    ("private key block", "-----BEGIN " + "A" * 40 + "PRIVATE KEY-----", [(0, 67)]),
    ("private key block", "-----BEGIN " + "A" * 41 + "PRIVATE KEY-----", []),
    ("private key block", "-----BEGIN rsa PRIVATE KEY-----", []),
    ("private key block", "-----END X PRIVATE KEY----------BEGIN X PRIVATE KEY-----", [(27, 56)]),
    ("private key block", "-----BEGIN X PRIVATE KEY----------END X PRIVATE KEY-----", [(0, 56)]),
    (
        "private key block",
        "-----BEGIN PRIVATE KEY-----a-----BEGIN PRIVATE KEY-----b-----END PRIVATE KEY-----c-----END PRIVATE KEY-----",
        [(0, 81), (28, 81)],
    ),
    # cards: 13 to 19 digits, grouped by single spaces or dashes, not beside a digit or dash, Luhn-valid
    *[("payment card number", card(digits), [(0, digits)]) for digits in range(13, 20)],
    *[("payment card number", "a" + grouped(card(19), sep) + "a", [(1, 24)]) for sep in " -"],
    ("payment card number", card(12), []),
    ("payment card number", card(20), []),
    ("payment card number", "-" + card(16), []),
    ("payment card number", card(16) + "-", []),
    ("payment card number", card(16)[:4] + "  " + card(16)[4:], []),
    ("payment card number", card(16)[:-1] + str((int(card(16)[-1]) + 1) % 10), []),
]
for kind, (shortest, short) in TOKEN_SAMPLES.items():
    BOUNDARIES += [
        (kind, shortest, [(0, len(shortest))]),
        (kind, short, []),
        (kind, "-" + shortest + " ", [(1, len(shortest) + 1)]),
        *[(kind, before + shortest, []) for before in ("x", "_", "9", "é", "٣")],
    ]
BOUNDARIES += [
    ("Anthropic API key", "sk-ant-" + "a" * 30 + "-_x.", [(0, 40)]),
    ("OpenAI API key", "sk-proj-" + "aZ9" * 7, [(0, 29)]),
    ("OpenAI API key", "sk-" + "aZ9" * 7 + "_-x!", [(0, 27)]),
    ("OpenAI API key", "sk-" + "aZ9" * 6 + "_" + "aZ9" * 6, []),
    *[("GitHub token", f"gh{letter}_" + "aZ9" * 12, [(0, 40)]) for letter in "pousr"],
    ("GitHub token", "ghx_" + "aZ9" * 12, []),
    ("GitHub token", "github_pat_" + "a_Z9" * 5 + "aZ", [(0, 33)]),
    ("GitHub token", "github_pat_" + "a_Z9" * 5 + "a", []),
    *[("Slack token", f"xox{letter}-" + "a" * 10, [(0, 15)]) for letter in "abposr"],
    ("Slack token", "xoxc-" + "a" * 10, []),
    ("Google API key", "AIza" + "a" * 40, [(0, 39)]),
    ("Stripe secret key", "rk_live_" + "aZ9x" * 5, [(0, 28)]),
    ("Stripe secret key", "pk_live_" + "aZ9x" * 4, []),
]


@pytest.mark.parametrize(
    ("kind", "text", "spans"),
    BOUNDARIES,
    ids=[f"{kind} {index}" for index, (kind, _, _) in enumerate(BOUNDARIES)],
)
def test_each_default_pattern_matches_exactly_to_its_limits(
    kind: str, text: str, spans: list[tuple[int, int]]
) -> None:
    detectors = {detector.kind: detector for detector in default_detectors()}
    assert detectors[kind].spans(text) == spans


def test_the_default_detectors_are_the_kinds_the_docs_name() -> None:
    assert [detector.kind for detector in default_detectors()] == [
        "AWS access key id",
        "AWS secret access key",
        "private key block",
        "Anthropic API key",
        "OpenAI API key",
        "GitHub token",
        "Slack token",
        "Google API key",
        "Stripe secret key",
        "payment card number",
    ]


@pytest.mark.parametrize("digits", [12, 13, 19, 20])
def test_luhn_takes_13_to_19_digits(digits: int) -> None:
    assert luhn_valid(card(digits)) is (13 <= digits <= 19)
    assert luhn_valid(grouped(card(digits), " ")) is (13 <= digits <= 19)


@pytest.mark.parametrize("digits", range(13, 20))
def test_a_card_of_each_length_the_detector_claims_is_refused(digits: int) -> None:
    with pytest.raises(CommandError) as caught:
        ContentGuard().screen("/memories/k.txt", f"pay {grouped(card(digits), ' ')} now")
    assert caught.value.message == REFUSED_KEY.replace("AWS access key id", "payment card number")
    assert (
        ContentGuard().screen("/memories/k.txt", f"pay {card(digits)[:-1]} now")
        == f"pay {card(digits)[:-1]} now"
    )


ALL_SECRETS = {
    **{kind: shortest for kind, (shortest, _) in TOKEN_SAMPLES.items()},
    "AWS secret access key": AWS_SECRET,
    "private key block": PRIVATE_KEY,
    "payment card number": CARD,
}


@pytest.mark.parametrize("kind", sorted(ALL_SECRETS))
def test_a_format_character_anywhere_inside_a_secret_of_each_kind_hides_nothing(kind: str) -> None:
    secret = ALL_SECRETS[kind]
    guard, redact = ContentGuard(), ContentGuard(mode="redact")
    for cut in range(1, len(secret)):
        hidden = f"note: {secret[:cut]}\u200b\u00ad{secret[cut:]} ."
        with pytest.raises(CommandError) as caught:
            guard.screen("/memories/k.txt", hidden)
        assert caught.value.message == REFUSED_KEY.replace("AWS access key id", kind)
        assert redact.screen("/memories/k.txt", hidden) == f"note: [REDACTED {kind}] ."


def test_every_format_character_is_ignored_inside_a_secret() -> None:
    guard = ContentGuard(mode="redact")
    for low, high in FORMAT_RANGES:
        for hidden in {chr(low), chr(high)}:
            assert (
                guard.screen("/memories/k.txt", f"{KEY_START}{hidden}{KEY_END}")
                == "[REDACTED AWS access key id]"
            )
    assert guard.screen("/memories/k.txt", f"{KEY_START}\u00ac{KEY_END}") == f"{KEY_START}\u00ac{KEY_END}"


# Findings that overlap, touch, or lie inside one another


def marking(*words: str) -> ContentGuard:
    """A redacting guard whose detector ``w`` finds each occurrence of the word ``w``."""
    return ContentGuard([Detector(word, re.compile(re.escape(word))) for word in words], mode="redact")


@pytest.mark.parametrize(
    ("words", "text", "redacted"),
    [
        (("abc", "cde"), "<abcde>", "<[REDACTED abc]>"),
        (("abc", "def"), "<abcdef>", "<[REDACTED abc][REDACTED def]>"),
        (("abcdef", "cd", "zz"), "<abcdef> zz <cd>", "<[REDACTED abcdef]> [REDACTED zz] <[REDACTED cd]>"),
        (("abcd", "ab", "bc", "de"), "<abcdef>", "<[REDACTED ab]f>"),
        (("ab", "bc", "cd", "ef"), "<abcdef> <cd>", "<[REDACTED ab][REDACTED ef]> <[REDACTED cd]>"),
        (("ab",), "abab", "[REDACTED ab][REDACTED ab]"),
    ],
)
def test_overlapping_findings_share_a_marker_and_touching_ones_get_one_each(
    words: tuple[str, ...], text: str, redacted: str
) -> None:
    assert marking(*words).screen("/memories/k.txt", text) == redacted


def test_a_secret_found_both_with_and_without_its_format_characters_is_redacted_whole_and_later_ones_too() -> (
    None
):
    token = ANTHROPIC_KEY[:30] + "\u200b" + ANTHROPIC_KEY[30:]
    text = f"a {token} b {AWS_KEY_ID} c {CARD} d"
    assert REDACT.screen("/memories/k.txt", text) == (
        "a [REDACTED Anthropic API key] b [REDACTED AWS access key id] c [REDACTED payment card number] d"
    )


def test_a_guard_in_no_known_mode_is_refused_by_name() -> None:
    with pytest.raises(ValueError) as caught:
        ContentGuard(mode="shout")  # type: ignore[arg-type]
    assert str(caught.value) == "ContentGuard mode must be 'refuse' or 'redact'"


def test_a_refusal_names_each_kind_found_once_in_order() -> None:
    with pytest.raises(CommandError) as caught:
        ContentGuard().screen("/memories/k.txt", f"{CARD} {AWS_KEY_ID} {CARD} {GITHUB_TOKEN}")
    assert caught.value.message == REFUSED_KEY.replace(
        "(AWS access key id)", "(AWS access key id, GitHub token, payment card number)"
    )


def test_format_characters_just_outside_a_hidden_secret_stay_outside_its_marker() -> None:
    text = f"a \u200b{KEY_START}\u200d{KEY_END}\u2060 b"
    assert (
        ContentGuard(mode="redact").screen("/memories/k.txt", text)
        == "a \u200b[REDACTED AWS access key id]\u2060 b"
    )


def test_an_empty_match_is_marked_where_it_was_found() -> None:
    before_b = ContentGuard([Detector("empty", re.compile("(?=b)"))], mode="redact")
    assert before_b.screen("/memories/k.txt", "a\u200bb") == "a\u200b[REDACTED empty]b"
