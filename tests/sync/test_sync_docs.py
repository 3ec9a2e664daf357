"""``docs/sync.md`` is true: every test its invariant table names exists, its table of options is the
command's, and every block runs or is named with why not. The ```console block and the shell
blocks that need no service manager run as written in ``bash``, in a home of their own, against
``s3memory local-s3`` in a process of its own (stopped with the test run, however it ends): the
console block prints what the page shows, the sandbox snippet brings the memory into its folder and
what the session wrote out."""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from s3memory.cli import main as cli
from s3memory.cli.operator_commands import COMMANDS, GLOBAL_OPTIONS
from tests.support.local_s3 import CHECKOUT, LocalS3, in_another_shell
from tests.support.markdown import fenced_blocks, section

PAGE = CHECKOUT / "docs" / "sync.md"
TEXT = PAGE.read_text(encoding="utf-8")
TESTS = CHECKOUT / "tests" / "sync"
USER = "alice"
CLAUDE_CODE_FOLDER = "~/.claude/projects/-home-alice-src-app/memory"
LAPTOP_FILES = {"MEMORY.md": "# Memory\n- [debugging](debugging.md)\n", "debugging.md": "flaky: rerun\n"}
"""What the console block's folder holds before its first round: the files it pushes."""
AGENT_NOTE = "the session's note\n"
AGENT = f"""#!/bin/sh
# my-agent, as the page's sandbox snippet runs it: --memory-dir DIR, a session that writes a note there.
[ "$1" = --memory-dir ] || exit 64
printf '%s' {shlex.quote(AGENT_NOTE)} > "$2/session.md"
"""
NOT_RUN = {
    "mkdir -p ~/.config/systemd/user": "a systemd user manager: tests/deploy/test_sync_service.py "
    "verifies the unit and runs its command line",
    "launchctl bootstrap": "macOS's launchd: tests/deploy/test_sync_service.py runs the plist's command line",
}
"""The shell blocks not run here, by the start of their first line, with why."""


def blocks() -> list[tuple[str, str]]:
    return fenced_blocks(TEXT)


def shell_blocks() -> list[str]:
    return [code for kind, code in blocks() if kind == "sh"]


def console_blocks() -> list[str]:
    return [code for kind, code in blocks() if kind == "console"]


def claude_code_block() -> str:
    (block,) = [code for code in shell_blocks() if code.startswith(f"s3memory sync --user {USER} ~/.claude")]
    return block


def sandbox_block() -> str:
    (block,) = [code for code in shell_blocks() if "my-agent" in code]
    return block


def named_tests() -> Iterator[tuple[str, str, str]]:
    """Each test the invariant table names: its invariant, its file (``tests/sync/`` relative) and name."""
    rows = [line for line in section(TEXT, "Invariants").splitlines() if re.match(r"\| S\d+ \|", line)]
    for row in rows:
        cells = row.strip("| ").split(" | ")
        number, tests = cells[0], cells[-1]
        for file, name in re.findall(r"`([\w./]+\.py)::(test_\w+)`", tests):
            yield number, file, name


