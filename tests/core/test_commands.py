"""Parsing the tool input (``core/commands.py``): every refusal of every field of every command, word for
word (Claude reads it), the limits at exactly N and N + 1, and what a valid input parses to.

The contract is silent on malformed input and the SDK's local tool does not check it (it builds its
command unchecked); where the SDK has words, ours carry them: ``Unknown command``, ``… is not a valid
UTF-8 text file``, ``Path must start with /memories, got: …``."""

from __future__ import annotations

from typing import Any

import pytest

from s3memory.core.commands import Create, Delete, Insert, Rename, StrReplace, View, parse_command
from s3memory.core.paths import memory_path
from s3memory.errors import CommandError

VALID = "Valid commands: view, create, str_replace, insert, delete, rename."
FIELDS: dict[str, dict[str, Any]] = {
    "view": {"path": "/memories/a"},
    "create": {"path": "/memories/a", "file_text": "t"},
    "str_replace": {"path": "/memories/a", "old_str": "o"},
    "insert": {"path": "/memories/a", "insert_line": 0, "insert_text": "t"},
    "delete": {"path": "/memories/a"},
    "rename": {"old_path": "/memories/a", "new_path": "/memories/b"},
}
"""Each command's required fields, valid."""
TEXTS = [
    ("create", "file_text"),
    ("str_replace", "old_str"),
    ("str_replace", "new_str"),
    ("insert", "insert_text"),
]
PATHS = [(command, name) for command, fields in FIELDS.items() for name in fields if name.endswith("path")]
BIG = 10**100
"""An integer parameter of this size is out of range; one less is a line number."""


def refusal(raw: object) -> str:
    with pytest.raises(CommandError) as refused:
        parse_command(raw)
    return refused.value.message


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("view", "Error: The memory tool input must be an object with a `command` field, got str."),
        (None, "Error: The memory tool input must be an object with a `command` field, got NoneType."),
        (
            [("command", "view")],
            "Error: The memory tool input must be an object with a `command` field, got list.",
        ),
        ({}, f"Error: Missing required parameter `command`. {VALID}"),
        ({"command": None, "path": "/memories"}, f"Error: Missing required parameter `command`. {VALID}"),
        ({"command": "explode"}, f"Error: Unknown command explode. {VALID}"),
        ({"command": "View"}, f"Error: Unknown command View. {VALID}"),
        ({"command": ""}, f"Error: Unknown command . {VALID}"),
        ({"command": "vi\x00ew"}, f"Error: Unknown command vi\\x00ew. {VALID}"),
        ({"command": 7}, f"Error: Unknown command of type int. {VALID}"),
        ({"command": ["view"]}, f"Error: Unknown command of type list. {VALID}"),
    ],
)
def test_an_input_that_names_no_command_is_refused_listing_the_commands(raw: object, message: str) -> None:
    assert refusal(raw) == message


@pytest.mark.parametrize(("command", "name"), [(c, n) for c, fields in FIELDS.items() for n in fields])
def test_each_required_field_missing_or_null_is_named_with_its_command(command: str, name: str) -> None:
    """Also ``insert_line`` (not "must be an integer, got NoneType")."""
    absent = {key: value for key, value in FIELDS[command].items() if key != name}
    message = f"Error: Missing required parameter `{name}` for command `{command}`."
    assert refusal({"command": command, **absent}) == message
    assert refusal({"command": command, **absent, name: None}) == message


@pytest.mark.parametrize(("command", "name"), PATHS)
def test_a_path_that_is_no_string_is_refused_naming_its_field(command: str, name: str) -> None:
    for value in (7, b"/memories/a", ["/memories/a"]):
        assert refusal({**FIELDS[command], "command": command, name: value}) == (
            f"Error: `{name}` must be a string starting with /memories."
        )


@pytest.mark.parametrize(("command", "name"), PATHS)
def test_a_path_outside_the_memory_is_refused_in_the_sdks_words_whatever_its_field(
    command: str, name: str
) -> None:
    assert refusal({**FIELDS[command], "command": command, name: "/etc/x"}) == (
        "Error: Path must start with /memories, got: /etc/x (a memory path is /memories or starts with /memories/)"
    )


@pytest.mark.parametrize(("command", "name"), TEXTS)
def test_a_text_field_that_is_no_string_is_refused_naming_its_type(command: str, name: str) -> None:
    for value, kind in ((5, "int"), (b"t", "bytes"), (["t"], "list"), (True, "bool"), (1.5, "float")):
        assert refusal({**FIELDS[command], "command": command, name: value}) == (
            f"Error: Parameter `{name}` of command `{command}` must be a string, got {kind}."
        )


@pytest.mark.parametrize(("command", "name"), TEXTS)
def test_a_text_field_with_a_lone_surrogate_is_refused_in_the_sdks_words(command: str, name: str) -> None:
    for value in ("bad \ud800", "\udfff", "a\udc80b"):
        assert refusal({**FIELDS[command], "command": command, name: value}) == (
            f"Error: Parameter `{name}` of command `{command}` is not a valid UTF-8 text file: "
            "it holds a lone surrogate."
        )


@pytest.mark.parametrize(
    ("value", "kind"),
    [("2", "str"), (True, "bool"), (False, "bool"), (1.0, "float"), ([1], "list"), ({}, "dict")],
)
def test_an_insert_line_that_is_no_integer_is_refused_naming_its_type(value: object, kind: str) -> None:
    assert refusal({**FIELDS["insert"], "command": "insert", "insert_line": value}) == (
        f"Error: Parameter `insert_line` of command `insert` must be an integer, got {kind}."
    )


