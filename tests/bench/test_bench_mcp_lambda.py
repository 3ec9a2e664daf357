"""The bench's section 7 on Lambda (``bench/mcp_lambda.py``): its events are served by the real
handlers, its warm part pairs and summarises what it says, its answer check refuses what it must, and
the report renders it. No timing is asserted; the cold part (child interpreters) runs in the bench."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from typing import Any

import pytest

from bench.mcp_lambda import (
    MCP_FUNCTION,
    MCP_URL,
    MEMORY_FUNCTION,
    Events,
    McpLambda,
    _warm,
    answer_text,
)
from bench.mcp_overhead import COMMANDS, USER, VIEWED, arguments, pairs
from bench.report import mcp_section
from s3memory.assembly import make_store
from s3memory.aws_lambda import mcp_function, memory_function, runtime
from s3memory.memory import S3Memory
from s3memory.settings import Settings
from tests.support.issuer import Issuer, loopback_issuer


@pytest.fixture
def settings(local_env: Any) -> Iterator[dict[str, str]]:
    """Both functions' settings, as the bench passes them (``environ``), with ``USER``'s viewed note."""
    runtime.reset()
    with loopback_issuer() as issuer:
        environ = {**os.environ, **issuer.environ(), "S3MEMORY_MCP_URL": MCP_URL}
        environ["BENCH_TEST_TOKEN"] = issuer.token(USER)
        library(environ).run({"command": "create", "path": VIEWED, "file_text": "one\ntwo\n"})
        yield environ
    runtime.reset()


def library(environ: dict[str, str]) -> S3Memory:
    built = Settings.from_env(environ)
    return S3Memory(make_store(built), USER, **built.limits.memory_options())


def served(side: str, environ: dict[str, str], tool_input: dict[str, Any], token: str | None = None) -> Any:
    handle = mcp_function.handle if side == MCP_FUNCTION else memory_function.handle
    event = Events(token or environ["BENCH_TEST_TOKEN"]).of(side, tool_input)
    return handle(event, None, environ)


def test_the_order_alternates_which_side_goes_first_and_leaves_the_warmup_unmeasured() -> None:
    order = list(pairs(warmup=1, calls=2))
    assert order == [
        (number, command, number % 2 == 0, number >= 1) for number in range(3) for command in COMMANDS
    ]
    assert arguments("create", MCP_FUNCTION, 4)["path"] == "/memories/mcp-function/c-4.md"


def test_both_functions_answer_the_benchs_view_with_the_same_text(settings: dict[str, str]) -> None:
    view = arguments("view file", MCP_FUNCTION, 0)
    texts = {side: answer_text(served(side, settings, view)) for side in (MCP_FUNCTION, MEMORY_FUNCTION)}
    assert texts[MCP_FUNCTION] == texts[MEMORY_FUNCTION]
    assert texts[MCP_FUNCTION].endswith("     1\tone\n     2\ttwo")


@pytest.mark.parametrize("side", [MCP_FUNCTION, MEMORY_FUNCTION])
def test_a_refused_request_or_a_tool_error_is_never_taken_for_an_answer(
    settings: dict[str, str], side: str
) -> None:
    stranger = Issuer("https://elsewhere.example").token(USER)  # a key the functions do not trust
    with pytest.raises(RuntimeError, match="HTTP 401"):
        answer_text(served(side, settings, arguments("view file", side, 0), stranger))
    missing = {"command": "view", "path": "/memories/notes/not-there.md"}
    with pytest.raises(RuntimeError, match="with an error") as raised:
        answer_text(served(side, settings, missing))
    assert "not-there" not in str(raised.value)


def test_the_warm_part_pairs_every_measured_call_and_the_report_shows_it(settings: dict[str, str]) -> None:
    found = McpLambda("moto", 2, calls=3, warmup=1, cold_reps=0)
    _warm(found, settings, Events(settings["BENCH_TEST_TOKEN"]))
    assert [c.command for c in found.commands] == list(COMMANDS)
    for command in found.commands:
        assert command.against == "memory function"
        assert command.mcp.n == command.library.n == command.overhead.n == command.ratio.n == 3
        assert not math.isnan(command.overhead.median)
    for side in (MCP_FUNCTION, MEMORY_FUNCTION):
        listing = library(settings).run({"command": "view", "path": f"/memories/{side}"})
        assert [f"c-{n}.md" in listing for n in range(4)] == [True] * 4
    json.dumps(found.as_dict())
    text = "\n".join(mcp_section(None, found))
    assert "| view file |" in text and "| create |" in text and "MCP function / memory function" in text
    skipped = McpLambda("moto", 2, calls=3, warmup=1, cold_reps=0, skipped="no mcp")
    assert "Skipped: no mcp." in mcp_section(None, skipped)
