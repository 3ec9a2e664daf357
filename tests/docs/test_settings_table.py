"""``docs/settings.md`` names every ``S3MEMORY_*`` variable the package reads, and no other."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = re.compile(r'"(S3MEMORY_[A-Z0-9_]*[A-Z0-9])"')
"""A whole variable name as the package writes it, in a string of its own."""


def read_by_the_package() -> set[str]:
    return {name for path in (ROOT / "s3memory").rglob("*.py") for name in VARIABLE.findall(path.read_text())}


def in_the_table() -> set[str]:
    rows = [
        line for line in (ROOT / "docs" / "settings.md").read_text().splitlines() if line.startswith("| `")
    ]
    return {name for row in rows for name in re.findall(r"`(S3MEMORY_[A-Z0-9_]+)`", row.split(" | ")[0])}


def test_the_settings_table_names_every_variable_the_package_reads() -> None:
    found = read_by_the_package()
    assert {"S3MEMORY_BUCKET", "S3MEMORY_LOCAL_KEY", "S3MEMORY_MODEL", "S3MEMORY_EXPIRE_IDLE_DAYS"} <= found
    assert in_the_table() == found
