"""The Markdown pieces every section's part of ``latest.md`` is made of."""

from __future__ import annotations


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table, then a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def ms(seconds: float, digits: int = 1) -> str:
    """``seconds`` in milliseconds, to ``digits`` places."""
    return f"{seconds * 1000:.{digits}f}"
