"""How the suite is split is written at the tests: a module or a test says it is ``slow`` (and of which
kind) and that it ``takes_format`` with its own marks, and ``conftest.py`` keeps no table of test
modules. ``make test`` runs ``-m "not slow"``; ``make test-format1`` runs ``-m takes_format`` on format 1."""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MODULES = sorted(TESTS.glob("*/test_*.py"))

FORMAT_NAMES = frozenset({"STORAGE_FORMAT", "memory_tool"})
"""What a module imports from ``tests.conftest`` to make its memories in the tests' storage format."""

UNMARKED_KINDS = frozenset({"slow", "takes_format"})
KINDS = (
    frozenset(
        line.partition(":")[0]
        for line in tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
            "pytest"
        ]["ini_options"]["markers"]
    )
    - UNMARKED_KINDS
)
"""The kinds of slow test (``pyproject.toml``'s markers beside ``slow`` and ``takes_format``)."""

SLOW_TOOLS = {"terraform": "terraform", "checkov": "terraform", "npx": "mcp"}
"""A program a test looks up with ``shutil.which`` that only a slow test of this kind may run."""

SLOW_SERVERS = {
    "seaweedfs": ("seaweedfs", "SEAWEEDFS_SLOW"),
    "s3rver": ("server_matrix",),
    "localstack": ("server_matrix",),
}
"""A server fixture of ``conftest.py`` only a slow test may start, with the marks (or the name of a
``pytest.param`` of ``tests.support``) that say so."""


def marks(node: ast.expr) -> set[str]:
    """The names of the ``pytest.mark.NAME`` (called or not) in ``node``: one mark or a list of them."""
    found = set()
    for part in ast.walk(node):
        if (
            isinstance(part, ast.Attribute)
            and isinstance(part.value, ast.Attribute)
            and part.value.attr == "mark"
        ):
            found.add(part.attr)
    return found


def module_marks(tree: ast.Module) -> set[str]:
    """The marks of a module's ``pytestmark``."""
    return set().union(
        *(
            marks(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
        )
    )


def mark_groups(tree: ast.Module) -> Iterator[set[str]]:
    """Each set of marks given together: the module's ``pytestmark``, a named list of marks, a test's
    decorators, a ``pytest.param``'s ``marks``."""
    yield module_marks(tree)
    for node in tree.body:  # a list of marks given a name, e.g. for ``pytest.param``'s ``marks``
        value = node.value if isinstance(node, ast.Assign) else None
        if isinstance(value, ast.List) and value.elts and all(marks(element) for element in value.elts):
            yield marks(value)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield set().union(*(marks(decorator) for decorator in node.decorator_list))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "param":
            yield set().union(*(marks(keyword.value) for keyword in node.keywords if keyword.arg == "marks"))


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module at ``path``, parsed once a session (each rule below reads every test module)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def test_the_test_modules_are_found() -> None:
    assert len(MODULES) > 90, MODULES
    assert {"terraform", "server_matrix", "mcp"} <= KINDS


def test_conftest_names_no_test_module() -> None:
    names = {path.stem for path in MODULES}
    strings = {
        node.value.partition("::")[0]
        for node in ast.walk(parsed(TESTS / "conftest.py"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert sorted(strings & names) == []


def test_every_kind_of_slow_test_is_marked_slow_with_it() -> None:
    unmarked = [
        f"{path.relative_to(TESTS)}: {sorted(group)}"
        for path in [*MODULES, *sorted(TESTS.glob("support/*.py"))]
        for group in mark_groups(parsed(path))
        if group & KINDS and "slow" not in group
    ]
    assert unmarked == []


def test_every_module_that_takes_the_format_from_conftest_is_marked_takes_format() -> None:
    takers = []
    for path in MODULES:
        tree = parsed(path)
        imported = {
            alias.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module == "tests.conftest"
            for alias in node.names
        }
        if imported & FORMAT_NAMES and "takes_format" not in module_marks(tree):
            takers.append(str(path.relative_to(TESTS)))
    assert takers == []


def test_every_module_that_runs_a_slow_tool_is_marked_with_its_kind() -> None:
    unmarked = []
    for path in MODULES:
        tree = parsed(path)
        given = set().union(*mark_groups(tree))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "which" and node.args):
                continue
            tool = getattr(node.args[0], "value", None)
            if tool in SLOW_TOOLS and not {"slow", SLOW_TOOLS[tool]} <= given:
                unmarked.append(f"{path.relative_to(TESTS)}: {tool}")
    assert unmarked == []


def test_every_module_that_starts_a_slow_server_is_marked_with_its_kind() -> None:
    unmarked = []
    for path in MODULES:
        tree = parsed(path)
        said = set().union(*mark_groups(tree)) | {
            node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
        }
        requested = {
            arg.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for arg in node.args.args
        }
        requested |= {
            node.args[0].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "getfixturevalue"
            if node.args and isinstance(node.args[0], ast.Constant)
        }
        for server in sorted(requested & SLOW_SERVERS.keys()):
            if not said & set(SLOW_SERVERS[server]):
                unmarked.append(f"{path.relative_to(TESTS)}: {server}")
    assert unmarked == []
