"""A script's words (``docs/testing.md``): the turns a test writes for the scripted stand-in for
Claude (``scripted_claude``) and the tool results a turn reads from the request it answers (pure).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

DEFAULT_TOOL_NAME = "memory"


@dataclass(frozen=True)
class Reply:
    """An assistant turn: optional text, then tool calls (none makes it a final answer)."""

    text: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()
    tool_name: str = DEFAULT_TOOL_NAME


Turn: TypeAlias = str | Reply | Sequence[Mapping[str, Any]] | Callable[[list[dict[str, Any]]], "Turn"]
"""One scripted assistant turn (``scripted_claude``'s docstring lists the shapes)."""


def reply(text: str) -> Reply:
    """A final answer: ``text`` and no tool call."""
    return Reply(text=text)


def memory_call(command: str, /, *, saying: str | None = None, **fields: Any) -> Reply:
    """A turn that calls the memory tool once with ``{"command": command, **fields}``, after the
    text ``saying`` if given: ``memory_call("view", path="/memories")``."""
    return Reply(text=saying, tool_calls=[{"command": command, **fields}])


@dataclass(frozen=True)
class ToolResult:
    """One ``tool_result`` block of a request, with its content flattened to text."""

    tool_use_id: str
    text: str
    is_error: bool


def _block_text(content: object) -> str:
    """The text of a ``tool_result`` content: a string, or the text blocks of a list joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def tool_results(message: Mapping[str, Any]) -> list[ToolResult]:
    """The ``tool_result`` blocks of one message param, in order."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        ToolResult(
            str(block.get("tool_use_id", "")), _block_text(block.get("content")), bool(block.get("is_error"))
        )
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def last_tool_results(messages: Sequence[Mapping[str, Any]]) -> list[ToolResult]:
    """The ``tool_result`` blocks of the last message (the results of the previous turn's calls)."""
    return tool_results(messages[-1]) if messages else []
