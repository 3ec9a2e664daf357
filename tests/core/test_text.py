"""The pure core: the line model, edits, numbered rendering, the view cap, sizes."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.tools import BetaLocalFilesystemMemoryTool
from hypothesis import given
from hypothesis import strategies as st

from s3memory.core.listing import listed_past, render_listing
from s3memory.core.text import (
    MAX_LINES,
    VIEW_CHARACTER_CAP,
    Edit,
    Occurrences,
    cut_to_cap,
    edit_snippet,
    human_size,
    insert_at,
    occurrences,
    render_file,
    replace_unique,
    split_lines,
)
from s3memory.errors import CommandError
from tests.support.trees import tree_from

_TEXT = st.text(alphabet=st.sampled_from(["a", "b", "\n", "\r", " ", "é"]), max_size=60)
_HEADER = "Here's the content of /memories/x with line numbers:"
_SNIPPET = "The memory file has been edited. Here is the snippet showing the change (with line numbers):"


def _sdk(content: str, command: dict[str, Any]) -> tuple[str, str]:
    """The SDK's local tool on ``/memories/x`` holding ``content``: its answer (or refusal) to
    ``command`` and the file's text after it. The contract defers to it where it is silent."""
    with tempfile.TemporaryDirectory() as base:
        local = BetaLocalFilesystemMemoryTool(base_path=base)
        target = Path(local.memory_root, "x")
        target.write_bytes(content.encode("utf-8"))
        try:
            answer = local.call({**command, "path": "/memories/x"})
        except ToolError as error:
            answer = error.content
        assert isinstance(answer, str)
        return answer, target.read_bytes().decode("utf-8")


def _refusal(call: Any, *args: Any) -> str:
    with pytest.raises(CommandError) as raised:
        call(*args)
    return str(raised.value)


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\nb\n", ["a", "b"]),
        ("a\n\n", ["a", ""]),
        ("a\r\nb\r\n", ["a\r", "b\r"]),
    ],
)
def test_line_model(content: str, lines: list[str]) -> None:
    assert split_lines(content) == lines


@given(_TEXT)
def test_lines_join_back_to_the_content(content: str) -> None:
    joined = "\n".join(split_lines(content))
    assert joined + "\n" == content or joined == content


def test_a_final_newline_adds_no_numbered_line() -> None:
    assert render_file("/memories/x", "a\nb\n", None) == render_file("/memories/x", "a\nb", None)
    assert render_file("/memories/x", "a\nb\n", None).count("\n") == 2


@given(_TEXT, st.integers(min_value=0, max_value=30), _TEXT)
def test_insert_lands_after_the_line_and_ends_with_a_newline(content: str, line: int, text: str) -> None:
    lines = split_lines(content)
    if line > len(lines):
        with pytest.raises(
            CommandError, match=rf"within the range of lines of the file: \[0, {len(lines)}\]$"
        ):
            insert_at("/memories/x", content, line, text)
        return
    edit = insert_at("/memories/x", content, line, text)
    assert edit.text.endswith("\n")
    assert edit.text == "\n".join([*lines[:line], text.rstrip("\n"), *lines[line:]]) + "\n"
    assert edit.text[edit.start : edit.end] == text.rstrip("\n") + "\n"
    assert edit.start == 0 or edit.text[edit.start - 1] == "\n"


@given(_TEXT, st.text(alphabet="ab\n", min_size=1, max_size=4), _TEXT)
def test_str_replace_changes_only_the_replaced_span(content: str, old: str, new: str) -> None:
    count = sum(content.startswith(old, index) for index in range(len(content)))
    assert occurrences(content, old).count == count
    if count != 1:
        with pytest.raises(CommandError, match=r"^No replacement was performed"):
            replace_unique("/memories/x", content, old, new)
        return
    edit = replace_unique("/memories/x", content, old, new)
    position = content.find(old)
    assert edit == Edit(
        content[:position] + new + content[position + len(old) :], position, position + len(new)
    )
    assert edit_snippet(edit).startswith("The memory file has been edited.")


@given(
    st.text(alphabet="ab\n", max_size=300),
    st.text(alphabet="ab", min_size=1, max_size=6).flatmap(
        lambda unit: st.integers(min_value=1, max_value=40).map(lambda times: (unit * times)[: times + 3])
    ),
)
def test_occurrences_are_every_overlapping_match_with_its_line(content: str, old: str) -> None:
    positions = [index for index in range(len(content)) if content.startswith(old, index)]
    found = occurrences(content, old)
    assert found.count == len(positions)
    assert found.first == (positions[0] if positions else -1)
    assert found.lines == tuple(content.count("\n", 0, position) + 1 for position in positions[:50])


