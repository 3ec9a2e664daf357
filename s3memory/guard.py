"""A content guard that keeps secrets out of memory. Pure, no I/O, and it never logs what it matched.

Each detector names a kind of secret and finds it with a pattern (and, for card numbers, a Luhn
check). The guard refuses a write that holds one, naming the kind but never the secret, or redacts it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from .errors import CommandError


def luhn_valid(candidate: str) -> bool:
    """True if the digits of ``candidate`` (13 to 19 of them) pass the Luhn checksum."""
    digits = [int(char) for char in candidate if char.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


@dataclass(frozen=True)
class Detector:
    """One kind of secret: a pattern, and an optional check each match must pass."""

    kind: str
    pattern: re.Pattern[str]
    confirm: Callable[[str], bool] | None = None

    def matches(self, text: str) -> list[re.Match[str]]:
        return [
            match
            for match in self.pattern.finditer(text)
            if self.confirm is None or self.confirm(match.group())
        ]


DEFAULT_DETECTORS: tuple[Detector, ...] = (
    Detector("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    Detector(
        "AWS secret access key",
        re.compile(r"(?i)aws.{0,24}?secret.{0,24}?[\"'=:\s]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),
    ),
    Detector(
        "private key block",
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----)?", re.S),
    ),
    Detector("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    Detector("OpenAI API key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9]{20,}[A-Za-z0-9_\-]*")),
    Detector("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    Detector("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    Detector("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    Detector("Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{16,}")),
    Detector("payment card number", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), luhn_valid),
)


class ContentGuard:
    """Runs before every write (create, str_replace, insert).

    ``mode="refuse"`` refuses the write with an error naming the kind of secret;
    ``mode="redact"`` stores the text with each secret replaced by ``[REDACTED <kind>]``.
    """

    def __init__(
        self, detectors: Iterable[Detector] = DEFAULT_DETECTORS, mode: Literal["refuse", "redact"] = "refuse"
    ) -> None:
        if mode not in ("refuse", "redact"):
            raise ValueError("ContentGuard mode must be 'refuse' or 'redact'")
        self.detectors = tuple(detectors)
        self.mode = mode

    def screen(self, path: str, text: str) -> str:
        """The text to write: unchanged, redacted, or refused with a ``CommandError``."""
        found = [
            (match.start(), match.end(), detector.kind)
            for detector in self.detectors
            for match in detector.matches(text)
        ]
        if not found:
            return text
        if self.mode == "refuse":
            kinds = ", ".join(sorted({kind for _, _, kind in found}))
            raise CommandError(
                f"Error: The write to {path} was refused: it contains what looks like a secret ({kinds}). "
                "Secrets must not be stored in memory; nothing was changed."
            )
        redacted: list[str] = []
        position = 0
        for start, end, kind in sorted(found):
            if start < position:
                position = max(position, end)
                continue
            redacted.append(text[position:start])
            redacted.append(f"[REDACTED {kind}]")
            position = end
        redacted.append(text[position:])
        return "".join(redacted)
