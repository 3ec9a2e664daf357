"""Work and answers bounded by the input: adversarial edits, answers and detector inputs.

Nothing here is timed: each test pins down what the bounded algorithm must still answer exactly
(counts, lines, matches) on inputs that made the old one quadratic or its answers unbounded.
"""

from __future__ import annotations

import pytest

from s3memory.core.guard import DEFAULT_DETECTORS, ContentGuard, Detector
from s3memory.core.text import VIEW_CHARACTER_CAP, edit_snippet, occurrences, replace_unique
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from tests.core.test_guard import SECRETS

pytestmark = [pytest.mark.takes_format]

MIB = 1024 * 1024
SIZE = 64 * 1024
PRIVATE_KEY = SECRETS["private key block"]


def _refusal(content: str, old: str) -> str:
    with pytest.raises(CommandError) as caught:
        replace_unique("/memories/x", content, old, "y")
    return caught.value.message


def test_a_mebibyte_of_newlines_gets_a_bounded_answer_with_the_exact_count(memory: S3Memory) -> None:
    memory.run({"command": "create", "path": "/memories/x", "file_text": "\n" * MIB})
    with pytest.raises(CommandError) as caught:
        memory.run({"command": "str_replace", "path": "/memories/x", "old_str": "\n", "new_str": ""})
    assert caught.value.message == (
        "No replacement was performed. Multiple occurrences of old_str `\n` in lines: "
        + ", ".join(str(line) for line in range(1, 51))
        + " (and 1,048,526 more occurrences). Please ensure it is unique"
    )


def test_a_long_periodic_old_str_is_counted_with_its_overlaps_and_shortened() -> None:
    answer = _refusal("a" * MIB, "a" * (MIB // 2))
    assert answer == (
        "No replacement was performed. Multiple occurrences of old_str `"
        + "a" * 500
        + "…` (the first 500 of its 524,288 characters) in lines: "
        + ", ".join(["1"] * 50)
        + " (and 524,239 more occurrences). Please ensure it is unique"
    )
    assert len(answer) < 1000


def test_a_long_old_str_that_does_not_appear_is_shortened() -> None:
    assert _refusal("a" * MIB, "b" * 600_000) == (
        "No replacement was performed, old_str `"
        + "b" * 500
        + "…` (the first 500 of its 600,000 characters) did not appear verbatim in /memories/x."
    )
    assert (
        _refusal("a", "b" * 500)
        == f"No replacement was performed, old_str `{'b' * 500}` did not appear verbatim in /memories/x."
    )


@pytest.mark.parametrize(
    ("content", "old", "count"),
    [
        ("ab" * (MIB // 2), "aba", MIB // 2 - 1),
        ("aab" * (MIB // 3), "aab" * 1000, MIB // 3 - 999),
        (("a" * 999 + "\n") * 1024, "a" * 500, 500 * 1024),
        (("ab" * 50 + "c") * 10_000, "ab" * 30, 21 * 10_000),
        ("a" * MIB + "b", "a" * 1000 + "b", 1),
    ],
)
def test_overlapping_occurrences_in_periodic_text_are_counted_exactly(
    content: str, old: str, count: int
) -> None:
    found = occurrences(content, old)
    assert found.count == count
    assert len(found.lines) == min(count, 50)


def test_the_snippet_of_a_huge_replacement_is_cut_near_the_cap() -> None:
    snippet = edit_snippet(replace_unique("/memories/x", "a\nb\nc\n", "b", "line\n" * 200_000))
    assert len(snippet) <= VIEW_CHARACTER_CAP
    assert snippet.endswith(
        "\n[Output cut near 16,000 characters: lines 1-1316 of 200003 shown. "
        "Use view_range [1317, 200003] to see the rest.]"
    )


def test_unmatched_private_key_headers_are_each_found_and_redacted() -> None:
    header = "-----BEGIN RSA PRIVATE KEY-----"
    headers = header * (SIZE // len(header))
    with pytest.raises(CommandError, match=r"\(private key block\)"):
        ContentGuard().screen("/memories/k", headers)
    redact = ContentGuard(mode="redact")
    assert (
        redact.screen("/memories/k", headers + "x")
        == "[REDACTED private key block]" * (SIZE // len(header)) + "x"
    )
    assert (
        redact.screen("/memories/k", f"{headers}\n{PRIVATE_KEY}\ntail")
        == "[REDACTED private key block]\ntail"
    )
    assert redact.screen("/memories/k", f"a {PRIVATE_KEY} b {PRIVATE_KEY} c") == (
        "a [REDACTED private key block] b [REDACTED private key block] c"
    )


ADVERSARIAL: dict[str, tuple[str, str]] = {
    "AWS access key id": ("AKIA" + "B" * 15 + " AKIA" + "C" * 17 + " ", SECRETS["AWS access key id"]),
    "AWS secret access key": (
        "aws secret =" + " " * 32 + "a" * 39 + " aws secret:" + " " * 300 + "x\n",
        SECRETS["AWS secret access key"],
    ),
    "private key block": ("-----BEGIN " + "A " * 30 + "PUBLIC KEY-----\n-----END ", PRIVATE_KEY),
    "Anthropic API key": ("sk-ant-" + "a" * 19 + " ", SECRETS["Anthropic API key"]),
    "OpenAI API key": ("sk-" + "a" * 19 + " sk-proj-" + "b" * 19 + " ", "sk-" + "A1" * 12),
    "GitHub token": ("ghp_" + "a" * 35 + " github_pat_" + "a" * 21 + " ", SECRETS["GitHub token"]),
    "Slack token": ("xoxb-" + "a" * 9 + " ", "xoxb-" + "1234567890ab"),
    "Google API key": ("AIza" + "a" * 34 + " ", "AIza" + "B" * 35),
    "Stripe secret key": ("sk_live_" + "a" * 15 + " ", "rk_live_" + "C" * 16),
    "payment card number": (
        "4111 1111 1111 1112 1-1-1-1-1-1-1-1-1-1-1-1-1-1 ",
        SECRETS["payment card number"],
    ),
}


@pytest.mark.parametrize("detector", DEFAULT_DETECTORS, ids=[detector.kind for detector in DEFAULT_DETECTORS])
def test_each_detector_over_adversarial_input_finds_exactly_the_real_secret(detector: Detector) -> None:
    unit, secret = ADVERSARIAL[detector.kind]
    noise = unit * (SIZE // len(unit))
    assert detector.spans(noise) == []
    text = f"{noise}\n\n{secret}"
    assert detector.spans(text) == [(len(noise) + 2, len(text))]
