"""``tools/mutation.py`` (``make mutation``): how it names a mutant's change, reads the reviewed survivor
lists and decides what needs a person. mutmut itself is not run here (``make mutation-sample`` does)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "mutation.py"
MODULE = "s3memory/core/text.py"
DIFF = """--- s3memory/core/text.py
+++ s3memory/core/text.py
@@ -5,7 +5,7 @@
     lines = split_lines(content)
-    if insert_line < 0 or insert_line > len(lines):
+    if insert_line < 0 and insert_line > len(lines):
         raise CommandError("")"""


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The tool, its survivor lists in ``tmp_path`` and its one module ``MODULE``."""
    spec = importlib.util.spec_from_file_location("mutation_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutation_tool", module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "SURVIVORS", tmp_path)
    monkeypatch.setattr(module, "modules", lambda: [MODULE])
    return module


def listing(tmp_path: Path, *entries: str) -> None:
    (tmp_path / "s3memory.core.text.toml").write_text("".join(entries), "utf-8")


ENTRY = """[[survivor]]
function = "insert_at"
removed = "if insert_line < 0 or insert_line > len(lines):"
added = "if insert_line < 0 and insert_line > len(lines):"
kind = "equivalent"
reason = "an example"
"""


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("s3memory.core.text.x_insert_at__mutmut_3", "insert_at"),
        ("s3memory.core.guard.xǁContentGuardǁscreen_edit__mutmut_12", "ContentGuard.screen_edit"),
        ("s3memory.core.text.x_x_mark__mutmut_1", "x_mark"),
    ],
)
def test_a_mutants_name_gives_its_function(tool: ModuleType, name: str, function: str) -> None:
    assert tool.function_of(name) == function


def test_a_change_is_its_function_and_its_stripped_removed_and_added_lines(tool: ModuleType) -> None:
    change = tool.change_of(MODULE, "insert_at", DIFF)
    assert change == tool.Change(
        MODULE,
        "insert_at",
        "if insert_line < 0 or insert_line > len(lines):",
        "if insert_line < 0 and insert_line > len(lines):",
    )


def test_a_listed_survivor_passes_and_an_unlisted_one_is_shown_with_its_diff(
    tool: ModuleType, tmp_path: Path
) -> None:
    survivor = tool.Mutant("s3memory.core.text.x_insert_at__mutmut_3", MODULE, "survived")
    killed = tool.Mutant("s3memory.core.text.x_insert_at__mutmut_1", MODULE, "killed")
    timeout = tool.Mutant("s3memory.core.text.x_insert_at__mutmut_2", MODULE, "timeout")

    table, clean = tool.report([survivor, killed, timeout], [MODULE], whole=True, diff=lambda mutant: DIFF)
    assert not clean
    assert "| `s3memory/core/text.py` | 3 | 2 | 0 | 1 | 66.7% |" in table
    assert f"{survivor.name}: survived\n{DIFF}" in table

    listing(tmp_path, ENTRY)
    table, clean = tool.report([survivor, killed, timeout], [MODULE], whole=True, diff=lambda mutant: DIFF)
    assert clean
    assert "| `s3memory/core/text.py` | 3 | 2 | 1 | 0 | 100.0% |" in table


@pytest.mark.parametrize("status", ["no tests", "not checked", "suspicious"])
def test_a_mutant_no_test_ran_is_never_passed_by_a_listing(
    tool: ModuleType, tmp_path: Path, status: str
) -> None:
    listing(tmp_path, ENTRY)
    mutant = tool.Mutant("s3memory.core.text.x_insert_at__mutmut_3", MODULE, status)
    table, clean = tool.report([mutant], [MODULE], whole=False, diff=lambda mutant: DIFF)
    assert not clean
    assert f"{mutant.name}: {status}" in table


def test_a_listed_survivor_that_no_longer_survives_fails_a_whole_run_only(
    tool: ModuleType, tmp_path: Path
) -> None:
    listing(tmp_path, ENTRY)
    killed = tool.Mutant("s3memory.core.text.x_insert_at__mutmut_3", MODULE, "killed")
    table, clean = tool.report([killed], [MODULE], whole=True, diff=lambda mutant: DIFF)
    assert not clean
    assert "lists a survivor that no longer survives (remove it): insert_at:" in table
    assert tool.report([killed], [MODULE], whole=False, diff=lambda mutant: DIFF)[1]


@pytest.mark.parametrize(
    "entry",
    [
        ENTRY.replace('kind = "equivalent"', 'kind = "harmless"'),
        ENTRY.replace('reason = "an example"', 'reason = "  "'),
        ENTRY.replace('function = "insert_at"\n', ""),
    ],
    ids=["unknown kind", "no reason", "no function"],
)
def test_a_malformed_entry_stops_the_run_naming_the_file_and_the_entry(
    tool: ModuleType, tmp_path: Path, entry: str
) -> None:
    listing(tmp_path, ENTRY, entry)
    with pytest.raises(SystemExit) as stopped:
        tool.listed(MODULE)
    assert str(stopped.value).startswith(
        "mutation/survivors/s3memory.core.text.toml: survivor 2 needs function, removed, added"
    )


def test_a_module_mutmut_does_not_mutate_is_refused_before_anything_is_touched(
    tool: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        tool.main(["--module", "s3memory/core/nope.py"])
    assert stopped.value.code == 2
    assert (
        "--module s3memory/core/nope.py is not one of [tool.mutmut]'s only_mutate: s3memory/core/text.py"
        in (capsys.readouterr().err)
    )


def test_a_listed_survivor_that_timed_out_is_killed_and_not_out_of_date(
    tool: ModuleType, tmp_path: Path
) -> None:
    """A `performance` mutant may make the tests slow enough for mutmut's limit on one machine and not on
    another: either way the whole run passes."""
    listing(tmp_path, ENTRY.replace('kind = "equivalent"', 'kind = "performance"'))
    slow = tool.Mutant("s3memory.core.text.x_insert_at__mutmut_3", MODULE, "timeout")
    table, clean = tool.report([slow], [MODULE], whole=True, diff=lambda mutant: DIFF)
    assert clean
    assert "| `s3memory/core/text.py` | 1 | 1 | 0 | 0 | 100.0% |" in table
