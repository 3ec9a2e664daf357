"""The content guard on edits: what an edit wrote is screened with all it touches, in a window.

``screen_edit`` refuses (or redacts) exactly what screening the whole edited text finds that overlaps or
touches the span the edit wrote; it looks only ``EDIT_MARGIN`` characters (format characters not
counted) past each end of the span, which holds every such finding whole but a token's run or a key
block longer than that: the limits below are tested at exactly N and N+1.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from s3memory.core.guard import EDIT_MARGIN, ContentGuard, default_detectors
from s3memory.core.text import Edit
from s3memory.errors import CommandError
from tests.core.test_guard import (
    ALL_SECRETS,
    AWS_KEY_ID,
    CARD,
    GITHUB_TOKEN,
    KEY_END,
    KEY_START,
    card,
    grouped,
)

PATH = "/memories/k.txt"
REFUSE, REDACT = ContentGuard(), ContentGuard(mode="redact")
KEY_MARKER = "[REDACTED AWS access key id]"
BEGIN, END = "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"


def refusal(kinds: str) -> str:
    return (
        f"Error: The write to {PATH} was refused: it contains what looks like a secret ({kinds}). "
        "Secrets must not be stored in memory; nothing was changed."
    )


def written(old: str, start: int, end: int, new: str) -> Edit:
    """The edit that replaces ``old[start:end]`` by ``new``."""
    return Edit(old[:start] + new + old[end:], start, start + len(new))


def refused(edit: Edit) -> str:
    with pytest.raises(CommandError) as caught:
        REFUSE.screen_edit(PATH, edit)
    return caught.value.message


# Where the edit is: its offsets in the file, not in the window


@pytest.mark.parametrize("offset", [0, 1, EDIT_MARGIN - 1, EDIT_MARGIN, EDIT_MARGIN + 1, 10_000])
def test_a_secret_written_anywhere_in_a_file_is_refused_and_redacted_where_it_was_written(
    offset: int,
) -> None:
    old = ("line\n" * 3_000)[:offset] + "\nend\n"
    edit = written(old, offset, offset, f"id {AWS_KEY_ID}")
    assert refused(edit) == refusal("AWS access key id")
    assert REDACT.screen_edit(PATH, edit) == Edit(
        old[:offset] + f"id {KEY_MARKER}" + old[offset:], offset, offset + 3 + len(KEY_MARKER)
    )


@pytest.mark.parametrize("offset", [0, 10_000])
def test_deleting_the_character_before_or_after_a_secret_is_refused(offset: int) -> None:
    pad = "." * offset
    before = written(f"{pad}x{AWS_KEY_ID} .", offset, offset + 1, "")
    after = written(f"{pad}{AWS_KEY_ID}x .", offset + 20, offset + 21, "")
    assert before.start == before.end == offset and after.start == after.end == offset + 20
    for edit in (before, after):
        assert refused(edit) == refusal("AWS access key id")
        assert REDACT.screen_edit(PATH, edit) == Edit(
            f"{pad}{KEY_MARKER} .", offset, offset + len(KEY_MARKER)
        )


@pytest.mark.parametrize("offset", [0, 10_000])
def test_a_secret_counts_when_it_touches_the_span_and_not_a_character_further(offset: int) -> None:
    # Text written with the guard off: the secret is there before the edit.
    old = "." * offset + f"x-{AWS_KEY_ID}-y"
    key_start, key_end = offset + 2, offset + 22
    assert REFUSE.screen_edit(PATH, written(old, key_start - 2, key_start - 1, "z")).text.endswith(
        "z-" + AWS_KEY_ID + "-y"
    )
    assert REFUSE.screen_edit(PATH, written(old, key_end + 1, key_end + 2, "z")).text.endswith(
        AWS_KEY_ID + "-z"
    )
    for start in (key_start - 1, key_end):
        assert refused(written(old, start, start + 1, "+")) == refusal("AWS access key id")
    assert refused(written(old, key_start, key_start, "")) == refusal("AWS access key id")


# The window's reach: EDIT_MARGIN characters, format characters not counted


@pytest.mark.parametrize("hidden", ["", "\u200b"])
def test_a_token_begun_further_back_than_the_window_is_not_seen(hidden: str) -> None:
    # The old text held the token already (the guard was off): only its part in the window is seen.
    for extra, seen in ((0, True), (1, False)):
        old = "." * 9 + "ghp_" + ("a" + hidden) * (EDIT_MARGIN - 4 + extra) + " ."
        edit = written(old, len(old) - 2, len(old) - 2, "b")
        if seen:
            assert refused(edit) == refusal("GitHub token")
        else:
            assert REFUSE.screen_edit(PATH, edit) is edit


@pytest.mark.parametrize("hidden", ["", "\u200b"])
def test_a_token_whose_run_goes_past_the_window_is_redacted_to_the_window_end(hidden: str) -> None:
    old = "." * 9 + "=" + ("a" + hidden) * (EDIT_MARGIN + 5) + "."
    edit = written(old, 9, 10, "ghp_")
    assert refused(edit) == refusal("GitHub token")
    marker = "[REDACTED GitHub token]"
    assert REDACT.screen_edit(PATH, edit) == Edit(
        "." * 9 + marker + hidden + ("a" + hidden) * 5 + ".", 9, 9 + len(marker)
    )


@pytest.mark.parametrize("hidden", ["", "\u200b\u200d"])
def test_a_key_block_is_redacted_through_its_end_line_only_within_the_window(hidden: str) -> None:
    marker = "[REDACTED private key block]"
    for extra, through_end in ((0, True), (1, False)):
        body = ("M" + hidden) * (EDIT_MARGIN - len(END) + extra)
        old = "=" + body + END + "\nnext\n"
        edit = written(old, 0, 1, BEGIN)
        assert refused(edit) == refusal("private key block")
        stored = REDACT.screen_edit(PATH, edit)
        if through_end:
            assert stored == Edit(marker + "\nnext\n", 0, len(marker))
        else:
            assert stored == Edit(marker + body + END + "\nnext\n", 0, len(marker))


def test_the_window_reaches_the_texts_start_and_end_exactly() -> None:
    # A first step of EDIT_MARGIN characters lands one short of the text's start (or end), one of
    # them a format character: the window takes one step more.
    for extra, seen in ((0, True), (1, False)):
        old = "ghp_\u200b" + "a" * (EDIT_MARGIN - 4 + extra) + " ."
        edit = written(old, len(old) - 2, len(old) - 2, "b")
        if seen:
            assert refused(edit) == refusal("GitHub token")
        else:
            assert REFUSE.screen_edit(PATH, edit) is edit
    marker = "[REDACTED GitHub token]"
    for extra, left in ((0, ""), (1, "a")):
        edit = written(".=\u200b" + "a" * (EDIT_MARGIN + extra), 1, 2, "ghp_")
        assert REDACT.screen_edit(PATH, edit) == Edit(f".{marker}{left}", 1, 1 + len(marker))


# The redacted edit's span: the union of what it wrote and what it touched


CARD_MARKER = "[REDACTED payment card number]"


@pytest.mark.parametrize("pad", ["", "note\u200b\n" * 2_000])
def test_the_span_of_a_redacted_edit_runs_over_what_it_wrote_and_every_secret_it_touched(pad: str) -> None:
    at = len(pad) + 2
    first, second = card(16)[:8], card(16)[8:]
    old = f"{pad}a {KEY_START}| {second} b"
    cases = [  # (what replaces "|", the stored text after the pad, the span in it)
        ("", f"a {KEY_START} {second} b", None),
        (KEY_END, f"a {KEY_MARKER} {second} b", (2, 2 + len(KEY_MARKER))),
        (f"{KEY_END} {first}", f"a {KEY_MARKER} {CARD_MARKER} b", (2, 3 + len(KEY_MARKER + CARD_MARKER))),
        (
            f"! {AWS_KEY_ID} {first}",
            f"a {KEY_START}! {KEY_MARKER} {CARD_MARKER} b",
            (11, 14 + len(KEY_MARKER + CARD_MARKER)),
        ),
        (f"! {AWS_KEY_ID} !", f"a {KEY_START}! {KEY_MARKER} ! {second} b", (11, 15 + len(KEY_MARKER))),
    ]
    for new, stored, span in cases:
        edit = written(old, at + len(KEY_START), at + len(KEY_START) + 1, new)
        result = REDACT.screen_edit(PATH, edit)
        if span is None:
            assert result is edit
        else:
            assert result == Edit(pad + stored, len(pad) + span[0], len(pad) + span[1])


def test_a_redacted_edit_inside_a_long_file_keeps_the_text_around_it() -> None:
    pad = "x" * 10_000
    edit = written(f"{pad}\nnote\n{pad}", 10_001, 10_005, f"card {grouped(card(19), '-')} end")
    assert REDACT.screen_edit(PATH, edit) == Edit(
        f"{pad}\ncard {CARD_MARKER} end\n{pad}", 10_001, 10_001 + len(f"card {CARD_MARKER} end")
    )


# The property: exactly what screening the whole edited text finds in the edit's reach


def whole_text_findings(text: str) -> set[tuple[int, int, str]]:
    """What the detectors find in ``text`` and in ``text`` without its format characters (category Cf of
    the running Python), as spans of ``text``: computed here, without the guard's windows or maps."""
    kept = [index for index, char in enumerate(text) if unicodedata.category(char) != "Cf"]
    stripped = "".join(text[index] for index in kept)
    found = {
        (start, end, detector.kind) for detector in default_detectors() for start, end in detector.spans(text)
    }
    return found | {
        (kept[start], kept[end - 1] + 1, detector.kind)
        for detector in default_detectors()
        for start, end in detector.spans(stripped)
    }


