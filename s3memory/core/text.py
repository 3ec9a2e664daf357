"""The line model, text edits and numbered rendering. Pure functions, no I/O.

One rule for view, insert and str_replace: a file's lines are its text split on ``\\n``; a final
``\\n`` ends the last line and does not start an extra one; a ``\\r`` before ``\\n`` stays in its line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from s3memory.errors import CommandError, shown

MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
VIEW_CHARACTER_CAP = 16_000
SNIPPET_CONTEXT_LINES = 2
LISTED_OCCURRENCES = 50
"""The line numbers a "Multiple occurrences" answer lists; it counts the rest."""
OLD_STR_SHOWN = 500
"""The characters of ``old_str`` an answer quotes; a longer one is cut and its length given."""


def split_lines(content: str) -> list[str]:
    """The file's lines: split on LF (CR kept), without the empty tail a final newline leaves."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(line_number: int, line: str) -> str:
    return f"{line_number:>{LINE_NUMBER_WIDTH}}\t{line}"


def cut_to_cap(
    header: str,
    rows: Iterable[str],
    note: Callable[[int], str],
    last: str = "",
    rank: Callable[[int], int] | None = None,
    *,
    cut: bool = False,
) -> str:
    """``header`` then ``rows``, one a line, and ``last`` (when given) as the last line; cut near
    ``VIEW_CHARACTER_CAP`` when that is longer.

    The cut answer holds as many whole rows as fit within the cap together with the closing
    ``note(kept)`` (and ``last``): the first rows, or with ``rank`` (of a row's index) the rows of
    the lowest rank first, then of the next, each in order, shown in their order. When not even
    the first of them fits, it is shown cut with ``note(0)``. Without ``rank``, rows are drawn from
    ``rows`` only until the answer passes the cap. With ``cut`` (``rows`` are not all there is),
    the note closes the answer even when every row fits.
    """
    cap = VIEW_CHARACTER_CAP - (1 + len(last) if last else 0)
    ending = [last] if last else []
    taken: list[str] = []
    length = len(header)
    for row in rows:
        taken.append(row)
        length += 1 + len(row)
        if length > cap and rank is None:
            break
    if length <= cap and not cut:
        return "\n".join([header, *taken, *ending])
    order = sorted(range(len(taken)), key=rank)
    kept: list[int] = []
    length = len(header)
    for index in order:
        if length + 1 + len(taken[index]) + 1 + len(note(len(kept) + 1)) > cap:
            break
        length += 1 + len(taken[index])
        kept.append(index)
    if not kept:
        closing = note(0)
        room = max(0, cap - len(header) - len(closing) - 2)
        return "\n".join([header, taken[next(iter(order))][:room], closing, *ending])
    return "\n".join([header, *(taken[index] for index in sorted(kept)), note(len(kept)), *ending])


def render_numbered(header: str, lines: list[str], first: int, rest_end: int, total: int) -> str:
    """``header`` then ``lines`` numbered from ``first``, cut near the view cap.

    The cut falls at a line boundary, and a closing note says which lines were shown and which
    ``view_range`` (ending at ``rest_end``) shows the rest. A first line longer than the cap is cut.
    """

    def note(kept: int) -> str:
        if kept == 0:
            return (
                f"[Output cut near {VIEW_CHARACTER_CAP:,} characters: line {first} alone is longer than that "
                f"and is shown cut. The file has {total} lines.]"
            )
        through = first + kept - 1
        return (
            f"[Output cut near {VIEW_CHARACTER_CAP:,} characters: lines {first}-{through} of {total} shown. "
            f"Use view_range [{through + 1}, {rest_end}] to see the rest.]"
        )

    return cut_to_cap(header, (numbered(first + offset, line) for offset, line in enumerate(lines)), note)


def _range_error(path: str, view_range: list[int], total: int, problem: str) -> CommandError:
    valid = f"[1, {total}]" if total else "none (the file is empty)"
    return CommandError(
        f"Error: Invalid `view_range` {view_range} for {path}: {problem}. "
        f"The file has {total} lines; valid line numbers: {valid}. Use [start, end], or [start, -1] "
        "to read to the end."
    )


