"""Every command and string of the memory tool contract, through the SDK adapter, on moto and SeaweedFS."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.lib.tools import ToolError

from s3memory import S3MemoryTool
from s3memory.core.paths import memory_path
from tests.conftest import STORAGE_FORMAT, key_of, keys_of, memory_tool, plant, prefix_of
from tests.support.bucket import SEAWEEDFS_SLOW, snapshot, stored_keys

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)
MOTO_AS_SHIPPED = STORAGE_FORMAT == 1
"""On format 1, moto as shipped, no patch: s3memory finds out what it does not enforce
(``conftest.moto_semantics``). Format 2 needs the conditions moto as shipped ignores."""

LISTING_HEADER = (
    "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"
)


@pytest.fixture
def tool(s3: Any) -> S3MemoryTool:
    return memory_tool(s3)


def stored_text(tool: S3MemoryTool, path: str) -> str | None:
    """The exact decrypted text stored at ``path``, every byte of it."""
    found = tool.memory.placed.files.read(memory_path(path))
    return None if found is None else found.text


def ok(tool: S3MemoryTool, **command: Any) -> str:
    """The answer to ``command``."""
    return tool.call(command)


def refused(tool: S3MemoryTool, **command: Any) -> str:
    with pytest.raises(ToolError) as caught:
        tool.call(command)
    content = caught.value.content
    assert isinstance(content, str)
    return content


def test_view_of_an_empty_store_is_the_header_and_the_root(tool: S3MemoryTool) -> None:
    assert (
        ok(tool, command="view", path="/memories") == LISTING_HEADER.format("/memories") + "\n4.0K\t/memories"
    )


def test_view_directory_lists_two_levels_in_tree_order_with_plaintext_sizes(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/b.txt", file_text="x" * 1536)
    ok(tool, command="create", path="/memories/a/z.txt", file_text="hello")
    ok(tool, command="create", path="/memories/a/m/deep/deeper.txt", file_text="hidden by depth")
    ok(tool, command="create", path="/memories/.secret/x.txt", file_text="hidden")
    ok(tool, command="create", path="/memories/a/.hidden.txt", file_text="hidden")
    ok(tool, command="create", path="/memories/node_modules/pkg.json", file_text="{}")
    ok(tool, command="create", path="/memories/c/node_modules/pkg.json", file_text="{}")
    expected = "\n".join(
        [
            LISTING_HEADER.format("/memories"),
            "4.0K\t/memories",
            "4.0K\t/memories/a/",
            "4.0K\t/memories/a/m/",
            "5B\t/memories/a/z.txt",
            "1.5K\t/memories/b.txt",
            "4.0K\t/memories/c/",
        ]
    )
    assert ok(tool, command="view", path="/memories") == expected
    assert ok(tool, command="view", path="/memories/a") == "\n".join(
        [
            LISTING_HEADER.format("/memories/a"),
            "4.0K\t/memories/a",
            "4.0K\t/memories/a/m/",
            "4.0K\t/memories/a/m/deep/",
            "5B\t/memories/a/z.txt",
        ]
    )


def test_view_file_numbers_lines_six_wide_with_a_tab(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/notes.txt", file_text="Hello World\nThis is line two\n")
    assert ok(tool, command="view", path="/memories/notes.txt") == (
        "Here's the content of /memories/notes.txt with line numbers:\n"
        "     1\tHello World\n"
        "     2\tThis is line two"
    )


def test_view_range_inclusive_and_to_the_end(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="a\nb\nc\nd")
    header = "Here's the content of /memories/n.txt with line numbers:\n"
    assert (
        ok(tool, command="view", path="/memories/n.txt", view_range=[2, 3]) == header + "     2\tb\n     3\tc"
    )
    assert (
        ok(tool, command="view", path="/memories/n.txt", view_range=[3, -1])
        == header + "     3\tc\n     4\td"
    )
    assert ok(tool, command="view", path="/memories/n.txt", view_range=[4, 4]) == header + "     4\td"


@pytest.mark.parametrize("view_range", [[0, 2], [5, -1], [3, 2], [-3, -1]])
def test_view_range_outside_the_file_is_an_error_naming_the_valid_range(
    tool: S3MemoryTool, view_range: list[int]
) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="a\nb\nc\nd\n")
    message = refused(tool, command="view", path="/memories/n.txt", view_range=view_range)
    assert message.startswith(f"Error: Invalid `view_range` {view_range} for /memories/n.txt")
    assert "[1, 4]" in message


def test_view_missing_path(tool: S3MemoryTool) -> None:
    assert (
        refused(tool, command="view", path="/memories/nope.txt")
        == "The path /memories/nope.txt does not exist. Please provide a valid path."
    )


def test_view_cuts_long_files_near_16000_characters_with_a_paging_note(tool: S3MemoryTool) -> None:
    lines = [f"line {number:04d} " + "x" * 90 for number in range(1, 401)]
    ok(tool, command="create", path="/memories/long.txt", file_text="\n".join(lines))
    shown = ok(tool, command="view", path="/memories/long.txt")
    assert 15_000 < len(shown) <= 16_000
    body, note = shown.rsplit("\n", 1)
    last_row = body.rsplit("\n", 1)[1]
    last_number = int(last_row.split("\t")[0])
    assert last_row == f"{last_number:>6}\t{lines[last_number - 1]}"
    assert note == (
        f"[Output cut near 16,000 characters: lines 1-{last_number} of 400 shown. "
        f"Use view_range [{last_number + 1}, -1] to see the rest.]"
    )
    rest = ok(tool, command="view", path="/memories/long.txt", view_range=[last_number + 1, -1])
    assert f"{last_number + 1:>6}\t{lines[last_number]}" in rest


def test_view_refuses_files_over_999999_lines(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/many.txt", file_text="\n" * 1_000_000)
    assert (
        refused(tool, command="view", path="/memories/many.txt")
        == "File /memories/many.txt exceeds maximum line limit of 999,999 lines."
    )


def test_create_success_and_already_exists(tool: S3MemoryTool, s3: Any) -> None:
    assert (
        ok(tool, command="create", path="/memories/notes.txt", file_text="one")
        == "File created successfully at: /memories/notes.txt"
    )
    before = snapshot(s3)
    assert (
        refused(tool, command="create", path="/memories/notes.txt", file_text="two")
        == "Error: File /memories/notes.txt already exists"
    )
    assert snapshot(s3) == before
    assert ok(tool, command="view", path="/memories/notes.txt").endswith("     1\tone")


def test_create_makes_parent_directories(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/a/b/c.txt", file_text="deep")
    assert "4.0K\t/memories/a/b/" in ok(tool, command="view", path="/memories")


def test_create_where_a_directory_is_or_below_a_file_is_refused(tool: S3MemoryTool, s3: Any) -> None:
    ok(tool, command="create", path="/memories/dir/file.txt", file_text="x")
    before = snapshot(s3)
    assert (
        refused(tool, command="create", path="/memories/dir", file_text="y")
        == "Error: Cannot create /memories/dir: /memories/dir is a directory."
    )
    assert (
        refused(tool, command="create", path="/memories/dir/file.txt/sub.txt", file_text="y")
        == "Error: Cannot create /memories/dir/file.txt/sub.txt: /memories/dir/file.txt is a file, not a directory."
    )
    assert refused(tool, command="create", path="/memories", file_text="y").startswith("Error: Cannot create")
    assert snapshot(s3) == before


def test_str_replace_success_with_snippet(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="1\n2\n3\n4\nfive\n6\n7\n8\n")
    assert ok(tool, command="str_replace", path="/memories/n.txt", old_str="five", new_str="5") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     3\t3\n     4\t4\n     5\t5\n     6\t6\n     7\t7"
    )


def test_str_replace_without_new_str_removes_old_str(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="keep remove keep")
    ok(tool, command="str_replace", path="/memories/n.txt", old_str=" remove")
    assert ok(tool, command="view", path="/memories/n.txt").endswith("     1\tkeep keep")


def test_str_replace_errors(tool: S3MemoryTool, s3: Any) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="apple\nbanana\napple pie\n")
    ok(tool, command="create", path="/memories/d/x.txt", file_text="x")
    before = snapshot(s3)
    assert (
        refused(tool, command="str_replace", path="/memories/n.txt", old_str="cherry", new_str="x")
        == "No replacement was performed, old_str `cherry` did not appear verbatim in /memories/n.txt."
    )
    assert refused(tool, command="str_replace", path="/memories/n.txt", old_str="apple", new_str="x") == (
        "No replacement was performed. Multiple occurrences of old_str `apple` in lines: 1, 3. "
        "Please ensure it is unique"
    )
    for path in ("/memories/missing.txt", "/memories/d"):
        assert (
            refused(tool, command="str_replace", path=path, old_str="x", new_str="y")
            == f"Error: The path {path} does not exist. Please provide a valid path."
        )
    assert refused(tool, command="str_replace", path="/memories/n.txt", old_str="", new_str="y") == (
        "Error: `old_str` must not be empty."
    )
    assert snapshot(s3) == before


def test_str_replace_spans_lines_and_keeps_every_other_byte(tool: S3MemoryTool, s3: Any) -> None:
    original = "head\r\nalpha\r\nbeta\r\ntail\r\nno newline at end"
    ok(tool, command="create", path="/memories/crlf.txt", file_text=original)
    ok(tool, command="str_replace", path="/memories/crlf.txt", old_str="alpha\r\nbeta", new_str="gamma")
    assert stored_text(tool, "/memories/crlf.txt") == "head\r\ngamma\r\ntail\r\nno newline at end"


def test_insert_success_and_line_model(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="a\nb\n")
    assert (
        ok(tool, command="insert", path="/memories/n.txt", insert_line=0, insert_text="top")
        == "The file /memories/n.txt has been edited."
    )
    ok(tool, command="insert", path="/memories/n.txt", insert_line=3, insert_text="end\n")
    assert ok(tool, command="view", path="/memories/n.txt") == (
        "Here's the content of /memories/n.txt with line numbers:\n     1\ttop\n     2\ta\n     3\tb\n     4\tend"
    )


def test_insert_makes_the_file_end_with_a_newline(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="a\r\nb")
    ok(tool, command="insert", path="/memories/n.txt", insert_line=1, insert_text="middle")
    assert stored_text(tool, "/memories/n.txt") == "a\r\nmiddle\nb\n"


def test_insert_errors(tool: S3MemoryTool, s3: Any) -> None:
    ok(tool, command="create", path="/memories/n.txt", file_text="a\nb\n")
    ok(tool, command="create", path="/memories/d/x.txt", file_text="x")
    before = snapshot(s3)
    for line in (-1, 3, 10**12, 2**63, 10**30, -(10**99)):  # the contract's string for any line number
        assert refused(tool, command="insert", path="/memories/n.txt", insert_line=line, insert_text="x") == (
            f"Error: Invalid `insert_line` parameter: {line}. "
            "It should be within the range of lines of the file: [0, 2]"
        )
    assert refused(tool, command="insert", path="/memories/n.txt", insert_line=10**100, insert_text="x") == (
        "Error: Parameter `insert_line` of command `insert` is out of range."  # no longer one is written out
    )
    for path in ("/memories/missing.txt", "/memories/d"):
        assert (
            refused(tool, command="insert", path=path, insert_line=0, insert_text="x")
            == f"Error: The path {path} does not exist"
        )
    assert snapshot(s3) == before


def test_delete_file_and_directory(tool: S3MemoryTool, s3: Any) -> None:
    ok(tool, command="create", path="/memories/f.txt", file_text="x")
    ok(tool, command="create", path="/memories/d/a.txt", file_text="x")
    ok(tool, command="create", path="/memories/d/e/b.txt", file_text="x")
    ok(tool, command="create", path="/memories/dx.txt", file_text="sibling with a shared prefix")
    assert ok(tool, command="delete", path="/memories/f.txt") == "Successfully deleted /memories/f.txt"
    assert ok(tool, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert stored_keys(s3, prefix_of(tool.memory)) == [key_of(tool.memory, "/memories/dx.txt")]


def test_delete_missing(tool: S3MemoryTool) -> None:
    assert (
        refused(tool, command="delete", path="/memories/nope")
        == "Error: The path /memories/nope does not exist"
    )


@pytest.mark.parametrize(
    "root", ["/memories", "/memories/", "/memories/.", "/memories/%2e", "/memories/x/..", "/memories/\uff0e"]
)
def test_the_root_can_never_be_deleted(tool: S3MemoryTool, s3: Any, root: str) -> None:
    ok(tool, command="create", path="/memories/keep.txt", file_text="x")
    before = snapshot(s3)
    assert refused(tool, command="delete", path=root).startswith("Error:")
    assert snapshot(s3) == before


def test_rename_file_and_directory(tool: S3MemoryTool, s3: Any) -> None:
    ok(tool, command="create", path="/memories/a.txt", file_text="A")
    ok(tool, command="create", path="/memories/d/x.txt", file_text="X")
    ok(tool, command="create", path="/memories/d/sub/y.txt", file_text="Y")
    assert (
        ok(tool, command="rename", old_path="/memories/a.txt", new_path="/memories/new/dir/b.txt")
        == "Successfully renamed /memories/a.txt to /memories/new/dir/b.txt"
    )
    assert (
        ok(tool, command="rename", old_path="/memories/d", new_path="/memories/e")
        == "Successfully renamed /memories/d to /memories/e"
    )
    assert stored_keys(s3, prefix_of(tool.memory)) == keys_of(
        tool.memory, ["/memories/e/sub/y.txt", "/memories/e/x.txt", "/memories/new/dir/b.txt"]
    )
    assert ok(tool, command="view", path="/memories/e/sub/y.txt").endswith("     1\tY")
    assert ok(tool, command="view", path="/memories/new/dir/b.txt").endswith("     1\tA")


def test_a_path_that_is_a_file_and_a_directory_acts_as_the_file_and_keeps_what_lies_below(
    tool: S3MemoryTool, s3: Any
) -> None:
    # docs/storage.md, "Creates at once": two creates racing, or a bucket writer putting back an old
    # object, can leave a file where a directory is
    plant(s3, tool.memory, "/memories/j", "the file\n")
    plant(s3, tool.memory, "/memories/j/x.md", "below\n")
    assert ok(tool, command="view", path="/memories").splitlines()[1:] == [
        "4.0K\t/memories",
        "9B\t/memories/j",
        "4.0K\t/memories/j/",
        "6B\t/memories/j/x.md",
    ]
    assert ok(tool, command="view", path="/memories/j").endswith("     1\tthe file")
    assert refused(tool, command="create", path="/memories/j/y.md", file_text="y") == (
        "Error: Cannot create /memories/j/y.md: /memories/j is a file, not a directory."
    )
    # a create sent again with the same text (a retry whose answer was lost) removes neither file
    assert refused(tool, command="create", path="/memories/j/x.md", file_text="below\n") == (
        "Error: Cannot create /memories/j/x.md: /memories/j is a file, not a directory."
    )
    assert refused(tool, command="create", path="/memories/j", file_text="the file\n") == (
        "Error: Cannot create /memories/j: /memories/j is a directory."
    )
    assert ok(tool, command="view", path="/memories/j/x.md").endswith("     1\tbelow")
    ok(tool, command="str_replace", path="/memories/j", old_str="the file", new_str="the edited file")
    assert ok(tool, command="view", path="/memories/j").endswith("     1\tthe edited file")
    ok(tool, command="insert", path="/memories/j/x.md", insert_line=1, insert_text="inserted")
    assert ok(tool, command="delete", path="/memories/j") == "Successfully deleted /memories/j"
    assert ok(tool, command="view", path="/memories/j").splitlines()[1:] == [
        "4.0K\t/memories/j",
        "15B\t/memories/j/x.md",
    ]
    assert ok(tool, command="view", path="/memories/j/x.md").endswith("     1\tbelow\n     2\tinserted")


@pytest.mark.parametrize("command", ["delete", "rename"])
def test_a_path_that_is_a_file_and_a_directory_acts_as_the_file_also_once_listed_as_a_directory(
    tool: S3MemoryTool, s3: Any, command: str
) -> None:
    # a listing makes the process remember /memories/j as a directory; the file there still wins
    plant(s3, tool.memory, "/memories/j", "the file\n")
    plant(s3, tool.memory, "/memories/j/x.md", "below\n")
    ok(tool, command="view", path="/memories")
    if command == "delete":
        assert ok(tool, command="delete", path="/memories/j") == "Successfully deleted /memories/j"
        kept = ["/memories/j/x.md"]
    else:
        assert ok(tool, command="rename", old_path="/memories/j", new_path="/memories/k") == (
            "Successfully renamed /memories/j to /memories/k"
        )
        kept = ["/memories/j/x.md", "/memories/k"]
    assert stored_keys(s3, prefix_of(tool.memory)) == keys_of(tool.memory, kept)
    assert ok(tool, command="view", path="/memories/j/x.md").endswith("     1\tbelow")


def test_rename_errors_change_nothing(tool: S3MemoryTool, s3: Any) -> None:
    ok(tool, command="create", path="/memories/a.txt", file_text="A")
    ok(tool, command="create", path="/memories/b.txt", file_text="B")
    ok(tool, command="create", path="/memories/d/x.txt", file_text="X")
    before = snapshot(s3)
    assert (
        refused(tool, command="rename", old_path="/memories/zz", new_path="/memories/yy")
        == "Error: The path /memories/zz does not exist"
    )
    assert (
        refused(tool, command="rename", old_path="/memories/a.txt", new_path="/memories/b.txt")
        == "Error: The destination /memories/b.txt already exists"
    )
    assert (
        refused(tool, command="rename", old_path="/memories/a.txt", new_path="/memories/d")
        == "Error: The destination /memories/d already exists"
    )
    assert (
        refused(tool, command="rename", old_path="/memories/d", new_path="/memories/a.txt")
        == "Error: The destination /memories/a.txt already exists"
    )
    assert (
        refused(tool, command="rename", old_path="/memories/a.txt", new_path="/memories/a.txt")
        == "Error: The destination /memories/a.txt already exists"
    )
    for onto_itself in ("/memories/d", "/memories/d/"):  # the SDK's answer (helper-38)
        assert (
            refused(tool, command="rename", old_path="/memories/d", new_path=onto_itself)
            == f"Error: The destination {onto_itself} already exists"
        )
    assert (
        refused(tool, command="rename", old_path="/memories/d", new_path="/memories/d/inner")
        == "Error: Cannot move /memories/d into itself (/memories/d/inner)"
    )
    assert (
        refused(tool, command="rename", old_path="/memories", new_path="/memories/x")
        == "Error: Cannot rename the /memories directory itself"
    )
    assert (
        refused(tool, command="rename", old_path="/memories/a.txt", new_path="/memories")
        == "Error: The destination /memories already exists"
    )
    assert refused(
        tool, command="rename", old_path="/memories/a.txt", new_path="/memories/b.txt/c"
    ).startswith("Error: Cannot rename to /memories/b.txt/c: /memories/b.txt is a file")
    assert snapshot(s3) == before


def test_trailing_slash_names_the_directory(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/d/x.txt", file_text="X")
    assert ok(tool, command="view", path="/memories/d/").startswith(LISTING_HEADER.format("/memories/d/"))
    assert ok(tool, command="delete", path="/memories/d/") == "Successfully deleted /memories/d/"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("not a dict", "Error: The memory tool input must be an object with a `command` field, got str."),
        (
            {},
            "Error: Missing required parameter `command`. Valid commands: view, create, str_replace, insert, delete, "
            "rename.",
        ),
        (
            {"command": "explode"},
            "Error: Unknown command explode. Valid commands: view, create, str_replace, insert, delete, rename.",
        ),
        (
            {"command": 7},
            "Error: Unknown command of type int. Valid commands: view, create, str_replace, insert, delete, rename.",
        ),
        ({"command": "view"}, "Error: Missing required parameter `path` for command `view`."),
        (
            {"command": "create", "path": "/memories/x"},
            "Error: Missing required parameter `file_text` for command `create`.",
        ),
        (
            {"command": "create", "path": "/memories/x", "file_text": 5},
            "Error: Parameter `file_text` of command `create` must be a string, got int.",
        ),
        (
            {"command": "insert", "path": "/memories/x", "insert_line": "2", "insert_text": "t"},
            "Error: Parameter `insert_line` of command `insert` must be an integer, got str.",
        ),
        (
            {"command": "insert", "path": "/memories/x", "insert_line": True, "insert_text": "t"},
            "Error: Parameter `insert_line` of command `insert` must be an integer, got bool.",
        ),
        ({"command": "view", "path": 7}, "Error: `path` must be a string starting with /memories."),
        (
            {"command": "view", "path": "/memories", "view_range": [1]},
            "Error: `view_range` must be a list of two integers [start, end] (end -1: to the end of the file).",
        ),
        (
            {"command": "rename", "old_path": "/memories/a"},
            "Error: Missing required parameter `new_path` for command `rename`.",
        ),
        (
            {"command": "create", "path": "/memories/x", "file_text": "bad \ud800"},
            "Error: Parameter `file_text` of command `create` is not a valid UTF-8 text file: it holds a lone surrogate.",
        ),
    ],
)
def test_malformed_input_is_a_clear_error(tool: S3MemoryTool, s3: Any, command: Any, message: str) -> None:
    before = snapshot(s3)
    with pytest.raises(ToolError) as caught:
        tool.call(command)
    assert caught.value.content == message
    assert snapshot(s3) == before


def test_extra_fields_are_ignored(tool: S3MemoryTool) -> None:
    assert (
        ok(tool, command="create", path="/memories/x.txt", file_text="x", overwrite=True, note={"a": [1]})
        == "File created successfully at: /memories/x.txt"
    )


def test_file_size_limit_is_enforced_and_configurable(s3: Any) -> None:
    tool = memory_tool(s3, max_file_bytes=10)
    ok(tool, command="create", path="/memories/small.txt", file_text="0123456789")
    assert refused(tool, command="create", path="/memories/big.txt", file_text="01234567890") == (
        "Error: The file /memories/big.txt would be 11 bytes; the limit is 10 bytes. Nothing was changed."
    )
    assert refused(
        tool, command="insert", path="/memories/small.txt", insert_line=0, insert_text="x"
    ).startswith("Error: The file /memories/small.txt would be 13 bytes")
    assert ok(tool, command="view", path="/memories/small.txt").endswith("     1\t0123456789")


def test_default_file_size_limit_is_one_mebibyte(tool: S3MemoryTool) -> None:
    ok(tool, command="create", path="/memories/max.txt", file_text="x" * (1024 * 1024))
    assert refused(
        tool, command="create", path="/memories/over.txt", file_text="x" * (1024 * 1024 + 1)
    ).startswith("Error: The file /memories/over.txt would be 1,048,577 bytes; the limit is 1,048,576 bytes.")
