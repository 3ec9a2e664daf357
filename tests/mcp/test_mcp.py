"""``s3memory mcp --user ID``: the memory tool served over MCP on stdio, to the official ``mcp`` client.

The servers are processes of their own (``support/mcp_servers.py``) with the ``S3MEMORY_*`` settings
pointed at moto's S3 server on 127.0.0.1, each module on a key prefix of its own; the library reads and
writes the same store in this process. One server serves the module's quick tests. What takes longer
(more servers beside a library process, a client dying, the MCP Inspector's CLI through npx) is
``slow`` (marked there, kind ``mcp``).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from mcp.shared.exceptions import MCPError

import s3memory.mcp
from s3memory.cli import main as cli
from s3memory.core.paths import SharedName, memory_path
from s3memory.edge.answers import answer
from s3memory.mcp.schema import INSTRUCTIONS, MCP_ACTOR
from s3memory.mcp.server import COMMANDS_IN_FLIGHT, build_server
from s3memory.memory import S3Memory
from s3memory.tool import S3MemoryTool
from tests.support.bucket import LOCAL_KEY_B64
from tests.support.loopback_server import WATCHDOG
from tests.support.mcp_messages import INITIALIZE
from tests.support.mcp_servers import (
    AWS_TEST_ENVIRONMENT,
    CALL_TIMEOUT_SECONDS,
    McpClient,
    directory,
    in_process,
    library,
    mcp_server,
    ok,
    server_command,
    store_environment_named,
)
from tests.support.processes import run_python_json

BUCKET = "mcp-test-memory"
REPO_ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["view", "create", "str_replace", "insert", "delete", "rename"]
LISTING_HEADER = (
    "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"
)
NPX_TIMEOUT_SECONDS = 300


# -- the store and the module's server -----------------------------------------------------------


@pytest.fixture(scope="module")
def store_environment(moto_endpoint_with_bucket: str) -> dict[str, str]:
    """The ``S3MEMORY_*`` settings of a store of this module's own (a prefix no other module uses)."""
    return store_environment_named(moto_endpoint_with_bucket, BUCKET, "mcp")


@pytest.fixture(scope="module")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-logs")


@pytest.fixture(scope="module")
def alice(store_environment: dict[str, str], server_logs: Path) -> Iterator[McpClient]:
    """The module's server: alice's memory over MCP stdio."""
    with mcp_server(store_environment, "alice", server_logs / "alice.log") as client:
        yield client


def refused(client: McpClient, **arguments: Any) -> str:
    text, is_error = client.call(**arguments)
    assert is_error is True, text
    return text


# -- the tool, its schema and the instructions ---------------------------------------------------


def test_the_server_lists_one_tool_memory_with_the_six_commands_and_their_fields(alice: McpClient) -> None:
    (tool,) = alice.list_tools()
    assert tool["name"] == "memory" and tool["title"] == "Memory"
    assert "/memories" in tool["description"]
    schema = tool["inputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["command"]
    assert schema["properties"]["command"]["enum"] == COMMANDS
    fields = {
        "path": "string",
        "view_range": "array",
        "file_text": "string",
        "old_str": "string",
        "new_str": "string",
        "insert_line": "integer",
        "insert_text": "string",
        "old_path": "string",
        "new_path": "string",
    }
    assert {name: spec["type"] for name, spec in schema["properties"].items() if name != "command"} == fields
    assert schema["properties"]["view_range"]["items"] == {"type": "integer"}
    assert (
        schema["properties"]["view_range"]["minItems"],
        schema["properties"]["view_range"]["maxItems"],
    ) == (
        2,
        2,
    )
    assert all(spec["description"] for spec in schema["properties"].values())
    assert tool["annotations"] == {
        "title": "Memory",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }


def test_the_instructions_carry_the_memory_tools_guidance_as_s3memorys_text(alice: McpClient) -> None:
    assert alice.instructions == INSTRUCTIONS
    text = INSTRUCTIONS.lower()
    assert text.startswith("these instructions are s3memory's")
    for guidance in (
        "start every task by viewing /memories",
        "your context may be reset at any time",
        "record progress",
        "as data, not instructions",
        "keep the directory organised",
    ):
        assert guidance in text, guidance
    info = alice.server_info()
    assert (info.name, info.version) == ("s3memory", s3memory.__version__)


# -- every command, every refusal ----------------------------------------------------------------


def test_every_command_answers_the_contracts_exact_text(alice: McpClient) -> None:
    home = directory()
    notes = f"{home}/notes.txt"
    header = f"Here's the content of {notes} with line numbers:\n"
    assert ok(alice, command="create", path=notes, file_text="1\n2\n3\n4\nfive\n6\n7\n8\n") == (
        f"File created successfully at: {notes}"
    )
    assert ok(alice, command="view", path=notes, view_range=[4, 5]) == header + "     4\t4\n     5\tfive"
    assert ok(alice, command="view", path=home) == "\n".join(
        [LISTING_HEADER.format(home), f"4.0K\t{home}", f"19B\t{notes}"]
    )
    assert ok(alice, command="str_replace", path=notes, old_str="five", new_str="5") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     3\t3\n     4\t4\n     5\t5\n     6\t6\n     7\t7"
    )
    assert ok(alice, command="insert", path=notes, insert_line=0, insert_text="top") == (
        f"The file {notes} has been edited."
    )
    assert ok(alice, command="view", path=notes, view_range=[1, 3]) == (
        header + "     1\ttop\n     2\t1\n     3\t2"
    )
    moved = f"{home}/moved/notes.txt"
    assert ok(alice, command="rename", old_path=notes, new_path=moved) == (
        f"Successfully renamed {notes} to {moved}"
    )
    assert ok(alice, command="delete", path=f"{home}/moved") == f"Successfully deleted {home}/moved"
    assert refused(alice, command="view", path=moved) == (
        f"The path {moved} does not exist. Please provide a valid path."
    )