def test_overlapping_occurrences_are_not_unique() -> None:
    with pytest.raises(CommandError, match="in lines: 1, 1"):
        replace_unique("/memories/x", "aaa", "aa", "b")


def test_snippet_covers_a_multiline_replacement_with_context() -> None:
    content = "".join(f"{n}\n" for n in range(1, 11))
    answer = edit_snippet(replace_unique("/memories/x", content, "5\n", "five\nFIVE\n"))
    assert answer.splitlines()[1:] == [
        f"{n:>6}\t{text}" for n, text in zip(range(3, 9), ["3", "4", "five", "FIVE", "6", "7"], strict=True)
    ]


@pytest.mark.parametrize(
    ("content", "old", "new", "rows"),
    [
        ("a\nb\nc\n", "c\n", "", ["     1\ta", "     2\tb"]),
        ("a\nb", "b", "", ["     1\ta"]),
        ("a\nb\nc", "a", "x\ny", ["     1\tx", "     2\ty", "     3\tb", "     4\tc"]),
        (
            "1\n2\n3\n4\n5\n6\n",
            "4",
            "four",
            ["     2\t2", "     3\t3", "     4\tfour", "     5\t5", "     6\t6"],
        ),
        (  # the change ends one character into its last line
            "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
            "5\n6",
            "five\nX",
            ["     3\t3", "     4\t4", "     5\tfive", "     6\tX", "     7\t7", "     8\t8"],
        ),
    ],
)
def test_snippet_of_an_edit(content: str, old: str, new: str, rows: list[str]) -> None:
    assert edit_snippet(replace_unique("/memories/x", content, old, new)) == "\n".join(
        [
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):",
            *rows,
        ]
    )


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0B"),
        (512, "512B"),
        (1023, "1023B"),
        (1024, "1.0K"),
        (1025, "1.1K"),
        (1536, "1.5K"),
        (4096, "4.0K"),
        (10 * 1024, "10K"),
        (12 * 1024 + 1, "13K"),
        (1024**2 - 1, "1.0M"),
        (int(1.2 * 1024**2), "1.2M"),
        (3 * 1024**3, "3.0G"),
        (1023 * 1024**3, "1023G"),
        (1023 * 1024**3 + 1, "1.0T"),
        (int(1.5 * 1024**4), "1.5T"),
        (1024**5 - 1, "1024T"),
        (5 * 1024**5 + 1, "5121T"),
    ],
)
def test_sizes_read_like_du_h(size: int, shown: str) -> None:
    assert human_size(size) == shown


@given(st.lists(st.text(alphabet="xyz", max_size=300), min_size=1, max_size=400))
def test_the_view_cap_cuts_at_a_line_boundary_and_says_how_to_page(lines: list[str]) -> None:
    shown = render_file("/memories/x", "".join(line + "\n" for line in lines), None)
    assert len(shown) <= VIEW_CHARACTER_CAP
    rows = shown.split("\n")[1:]
    if rows and rows[-1].startswith("[Output cut"):
        through = len(rows) - 1
        assert rows[:-1] == [f"{n:>6}\t{line}" for n, line in zip(range(1, through + 1), lines, strict=False)]
        assert f"lines 1-{through} of {len(lines)} shown. Use view_range [{through + 1}, -1]" in rows[-1]
    else:
        assert rows == [f"{n:>6}\t{line}" for n, line in enumerate(lines, start=1)]


def test_a_single_line_longer_than_the_cap_is_shown_cut() -> None:
    shown = render_file("/memories/x", "y" * 50_000, None)
    assert len(shown) == VIEW_CHARACTER_CAP
    assert shown.endswith("line 1 alone is longer than that and is shown cut. The file has 1 lines.]")


@given(st.lists(st.integers(min_value=0, max_value=9_000), min_size=1, max_size=12))
def test_a_cut_answer_is_never_longer_than_the_cap(lengths: list[int]) -> None:
    shown = render_file("/memories/x", "".join("z" * length + "\n" for length in lengths), [1, -1])
    assert len(shown) <= VIEW_CHARACTER_CAP


