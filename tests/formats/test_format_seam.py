"""The format seam (``s3memory/formats/strategy.py``): no module outside it compares a storage format's
number, and none outside ``s3memory/formats`` uses one as an index or picks one; the package has no
import cycle, and each layer imports only the layers below it. All read the source (the AST), so they
hold for code no test runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from s3memory.formats.strategy import FORMATS, FormatOne, FormatTwo, numbered

PACKAGE = Path(__file__).resolve().parents[2] / "s3memory"
SEAM = {"formats/strategy.py", "formats/choice.py"}
"""The strategies, and the one module that chooses which format a store is served in (``auto``)."""
FORMATS_PACKAGE = "formats/"
"""The storage formats' package: the only place a format number may index a table or be chosen."""
FORMAT_CONSTANTS = {"FORMAT_1", "FORMAT_2"}
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
        "if files.cipher.format == FORMAT_1: pass",
        "x = a if operations.storage_format != 1 else b",
        "ok = storage_format in (FORMAT_1, FORMAT_2)",
        "ok = 2 == self._format",
        "ok = memory.format is FORMAT_2",
    ]
    assert [format_comparisons(shape, "m.py") for shape in shapes] == [[1]] * len(shapes)
    assert format_comparisons("ok = format_version == FORMAT_2", "m.py") == [1]
    assert format_comparisons("ok = format_version == FORMAT_2", HEADER_PARSING[0]) == []
    assert format_comparisons("ok = files.format.places_files and count == 1", "m.py") == []


def _keyed_by_format(node: ast.expr) -> bool:
    name = _name(node)
    return name is not None and "format" in name.lower()


def _format_numbers(node: ast.expr | None) -> bool:
    """True if ``node`` is, or may be (a branch of a conditional, an item of a tuple), a format
    constant or a number."""
    if node is None:
        return False
    if isinstance(node, ast.IfExp):
        return _format_numbers(node.body) or _format_numbers(node.orelse)
    return any(_is_format_number(value) or _is_number(value) for value in _values(node))


def _picked_constant(node: ast.expr | None) -> bool:
    if isinstance(node, ast.IfExp):
        return _picked_constant(node.body) or _picked_constant(node.orelse)
    return node is not None and any(_is_format_number(value) for value in _values(node))


def _indexes_by_format(node: ast.Subscript) -> bool:
    index = node.slice
    return (
        _is_format_number(index)
        or _names_a_format(index)
        or (_is_number(index) and _keyed_by_format(node.value))
    )


