"""The operator commands as declared in ``operator_commands``: each is listed by ``s3memory --help``
with its help, and its ``--json`` output is its report's document, printed by the one renderer (moto)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from s3memory.cli import console
from s3memory.cli import main as cli
from s3memory.cli.commands import COMMANDS
from s3memory.cli.console import Report
from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket

from .support.bucket import BUCKET, MASTER_KEY, snapshot
from .support.console import audit, run


def test_every_declared_command_is_listed_with_its_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line a command
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    listing = capsys.readouterr().out
    names = [declared.name for declared in COMMANDS]
    assert re.findall(r"^    ([a-z]+) ", listing, re.MULTILINE) == ["demo", "mcp", *names]
    for declared in COMMANDS:
        assert re.search(rf"^ +{declared.name} +{re.escape(declared.help)}$", listing, re.MULTILINE), (
            declared.name
        )


def test_a_command_that_asks_first_takes_yes_and_the_others_do_not() -> None:
    parser = cli._parser()
    for declared in COMMANDS:
        arguments = parser.parse_args([declared.name, *REQUIRED[declared.name]])
        assert hasattr(arguments, "yes") == (declared.confirms is not None), declared.name
        assert arguments.operator_command is declared


REQUIRED = {
    "users": [],
    "shared": [],
    "ls": ["--user", "u"],
    "cat": ["--user", "u", "/memories/a.md"],
    "export": ["--user", "u", "out"],
    "import": ["--user", "u", "in"],
    "history": ["--user", "u", "/memories/a.md"],
    "restore": ["--user", "u", "--as-of", "2026-01-01"],
    "redact": ["--user", "u", "/memories/a.md", "--version", "v"],
    "erase": ["--user", "u"],
    "expire": ["--all", "--idle-days", "1"],
    "rotate": ["--all"],
    "verify": ["--all"],
    "migrate": [],
}
"""The arguments each command cannot do without."""


def test_every_command_prints_its_report_as_json(
    s3: Any, versioned: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=1)
    migrating = Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=2)
    memory = operations.memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    (tmp_path / "in" / "memories").mkdir(parents=True)
    (tmp_path / "in" / "memories" / "b.md").write_text("b\n")
    rendered: list[tuple[Report, str]] = []

    def spy(report: Report, as_json: bool) -> str:
        text = real_render(report, as_json)
        rendered.append((report, text))
        return text

    real_render = console.render
    monkeypatch.setattr(console, "render", spy)
    earlier: list[str] = []
    earlier_reports: list[str] = []
    argvs = {
        "users": [],
        "shared": [],
        "ls": ["--user", "alice"],
        "cat": ["--user", "alice", "/memories/a.md"],
        "export": ["--user", "alice", str(tmp_path / "out")],
        "import": ["--user", "bob", str(tmp_path / "in")],
        "history": ["--user", "alice", "/memories/a.md"],
        "redact": ["--user", "alice", "/memories/a.md", "--version", "EARLIER", "--yes"],
        "restore": ["--user", "alice", "--as-of", "2000-01-01T00:00:00Z", "--yes"],
        "expire": ["--all", "--idle-days", "1", "--dry-run"],
        "rotate": ["--all", "--dry-run"],
        "verify": ["--all"],
        "erase": ["--user", "bob", "--yes"],
        "migrate": ["--yes"],
    }
    assert sorted(argvs) == sorted(declared.name for declared in COMMANDS)
    for name, argv in argvs.items():
        argv = [earlier[0] if word == "EARLIER" else word for word in argv]
        status, out, err = run(migrating if name == "migrate" else operations, name, *argv, "--json")
        assert (status, len(rendered)) == (0, len(earlier_reports) + 1), (name, err)
        report, text = rendered[-1]
        earlier_reports.append(name)
        assert out == text and isinstance(json.loads(out), dict), name
        assert report.counts.items() <= audit(err).items(), name
        if name == "history":
            earlier.extend(version["version_id"] for version in json.loads(out)["versions"][1:])


def test_a_dry_run_is_never_asked_about_and_changes_nothing(s3: Any, tmp_path: Path) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "a.md").write_text("other\n")
    before = snapshot(s3)
    asked: list[str] = []

    def answer(question: str) -> bool:
        asked.append(question)
        return False

    dry_runs = {
        "import": ["--user", "alice", str(tmp_path), "--overwrite", "--dry-run"],
        "erase": ["--user", "alice", "--dry-run"],
        "expire": ["--all", "--idle-days", "1", "--dry-run"],
        "rotate": ["--all", "--dry-run"],
    }
    parser = cli._parser()
    assert sorted(dry_runs) == sorted(
        declared.name
        for declared in COMMANDS
        if declared.confirms is not None
        and hasattr(parser.parse_args([declared.name, *REQUIRED[declared.name]]), "dry_run")
    )
    for name, argv in dry_runs.items():
        assert run(operations, name, *argv, confirm=answer)[0] == 0, name
    assert asked == []
    assert snapshot(s3) == before