def test_listing_skips_hidden_and_node_modules_with_everything_below() -> None:
    tree = tree_from(
        [
            (("a.txt",), 1),
            ((".git", "x"), 1),
            (("node_modules", "p"), 1),
            (("d", ".env"), 1),
            (("d", "x", "y", "z"), 1),
        ],
        [],
    )
    assert render_listing("/memories", "/memories", tree).splitlines()[1:] == [
        "4.0K\t/memories",
        "1B\t/memories/a.txt",
        "4.0K\t/memories/d/",
        "4.0K\t/memories/d/x/",
    ]


def test_long_listings_are_cut_with_a_note_that_counts_the_rows_shown() -> None:
    tree = tree_from([((f"file-{n:05d}-" + "x" * 40,), 10) for n in range(2000)], [])
    shown = render_listing("/memories", "/memories", tree).split("\n")
    rows = shown[1:-1]
    assert len("\n".join(shown)) <= VIEW_CHARACTER_CAP
    assert rows == [
        "4.0K\t/memories",
        *(f"10B\t/memories/file-{n:05d}-" + "x" * 40 for n in range(len(rows) - 1)),
    ]
    assert shown[-1] == (
        f"[Listing cut near 16,000 characters: {len(rows)} rows shown. View a subdirectory to see the rest.]"
    )
    next_row = f"10B\t/memories/file-{len(rows) - 1:05d}-" + "x" * 40
    assert len("\n".join(shown)) + 1 + len(next_row) > VIEW_CHARACTER_CAP


KEY_TEXT = st.text(alphabet="ab/.-0\U0010ffff", max_size=8)


@given(last=KEY_TEXT, prefix=KEY_TEXT.filter(bool), tail=KEY_TEXT)
def test_listed_past_means_every_key_with_the_prefix_sorts_before_it(
    last: str, prefix: str, tail: str
) -> None:
    if listed_past(last, prefix):
        assert prefix + tail < last
    else:  # some key with the prefix sorts at or after it: the prefix itself, or ``last``
        assert prefix >= last or last.startswith(prefix)


def test_a_listing_that_stopped_before_its_last_key_says_so_even_when_its_rows_fit() -> None:
    tree = tree_from([(("a.md",), 10), (("d", "x.md"), 3)], [])
    assert render_listing("/memories", "/memories", tree).endswith("3B\t/memories/d/x.md")
    tree.cut = True
    assert render_listing("/memories", "/memories", tree).split("\n")[1:] == [
        "4.0K\t/memories",
        "10B\t/memories/a.md",
        "4.0K\t/memories/d/",
        "3B\t/memories/d/x.md",
        "[Listing cut near 16,000 characters: 4 rows shown. View a subdirectory to see the rest.]",
    ]


def test_a_cut_listing_keeps_the_directorys_own_entries_before_any_below() -> None:
    below = [(("big", f"{n:05d}-" + "x" * 40), 10) for n in range(1_000)]
    tree = tree_from([*below, (("zz.md",), 7)], [("small",)])
    rows = render_listing("/memories", "/memories", tree).split("\n")[1:]
    assert rows[:3] == ["4.0K\t/memories", "4.0K\t/memories/big/", "10B\t/memories/big/00000-" + "x" * 40]
    assert rows[-3:-1] == ["4.0K\t/memories/small/", "7B\t/memories/zz.md"]
    assert rows[-1].startswith("[Listing cut near 16,000 characters: ")


@pytest.mark.parametrize("text", ["X", "X\n", "X\n\n", "\nX", "\nX\n", "X\r\n", " X \r", "a\nX"])
@pytest.mark.parametrize(("content", "line"), [("a\nb\n", 0), ("a\nb\n", 1), ("a\nb", 2), ("", 0)])
def test_insert_writes_the_file_the_sdks_insert_writes(content: str, line: int, text: str) -> None:
    edit = insert_at("/memories/x", content, line, text)
    assert edit.text == _sdk(content, {"command": "insert", "insert_line": line, "insert_text": text})[1]
    assert edit.text[edit.start : edit.end] == text.rstrip("\n") + "\n"


def test_insert_keeps_every_character_but_the_final_newlines() -> None:
    assert insert_at("/memories/x", "a\n", 1, "tail X \r\n\n").text == "a\ntail X \r\n"
    assert insert_at("/memories/x", "a", 0, "\n\nX").text == "\n\nX\na\n"


