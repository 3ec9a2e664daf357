"""Arbitrary JSON-ish input at ``tool.call``: every answer is a result or a ToolError, and a refused
command changes no stored byte."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3memory import S3MemoryTool
from tests.conftest import memory_tool
from tests.support.bucket import snapshot

pytestmark = [pytest.mark.takes_format]

_NASTY_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "/memories",
            "/memories/",
            "/memories/a.txt",
            "/memories/d/b.txt",
            "/memories/d",
            "/memories/../x",
            "/memories/%2e%2e",
            "/memories/a\x00",
            "/memories/\ud800",
            "/memoriesX",
            "\ud800",
            "a\x00b",
            "x" * 5000,
            "/memories/" + "y" * 2000,
        ]
    ),
)
_NUMBERS = st.one_of(
    st.integers(min_value=-5, max_value=10),
    st.integers(),
    st.sampled_from([2**63, -(2**63), 10**30, -(10**30)]),
    st.floats(allow_nan=True),
    st.booleans(),
)
_SCALARS = st.one_of(st.none(), _NASTY_TEXT, _NUMBERS)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
_FIELDS = st.sampled_from(
    [
        "command",
        "path",
        "file_text",
        "old_str",
        "new_str",
        "insert_line",
        "insert_text",
        "view_range",
        "old_path",
        "new_path",
    ]
)
_COMMANDS = st.sampled_from(
    ["view", "create", "str_replace", "insert", "delete", "rename", "VIEW", "", "drop"]
)
_INPUTS = st.one_of(
    _VALUES,
    st.dictionaries(_FIELDS, _VALUES, max_size=6),
    st.fixed_dictionaries(
        {"command": _COMMANDS},
        optional={
            "path": _NASTY_TEXT,
            "file_text": _NASTY_TEXT,
            "old_str": _NASTY_TEXT,
            "new_str": st.one_of(_NASTY_TEXT, st.none()),
            "insert_line": _NUMBERS,
            "insert_text": _NASTY_TEXT,
            "view_range": st.one_of(st.lists(_NUMBERS, max_size=3), _VALUES),
            "old_path": _NASTY_TEXT,
            "new_path": _NASTY_TEXT,
            "extra": _VALUES,
        },
    ),
)


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_INPUTS, min_size=1, max_size=6))
def test_any_input_is_answered_and_refusals_change_nothing(s3: Any, inputs: list[Any]) -> None:
    tool = memory_tool(s3, "fuzz")
    tool.clear_all_memory()
    tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "alpha\nbeta\n"})
    tool.call({"command": "create", "path": "/memories/d/b.txt", "file_text": "gamma\n"})
    for raw in inputs:
        before = snapshot(s3)
        try:
            answer = tool.call(raw)
        except ToolError as error:
            assert isinstance(error.content, str) and error.content
            error.content.encode("utf-8")
            assert snapshot(s3) == before, raw
        else:
            assert isinstance(answer, str) and answer
            answer.encode("utf-8")


def _refusal(tool: S3MemoryTool, command: dict[str, Any]) -> str:
    try:
        tool.call(command)
    except ToolError as error:
        assert isinstance(error.content, str)
        return error.content
    raise AssertionError(f"accepted: {command}")


def test_huge_paths_are_refused_as_too_long_and_change_nothing(s3: Any) -> None:
    tool = memory_tool(s3, "fuzz")
    tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "alpha\n"})
    before = snapshot(s3)
    huge = "/memories/../" + "x" * 5_000_000
    too_long = f"Error: The path {huge[:200]}… is too long: its storage key would exceed 1024 bytes (prefixes included)."
    for command in (
        {"command": "view", "path": huge},
        {"command": "create", "path": huge, "file_text": "x"},
        {"command": "str_replace", "path": huge, "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": huge, "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": huge},
        {"command": "rename", "old_path": huge, "new_path": "/memories/b.txt"},
        {"command": "rename", "old_path": "/memories/a.txt", "new_path": huge},
    ):
        assert _refusal(tool, command) == too_long
    assert snapshot(s3) == before


def test_refusals_where_the_contract_is_silent_carry_the_sdks_words(s3: Any) -> None:
    tool = memory_tool(s3, "fuzz")
    assert _refusal(tool, {"command": "view", "path": "/memoriesX/a"}) == (
        "Error: Path must start with /memories, got: /memoriesX/a (a memory path is /memories or starts with "
        "/memories/)"
    )
    assert _refusal(tool, {"command": "delete", "path": "/memories/%2e%2e"}) == (
        "Error: Path /memories/%2e%2e would escape /memories directory ('.' and '..' segments are refused, "
        "also percent-encoded or as look-alike characters)"
    )
    assert _refusal(
        tool, {"command": "str_replace", "path": "/memories/a.txt", "old_str": "a", "new_str": "\udc80"}
    ) == (
        "Error: Parameter `new_str` of command `str_replace` is not a valid UTF-8 text file: "
        "it holds a lone surrogate."
    )
