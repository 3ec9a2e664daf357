"""The tables of ``conftest.py`` that split the suite (``SLOW_SUITES``, ``FORMAT_SUITES``) name tests
that exist, and every module that makes memories in ``STORAGE_FORMAT`` is run again on format 1."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import FORMAT_SUITES, SLOW_SUITES

TESTS = Path(__file__).resolve().parent

FORMAT_NAMES = frozenset({"STORAGE_FORMAT", "memory_tool"})
"""What a module imports from ``conftest`` to make its memories in the tests' storage format."""


def functions(module: str) -> set[str]:
    """The names of the top-level functions of ``tests/<module>.py``."""
    tree = ast.parse((TESTS / f"{module}.py").read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_slow_entry_names_a_module_or_test_that_exists() -> None:
    missing = []
    for entry in SLOW_SUITES:
        module, _, test = entry.partition("::")
        if not (TESTS / f"{module}.py").is_file() or (test and test not in functions(module)):
            missing.append(entry)
    assert missing == []


def test_every_format_suite_exists() -> None:
    assert sorted(name for name in FORMAT_SUITES if not (TESTS / f"{name}.py").is_file()) == []


def test_every_module_that_takes_the_format_from_conftest_is_a_format_suite() -> None:
    takers = set()
    for path in TESTS.glob("test_*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.ImportFrom) and node.module == "conftest" and node.level == 1):
                continue
            if FORMAT_NAMES & {alias.name for alias in node.names}:
                takers.add(path.stem)
    assert sorted(takers - FORMAT_SUITES) == []