@pytest.mark.parametrize(("line", "lines"), [(-1, 2), (3, 2), (1, 0)])
def test_insert_line_outside_the_file_is_refused_with_the_contracts_words(line: int, lines: int) -> None:
    content = "a\r\nb\n"[: 4 * lines]
    assert _refusal(insert_at, "/memories/x", content, line, "X") == (
        f"Error: Invalid `insert_line` parameter: {line}. "
        f"It should be within the range of lines of the file: [0, {lines}]"
    )


@pytest.mark.parametrize(
    ("content", "old", "lines"),
    [
        ("\nab\nab\n", "ab", "2, 3"),  # a file that starts with a line break
        ("ab ab\n\nab", "ab", "1, 1, 3"),  # cannot overlap itself
        ("aba\nababa\n", "aba", "1, 2, 2"),  # overlaps itself, no short period
        ("aaa\n\naaa", "aa", "1, 1, 3, 3"),  # runs with a short period
        ("\n\na\na\na\nb\na\na", "a\na", "3, 4, 7"),  # runs across lines
        ("b\n" + "a" * 50, "a", ", ".join(["2"] * 50)),
    ],
)
def test_multiple_occurrences_name_the_line_of_each_as_the_sdk_does(
    content: str, old: str, lines: str
) -> None:
    message = (
        f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {lines}. "
        "Please ensure it is unique"
    )
    assert _refusal(replace_unique, "/memories/x", content, old, "new") == message
    assert _sdk(content, {"command": "str_replace", "old_str": old, "new_str": "new"})[0] == message


@given(st.text(alphabet="ab\n", max_size=200), st.text(alphabet="ab\n", min_size=1, max_size=4))
def test_a_refused_str_replace_answers_what_the_sdk_answers(content: str, old: str) -> None:
    """Where the SDK refuses too (no occurrence, or several that do not overlap); past 50, ours counts
    the rest."""
    if content.count(old) == 1:
        return
    sdk = _sdk(content, {"command": "str_replace", "old_str": old, "new_str": "new"})[0]
    head, listed, tail = sdk.partition(" in lines: ")
    if listed:
        numbers, _, tail = tail.partition(". ")
        rest = len(numbers.split(", ")) - 50
        more = f" (and {rest:,} more occurrences)" if rest > 0 else ""
        sdk = f"{head}{listed}{', '.join(numbers.split(', ')[:50])}{more}. {tail}"
    assert _refusal(replace_unique, "/memories/x", content, old, "new") == sdk


@pytest.mark.parametrize(
    ("content", "old", "lines"),
    [
        ("a\n" * 51, "a", range(1, 51)),  # cannot overlap itself
        ("a" * 52, "aa", [1] * 50),  # one run with a short period
        ("\n" + "aba_" * 51, "aba", [2] * 50),  # overlaps itself, no short period
    ],
)
def test_past_fifty_occurrences_the_rest_are_counted(content: str, old: str, lines: list[int]) -> None:
    listed = ", ".join(map(str, lines))
    assert _refusal(replace_unique, "/memories/x", content, old, "") == (
        f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
        f"{listed} (and 1 more occurrences). Please ensure it is unique"
    )
    fifty = content[: content.rfind(old) + len(old) - 1]
    assert _refusal(replace_unique, "/memories/x", fifty, old, "") == (
        f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
        f"{listed}. Please ensure it is unique"
    )


def test_an_old_str_over_500_characters_is_quoted_in_part() -> None:
    assert _refusal(replace_unique, "/memories/x", "b", "a" * 500, "") == (
        f"No replacement was performed, old_str `{'a' * 500}` did not appear verbatim in /memories/x."
    )
    assert _refusal(replace_unique, "/memories/x", "b", "a" * 501, "") == (
        f"No replacement was performed, old_str `{'a' * 500}…` (the first 500 of its 501 characters) "
        "did not appear verbatim in /memories/x."
    )
    assert _refusal(replace_unique, "/memories/x", "b", "", "") == "Error: `old_str` must not be empty."


@pytest.mark.parametrize(
    ("content", "old", "new"),
    [
        ("\n1\n2\n3\n4\n5\n6\n", "4", "four"),  # a file that starts with a line break
        ("\n\n\nx\nz", "x", "y"),
        ("1\n2\n3\n4\n5\n6\n7\n", "1", "one"),
        ("1\n2\n3\n4\n5\n6\n7\n", "5\n6", "five\nsix"),
    ],
)
def test_the_snippet_of_a_one_line_change_away_from_the_end_is_the_sdks(
    content: str, old: str, new: str
) -> None:
    """The SDK's snippet shows an extra empty line for a final newline; away from the end, ours is its."""
    answer = edit_snippet(replace_unique("/memories/x", content, old, new))
    assert answer == _sdk(content, {"command": "str_replace", "old_str": old, "new_str": new})[0]


