"""The format seam (``s3memory/formats.py``): no module outside it compares a storage format's
number, and the package has no import cycle. Both read the source (the AST), so they hold for code
no test runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from s3memory.formats import FORMATS, FormatOne, FormatTwo, numbered

PACKAGE = Path(__file__).resolve().parents[1] / "s3memory"
SEAM = {"formats.py", "store_format.py"}
"""The strategies, and the one module that chooses which format a store is served in (``auto``)."""
FORMAT_CONSTANTS = {"FORMAT_1", "FORMAT_2", "FORMAT_VERSION", "PLACED_FORMAT"}
HEADER_PARSING = ("crypto/_objects.py", "format_version")
"""crypto checks the version byte it reads from an object's header (a local named
``format_version``): that byte is the object format on disk, not a decision of the seam."""


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _values(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]


def _is_format_number(node: ast.expr) -> bool:
    return _name(node) in FORMAT_CONSTANTS


def _is_number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _names_a_format(node: ast.expr) -> bool:
    name = _name(node)
    return name is not None and name.lower().endswith("format")


def format_comparisons(source: str, module: str) -> list[int]:
    """The lines of ``source`` (the module ``module``, relative to the package) that compare a
    format number: with a format constant, or a number with something named a format."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if (module, _name(node.left)) == HEADER_PARSING:
            continue
        values = [value for operand in operands for value in _values(operand)]
        constant = any(_is_format_number(value) for value in values)
        literal = any(_names_a_format(operand) for operand in operands) and any(_is_number(v) for v in values)
        if constant or literal:
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_seam_compares_a_format_number() -> None:
    found = {
        f"{module}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if (module := path.relative_to(PACKAGE).as_posix()) not in SEAM
        for line in format_comparisons(path.read_text(), module)
    }
    assert found == set()


def test_the_scan_finds_each_shape_of_format_comparison() -> None:
    shapes = [
        "if files.cipher.format == FORMAT_VERSION: pass",
        "x = a if operations.storage_format != 1 else b",
        "ok = storage_format in (FORMAT_1, FORMAT_2)",
        "ok = 2 == self._format",
        "ok = memory.format is PLACED_FORMAT",
    ]
    assert [format_comparisons(shape, "m.py") for shape in shapes] == [[1]] * len(shapes)
    assert format_comparisons("ok = format_version == FORMAT_2", "m.py") == [1]
    assert format_comparisons("ok = format_version == FORMAT_2", HEADER_PARSING[0]) == []
    assert format_comparisons("ok = files.format.places_files and count == 1", "m.py") == []


def test_each_served_format_has_its_strategy_and_no_other_number_has_one() -> None:
    assert [type(numbered(number)) for number in (1, 2)] == [FormatOne, FormatTwo]
    assert {number: strategy.storage_format for number, strategy in FORMATS.items()} == {1: 1, 2: 2}
    with pytest.raises(ValueError, match=r"^storage format 3 is not served by this version$"):
        numbered(3)


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.Module, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules that ``module`` imports when it is loaded: its module-level imports,
    not those under ``if TYPE_CHECKING:`` or inside functions."""
    found: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.If) and _name(statement.test) == "TYPE_CHECKING":
                visit(statement.orelse)
            elif isinstance(statement, ast.If | ast.Try):
                visit(statement.body)
                visit(statement.orelse)
                if isinstance(statement, ast.Try):
                    for handler in statement.handlers:
                        visit(handler.body)
                    visit(statement.finalbody)
            elif isinstance(statement, ast.Import):
                found.update(alias.name for alias in statement.names)
            elif isinstance(statement, ast.ImportFrom):
                parent = base[: len(base) - statement.level + 1] if statement.level else []
                target = ".".join([*parent, *(statement.module or "").split(".")]).strip(".")
                if statement.module is not None:  # ``from . import x``: the package is loaded first
                    found.add(target)
                found.update(f"{target}.{alias.name}" for alias in statement.names)

    visit(tree.body)
    return {name for name in found if name in known and name != module}


def import_graph() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports at load time."""
    paths = {_module_of(path): path for path in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {
        module: _imported(ast.parse(path.read_text()), module, path.name == "__init__.py", known)
        for module, path in paths.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one (found depth first, in name order)."""
    found: list[list[str]] = []
    done: set[str] = set()

    def walk(module: str, trail: list[str]) -> None:
        if module in trail:
            found.append([*trail[trail.index(module) :], module])
            return
        if module in done:
            return
        for imported in sorted(graph[module]):
            walk(imported, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        walk(module, [])
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_relative_imports_and_skips_type_checking() -> None:
    known = {"s3memory.files", "s3memory.formats", "s3memory.crypto", "s3memory.crypto._objects"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from .crypto import ObjectCipher\n"
        "if TYPE_CHECKING:\n"
        "    from .formats import Format\n"
        "def later():\n"
        "    from .formats import Format\n"
    )
    assert _imported(ast.parse(source), "s3memory.files", False, known) == {"s3memory.crypto"}
    inner = "from ..files import MemoryFiles\nfrom . import _objects\n"
    imported = _imported(ast.parse(inner), "s3memory.crypto", True, known)
    assert imported == {"s3memory.files", "s3memory.crypto._objects"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
