"""A content guard that keeps secrets out of memory. Pure, no I/O, and it never logs what it matched.

Each detector names a kind of secret and finds it with a pattern (and, for card numbers, a Luhn
check). The guard refuses a write that holds one, naming the kind but never the secret, or redacts it.
Text is matched as it is and with its format characters (Unicode category Cf: zero-width spaces and
joiners, bidi controls, soft hyphens...) removed, so an invisible character inside a secret hides nothing.
Every default pattern does work linear in the text: each attempt is bounded by the pattern, except the
runs that end a token, which only a match consumes.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

from s3memory.core.text import Edit
from s3memory.errors import CommandError

EDIT_MARGIN = 4_096
"""Characters (format characters not counted) screened on each side of the span an edit wrote."""

FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
"""The code points of Unicode category Cf (Unicode 14.0, Python 3.11's ``unicodedata``), as ranges."""


def format_pattern() -> re.Pattern[str]:
    """A pattern matching one format character (one of ``FORMAT_RANGES``)."""
    return re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in FORMAT_RANGES) + "]")


def _format_characters(
    text: str, pattern: re.Pattern[str], start: int = 0, end: int | None = None
) -> list[int]:
    """The positions of the format characters (matches of ``pattern``) in ``text[start:end]``. None in
    ASCII text (every one is U+00AD or above), which Python knows without a scan; else one pass."""
    if text.isascii():
        return []
    return [match.start() for match in pattern.finditer(text, start, len(text) if end is None else end)]


