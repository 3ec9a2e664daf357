"""``s3memory demo``: two conversations, recall from S3 in a fresh context, ciphertext at rest, ``--live``."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from s3memory.cli.main import main
from s3memory.demo import team, walkthrough
from s3memory.testing.script import Reply, ToolResult
from s3memory.testing.scripted_claude import API_KEY, ScriptedClaude

pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]
HEX_ROW = re.compile(r"^  [0-9a-f]{4}  ((?:[0-9a-f]{2} ){0,15}[0-9a-f]{2})\s+\|")
STORED_LINES = ["- Concise answers.", "- British English spelling and style.", "- Step 1 (schema): done."]


def _env_without_api_key() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name != "ANTHROPIC_API_KEY"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="module")
def cli_run() -> subprocess.CompletedProcess[str]:
    """One run of the command as a user runs it, shared by the output checks."""
    return subprocess.run(
        [sys.executable, "-m", "s3memory.cli.main", "demo"],
        cwd=ROOT,
        env=_env_without_api_key(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _section(output: str, start: str, end: str | None) -> str:
    begin = output.index(start)
    return output[begin : output.index(end, begin) if end else len(output)]


def _final_answer(section: str) -> str:
    """The last ``claude>`` block of a conversation's printout, continuation lines included."""
    blocks: list[str] = re.findall(r"^claude> (.*(?:\n {8}.*)*)", section, flags=re.MULTILINE)
    assert blocks, section
    return blocks[-1]


def _dumped_bytes(output: str) -> bytes:
    return bytes.fromhex(
        "".join(match.group(1) for line in output.splitlines() if (match := HEX_ROW.match(line)))
    )


def test_cli_demo_succeeds_quietly(cli_run: subprocess.CompletedProcess[str]) -> None:
    assert cli_run.returncode == 0, cli_run.stderr
    assert "Traceback" not in cli_run.stderr
    assert cli_run.stderr.strip() == ""  # no server request logs, no warnings


def test_cli_demo_shows_both_conversations_and_their_tool_calls(
    cli_run: subprocess.CompletedProcess[str],
) -> None:
    out = cli_run.stdout
    first = _section(out, "=== Conversation 1 ===", "=== Conversation 2")
    second = _section(out, "=== Conversation 2", "=== At rest")
    assert f"user>   {walkthrough.FIRST_MESSAGE}" in first
    assert f"user>   {walkthrough.SECOND_MESSAGE}" in second
    assert "-> memory view /memories\n" in first
    assert f"-> memory create {walkthrough.PREFERENCES_PATH}" in first
    assert f"-> memory create {walkthrough.PROGRESS_PATH}" in first
    assert f"-> memory insert {walkthrough.PROGRESS_PATH}" in first
    assert f"File created successfully at: {walkthrough.PREFERENCES_PATH}" in first
    assert f"The file {walkthrough.PROGRESS_PATH} has been edited." in first
    assert "-> memory view /memories\n" in second
    assert f"-> memory view {walkthrough.PREFERENCES_PATH}" in second
    assert f"-> memory view {walkthrough.PROGRESS_PATH}" in second
    assert "(error)" not in first + second


def test_cli_demo_second_conversation_recalls_what_the_first_stored(
    cli_run: subprocess.CompletedProcess[str],
) -> None:
    second = _section(cli_run.stdout, "=== Conversation 2", "=== At rest")
    answer = _final_answer(second)
    for line in STORED_LINES:
        assert line in answer
    # What it recalls is what conversation 1 wrote, including the entry appended in a later turn.
    assert walkthrough.PROGRESS_ENTRY.strip() in answer
    assert all(line in walkthrough.PREFERENCES_TEXT for line in STORED_LINES[:2])


def test_cli_demo_raw_bytes_are_ciphertext(cli_run: subprocess.CompletedProcess[str]) -> None:
    at_rest = _section(cli_run.stdout, "=== At rest", None)
    size = int(re.search(r"get_object of /memories/preferences\.md's key: (\d+) bytes", at_rest).group(1))  # type: ignore[union-attr]
    shown = _dumped_bytes(at_rest)
    assert len(shown) == min(size, walkthrough.RAW_BYTES_SHOWN)
    assert size > len(walkthrough.PREFERENCES_TEXT.encode())  # header and tag on top of the plaintext
    assert shown.startswith(b"S3ME")
    for line in walkthrough.PREFERENCES_TEXT.splitlines():
        assert line.encode() not in shown
    assert "any line of the plaintext in the stored bytes: no" in at_rest
    # Beside it, the decrypted view of the same file shows the plaintext.
    view = at_rest[at_rest.index("The same file through S3MemoryTool") :]
    assert f"Here's the content of {walkthrough.PREFERENCES_PATH} with line numbers:" in view
    assert "     2\t- Concise answers." in view


