"""The fenced blocks of a Markdown page, and the commands of a shell block, as the tests of the docs
read them."""

from __future__ import annotations

import re
import shlex

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Each fenced block of ``text``, in order: its language (``""`` for none) and its content."""
    return [(match[1], match[2]) for match in FENCE.finditer(text)]


def blocks_of(text: str, language: str) -> list[str]:
    """The content of each fenced block of ``language`` in ``text``."""
    return [content for kind, content in fenced_blocks(text) if kind == language]


def shell_commands(block: str) -> list[list[str]]:
    """Each command of a shell block as words (continued lines joined, comments left out)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def section(text: str, title: str, level: int = 2) -> str:
    """The section of ``text`` headed ``title`` at ``level``, up to the next heading of that level or
    above."""
    heading = f"\n{'#' * level} {title}\n"
    start = text.index(heading)
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, start + len(heading))
    return text[start : end.start() if end else len(text)]