def test_a_view_of_exactly_the_cap_is_whole_and_one_more_character_is_cut() -> None:
    rows = ["a" * 7966, "b" * 7966]  # header 52 + 2 * (1 + 7 + 7966) = 16,000
    whole = "\n".join([_HEADER, *(f"{n:>6}\t{row}" for n, row in enumerate(rows, start=1))])
    assert len(whole) == VIEW_CHARACTER_CAP
    assert render_file("/memories/x", "\n".join(rows), None) == whole
    note = (
        "[Output cut near 16,000 characters: lines 1-1 of {} shown. Use view_range [2, -1] to see the rest.]"
    )
    longer = "\n".join([rows[0], rows[1] + "b"])
    assert render_file("/memories/x", longer, None) == f"{_HEADER}\n     1\t{rows[0]}\n{note.format(2)}"
    assert render_file("/memories/x", "\n".join([*rows, "c"]), None) == (
        f"{_HEADER}\n     1\t{rows[0]}\n{note.format(3)}"
    )


def test_cut_to_cap_keeps_rows_and_their_note_to_exactly_the_cap() -> None:
    def note(kept: int) -> str:
        return f"[{kept}]"

    header, first, second = "h" * 100, "r" * 7000, "s" * 8894  # with "[2]": 16,000 characters
    assert len("\n".join([header, first, second, "[2]"])) == VIEW_CHARACTER_CAP
    assert cut_to_cap(header, [first, second], note, cut=True) == "\n".join([header, first, second, "[2]"])
    assert cut_to_cap(header, [first, second + "s"], note, cut=True) == "\n".join([header, first, "[1]"])
    assert cut_to_cap(header, [first, second + "ssss"], note) == "\n".join([header, first, second + "ssss"])
    assert cut_to_cap(header, [first, second + "sssss"], note) == "\n".join([header, first, "[1]"])
    assert cut_to_cap(header, [first, second + "ss"], note, "e") == "\n".join(
        [header, first, second + "ss", "e"]
    )
    assert cut_to_cap(header, [first, second + "sss"], note, "e") == "\n".join([header, first, "[1]", "e"])


@pytest.mark.parametrize(
    ("content", "view_range", "problem", "valid"),
    [
        ("", [1, -1], "start 1 is past the end of the file", "none (the file is empty)"),
        ("", [0, -1], "start must be at least 1", "none (the file is empty)"),
        ("a\nb\n", [3, 3], "start 3 is past the end of the file", "[1, 2]"),
        ("a\nb\n", [0, 1], "start must be at least 1", "[1, 2]"),
        ("a\nb\n", [2, 1], "end must be -1 or not less than start", "[1, 2]"),
        ("a\nb\n", [1, -2], "end must be -1 or not less than start", "[1, 2]"),
        ("a\nb", [2, 0], "end must be -1 or not less than start", "[1, 2]"),
    ],
)
def test_a_view_range_outside_the_file_is_refused_naming_the_valid_lines(
    content: str, view_range: list[int], problem: str, valid: str
) -> None:
    """The contract asks for the valid range and gives no words (the SDK clamps): these are ours."""
    lines = len(split_lines(content))
    assert _refusal(render_file, "/memories/x", content, view_range) == (
        f"Error: Invalid `view_range` {view_range} for /memories/x: {problem}. The file has {lines} lines; "
        f"valid line numbers: {valid}. Use [start, end], or [start, -1] to read to the end."
    )


@pytest.mark.parametrize(
    ("view_range", "rows"),
    [([1, 1], [1]), ([2, 3], [2, 3]), ([3, 9], [3]), ([3, -1], [3]), ([1, 3], [1, 2, 3])],
)
def test_a_view_range_inside_the_file_shows_those_lines(view_range: list[int], rows: list[int]) -> None:
    assert render_file("/memories/x", "l1\nl2\nl3\n", view_range) == "\n".join(
        [_HEADER, *(f"{n:>6}\tl{n}" for n in rows)]
    )