def luhn_valid(candidate: str) -> bool:
    """True if the digits of ``candidate`` (13 to 19 of them) pass the Luhn checksum."""
    digits = [int(char) for char in reversed(candidate) if char.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    doubled = [digit * 2 - 9 if digit > 4 else digit * 2 for digit in digits[1::2]]
    return (sum(digits[::2]) + sum(doubled)) % 10 == 0


@dataclass(frozen=True)
class Detector:
    """One kind of secret: a pattern, an optional check each match must pass, and an optional
    closing pattern: each match then reaches through the first match of ``until`` after it."""

    kind: str
    pattern: re.Pattern[str]
    confirm: Callable[[str], bool] | None = None
    until: re.Pattern[str] | None = None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The [start, end) of each match in ``text``: one pass for the pattern, one for ``until``."""
        found = [
            match.span()
            for match in self.pattern.finditer(text)
            if self.confirm is None or self.confirm(match.group())
        ]
        if self.until is None or not found:
            return found
        closings = [match.span() for match in self.until.finditer(text)]
        closing_starts = [start for start, _ in closings]
        reached: list[tuple[int, int]] = []
        for start, end in found:
            index = bisect_left(closing_starts, end)
            reached.append((start, closings[index][1] if index < len(closings) else end))
        return reached


def _word_start(prefix: str, width: int, rest: str) -> re.Pattern[str]:
    r"""The pattern ``\b`` + ``prefix`` + ``rest``, where ``prefix`` matches ``width`` characters
    beginning with a word character, written so that ``re`` looks for the prefix first: the boundary
    is checked behind the prefix (the character before it is no word character). Written with
    ``\b`` first, ``re`` would try a match at every character of the text, about ten times slower."""
    return re.compile(f"{prefix}(?<!\\w.{{{width}}}){rest}")


def default_detectors() -> tuple[Detector, ...]:
    """The default detectors, built at each call (``re`` keeps the compiled patterns)."""
    key_label = r"[A-Z0-9 ]{0,40}PRIVATE KEY-----"
    return (
        Detector("AWS access key id", _word_start("(?:AKIA|ASIA|ABIA|ACCA)", 4, r"[0-9A-Z]{16}\b")),
        Detector(
            "AWS secret access key",
            re.compile(r"(?i)aws.{0,24}?secret.{0,24}?[\"'=:\s]\s{0,32}+[\"']?+[a-z0-9/+]{40}(?![a-z0-9/+])"),
        ),
        Detector(
            "private key block",
            re.compile("-----BEGIN " + key_label),
            until=re.compile("-----END " + key_label),
        ),
        Detector("Anthropic API key", _word_start("sk-ant-", 7, r"[A-Za-z0-9_\-]{20,}")),
        Detector("OpenAI API key", _word_start("sk-", 3, r"(?:proj-)?[A-Za-z0-9]{20,}[A-Za-z0-9_\-]*")),
        Detector(
            "GitHub token", _word_start("g", 1, r"(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})")
        ),
        Detector("Slack token", _word_start("xox", 3, r"[abposr]-[A-Za-z0-9-]{10,}")),
        Detector("Google API key", _word_start("AIza", 4, r"[0-9A-Za-z_\-]{35}")),
        Detector("Stripe secret key", _word_start("[rs]k_live_", 8, r"[0-9A-Za-z]{16,}")),
        # a digit not after a digit or '-' (the check behind the first digit lets ``re`` skip to digits)
        Detector("payment card number", re.compile(r"\d(?<![\d-]\d)(?:[ -]?\d){12,18}(?![\d-])"), luhn_valid),
    )


DEFAULT_DETECTORS = default_detectors()
"""The default detectors, as ``default_detectors()`` builds them."""

_Finding = tuple[int, int, str]


def _redacted(text: str, found: list[_Finding]) -> str:
    """``text`` with each finding (once) replaced by ``[REDACTED <kind>]``: a finding that overlaps one
    before it widens that one's marker (kinds in order of start, end, kind); touching ones get one each."""
    pieces: list[str] = []
    position = 0
    for start, end, kind in sorted(set(found)):
        if start >= position:
            pieces += (text[position:start], f"[REDACTED {kind}]")
        position = max(position, end)
    pieces.append(text[position:])
    return "".join(pieces)


class ContentGuard:
    """Runs before every write: ``screen`` for a whole new text (create), ``screen_edit`` for an edit.

    ``detectors`` default to ``default_detectors()``. ``mode="refuse"`` refuses the write with an error
    naming the kind of secret; ``mode="redact"`` stores the text with each secret replaced by
    ``[REDACTED <kind>]``.
    """

    def __init__(
        self, detectors: Iterable[Detector] | None = None, mode: Literal["refuse", "redact"] = "refuse"
    ) -> None:
        if mode not in ("refuse", "redact"):
            raise ValueError("ContentGuard mode must be 'refuse' or 'redact'")
        self.detectors = default_detectors() if detectors is None else tuple(detectors)
        self.mode = mode
        self._format = format_pattern()

    def _reach(self, text: str, position: int, direction: Literal[-1, 1]) -> int:
        """The position ``EDIT_MARGIN`` characters from ``position`` (before it for -1, after it for 1),
        format characters not counted, or the text's start (or end); work linear in the distance."""
        needed = EDIT_MARGIN
        while needed and 0 <= position + direction <= len(text):
            step = min(max(position + direction * needed, 0), len(text))
            low, high = sorted((position, step))
            needed -= high - low - len(_format_characters(text, self._format, low, high))
            position = step
        return position

    def _matches(self, text: str) -> list[_Finding]:
        return [
            (start, end, detector.kind) for detector in self.detectors for start, end in detector.spans(text)
        ]

    def _findings(self, text: str) -> list[_Finding]:
        """Every match in ``text`` and in ``text`` without its format characters, as spans of ``text``
        (a span found without them covers the format characters inside it)."""
        removed = _format_characters(text, self._format)
        if not removed:
            return self._matches(text)
        # The kept character at index i of the stripped text sits at i + (removed characters before it).
        landing = [position - count for count, position in enumerate(removed)]

        def original(index: int) -> int:
            return index + bisect_right(landing, index)

        return self._matches(text) + [
            (original(start), original(end - 1) + 1 if end > start else original(start), kind)
            for start, end, kind in self._matches(self._format.sub("", text))
        ]

    def _refusal(self, path: str, found: list[_Finding]) -> CommandError:
        kinds = ", ".join(sorted({kind for _, _, kind in found}))
        return CommandError(
            f"Error: The write to {path} was refused: it contains what looks like a secret ({kinds}). "
            "Secrets must not be stored in memory; nothing was changed."
        )

    def screen(self, path: str, text: str) -> str:
        """The text to write: unchanged, redacted, or refused with a ``CommandError``."""
        found = self._findings(text)
        if not found:
            return text
        if self.mode == "refuse":
            raise self._refusal(path, found)
        return _redacted(text, found)

    def screen_edit(self, path: str, edit: Edit) -> Edit:
        """The edit to store: unchanged, redacted (its span widened over the markers), or refused.

        What counts is what ``screen`` would find in the edited text that overlaps or touches the span
        the edit wrote (a default pattern looks at most one character past its match), found in a
        window reaching ``EDIT_MARGIN`` characters (format characters not counted) past each end of
        the span, so the work is linear in the window, not in the file. Why that is enough: if the
        text before the edit held no secret (every write is screened), every secret in the edited text
        overlaps or touches the span, else it was there before. A default match is at most 131
        characters long (format characters aside), so the window holds it whole; only a token's run
        can be longer, and then the token's prefix with the shortest run it needs, itself a match, lies
        within 131 characters of the span, or the old text held the token already (its redaction then
        ends at the window's end); and digits grouped over more than the window are split into card
        numbers from the window's start. A private key block is redacted through its END line when
        that is within the window (a 4,096-bit RSA key block is about 3,300 characters), else its BEGIN
        line alone, as ``screen`` does without an END line. Redacted, the span runs from the first of its
        start and the findings' to the last of its end and theirs: every finding touches it, so
        nothing before its start is replaced and nothing after its end.
        """
        text = edit.text
        low, high = self._reach(text, edit.start, -1), self._reach(text, edit.end, 1)
        found = [
            (low + start, low + end, kind)
            for start, end, kind in self._findings(text[low:high])
            if low + start <= edit.end and low + end >= edit.start
        ]
        if not found:
            return edit
        if self.mode == "refuse":
            raise self._refusal(path, found)
        redacted = _redacted(text, found)
        return replace(
            edit,
            text=redacted,
            start=min(edit.start, *(start for start, _, _ in found)),
            end=max(edit.end, *(end for _, end, _ in found)) + len(redacted) - len(text),
        )
