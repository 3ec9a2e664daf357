"""``docs/index.md`` lists every page of ``docs/`` once, and every page it lists exists; the README
links only to files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_index_lists_every_page_once() -> None:
    listed = re.findall(r"^\| `([a-z0-9-]+\.md)` \|", (DOCS / "index.md").read_text(), re.MULTILINE)
    assert len(listed) == len(set(listed))
    assert set(listed) == {page.name for page in DOCS.glob("*.md")} - {"index.md"}


def test_every_file_the_readme_names_exists() -> None:
    named = set(re.findall(r"`((?:docs|terraform)/[A-Za-z0-9_./-]+\.md)`", (ROOT / "README.md").read_text()))
    assert "docs/index.md" in named
    assert [name for name in sorted(named) if not (ROOT / name).exists()] == []