def select_lines(path: str, lines: list[str], view_range: list[int] | None) -> tuple[list[str], int]:
    """The lines that ``view_range`` selects and the number of the first; errors name the valid range."""
    total = len(lines)
    if view_range is None:
        return lines, 1
    start, end = view_range
    if start < 1:
        raise _range_error(path, view_range, total, "start must be at least 1")
    if start > total:
        raise _range_error(path, view_range, total, f"start {start} is past the end of the file")
    if end == -1:
        end = total
    elif end < start:
        raise _range_error(path, view_range, total, "end must be -1 or not less than start")
    return lines[start - 1 : min(end, total)], start


def render_file(path: str, content: str, view_range: list[int] | None) -> str:
    """The ``view`` answer for a file."""
    lines = split_lines(content)
    if len(lines) > MAX_LINES:
        raise CommandError(f"File {path} exceeds maximum line limit of {MAX_LINES:,} lines.")
    selected, first = select_lines(path, lines, view_range)
    rest_end = -1 if view_range is None else min(view_range[1], len(lines))
    header = f"Here's the content of {path} with line numbers:"
    return render_numbered(header, selected, first, rest_end, len(lines))


@dataclass(frozen=True)
class Edit:
    """A file's whole new text and the [start, end) span of it that an edit wrote."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Occurrences:
    """Where ``old_str`` occurs: how many times (overlapping ones included), the position of the
    first (-1: none), and the lines of the first ``LISTED_OCCURRENCES``."""

    count: int
    first: int
    lines: tuple[int, ...]


def _short_period(old: str) -> int | None:
    """The smallest period of ``old`` if it is at most half its length, else None.

    Such a period p is where ``old``'s first half first recurs: a recurrence at d < p would make d
    and p periods of ``old[:d + half]``, and by Fine and Wilf gcd(d, p) < p a period of ``old``.
    """
    half = (len(old) + 1) // 2
    recurs = old.find(old[:half], 1)
    return recurs if recurs != -1 and old[recurs:] == old[: len(old) - recurs] else None


def _periodic_end(content: str, start: int, length: int, period: int) -> int:
    """The end of the stretch from ``start`` that repeats with ``period``, given that its first
    ``length`` characters do: doubling steps, then halving ones, each compared at C speed, so the
    work is linear in the stretch."""
    end = start + length
    size = period
    while content.startswith(content[end - period : end - period + size], end):
        end += size
        size *= 2
    while size > 1:
        half = size // 2
        if content.startswith(content[end - period : end - period + half], end):
            end += half
            size -= half
        else:
            size = half
    return end


def occurrences(content: str, old: str) -> Occurrences:
    """Every occurrence of ``old`` in ``content``, overlapping ones included, in time linear in both.

    Lines are counted once, onward from the previous occurrence. When ``old`` cannot overlap itself
    (its first or last character does not recur in it), ``str.count`` counts. Otherwise, with m its
    length and p its smallest period: two occurrences d <= m - p apart make p divide d (Fine and
    Wilf), so after an occurrence i the next is i + p, or none before i + m - p + 1. When p <= m/2 a
    run of occurrences p apart is measured at once (``_periodic_end``), and each search for the next
    run starts past m/2 of the last, so there are at most 2n/m + 1 searches, each O(m) plus the text
    it passes (searches overlap by less than m). When p > m/2 occurrences lie more than m/2 apart:
    again at most 2n/m + 1 searches.
    """
    first = content.find(old)
    listed: list[int] = []
    line, counted = 1, 0

    def listing(position: int) -> None:
        nonlocal line, counted
        line += content.count("\n", counted, position)
        counted = position
        listed.append(line)

    if old[0] not in old[1:] or old[-1] not in old[:-1]:
        position = first
        while position != -1 and len(listed) < LISTED_OCCURRENCES:
            listing(position)
            position = content.find(old, position + len(old))
        return Occurrences(content.count(old), first, tuple(listed))
    period = _short_period(old)
    count = 0
    position = first
    while position != -1:
        if period is None:
            run, step, resume = 1, 0, position + 1
        else:
            run = (_periodic_end(content, position, len(old), period) - position - len(old)) // period + 1
            step = period
            resume = position + (run - 1) * period + len(old) - period + 1
        for index in range(min(run, LISTED_OCCURRENCES - len(listed))):
            listing(position + index * step)
        count += run
        position = content.find(old, resume)
    return Occurrences(count, first, tuple(listed))


def _quoted(old: str) -> str:
    """``old_str`` between backticks, verbatim when short, else its start and its length."""
    if len(old) <= OLD_STR_SHOWN:
        return f"`{old}`"
    return f"`{old[:OLD_STR_SHOWN]}…` (the first {OLD_STR_SHOWN:,} of its {len(old):,} characters)"


def replace_unique(path: str, content: str, old: str, new: str) -> Edit:
    """Replace the single occurrence of ``old`` with ``new``; refused when there is none or several."""
    if old == "":
        raise CommandError("Error: `old_str` must not be empty.")
    found = occurrences(content, old)
    if found.count == 0:
        raise CommandError(
            f"No replacement was performed, old_str {_quoted(old)} did not appear verbatim in {path}."
        )
    if found.count > 1:
        lines = ", ".join(map(str, found.lines))
        rest = found.count - len(found.lines)
        more = f" (and {rest:,} more occurrences)" if rest else ""
        raise CommandError(
            f"No replacement was performed. Multiple occurrences of old_str {_quoted(old)} in lines: "
            f"{lines}{more}. Please ensure it is unique"
        )
    edited = content[: found.first] + new + content[found.first + len(old) :]
    return Edit(edited, found.first, found.first + len(new))


def edit_snippet(edit: Edit) -> str:
    """The ``str_replace`` success answer: the edited lines with line numbers, a few around them."""
    first_changed = edit.text.count("\n", 0, edit.start) + 1
    last_changed = edit.text.count("\n", 0, max(edit.start, edit.end - 1)) + 1
    lines = split_lines(edit.text)
    start = max(1, first_changed - SNIPPET_CONTEXT_LINES)
    end = min(len(lines), last_changed + SNIPPET_CONTEXT_LINES)
    return render_numbered(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):",
        lines[start - 1 : end],
        start,
        end,
        len(lines),
    )


def insert_at(path: str, content: str, insert_line: int, text: str) -> Edit:
    """Insert ``text`` after line ``insert_line`` (0: the top); the result ends with a newline.

    The span is the inserted line with its line break; the line break added at the end of a file
    that lacked one is not in it (the end of a text already ends every line).
    """
    lines = split_lines(content)
    if insert_line < 0 or insert_line > len(lines):
        raise CommandError(
            f"Error: Invalid `insert_line` parameter: {shown(str(insert_line))}. "
            f"It should be within the range of lines of the file: [0, {len(lines)}]"
        )
    inserted = text.rstrip("\n")
    before = lines[:insert_line]
    start = sum(map(len, before)) + len(before)
    lines.insert(insert_line, inserted)
    return Edit("\n".join(lines) + "\n", start, start + len(inserted) + 1)


def human_size(size: int) -> str:
    """A size the way ``du -h`` prints it, rounded up: ``512B``, ``1.5K``, ``4.0K``, ``12K``, ``1.2M``."""
    if size < 1024:
        return f"{size}B"
    power = 1
    while power < 4 and -(-size // 1024**power) >= 1024:
        power += 1
    divisor, unit = 1024**power, "KMGT"[power - 1]
    tenths = -(-size * 10 // divisor)
    if tenths < 100:
        return f"{tenths // 10}.{tenths % 10}{unit}"
    return f"{-(-size // divisor)}{unit}"