def defined_tests(path: Path) -> set[str]:
    """The names of the test functions defined at the top of the module at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_test_the_invariant_table_names_exists() -> None:
    named = list(named_tests())
    numbers = sorted({int(number[1:]) for number, _, _ in named})
    assert numbers == list(range(1, len(numbers) + 1)), "each invariant names at least one test"
    missing = [
        f"{number}: {file}::{name}"
        for number, file, name in named
        if not (TESTS / file).is_file() or name not in defined_tests(TESTS / file)
    ]
    assert missing == []


def sync_parser() -> argparse.ArgumentParser:
    """The parser of ``s3memory sync``."""
    (commands,) = [
        action for action in cli._parser()._actions if isinstance(action, argparse._SubParsersAction)
    ]
    parser: argparse.ArgumentParser = commands.choices["sync"]
    return parser


def test_the_options_table_is_the_commands() -> None:
    table = section(TEXT, "Options and exit status").split("| status |")[0]
    shown = set(re.findall(r"^\| `(--[a-z-]+)", table, re.MULTILINE))
    global_options = {name for option in GLOBAL_OPTIONS for name in option.names}
    own = {
        name
        for action in sync_parser()._actions
        for name in action.option_strings
        if name.startswith("--") and name not in global_options and name != "--help"
    }
    assert own <= shown
    assert shown - own <= global_options
    assert "| `DIR` |" in table


def test_every_block_runs_or_is_named_with_why_not() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert set(kinds) == {"console", "sh", "json"}, kinds
    not_run = [block for block in shell_blocks() if block not in (claude_code_block(), sandbox_block())]
    assert sorted(next(start for start in NOT_RUN if block.startswith(start)) for block in not_run) == sorted(
        NOT_RUN
    )
    ((_, setting),) = [(kind, code) for kind, code in blocks() if kind == "json"]
    assert list(json.loads(setting)) == ["autoMemoryDirectory"]


def commands_and_outputs(block: str) -> list[tuple[str, str]]:
    """Each ``$ command`` of a console block and what the page shows it prints."""
    found: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            found.append((line[2:].strip(), ""))
        else:
            command, printed = found[-1]
            found[-1] = (command, printed + line)
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[LocalS3]:
    with LocalS3() as started:
        yield started


def a_home(tmp_path: Path, server: LocalS3, prefix: str) -> dict[str, str]:
    """A home with ``s3memory`` (this checkout's) on its ``PATH``, and the environment of a shell that
    loaded local-s3's settings, for a store of its own (``prefix``)."""
    home = tmp_path / "home"
    bin_directory = home / "bin"
    bin_directory.mkdir(parents=True)
    program = bin_directory / "s3memory"
    program.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m s3memory.cli.main "$@"\n')
    program.chmod(0o755)
    return {
        "HOME": str(home),
        "PATH": f"{bin_directory}:/usr/bin:/bin",
        "PYTHONPATH": str(CHECKOUT),
        **server.settings(),
        "S3MEMORY_PREFIX": prefix,
    }


def bash(script: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=environment["HOME"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def memory_file(server: LocalS3, environment: dict[str, str], path: str) -> str:
    """``path`` of the memory, read by ``s3memory cat`` in another shell."""
    settings = {**server.settings(), "S3MEMORY_PREFIX": environment["S3MEMORY_PREFIX"]}
    read = in_another_shell(settings, "cat", "--user", USER, path)
    assert read.returncode == 0, read.stderr
    return read.stdout


@pytest.mark.slow
@pytest.mark.processes
def test_the_console_blocks_print_what_the_page_shows(server: LocalS3, tmp_path: Path) -> None:
    environment = a_home(tmp_path, server, "console/")
    folder = Path(CLAUDE_CODE_FOLDER.replace("~", environment["HOME"]))
    folder.mkdir(parents=True)
    for name, text in LAPTOP_FILES.items():
        (folder / name).write_text(text)
    for block in console_blocks():
        for command, printed in commands_and_outputs(block):
            ran = bash(command, environment)
            assert (ran.returncode, ran.stdout) == (0, printed), ran.stderr
    again = bash(claude_code_block(), environment)  # the Claude Code section's: the same round again
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1].endswith(", 0 withheld, 2 unchanged")
    assert memory_file(server, environment, "/memories/MEMORY.md") == LAPTOP_FILES["MEMORY.md"]


@pytest.mark.slow
@pytest.mark.processes
def test_the_sandbox_snippet_brings_the_memory_in_and_the_session_out(
    server: LocalS3, tmp_path: Path
) -> None:
    environment = a_home(tmp_path, server, "sandbox/")
    agent = Path(environment["HOME"]) / "bin" / "my-agent"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    before = tmp_path / "before"
    before.mkdir()
    (before / "MEMORY.md").write_text("- what an earlier session kept\n")
    imported = bash(f"s3memory sync --user {USER} {shlex.quote(str(before))} --once", environment)
    assert imported.returncode == 0, imported.stderr

    ran = bash(sandbox_block(), environment)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[:2] == ["took this folder for the memory (its first round)", "pulled /memories/MEMORY.md"]
    assert lines[-2:] == [
        "pushed /memories/session.md",
        "1 pushed, 0 pulled, 0 deleted here, 0 deleted in the memory, 0 conflicts, 0 left alone, "
        "0 withheld, 1 unchanged",
    ]
    folder = Path(environment["HOME"]) / "agent" / "memory"
    assert sorted(os.listdir(folder)) == [".s3memory-sync", "MEMORY.md", "session.md"]
    assert memory_file(server, environment, "/memories/session.md") == AGENT_NOTE


def test_the_helps_claude_code_example_names_the_folder_as_the_page_does() -> None:
    (sync,) = [command for command in COMMANDS if command.name == "sync"]
    (example,) = [example for example in sync.examples if "/.claude/" in example]
    assert example == f"s3memory sync --user {USER} {CLAUDE_CODE_FOLDER} --once"
    assert example in TEXT