def test_a_file_of_999999_lines_is_shown_and_one_more_line_is_refused() -> None:
    """999,999 line breaks are 999,999 lines (the SDK, counting the empty tail, refuses them)."""
    assert MAX_LINES == 999_999
    assert render_file("/memories/x", "\n" * 999_999, [999_998, -1]) == f"{_HEADER}\n999998\t\n999999\t"
    assert render_file("/memories/x", "\n" * 999_999, None).endswith(
        "\n  1979\t\n[Output cut near 16,000 characters: lines 1-1979 of 999999 shown. "
        "Use view_range [1980, -1] to see the rest.]"
    )
    refusal = "File /memories/x exceeds maximum line limit of 999,999 lines."
    assert _refusal(render_file, "/memories/x", "\n" * 999_999 + "x", None) == refusal
    assert _sdk("\n" * 999_999 + "x", {"command": "view"})[0] == refusal


def _every_occurrence(content: str, old: str) -> Occurrences:
    positions = [index for index in range(len(content)) if content.startswith(old, index)]
    lines = tuple(content.count("\n", 0, position) + 1 for position in positions[:50])
    return Occurrences(len(positions), positions[0] if positions else -1, lines)


@pytest.mark.parametrize(
    "old",
    [
        "aa",
        "aaaaa",
        "abab",
        "ababababa",
        "a\na\n",
        "aabaa",
        "abaab",
        "abcab",
        "aaab",
        "abaaba",
        "aab",
        "aaaaba",
    ],
)
def test_occurrences_in_runs_of_every_length_ending_every_way(old: str) -> None:
    """Runs of the pattern's period, 0 to 130 long, end at the end of the text or at each character
    that breaks them; the count, the first and the lines are those of a search at every position."""
    period = next(p for p in range(1, len(old) + 1) if old[p:] == old[: len(old) - p])
    for length in [*range(40), 63, 64, 65, 66, 127, 128, 129, 130]:
        run = (old[:period] * (length // period + 1))[:length]
        for end in ["", "c", "a", "b", "\n", old, "c" + old]:
            for start in ["", "\n", "b", "c" + old[:-1]]:
                content = start + run + end
                assert occurrences(content, old) == _every_occurrence(content, old), (start, run, end)


def test_a_cut_snippet_names_the_view_range_of_the_rest_of_it() -> None:
    new = "\n".join(f"{n:03d}" + "y" * 96 for n in range(300))
    shown = edit_snippet(replace_unique("/memories/x", "a\nb\nc\nd\ne\nf\n", "c", new))
    rows = shown.split("\n")
    assert rows[1:3] == ["     1\ta", "     2\tb"]
    assert rows[-2] == f"{len(rows) - 2:>6}\t{len(rows) - 5:03d}" + "y" * 96
    assert rows[-1] == (
        f"[Output cut near 16,000 characters: lines 1-{len(rows) - 2} of 305 shown. "
        f"Use view_range [{len(rows) - 1}, 304] to see the rest.]"
    )


@pytest.mark.parametrize(("view_range", "rest"), [([1, -1], "-1"), ([2, 300], "300"), ([3, 900], "400")])
def test_a_cut_view_names_the_view_range_of_the_rest_of_the_range(view_range: list[int], rest: str) -> None:
    content = "".join(f"{n:03d}" + "z" * 96 + "\n" for n in range(1, 401))
    rows = render_file("/memories/x", content, view_range).split("\n")
    first, last = view_range[0], view_range[0] + len(rows) - 3
    assert rows[1] == f"{first:>6}\t{first:03d}" + "z" * 96
    assert rows[-2] == f"{last:>6}\t{last:03d}" + "z" * 96
    assert rows[-1] == (
        f"[Output cut near 16,000 characters: lines {first}-{last} of 400 shown. "
        f"Use view_range [{last + 1}, {rest}] to see the rest.]"
    )


def test_a_view_draws_rows_only_until_the_answer_passes_the_cap() -> None:
    drawn: list[int] = []

    def rows() -> Iterator[str]:
        for number in range(1_000):
            drawn.append(number)
            yield "r" * 99

    assert cut_to_cap("h", rows(), str) == "\n".join(["h", *["r" * 99] * 159, "159"])
    assert len(drawn) == 160  # the 160th row passes the cap: 1 + 160 * 100 characters


def test_a_header_that_leaves_no_room_shows_the_first_row_empty() -> None:
    header = "h" * VIEW_CHARACTER_CAP
    assert cut_to_cap(header, ["row"], lambda kept: f"[{kept}]") == f"{header}\n\n[0]"
