"""The line model, text edits and numbered rendering. Pure functions, no I/O.

One rule for view, insert and str_replace: a file's lines are its text split on ``\\n``; a final
``\\n`` ends the last line and does not start an extra one; a ``\\r`` before ``\\n`` stays in its line.
"""

from __future__ import annotations

from .errors import CommandError, shown

MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
VIEW_CHARACTER_CAP = 16_000
SNIPPET_CONTEXT_LINES = 2


def split_lines(content: str) -> list[str]:
    """The file's lines: split on LF (CR kept), without the empty tail a final newline leaves."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(line_number: int, line: str) -> str:
    return f"{line_number:>{LINE_NUMBER_WIDTH}}\t{line}"


def _cap_note(first: int, through: int, rest_end: int, total: int) -> str:
    return (
        f"\n[Output cut near {VIEW_CHARACTER_CAP:,} characters: lines {first}-{through} of {total} shown. "
        f"Use view_range [{through + 1}, {rest_end}] to see the rest.]"
    )


def render_numbered(header: str, lines: list[str], first: int, rest_end: int, total: int) -> str:
    """``header`` then ``lines`` numbered from ``first``, cut near the view cap.

    The cut falls at a line boundary, and a closing note says which lines were shown and which
    ``view_range`` (ending at ``rest_end``) shows the rest. A first line longer than the cap is cut.
    """
    rows = [numbered(first + offset, line) for offset, line in enumerate(lines)]
    text = header + "\n" + "\n".join(rows)
    if len(text) <= VIEW_CHARACTER_CAP:
        return text
    budget = VIEW_CHARACTER_CAP - len(header) - len(_cap_note(total, total, total, total)) - 1
    kept = 0
    used = 0
    while kept < len(rows) and used + len(rows[kept]) + 1 <= budget:
        used += len(rows[kept]) + 1
        kept += 1
    if kept == 0:
        return (
            f"{header}\n{rows[0][:budget]}\n[Output cut near {VIEW_CHARACTER_CAP:,} characters: line {first} "
            f"alone is longer than that and is shown cut. The file has {total} lines.]"
        )
    through = first + kept - 1
    return header + "\n" + "\n".join(rows[:kept]) + _cap_note(first, through, rest_end, total)


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
    rest_end = -1 if view_range is None or view_range[1] == -1 else min(view_range[1], len(lines))
    header = f"Here's the content of {path} with line numbers:"
    return render_numbered(header, selected, first, rest_end, len(lines))


def occurrence_lines(content: str, old: str) -> list[int]:
    """The 1-based line of every occurrence of ``old`` in ``content``, overlapping ones included."""
    found: list[int] = []
    position = content.find(old)
    while position != -1:
        found.append(content.count("\n", 0, position) + 1)
        position = content.find(old, position + 1)
    return found


def replace_unique(path: str, content: str, old: str, new: str) -> tuple[str, str]:
    """Replace the single occurrence of ``old``; returns the new content and the success answer."""
    if old == "":
        raise CommandError("Error: `old_str` must not be empty.")
    lines_found = occurrence_lines(content, old)
    if not lines_found:
        raise CommandError(
            f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        )
    if len(lines_found) > 1:
        raise CommandError(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
            f"{', '.join(map(str, lines_found))}. Please ensure it is unique"
        )
    position = content.find(old)
    edited = content[:position] + new + content[position + len(old) :]
    first_changed = lines_found[0]
    last_changed = edited.count("\n", 0, max(position, position + len(new) - 1)) + 1
    new_lines = split_lines(edited)
    start = max(1, first_changed - SNIPPET_CONTEXT_LINES)
    end = min(len(new_lines), last_changed + SNIPPET_CONTEXT_LINES)
    snippet = render_numbered(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):",
        new_lines[start - 1 : end],
        start,
        end,
        len(new_lines),
    )
    return edited, snippet


def insert_at(path: str, content: str, insert_line: int, text: str) -> str:
    """Insert ``text`` after line ``insert_line`` (0: the top); the result ends with a newline."""
    lines = split_lines(content)
    if insert_line < 0 or insert_line > len(lines):
        raise CommandError(
            f"Error: Invalid `insert_line` parameter: {shown(str(insert_line))}. "
            f"It should be within the range of lines of the file: [0, {len(lines)}]"
        )
    lines.insert(insert_line, text.rstrip("\n"))
    return "\n".join(lines) + "\n"


def human_size(size: int) -> str:
    """A size the way ``du -h`` prints it, rounded up: ``512B``, ``1.5K``, ``4.0K``, ``12K``, ``1.2M``."""
    if size < 1024:
        return f"{size}B"
    for power, unit in enumerate("KMGT", start=1):
        divisor = 1024**power
        tenths = -(-size * 10 // divisor)
        if tenths < 100:
            return f"{tenths // 10}.{tenths % 10}{unit}"
        whole = -(-size // divisor)
        if whole < 1024 or unit == "T":
            return f"{whole}{unit}"
    raise AssertionError("unreachable")
