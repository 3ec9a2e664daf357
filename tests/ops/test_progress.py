"""Long operator commands report progress: the library tells a ``Progress`` what it does, and the
command line draws it with tqdm on a terminal only (moto)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from s3memory.cli.console import Console
from s3memory.cli.main import _parser
from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY

FILES = {"/memories/a.md": "a\n", "/memories/d/b.md": "b\n", "/memories/d/c.md": "c\n"}


class Recorded:
    """A ``Progress`` that remembers what it was told."""

    def __init__(self) -> None:
        self.totals: list[int] = []
        self.done = 0

    def expect(self, total: int) -> None:
        self.totals.append(total)

    def advance(self, count: int = 1) -> None:
        self.done += count


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def operations(s3: Any) -> Operations:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY))
    memory = operations.memory("alice")
    for path, text in FILES.items():
        memory.run({"command": "create", "path": path, "file_text": text})
    return operations


def test_the_library_reports_each_part_it_does(operations: Operations, tmp_path: Path) -> None:
    exported = Recorded()
    operations.export("alice", tmp_path, progress=exported)
    assert (exported.totals, exported.done) == ([3], 3)
    imported = Recorded()
    operations.import_folder("bob", tmp_path, progress=imported)
    assert (imported.totals, imported.done) == ([], 3)
    verified = Recorded()
    report = operations.verify("alice", progress=verified)
    assert verified.done == report.checked == 4  # the files and the access record
    erased = Recorded()
    erasure = operations.erase("bob", progress=erased)
    assert erased.done == erasure.key_versions + erasure.other_versions == 4


def run(operations: Operations, err: io.StringIO, *argv: str) -> int:
    arguments = _parser().parse_args(list(argv))
    return Console(arguments, environ={}, out=io.StringIO(), err=err, operations=operations).run()


def test_a_bar_is_drawn_on_a_terminal_only(operations: Operations, tmp_path: Path) -> None:
    terminal = Terminal()
    assert run(operations, terminal, "export", "--user", "alice", str(tmp_path / "one")) == 0
    assert "export:   0%|          | 0/3 [" in terminal.getvalue()  # the bar, with its total
    piped = io.StringIO()
    assert run(operations, piped, "export", "--user", "alice", str(tmp_path / "two")) == 0
    assert piped.getvalue().count("\n") == 1 and piped.getvalue().startswith('{"command": "export"')
    quiet = Terminal()
    assert run(operations, quiet, "verify", "--user", "alice", "--json") == 0
    assert "verify:" not in quiet.getvalue()
