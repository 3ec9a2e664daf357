"""The confusable skeleton of Unicode TR39 (``s3memory/core/confusables.py``): its table is the one
``tools/confusables_table.py`` derives from Unicode's confusables.txt, and it finds the names that
look alike (docs/shared.md, M14)."""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

from s3memory.core.confusables import DEFAULT_IGNORABLE, lookalike_key, skeleton

REPO_ROOT = Path(__file__).resolve().parents[2]


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "confusables_table", REPO_ROOT / "tools" / "confusables_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_derived_from_unicodes_file() -> None:
    tool = load_tool()
    source = tool.SOURCE.read_text(encoding="utf-8")
    assert tool.TABLE.read_text(encoding="utf-8") == tool.table(source)
    assert "# Version: 18.0.0" in source.split("\n")[:10]
    assert len(tool.prototypes(source)) == 6712  # "# total: 6712", the file's own count
    assert source.rstrip().endswith("# total: 6712")


def test_the_table_is_the_size_docs_shared_states() -> None:
    shared = (REPO_ROOT / "docs" / "shared.md").read_text(encoding="utf-8")
    stated = re.search(r"`s3memory/core/confusables\.tsv`\s+\((\d+) kB", shared)
    assert stated is not None
    size = (REPO_ROOT / "s3memory" / "core" / "confusables.tsv").stat().st_size / 1000
    assert abs(size - int(stated[1])) <= 0.1 * int(stated[1]), size


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (
            "paypal",
            "\U0001d52d\U0001d4b6\u1eff\U0001d561\U0001d552\u2113",
        ),  # mathematical letters, a y with loop
        ("team", "t\u0435am"),  # a Cyrillic e
        ("scope", "\u0455\u0441\u043e\u0440\u0435"),  # every letter Cyrillic
        ("rn", "m"),
        ("l", "1"),
        ("O", "0"),
    ],
)
def test_strings_that_look_alike_share_a_skeleton(one: str, other: str) -> None:
    assert skeleton(one) == skeleton(other)


@pytest.mark.parametrize(
    ("one", "other"), [("team", "Team"), ("team", "teams"), ("team", "te am"), ("a", "b")]
)
def test_strings_that_do_not_look_alike_do_not(one: str, other: str) -> None:
    assert lookalike_key(one) != lookalike_key(other)


def test_the_key_folds_compatibility_forms_and_space_at_either_end() -> None:
    assert {
        lookalike_key(name)
        for name in (
            "team",
            "\uff54\uff45\uff41\uff4d",
            "te\uff41m",
            "team\u00a0",
            " team",
            "team\u2003",
            "te\u200bam",
        )
    } == {lookalike_key("team")}


def test_default_ignorable_code_points_are_dropped() -> None:
    for low, high in DEFAULT_IGNORABLE:
        for code in {low, high}:
            assert skeleton(f"a{chr(code)}b") == skeleton("ab"), hex(code)


def test_the_ignorables_hold_every_format_character_that_is_invisible() -> None:
    """Unicode's Default_Ignorable_Code_Point holds every Cf but those that show (the prepended
    concatenation marks, which are drawn, and the interlinear annotation characters): a cross-check
    of the ranges against Python's own tables."""
    shown = {*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD}
    shown |= {*range(0xFFF9, 0xFFFC), *range(0x13430, 0x13440)}
    ignorable = {code for low, high in DEFAULT_IGNORABLE for code in range(low, high + 1)}
    format_characters = {
        code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cf"
    }
    assert format_characters - shown <= ignorable