@pytest.mark.parametrize(("value", "kind"), [("1", "str"), (True, "bool"), (1.0, "float"), ([1], "list")])
def test_a_view_range_item_that_is_no_integer_is_refused_naming_view_range(value: object, kind: str) -> None:
    message = f"Error: Parameter `view_range` of command `view` must be an integer, got {kind}."
    assert refusal({"command": "view", "path": "/memories/a", "view_range": [value, 2]}) == message
    assert refusal({"command": "view", "path": "/memories/a", "view_range": [1, value]}) == message


def test_an_integer_of_100_digits_is_out_of_range_and_one_of_99_is_a_line_number() -> None:
    insert = {**FIELDS["insert"], "command": "insert"}
    view = {"command": "view", "path": "/memories/a"}
    for value in (BIG, -BIG, BIG * 7, -BIG - 1):
        assert refusal({**insert, "insert_line": value}) == (
            "Error: Parameter `insert_line` of command `insert` is out of range."
        )
        for view_range in ([value, 1], [1, value]):
            assert refusal({**view, "view_range": view_range}) == (
                "Error: Parameter `view_range` of command `view` is out of range."
            )
    for value in (BIG - 1, -BIG + 1, 0, -1, 1):
        parsed = parse_command({**insert, "insert_line": value})
        assert isinstance(parsed, Insert) and parsed.insert_line == value
        assert parse_command({**view, "view_range": [value, value]}) == View(
            memory_path("/memories/a"), [value, value]
        )


@pytest.mark.parametrize("value", [[], [1], [1, 2, 3], "12", {"a": 1, "b": 2}, 3, (1,), {1, 2}])
def test_a_view_range_that_is_no_pair_is_refused_saying_what_it_is(value: object) -> None:
    assert refusal({"command": "view", "path": "/memories/a", "view_range": value}) == (
        "Error: `view_range` must be a list of two integers [start, end] (end -1: to the end of the file)."
    )


def test_a_new_name_is_checked_where_a_command_makes_it_and_only_there() -> None:
    held = "/memories/te\u200bam"
    message = (
        "Error: The path /memories/te\\u200bam is not allowed: a name may not hold U+200B ZERO WIDTH SPACE, "
        "an invisible character with which one name can pass for another; use a name without it."
    )
    assert refusal({"command": "create", "path": held, "file_text": "t"}) == message
    assert refusal({"command": "rename", "old_path": "/memories/a", "new_path": held}) == message
    path = memory_path(held)
    assert parse_command({"command": "view", "path": held}) == View(path, None)
    assert parse_command({"command": "str_replace", "path": held, "old_str": "o"}) == StrReplace(
        path, "o", ""
    )
    assert parse_command({"command": "insert", "path": held, "insert_line": 0, "insert_text": "t"}) == (
        Insert(path, 0, "t")
    )
    assert parse_command({"command": "delete", "path": held}) == Delete(path)
    assert parse_command({"command": "rename", "old_path": held, "new_path": "/memories/b"}) == (
        Rename(path, memory_path("/memories/b"))
    )


def test_a_valid_input_parses_to_its_command_and_extra_fields_are_ignored() -> None:
    a, b = memory_path("/memories/a"), memory_path("/memories/b/")
    extra = {"note": {"x": [1]}, "overwrite": True, "view_range": "ignored unless view"}
    cases: list[tuple[dict[str, Any], object]] = [
        ({"command": "view", "path": "/memories/a"}, View(a, None)),
        ({"command": "view", "path": "/memories/a", "view_range": None}, View(a, None)),
        ({"command": "view", "path": "/memories/a", "view_range": [3, -1]}, View(a, [3, -1])),
        ({"command": "view", "path": "/memories/a", "view_range": (2, 5)}, View(a, [2, 5])),
        ({"command": "create", "path": "/memories/a", "file_text": "", **extra}, Create(a, "")),
        ({"command": "str_replace", "path": "/memories/a", "old_str": "o", **extra}, StrReplace(a, "o", "")),
        (
            {"command": "str_replace", "path": "/memories/a", "old_str": "o", "new_str": None},
            StrReplace(a, "o", ""),
        ),
        (
            {"command": "str_replace", "path": "/memories/a", "old_str": "", "new_str": "n"},
            StrReplace(a, "", "n"),
        ),
        (
            {"command": "insert", "path": "/memories/a", "insert_line": 4, "insert_text": "t\n"},
            Insert(a, 4, "t\n"),
        ),
        ({"command": "delete", "path": "/memories/b/", **extra}, Delete(b)),
        ({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/b/"}, Rename(a, b)),
    ]
    for raw, command in cases:
        parsed = parse_command(raw)
        assert parsed == command and type(parsed) is type(command)
    view = parse_command({"command": "view", "path": "/memories/a/", "view_range": (2, 5)})
    assert isinstance(view, View) and type(view.view_range) is list and view.path.text == "/memories/a/"


def test_the_path_is_checked_before_the_other_fields() -> None:
    assert refusal({"command": "insert", "path": 7, "insert_line": "x", "insert_text": 5}) == (
        "Error: `path` must be a string starting with /memories."
    )
    assert refusal({"command": "insert", "path": "/memories/a", "insert_line": "x", "insert_text": 5}) == (
        "Error: Parameter `insert_line` of command `insert` must be an integer, got str."
    )
    assert refusal({"command": "rename", "old_path": 7, "new_path": 8}) == (
        "Error: `old_path` must be a string starting with /memories."
    )