def halves(secret: str) -> list[str]:
    return [secret[:cut] for cut in (1, len(secret) // 2, len(secret) - 1)] + [
        secret[cut:] for cut in (1, len(secret) // 2, len(secret) - 1)
    ]


NOISE = ["a", "Z9", " ", "\n", "=", "-", "_", ".", "x", "é", "\u200b", "\u00ad", "4", "1111 "]
PARTS = [
    part
    for secret in (*ALL_SECRETS.values(), GITHUB_TOKEN, CARD, card(13), card(19))
    for part in halves(secret)
]
WHOLE = [*ALL_SECRETS.values(), KEY_START, KEY_END, BEGIN, END]
PADDING = "....\u200b\n"


@st.composite
def edits(draw: st.DrawFn) -> Edit:
    """An edit of a text (padding, pieces of secrets and noise around a planted secret cut by a breaker,
    padding): of the breaker, or of a few characters anywhere among the pieces, by a few pieces."""
    pieces = st.lists(st.sampled_from(NOISE + PARTS), max_size=6).map("".join)
    around = st.sampled_from([0, 1, EDIT_MARGIN - 1, EDIT_MARGIN, EDIT_MARGIN + 1, 2 * EDIT_MARGIN + 7])
    before = (PADDING * EDIT_MARGIN)[: draw(st.one_of(around, st.integers(0, 3 * EDIT_MARGIN)))]
    secret = draw(st.sampled_from(WHOLE))
    cut = draw(st.integers(0, len(secret)))
    breaker = draw(st.sampled_from(["@", " ", "\n", "\u200b", ""]))
    head, tail = draw(pieces), draw(pieces)
    body = head + secret[:cut] + breaker + secret[cut:] + tail
    after = (PADDING * EDIT_MARGIN)[: draw(st.integers(0, 2 * EDIT_MARGIN))]
    if draw(st.booleans()):
        start = len(before + head) + cut
        end = start + len(breaker)
    else:
        start = len(before) + draw(st.integers(0, len(body)))
        end = draw(st.integers(start, min(start + 24, len(before) + len(body))))
    new = "".join(draw(st.lists(st.sampled_from(NOISE + PARTS + WHOLE), max_size=2)))
    return written(before + body + after, start, end, new)


@given(edits())
def test_an_edit_is_refused_or_redacted_exactly_for_what_the_whole_text_holds_in_its_reach(
    edit: Edit,
) -> None:
    found = whole_text_findings(edit.text)
    reach = {finding for finding in found if finding[0] <= edit.end and finding[1] >= edit.start}
    if not reach:
        assert REFUSE.screen_edit(PATH, edit) is edit
        assert REDACT.screen_edit(PATH, edit) is edit
        return
    assert refused(edit) == refusal(", ".join(sorted({kind for _, _, kind in reach})))
    result = REDACT.screen_edit(PATH, edit)
    start, end = (
        min(edit.start, *(start for start, _, _ in reach)),
        max(edit.end, *(end for _, end, _ in reach)),
    )
    assert (result.start, result.text[: result.start]) == (start, edit.text[:start])
    assert result.text[result.end :] == edit.text[end:]
    if reach == found:
        assert result.text == REDACT.screen(PATH, edit.text)