def _picks_a_format(node: ast.Assign | ast.AnnAssign) -> bool:
    """A conditional between format numbers given to something named a format, or a table named for
    formats keyed by format numbers."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if isinstance(node.value, ast.IfExp):
        return _format_numbers(node.value) and any(_names_a_format(target) for target in targets)
    if isinstance(node.value, ast.Dict):
        keyed = any(_format_numbers(key) for key in node.value.keys)
        return keyed and any(_keyed_by_format(target) for target in targets)
    return False


def format_numbers_used(source: str) -> list[int]:
    """The lines of ``source`` that use a format number as an index (a format constant or something
    named a format in a subscript, a number indexing something named for formats; a table named for
    formats keyed by numbers) or choose one (a format constant returned; a number returned by a
    function named for a format; a conditional between format numbers given to something named a
    format)."""
    tree = ast.parse(source)
    lines = {
        node.lineno
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Return)
        and (
            _picked_constant(node.value)
            or ("format" in function.name.lower() and _format_numbers(node.value))
        )
    }
    lines.update(
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Subscript) and _indexes_by_format(node))
        or (isinstance(node, ast.Assign | ast.AnnAssign) and _picks_a_format(node))
    )
    return sorted(lines)


def test_no_module_outside_the_formats_uses_a_format_number_as_an_index_or_a_choice() -> None:
    found = {
        f"{module}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not (module := path.relative_to(PACKAGE).as_posix()).startswith(FORMATS_PACKAGE)
        for line in format_numbers_used(path.read_text())
    }
    assert found == set()


def test_the_scan_finds_each_shape_of_format_number_used() -> None:
    shapes = [
        "missing = enforced.missing(FORMAT_NEEDS[2])",
        "missing = enforced.missing(FORMAT_NEEDS[self._format])",
        "needs = NEEDS[FORMAT_2]",
        "def best_format(enforced):\n    return 2 if enforced.missing(needs) else 1",
        "def served(store):\n    return FORMAT_1",
        "def look(store):\n    return FORMAT_2, None, True",
        "self.format = FORMAT_1 if owner.store is None else FORMAT_2",
        "object_format: int = 2 if bound else 1",
        "FORMAT_NEEDS: Mapping[int, frozenset[str]] = {1: ONE, 2: TWO}",
    ]
    assert [format_numbers_used(shape) for shape in shapes] == [[1], [1], [1], [2], [2], [2], [1], [1], [1]]
    allowed = [
        "needs = strategy.server_needs",
        "def width(text):\n    return 2 if wide else 1",
        "first = parts[1]",
        "header = _HEADER.pack(MAGIC, self.format, version)",
        "count = 2 if self.format.places_files else 1",
        "WIDTHS = {1: 'narrow', 2: 'wide'}",
    ]
    assert [format_numbers_used(shape) for shape in allowed] == [[]] * len(allowed)


def test_each_served_format_has_its_strategy_and_no_other_number_has_one() -> None:
    assert [type(numbered(number)) for number in (1, 2)] == [FormatOne, FormatTwo]
    assert {number: strategy.storage_format for number, strategy in FORMATS.items()} == {1: 1, 2: 2}
    with pytest.raises(ValueError, match=r"^storage format 3 is not served by this version$"):
        numbered(3)


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(
    tree: ast.Module, module: str, is_package: bool, known: set[str], everywhere: bool = False
) -> set[str]:
    """The package's modules that ``module`` imports when it is loaded: its module-level imports,
    not those under ``if TYPE_CHECKING:`` or inside functions (``everywhere``: those too)."""
    found: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]

    def add(statement: ast.Import | ast.ImportFrom) -> None:
        if isinstance(statement, ast.Import):
            found.update(alias.name for alias in statement.names)
            return
        parent = base[: len(base) - statement.level + 1] if statement.level else []
        target = ".".join([*parent, *(statement.module or "").split(".")]).strip(".")
        if statement.module is not None:  # ``from . import x``: the package is loaded first
            found.add(target)
        found.update(f"{target}.{alias.name}" for alias in statement.names)

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
            elif isinstance(statement, ast.Import | ast.ImportFrom):
                add(statement)

    if everywhere:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                add(node)
    else:
        visit(tree.body)
    parents = {".".join(module.split(".")[:depth]) for depth in range(1, module.count(".") + 1)}
    return {name for name in found if name in known and name != module and name not in parents}


def import_graph(everywhere: bool = False) -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports at load time
    (``everywhere``: also for type checking and inside functions)."""
    paths = {_module_of(path): path for path in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {
        module: _imported(ast.parse(path.read_text()), module, path.name == "__init__.py", known, everywhere)
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


LAYERS = (
    ("s3memory._version", "s3memory.errors", "s3memory.clients"),
    ("s3memory.crypto",),
    ("s3memory.storage",),
    ("s3memory.core",),
    ("s3memory.formats",),
    ("s3memory.store", "s3memory.placed"),
    (
        "s3memory.memory",
        "s3memory.memories",
        "s3memory.settings",
        "s3memory.assembly",
        "s3memory.mounts",
        "s3memory.edge",
    ),
    ("s3memory.ops", "s3memory.sync"),
    (
        "s3memory",
        "s3memory.tool",
        "s3memory.cli",
        "s3memory.aws_lambda",
        "s3memory.mcp",
        "s3memory.demo",
        "s3memory.testing",
    ),
)
"""The package's layers, lowest first (``docs/core.md``, "Module map"): a module or a subpackage each."""


def layer_of(module: str) -> int:
    """The layer of a module: that of the entry it is, or of the subpackage it lies in (the root,
    ``s3memory``, holds only its ``__init__``)."""
    found = [
        (len(home), number)
        for number, homes in enumerate(LAYERS)
        for home in homes
        if module == home or ("." in home and module.startswith(home + "."))
    ]
    assert found, f"{module} is in no layer: add it to LAYERS and to docs/core.md's module map"
    return max(found)[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module from a higher layer than its own."""
    return sorted(
        f"{module} -> {imported}"
        for module, imports in graph.items()
        for imported in imports
        if layer_of(imported) > layer_of(module)
    )


def test_each_layer_imports_only_the_layers_below_it() -> None:
    """Every import counts: for type checking and inside functions (loaded late) too."""
    assert upward_imports(import_graph(everywhere=True)) == []


def test_the_package_has_no_import_cycle_even_for_type_checking() -> None:
    assert cycles(import_graph(everywhere=True)) == []


def test_the_layer_check_finds_an_upward_import_and_a_module_in_no_layer() -> None:
    assert layer_of("s3memory.storage.bucket") == 2 and layer_of("s3memory.store") == 5
    assert layer_of("s3memory") == 8 and layer_of("s3memory.core.files") == 3
    graph = {"s3memory.core.files": {"s3memory.formats.strategy", "s3memory.storage.bucket"}}
    assert upward_imports(graph) == ["s3memory.core.files -> s3memory.formats.strategy"]
    with pytest.raises(AssertionError, match=r"^s3memory\.elsewhere is in no layer"):
        layer_of("s3memory.elsewhere")


def test_the_cycle_check_sees_relative_imports_and_skips_type_checking() -> None:
    known = {"pkg.files", "pkg.formats", "pkg.crypto", "pkg.crypto._objects"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from .crypto import ObjectCipher\n"
        "if TYPE_CHECKING:\n"
        "    from .formats import Format\n"
        "def later():\n"
        "    from .formats import Format\n"
    )
    assert _imported(ast.parse(source), "pkg.files", False, known) == {"pkg.crypto"}
    assert _imported(ast.parse(source), "pkg.files", False, known, everywhere=True) == {
        "pkg.crypto",
        "pkg.formats",
    }
    inner = "from ..files import MemoryFiles\nfrom . import _objects\n"
    imported = _imported(ast.parse(inner), "pkg.crypto", True, known)
    assert imported == {"pkg.files", "pkg.crypto._objects"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
