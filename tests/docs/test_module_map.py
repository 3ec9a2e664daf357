"""The module maps: `docs/layout.md`'s table and ``docs/core.md``'s map name every module of the package,
and name none that is gone. A subpackage named with a trailing ``/`` (``crypto/``) covers its
modules, which a row may then name by their file name alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "s3memory"
MAPS = {
    "docs/layout.md": "| module | what lives there |",
    "docs/core.md": "## Module map",
}
"""Each map: its file, and the line its section starts at (the section ends at the next heading)."""


def modules() -> list[str]:
    """Every module of the package, by its path relative to ``s3memory/``."""
    return sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))


def section(document: str, start: str) -> str:
    text = (ROOT / document).read_text(encoding="utf-8")
    assert start in text, f"{document} has no section starting {start!r}"
    after = text[text.index(start) :]
    end = re.search(r"\n#{1,3} ", after[len(start) :])
    return after if end is None else after[: len(start) + end.start()]


def named(text: str) -> set[str]:
    """What the map names: each ``code`` span that is a module path or a subpackage."""
    return {name for name in re.findall(r"`([A-Za-z0-9_/.]+)`", text) if name.endswith((".py", "/"))}


def covered(module: str, names: set[str]) -> bool:
    """Named, or inside a named subpackage; a subpackage's ``__init__.py`` also by a module of it."""
    parts = module.split("/")
    if len(parts) > 1 and parts[-1] == "__init__.py":
        folder = "/".join(parts[:-1]) + "/"
        return any(name.startswith(folder) for name in names) or covered(folder.rstrip("/"), names)
    return module in names or any("/".join(parts[:depth]) + "/" in names for depth in range(1, len(parts)))


@pytest.mark.parametrize("document", sorted(MAPS))
def test_the_map_names_every_module(document: str) -> None:
    names = named(section(document, MAPS[document]))
    assert [module for module in modules() if not covered(module, names)] == []


@pytest.mark.parametrize("document", sorted(MAPS))
def test_the_map_names_no_module_that_is_gone(document: str) -> None:
    names = named(section(document, MAPS[document]))
    known = set(modules())
    gone = [
        name
        for name in names
        if not (PACKAGE / name).exists()
        and not (ROOT / name).exists()  # a tool beside the package (tools/build_lambda_zip.py)
        and not any(module.endswith("/" + name) for module in known)  # a subpackage's module by its name
    ]
    assert gone == []


def test_a_module_left_out_of_a_map_is_found() -> None:
    names = {"crypto/", "memory.py"}
    assert covered("crypto/_objects.py", names)
    assert covered("memory.py", names)
    assert not covered("files.py", names)
    assert covered("core/__init__.py", {"core/files.py"})
    assert not covered("ops/__init__.py", {"core/files.py"})