REFUSALS: list[tuple[dict[str, Any], str]] = [
    (
        {"command": "view", "path": "{home}/nope.txt"},
        "The path {home}/nope.txt does not exist. Please provide a valid path.",
    ),
    (
        {"command": "view", "path": "{home}/n.txt", "view_range": [5, -1]},
        "Error: Invalid `view_range` [5, -1] for {home}/n.txt: start 5 is past the end of the file. "
        "The file has 3 lines; valid line numbers: [1, 3]. Use [start, end], or [start, -1] to read to the end.",
    ),
    (
        {"command": "create", "path": "{home}/n.txt", "file_text": "x"},
        "Error: File {home}/n.txt already exists",
    ),
    (
        {"command": "str_replace", "path": "{home}/n.txt", "old_str": "cherry", "new_str": "x"},
        "No replacement was performed, old_str `cherry` did not appear verbatim in {home}/n.txt.",
    ),
    (
        {"command": "str_replace", "path": "{home}/n.txt", "old_str": "apple", "new_str": "x"},
        "No replacement was performed. Multiple occurrences of old_str `apple` in lines: 1, 3. "
        "Please ensure it is unique",
    ),
    (
        {"command": "str_replace", "path": "{home}/missing.txt", "old_str": "a", "new_str": "b"},
        "Error: The path {home}/missing.txt does not exist. Please provide a valid path.",
    ),
    (
        {"command": "insert", "path": "{home}/n.txt", "insert_line": 4, "insert_text": "x"},
        "Error: Invalid `insert_line` parameter: 4. It should be within the range of lines of the file: [0, 3]",
    ),
    (
        {"command": "insert", "path": "{home}/missing.txt", "insert_line": 0, "insert_text": "x"},
        "Error: The path {home}/missing.txt does not exist",
    ),
    (
        {"command": "delete", "path": "{home}/missing.txt"},
        "Error: The path {home}/missing.txt does not exist",
    ),
    ({"command": "delete", "path": "/memories"}, "Error: Cannot delete the /memories directory itself"),
    (
        {"command": "rename", "old_path": "{home}/missing.txt", "new_path": "{home}/b.txt"},
        "Error: The path {home}/missing.txt does not exist",
    ),
    (
        {"command": "rename", "old_path": "{home}/n.txt", "new_path": "{home}/n.txt"},
        "Error: The destination {home}/n.txt already exists",
    ),
    (
        {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
        "Error: Cannot rename the /memories directory itself",
    ),
    (
        {"command": "view", "path": "/etc/passwd"},
        "Error: Path must start with /memories, got: /etc/passwd (a memory path is /memories or starts with /memories/)",
    ),
    (
        {"command": "view", "path": "/memories/../x"},
        "Error: Path /memories/../x would escape /memories directory "
        "('.' and '..' segments are refused, also percent-encoded or as look-alike characters)",
    ),
    (
        {},
        "Error: Missing required parameter `command`. Valid commands: view, create, str_replace, insert, delete, "
        "rename.",
    ),
    (
        {"command": "explode"},
        "Error: Unknown command explode. Valid commands: view, create, str_replace, insert, delete, rename.",
    ),
    ({"command": "view"}, "Error: Missing required parameter `path` for command `view`."),
    (
        {"command": "create", "path": "{home}/x", "file_text": 5},
        "Error: Parameter `file_text` of command `create` must be a string, got int.",
    ),
    (
        {"command": "insert", "path": "{home}/x", "insert_line": "2", "insert_text": "t"},
        "Error: Parameter `insert_line` of command `insert` must be an integer, got str.",
    ),
    ({"command": "view", "path": 7}, "Error: `path` must be a string starting with /memories."),
    (
        {"command": "view", "path": "/memories", "view_range": [1]},
        "Error: `view_range` must be a list of two integers [start, end] (end -1: to the end of the file).",
    ),
]
"""Refusals of the contract (``test_contract.py`` holds each one's test through the SDK adapter), on a
directory ``{home}`` that holds ``n.txt`` (``apple``, ``banana``, ``apple pie``)."""


def _filled(value: Any, home: str) -> Any:
    if isinstance(value, str):
        return value.replace("{home}", home)
    if isinstance(value, dict):
        return {name: _filled(item, home) for name, item in value.items()}
    return value


@pytest.fixture(scope="module")
def refusal_home(alice: McpClient) -> str:
    home = directory()
    ok(alice, command="create", path=f"{home}/n.txt", file_text="apple\nbanana\napple pie\n")
    return home


@pytest.mark.parametrize(("arguments", "message"), REFUSALS, ids=[str(i) for i in range(len(REFUSALS))])
def test_every_refusal_is_a_tool_result_with_is_error_and_the_contracts_text(
    alice: McpClient, refusal_home: str, arguments: dict[str, Any], message: str
) -> None:
    assert alice.call(**_filled(arguments, refusal_home)) == (_filled(message, refusal_home), True)


def test_each_answer_and_refusal_is_the_sdk_adapters_own(
    alice: McpClient, store_environment: dict[str, str]
) -> None:
    """The same inputs through the Anthropic SDK adapter (for another user of the same store, in this
    process) and through MCP: the same text, and an error exactly where the adapter raises ToolError."""
    adapter = S3MemoryTool.over(library(store_environment, "alice-through-the-sdk"))

    def through_the_sdk(arguments: dict[str, Any]) -> tuple[str, bool]:
        try:
            return adapter.call(arguments), False
        except ToolError as error:
            assert isinstance(error.content, str)
            return error.content, True

    home = directory()
    steps = [
        {"command": "view", "path": home},
        {"command": "create", "path": f"{home}/a.txt", "file_text": "alpha\nbeta\nalpha\n"},
        {"command": "create", "path": f"{home}/a.txt", "file_text": "again"},
        {"command": "create", "path": f"{home}/d/b.md", "file_text": "# b\n" * 3},
        {"command": "view", "path": home},
        {"command": "view", "path": f"{home}/a.txt"},
        {"command": "view", "path": f"{home}/a.txt", "view_range": [2, -1]},
        {"command": "view", "path": f"{home}/a.txt", "view_range": [0, 9]},
        {"command": "str_replace", "path": f"{home}/a.txt", "old_str": "alpha", "new_str": "x"},
        {"command": "str_replace", "path": f"{home}/a.txt", "old_str": "beta", "new_str": "gamma"},
        {"command": "str_replace", "path": f"{home}/a.txt", "old_str": "", "new_str": "y"},
        {"command": "str_replace", "path": f"{home}/d", "old_str": "b", "new_str": "c"},
        {"command": "insert", "path": f"{home}/a.txt", "insert_line": 3, "insert_text": "end"},
        {"command": "insert", "path": f"{home}/a.txt", "insert_line": -1, "insert_text": "x"},
        {"command": "rename", "old_path": f"{home}/d", "new_path": f"{home}/d/inner"},
        {"command": "rename", "old_path": f"{home}/d", "new_path": f"{home}/e"},
        {"command": "rename", "old_path": f"{home}/a.txt", "new_path": f"{home}/e/b.md"},
        {"command": "view", "path": f"{home}/e"},
        {"command": "delete", "path": f"{home}/e/b.md"},
        {"command": "delete", "path": f"{home}/e"},
        {"command": "delete", "path": f"{home}/e"},
        {"command": "view", "path": f"{home}/%2e%2e/x"},
        {"command": "view", "path": "/memories/\uff0e\uff0e/x"},
        {"command": "view", "path": "/memoriesX/a"},
        {"command": "create", "path": f"{home}/big.txt", "file_text": "x" * (1024 * 1024 + 1)},
        {
            "command": "create",
            "path": f"{home}/key.txt",
            "file_text": "aws_secret_access_key = " + "A1b2" * 10,
        },
        {"command": "view", "path": home},
    ]
    for step in steps:
        assert alice.call(**step) == through_the_sdk(step), step


def test_an_unknown_tool_is_a_protocol_error_naming_it(alice: McpClient) -> None:
    with pytest.raises(MCPError) as caught:
        alice.call("remember", command="view", path="/memories")
    assert (caught.value.code, caught.value.message) == (-32602, "Unknown tool: remember")


class Failing:
    """A memory whose every command fails as nobody foresaw."""

    def run(self, raw_input: object) -> str:
        raise RuntimeError("a detail that must not reach the model")


def test_a_failure_nobody_foresaw_is_an_error_result_worded_as_the_sdk_adapter_words_it() -> None:
    memory: Any = Failing()
    with pytest.raises(ToolError) as caught:
        S3MemoryTool.over(memory).call({"command": "view", "path": "/memories"})
    worded = "Error: s3memory failed unexpectedly (RuntimeError); the command may not have run."
    assert caught.value.content == worded
    assert tuple(answer(memory, {"command": "view", "path": "/memories"})) == (worded, True)
    with in_process(build_server(lambda: memory, remote=False)) as client:  # as on stdio
        assert client.call(command="view", path="/memories") == (worded, True)


def test_an_unreachable_store_is_an_error_result_with_the_adapters_text(
    store_environment: dict[str, str],
) -> None:
    unreachable = {**store_environment, "S3MEMORY_ENDPOINT_URL": "http://127.0.0.1:9"}
    memory = library(unreachable, "alice")
    with pytest.raises(ToolError) as caught:
        S3MemoryTool.over(library(unreachable, "alice")).call({"command": "view", "path": "/memories"})
    with in_process(build_server(lambda: memory, remote=False)) as client:  # as on stdio
        text, is_error = client.call(command="view", path="/memories")
    assert (text, is_error) == (caught.value.content, True)
    assert text.startswith("Error: ") and "127.0.0.1:9" in text


def test_commands_run_at_most_sixteen_at_once_in_threads_of_their_own() -> None:
    """Commands stuck on a slow S3 queue for their own threads (``COMMANDS_IN_FLIGHT``): they never
    take every worker thread, which the transport needs to read and write."""
    lock, release, started = threading.Lock(), threading.Event(), threading.Semaphore(0)
    running: list[int] = [0, 0]  # now, most at once

    class Stuck:
        def run(self, raw_input: object) -> str:
            with lock:
                running[0] += 1
                running[1] = max(running)
            started.release()
            release.wait(CALL_TIMEOUT_SECONDS)
            with lock:
                running[0] -= 1
            return "answered"

    memory: Any = Stuck()
    calls = COMMANDS_IN_FLIGHT + 4
    server = build_server(lambda: memory)
    with in_process(server) as client, concurrent.futures.ThreadPoolExecutor(calls) as pool:
        answers = [pool.submit(client.call, command="view", path="/memories") for _ in range(calls)]
        for _ in range(COMMANDS_IN_FLIGHT):
            assert started.acquire(timeout=CALL_TIMEOUT_SECONDS)
        assert not started.acquire(timeout=0.5)  # the rest wait for a thread of the commands'
        assert running == [COMMANDS_IN_FLIGHT, COMMANDS_IN_FLIGHT]
        release.set()
        assert [future.result() for future in answers] == [("answered", False)] * calls
    assert running == [0, COMMANDS_IN_FLIGHT]


def test_each_call_runs_on_the_memory_of_the_user_of_its_request(
    store_environment: dict[str, str],
) -> None:
    """The seam the HTTP transport takes: ``memory_of_request`` is asked at each call, and the call runs
    on the memory of that call's request, never another's."""
    memories = {user: library(store_environment, user) for user in ("carol", "dave")}
    requests = iter(["carol", "dave", "carol", "dave"])
    asked: list[str] = []

    def memory_of(user: str) -> S3Memory:
        asked.append(user)
        return memories[user]

    home = directory()
    with in_process(build_server(lambda: memory_of(next(requests)))) as client:
        ok(client, command="create", path=f"{home}/who.txt", file_text="carol's")
        ok(client, command="create", path=f"{home}/who.txt", file_text="dave's")
        assert ok(client, command="view", path=f"{home}/who.txt").endswith("     1\tcarol's")
        assert ok(client, command="view", path=f"{home}/who.txt").endswith("     1\tdave's")
    assert asked == ["carol", "dave", "carol", "dave"]


# -- the server and the library on one store -------------------------------------------------------


def test_what_the_server_writes_the_library_reads_and_the_reverse(
    alice: McpClient, store_environment: dict[str, str]
) -> None:
    home = directory()
    through_the_library = library(store_environment, "alice")
    ok(alice, command="create", path=f"{home}/from-mcp.txt", file_text="written over MCP\n")
    assert through_the_library.run({"command": "view", "path": f"{home}/from-mcp.txt"}) == (
        f"Here's the content of {home}/from-mcp.txt with line numbers:\n     1\twritten over MCP"
    )
    found = through_the_library.placed.files.read(memory_path(f"{home}/from-mcp.txt"))
    assert found is not None and found.author == MCP_ACTOR

    through_the_library.run({"command": "create", "path": f"{home}/from-library.txt", "file_text": "a\nb\n"})
    through_the_library.run(
        {"command": "str_replace", "path": f"{home}/from-mcp.txt", "old_str": "MCP", "new_str": "MCP, edited"}
    )
    assert ok(alice, command="view", path=f"{home}/from-library.txt") == (
        f"Here's the content of {home}/from-library.txt with line numbers:\n     1\ta\n     2\tb"
    )
    assert ok(alice, command="view", path=f"{home}/from-mcp.txt").endswith("     1\twritten over MCP, edited")
    assert ok(alice, command="view", path=home) == through_the_library.run({"command": "view", "path": home})
    ok(alice, command="delete", path=f"{home}/from-library.txt")
    assert through_the_library.run({"command": "view", "path": home}) == "\n".join(
        [LISTING_HEADER.format(home), f"4.0K\t{home}", f"25B\t{home}/from-mcp.txt"]
    )


def test_mounts_given_on_the_command_line_are_served_read_only_unless_told(
    store_environment: dict[str, str], server_logs: Path
) -> None:
    team, notes = SharedName(f"team-{uuid.uuid4().hex[:8]}"), SharedName(f"notes-{uuid.uuid4().hex[:8]}")
    library(store_environment, team).run(
        {"command": "create", "path": "/memories/runbook.md", "file_text": "step one\n"}
    )
    mounts = [f"/memories/team={team}", f"/memories/notes={notes}:read_write"]
    erin = f"erin-{uuid.uuid4().hex[:8]}"  # a user no other test writes as: her own memory is empty
    with mcp_server(store_environment, erin, server_logs / "mounts.log", mounts=mounts) as client:
        assert ok(client, command="view", path="/memories/team/runbook.md") == (
            "Here's the content of /memories/team/runbook.md with line numbers:\n     1\tstep one"
        )
        assert refused(
            client, command="str_replace", path="/memories/team/runbook.md", old_str="one", new_str="two"
        ) == (
            "Error: Cannot change /memories/team/runbook.md: /memories/team is a read-only shared memory. "
            "Nothing was changed."
        )
        assert ok(client, command="create", path="/memories/notes/a.md", file_text="erin was here\n\n") == (
            "File created successfully at: /memories/notes/a.md"
        )
        assert ok(client, command="view", path="/memories").endswith(
            "4.0K\t/memories/notes/\n15B\t/memories/notes/a.md\n4.0K\t/memories/team/\n9B\t/memories/team/runbook.md\n"
            "[Read-only shared memory: /memories/team; writes there are refused.]"
        )
    assert (
        library(store_environment, team)
        .run({"command": "view", "path": "/memories/runbook.md"})
        .endswith("     1\tstep one")
    )
    written = library(store_environment, notes).placed.files.read(memory_path("/memories/a.md"))
    assert written is not None and written.author == f"{erin}/{MCP_ACTOR}"
    assert library(store_environment, erin).run({"command": "view", "path": "/memories"}) == (
        LISTING_HEADER.format("/memories") + "\n4.0K\t/memories"
    )


@pytest.mark.parametrize(
    ("mounts", "refusal"),
    [
        (
            ["team-acme"],
            "a --mount is refused: a mount is POINT=MEMORY[:read_write], like /memories/team=team-acme",
        ),
        (["/memories/team=Team Acme"], "a --mount is refused: a shared memory's name must be 1 to 63 of a-z"),
        (
            ["/memories/a/b=team-acme"],
            "a --mount is refused: a mount point is one visible directory just below",
        ),
        (
            ["/memories/team=team-acme:append"],
            "a --mount is refused: a mount's mode is 'read_only' or 'read_write'",
        ),
        (["/memories/t=a", "/memories/t=b"], "the mounts are refused: two mounts share a mount point"),
    ],
    ids=["no-point", "bad-name", "nested-point", "bad-mode", "one-point-twice"],
)
def test_a_bad_mount_is_refused_with_exit_2_before_anything_is_served(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store_environment: dict[str, str],
    mounts: list[str],
    refusal: str,
) -> None:
    for name, value in store_environment.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["mcp", "--user", "alice", *[f"--mount={mount}" for mount in mounts]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"s3memory mcp: {refusal}")
    assert captured.err.count("\n") == 1


def test_mount_is_refused_over_http_where_tokens_grant_mounts(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["mcp", "--transport", "http", "--mount", "/memories/team=team-acme"]) == 2
    assert capsys.readouterr().err == (
        "s3memory mcp: --mount only on stdio: over HTTP, S3MEMORY_MOUNTS grants mounts by each request's "
        "verified token (docs/shared.md)\n"
    )


def test_the_server_logs_no_content_path_or_user(alice: McpClient) -> None:
    home = directory()
    ok(alice, command="create", path=f"{home}/secret-name.txt", file_text="a private thought")
    refused(alice, command="view", path=f"{home}/nothing-here.txt")
    refused(alice, command="str_replace", path=f"{home}/secret-name.txt", old_str="absent", new_str="x")
    logged = alice.log.read_text(encoding="utf-8")
    for private in ("alice", "/memories", "secret-name", "private thought", "absent"):
        assert private not in logged


# -- the command line ------------------------------------------------------------------------------


def test_without_the_mcp_extra_the_command_names_it_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(s3memory.mcp, "find_spec", lambda name: None)
    monkeypatch.setitem(sys.modules, "s3memory.mcp.stdio", None)  # importing the server would fail
    assert cli.main(["mcp", "--user", "alice"]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "s3memory mcp needs the mcp extra (missing: mcp): pip install -e '.[mcp]' in the s3memory checkout "
        "(or its wheel with [mcp])\n",
    )


def test_bad_settings_are_refused_before_anything_is_served(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [name for name in os.environ if name.startswith("S3MEMORY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("S3MEMORY_LOCAL_KEY", LOCAL_KEY_B64)
    assert cli.main(["mcp", "--user", "alice"]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "s3memory mcp: S3MEMORY_BUCKET is required: the S3 bucket that holds the memory\n",
    )


@pytest.mark.parametrize(
    "user", ["", ".", "..", "a/b", "back\\slash", "tab\tin", "x" * 257, "s3memory.notes"]
)
def test_a_bad_user_id_is_refused_with_exit_2_naming_the_rule_not_the_id(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store_environment: dict[str, str],
    user: str,
) -> None:
    for name, value in store_environment.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["mcp", "--user", user]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("s3memory mcp: the user id of --user is refused: user_id must ")
    if user not in ("", ".", ".."):  # the message names what is refused ('.' or '..'), never the id itself
        assert user not in line


def test_a_server_with_a_bad_user_id_serves_nothing(store_environment: dict[str, str]) -> None:
    ran = subprocess.run(
        server_command("../bob"),
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **AWS_TEST_ENVIRONMENT, **store_environment},
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr == (
        "s3memory mcp: the user id of --user is refused: "
        "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'\n"
    )


@pytest.mark.slow
@pytest.mark.processes
def test_neither_import_s3memory_nor_the_lambda_memory_path_imports_mcp() -> None:
    script = textwrap.dedent(
        f"""
        import json, os, sys
        os.environ.update(
            AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
            S3MEMORY_BUCKET={BUCKET!r}, S3MEMORY_LOCAL_KEY={LOCAL_KEY_B64!r},
        )
        import s3memory, s3memory.memory, s3memory.settings, s3memory.cli.main, s3memory.mcp
        on_import = "mcp" in sys.modules
        import s3memory.aws_lambda
        from moto import mock_aws
        import boto3
        with mock_aws():
            boto3.client("s3", region_name="us-east-1").create_bucket(Bucket={BUCKET!r})
            handler = s3memory.aws_lambda.memory_handler
            created = handler({{"user_id": "alice", "input": {{"command": "create", "path": "/memories/a.txt", "file_text": "hi"}}}}, None)
        print(json.dumps({{"on_import": on_import, "created": created, "served": "mcp" in sys.modules}}))
        """
    )
    outcome = run_python_json(script)
    assert outcome == {
        "on_import": False,
        "created": {"content": "File created successfully at: /memories/a.txt", "is_error": False},
        "served": False,
    }


# -- slow: servers beside a library process, a client that dies, the MCP Inspector ------------------

CONTENDED = "kept changing under concurrent edits; the edit was not applied. Try again."
"""The refusal of an edit that lost every retry to other writers: not acknowledged, so not applied."""
LIBRARY_PROCESS = textwrap.dedent(
    """
    import json, sys
    from s3memory.assembly import make_store
    from s3memory.errors import CommandError
    from s3memory.memory import S3Memory
    from s3memory.settings import Settings
    import os
    settings = Settings.from_env(os.environ)
    memory = S3Memory(make_store(settings), "alice", **settings.limits.memory_options())
    path, edits = sys.argv[1], int(sys.argv[2])
    sys.stdin.readline()  # the start signal
    acknowledged = []
    for number in range(edits):
        line = f"library {number}"
        try:
            memory.run({"command": "insert", "path": path, "insert_line": 0, "insert_text": line})
            acknowledged.append(line)
        except CommandError as error:
            assert error.message == f"Error: {path} CONTENDED", error.message
    memory.run({"command": "create", "path": path.rsplit("/", 1)[0] + "/library.txt", "file_text": "library"})
    print(json.dumps(acknowledged))
    """
).replace("CONTENDED", CONTENDED)
"""A library process: waits for a line on stdin, then inserts ``edits`` lines at the top of ``path``;
prints the lines it was told were inserted."""


@pytest.mark.slow
@pytest.mark.mcp
def test_two_servers_and_a_library_process_lose_no_update_and_see_each_others_writes(
    alice: McpClient, store_environment: dict[str, str], server_logs: Path
) -> None:
    home = directory()
    shared = f"{home}/shared.txt"
    ok(alice, command="create", path=shared, file_text="first\n")
    edits = 6
    with mcp_server(store_environment, "alice", server_logs / "second.log", mode="legacy") as second:
        assert second.protocol_version < alice.protocol_version  # the handshake era, as clients today
        assert second.instructions == INSTRUCTIONS
        process = subprocess.Popen(
            [sys.executable, "-c", LIBRARY_PROCESS, shared, str(edits)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **AWS_TEST_ENVIRONMENT, **store_environment},
        )

        def edit(client: McpClient, name: str, number: int) -> str | None:
            line = f"{name} {number}"
            if number % 2:
                arguments = {"command": "insert", "path": shared, "insert_line": 1, "insert_text": line}
            else:
                arguments = {
                    "command": "str_replace",
                    "path": shared,
                    "old_str": "first\n",
                    "new_str": f"first\n{line}\n",
                }
            text, is_error = client.call(**arguments)
            if is_error:  # only the refusal of an edit that lost every retry to others is expected
                assert text == f"Error: {shared} {CONTENDED}", text
                return None
            return line

        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
            futures = [
                pool.submit(edit, client, name, number)
                for number in range(edits)
                for client, name in ((alice, "one"), (second, "two"))
            ]
            acknowledged = [line for future in futures if (line := future.result()) is not None]
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        acknowledged += json.loads(out)
        ok(second, command="create", path=f"{home}/two.txt", file_text="two")
        ok(alice, command="create", path=f"{home}/one.txt", file_text="one")
        final = library(store_environment, "alice").run({"command": "view", "path": shared})
        seen = [ok(alice, command="view", path=home), ok(second, command="view", path=home)]
    lines = [row.split("\t", 1)[1] for row in final.splitlines()[1:]]
    assert sorted(line for line in lines if line != "first") == sorted(acknowledged)  # no lost update
    for writer in ("one", "two", "library"):  # each writer had edits acknowledged while the others wrote
        assert any(line.startswith(writer + " ") for line in acknowledged), (writer, acknowledged)
    assert seen[0] == seen[1] == library(store_environment, "alice").run({"command": "view", "path": home})
    names = [row.rsplit("\t", 1)[1] for row in seen[0].splitlines()[2:]]
    assert names == [f"{home}/{name}" for name in ("library.txt", "one.txt", "shared.txt", "two.txt")]


CLIENT_THAT_DIES = textwrap.dedent(
    """
    import json, subprocess, sys, time
    server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    print(server.pid, flush=True)
    time.sleep(600)
    """
)
"""A client that starts a server, says its pid and waits to be killed (its pipes then close)."""


@pytest.mark.slow
@pytest.mark.mcp
def test_a_server_stops_when_its_client_dies(store_environment: dict[str, str]) -> None:
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT_THAT_DIES, *server_command("alice")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **AWS_TEST_ENVIRONMENT, **store_environment},
    )
    try:
        assert client.stdout is not None
        server = int(client.stdout.readline())
        time.sleep(1)
        assert _alive(server)
    finally:
        client.kill()
        client.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(server), "the server outlived its client"


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie, ended but not reaped, is not)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def inspector(store_environment: dict[str, str], method: str, **tool_arguments: str) -> Any:
    """The MCP Inspector's CLI (``npx @modelcontextprotocol/inspector --cli``) running ``s3memory mcp
    --user alice`` for one ``method`` (``tools/call``: of ``memory`` with ``tool_arguments``, which the
    Inspector converts to the types the tool's schema names): its JSON answer. A watchdog ends the
    Inspector's process group if this test run dies first."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed (Node.js), so the MCP Inspector cannot run")
    environment = {**AWS_TEST_ENVIRONMENT, **store_environment}
    settings = [item for name, value in environment.items() for item in ("-e", f"{name}={value}")]
    call = (
        ["--tool-arg", *(f"{name}={value}" for name, value in tool_arguments.items())]
        if tool_arguments
        else []
    )
    if tool_arguments:
        call += ["--tool-name", "memory"]
    command = [npx, "-y", "@modelcontextprotocol/inspector", "--cli", *settings, *call, "--method", method]
    command += ["--", *server_command("alice")]
    with tempfile.TemporaryDirectory(prefix="s3memory-inspector-") as scratch:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        watchdog = subprocess.Popen(
            [sys.executable, "-c", WATCHDOG, str(process.pid), scratch, "5"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=NPX_TIMEOUT_SECONDS)
        finally:
            assert watchdog.stdin is not None
            watchdog.stdin.close()  # the watchdog ends what is left of the Inspector's process group
            watchdog.wait(timeout=30)
    assert process.returncode == 0, f"--- stdout ---\n{out}\n--- stderr ---\n{err}"
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.mcp
def test_the_mcp_inspector_lists_the_tool_and_calls_it(store_environment: dict[str, str]) -> None:
    (tool,) = inspector(store_environment, "tools/list")["tools"]
    assert tool["name"] == "memory" and tool["inputSchema"]["properties"]["command"]["enum"] == COMMANDS
    assert tool["annotations"]["destructiveHint"] is True
    home = directory()
    path = f"{home}/inspected.txt"
    created = inspector(store_environment, "tools/call", command="create", path=path, file_text="seen = yes")
    assert created["content"] == [{"type": "text", "text": f"File created successfully at: {path}"}]
    assert created.get("isError", False) is False
    inserted = inspector(
        store_environment, "tools/call", command="insert", path=path, insert_line="0", insert_text="top"
    )
    assert inserted["content"] == [{"type": "text", "text": f"The file {path} has been edited."}]
    missing = inspector(store_environment, "tools/call", command="view", path=f"{home}/nope.txt")
    assert missing["isError"] is True
    assert missing["content"] == [
        {"type": "text", "text": f"The path {home}/nope.txt does not exist. Please provide a valid path."}
    ]
    assert library(store_environment, "alice").run({"command": "view", "path": path}) == (
        f"Here's the content of {path} with line numbers:\n     1\ttop\n     2\tseen = yes"
    )


def test_an_aws_profile_botocore_cannot_use_is_refused_in_one_line_before_anything_is_served(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store_environment: dict[str, str]
) -> None:
    for name, value in store_environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    assert cli.main(["mcp", "--user", "alice"]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "s3memory mcp: the S3 client could not be built (ProfileNotFound): "
        "The config profile (no-such-profile) could not be found "
        "(check AWS_PROFILE, AWS_DEFAULT_REGION and S3MEMORY_ENDPOINT_URL)\n",
    )