def test_cli_demo_shows_the_private_keys_beside_the_paths_they_name(
    cli_run: subprocess.CompletedProcess[str],
) -> None:
    at_rest = _section(cli_run.stdout, "=== At rest", "get_object")
    stored = re.findall(r"^  s3://\S+?/(\S+)  \((\d+) bytes\)\n      = (.+)$", at_rest, flags=re.MULTILINE)
    named = {name: key for key, _size, name in stored}
    assert (
        named[walkthrough.PREFERENCES_PATH].startswith("users/")
        and named[walkthrough.PROGRESS_PATH].count("/") == 4
    )
    for key, _size, _name in stored:
        assert walkthrough.USER_ID not in key and "preferences" not in key and "progress" not in key
    assert "  the user id or a file or directory name in any key: no" in at_rest


def test_cli_demo_prints_no_secrets(cli_run: subprocess.CompletedProcess[str]) -> None:
    printed = cli_run.stdout + cli_run.stderr
    assert API_KEY not in printed
    assert "AWS_SECRET_ACCESS_KEY" not in printed and "testing" not in printed


def test_live_without_key_exits_2_with_a_clear_message() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "s3memory.cli.main", "demo", "--live"],
        cwd=ROOT,
        env=_env_without_api_key(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "--live" in result.stderr
    assert result.stdout == ""  # nothing was started


def test_live_with_blank_key_exits_2_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "   ")
    assert main(["demo", "--live", "--model", "claude-opus-4-1"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_cli_without_a_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err


def _loaded_after(module: str) -> list[str]:
    """The modules of s3memory and its heavy dependencies that importing ``module`` loads."""
    code = (
        f"import sys, {module}; "
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('s3memory', 'anthropic', 'boto3', 'moto', 'pytest'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split(",")


def test_importing_the_cli_is_light() -> None:
    """The demo package's requirement check, not the demo itself nor what it needs."""
    loaded = _loaded_after("s3memory.cli.main")
    assert "s3memory.demo" in loaded
    assert not [
        m
        for m in loaded
        if m.startswith(("s3memory.demo.", "s3memory.testing", "anthropic", "boto3", "moto", "pytest"))
    ]


def test_the_agent_lambda_imports_neither_the_cli_nor_the_demo() -> None:
    """Its default model is the settings' own: the Lambda's code does not reach the command."""
    loaded = _loaded_after("s3memory.aws_lambda.agent")
    assert "anthropic" in loaded and "s3memory.aws_lambda.agent.config" in loaded
    packages = ("s3memory.cli", "s3memory.demo", "s3memory.testing")
    assert not [m for m in loaded if m in packages or m.startswith(tuple(f"{p}." for p in packages))]
    assert "s3memory.clients" in loaded  # a module of its own, no part of s3memory.cli


def test_in_process_run_recalls_from_s3_in_an_empty_context() -> None:
    saved_env = {name: os.environ.get(name) for name in ("AWS_ACCESS_KEY_ID", "AWS_CONFIG_FILE", "NO_PROXY")}
    out = io.StringIO()
    report = walkthrough.run_demo(out)

    assert [os.environ.get(name) for name in saved_env] == list(saved_env.values())  # environment restored
    assert report.api is not None
    first, second, _team = report.conversations
    assert report.api_requests_per_conversation == [4, 3, 5]
    assert [call.input["command"] for call in first.tool_calls] == ["view", "create", "create", "insert"]
    assert not any(call.is_error for call in first.tool_calls + second.tool_calls)

    histories = report.api.histories
    second_histories = histories[4:7]
    # Conversation 2 began with nothing but its own user message...
    assert second_histories[0] == [{"role": "user", "content": walkthrough.SECOND_MESSAGE}]
    # ...and never saw conversation 1 except through what the memory tool returned.
    for history in second_histories:
        assert walkthrough.FIRST_MESSAGE not in repr(history)
    for line in STORED_LINES:
        assert line in second.final_text
        assert line in repr(second_histories[-1])  # it arrived in a tool_result

    # The stored object is ciphertext; the printed hex is the start of that very object.
    assert report.object_key.startswith("users/") and "preferences" not in report.object_key  # a private name
    assert (
        f"{report.object_key}  ({len(report.raw_object)} bytes)\n      = {walkthrough.PREFERENCES_PATH}"
        in out.getvalue()
    )
    assert report.raw_object.startswith(b"S3ME\x02")
    assert walkthrough.PREFERENCES_TEXT.encode() not in report.raw_object
    assert b"British English" not in report.raw_object
    assert _dumped_bytes(out.getvalue()) == report.raw_object[: walkthrough.RAW_BYTES_SHOWN]
    assert "British English spelling and style." in report.decrypted_view


def test_the_team_conversation_is_refused_a_write_into_the_read_only_mount(
    cli_run: subprocess.CompletedProcess[str],
) -> None:
    section = _section(cli_run.stdout, "=== Conversation 3", "Done in")
    assert "      [Read-only shared memory: /memories/team; writes there are refused.]\n" in section
    assert f"-> memory insert {team.RUNBOOK_PATH} (after line 3)\n" in section
    assert (
        f"      (error) Error: Cannot change {team.RUNBOOK_PATH}: /memories/team is a read-only shared memory. "
        "Nothing was changed.\n"
    ) in section
    assert f"File created successfully at: {team.PROPOSAL_PATH}" in section
    assert "The runbook in the shared memory team-acme, read back from S3: unchanged." in section


def test_in_process_the_read_only_mount_keeps_the_runbook_and_the_note_goes_to_the_users_memory() -> None:
    report = walkthrough.run_demo(io.StringIO())
    third = report.conversations[2]
    assert [(call.input["command"], call.input.get("path"), call.is_error) for call in third.tool_calls] == [
        ("view", "/memories", False),
        ("view", team.RUNBOOK_PATH, False),
        ("insert", team.RUNBOOK_PATH, True),
        ("create", team.PROPOSAL_PATH, False),
    ]
    assert third.tool_calls[1].result.endswith("     3\t- Every schema change gets a rollback script.")
    assert report.team_runbook == team.RUNBOOK_TEXT
    assert "my write was refused and it is unchanged" in third.final_text
    assert report.api is not None and report.api.histories[7] == [
        {"role": "user", "content": team.TEAM_MESSAGE}
    ]


def test_the_team_answers_follow_what_the_tool_answered() -> None:
    """Had the runbook taken the write, the scripted Claude would say so, and keep no proposal."""

    def answered(text: str, is_error: bool) -> list[dict[str, Any]]:
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": text, "is_error": is_error}
        return [{"role": "user", "content": [result]}]

    assert team._keep_a_proposal(answered(f"The file {team.RUNBOOK_PATH} has been edited.", False)) == (
        "Done: the runbook now says billing deploys need the billing-v2 feature flag."
    )
    kept = team._keep_a_proposal(answered("Error: Cannot change ...", True))
    assert isinstance(kept, Reply) and [call["path"] for call in kept.tool_calls] == [team.PROPOSAL_PATH]
    assert team._report(answered("Error: S3 PutObject failed", True)) == (
        "The team runbook is read-only for me, and I could not save your rule anywhere."
    )


def test_demo_answer_follows_what_was_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Change what conversation 1 stores, and conversation 2's recall changes with it."""
    monkeypatch.setattr(walkthrough, "PREFERENCES_TEXT", "# Preferences\n- Answers in haiku form.\n")
    report = walkthrough.run_demo(io.StringIO())
    answer = report.conversations[1].final_text
    assert "- Answers in haiku form." in answer
    assert "- Concise answers." not in answer


def test_recall_answer_is_built_from_tool_results_only() -> None:
    results = [
        ToolResult(
            "toolu_a",
            "Here's the content of /memories/x.md with line numbers:\n"
            "     1\t# Likes\n"
            "     2\t- Tea, not coffee.",
            False,
        ),
        ToolResult("toolu_b", "Error: The path /memories/y.md does not exist", True),
    ]
    answer = walkthrough.recall_answer(results)
    assert "Likes (/memories/x.md):\n- Tea, not coffee." in answer
    assert "y.md" not in answer and "Concise" not in answer
    assert "could not read" in walkthrough.recall_answer([results[1]])


def test_listed_files_reads_a_listing() -> None:
    listing = (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n4.0K\t/memories\n71B\t/memories/a.md\n4.0K\t/memories/dir\n9B\t/memories/dir/b.md"
    )
    assert walkthrough.listed_files(listing) == ["/memories/a.md", "/memories/dir/b.md"]
    assert walkthrough.listed_files(listing.replace("/memories/dir\n", "/memories/dir/\n")) == [
        "/memories/a.md",
        "/memories/dir/b.md",
    ]
    assert walkthrough.listed_files(listing.split("\n4.0K\t/memories\n")[0] + "\n4.0K\t/memories") == []


def test_describe_call_never_shows_file_text() -> None:
    line = walkthrough.describe_call(
        {"command": "create", "path": "/memories/s.md", "file_text": "secret words"}
    )
    assert line == "memory create /memories/s.md"
    assert walkthrough.describe_call(
        {"command": "rename", "old_path": "/memories/a", "new_path": "/memories/b"}
    ) == ("memory rename /memories/a -> /memories/b")


def test_live_path_uses_the_api_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--live`` builds its client from ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL): here a local stand-in."""
    with ScriptedClaude(
        [*walkthrough.conversation_1_script(), *walkthrough.conversation_2_script(), *team.team_script()]
    ) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-live-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        out = io.StringIO()
        report = walkthrough.run_demo(out, live=True, model="claude-test-model")

    printed = out.getvalue()
    assert report.api is None
    assert "the Anthropic API (--live), model claude-test-model" in printed
    assert "scripted stand-in" not in printed
    assert "sk-live-test-key" not in printed
    assert {body["model"] for body in api.requests} == {"claude-test-model"}
    assert set(api.api_keys) == {"sk-live-test-key"}
    assert api.remaining == 0
    assert "- Step 1 (schema): done." in report.conversations[1].final_text
