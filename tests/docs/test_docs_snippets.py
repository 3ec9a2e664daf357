"""Every ```python block of the pages in ``PAGES`` runs as it is written, alone: in a fresh
interpreter whose ``s3memory`` is this checkout's, with dummy AWS credentials, no ``S3MEMORY_``
setting and an empty working directory, so a block that leans on a name it does not define, or on a
real account, fails. A ```text block that is the next fenced block after a ```python block is what
that block prints, exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.markdown import fenced_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/shared.md",)
"""The pages whose Python blocks run here (a page joins by its path)."""
RUN_TIMEOUT_SECONDS = 120
DUMMY_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def snippets(page: str) -> list[tuple[str, str | None]]:
    """Each Python block of ``page``, with what it prints where the page says so (else None)."""
    blocks = fenced_blocks((ROOT / page).read_text(encoding="utf-8"))
    found: list[tuple[str, str | None]] = []
    for index, (kind, code) in enumerate(blocks):
        if kind == "python":
            after, text = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
            found.append((code, text if after == "text" else None))
    return found


def test_every_page_has_a_python_block() -> None:
    assert [page for page in PAGES if not snippets(page)] == []


@pytest.mark.parametrize(
    ("page", "number"),
    [pytest.param(page, n, id=f"{page}#{n + 1}") for page in PAGES for n in range(len(snippets(page)))],
)
def test_the_block_runs_as_written(page: str, number: int, tmp_path: Path) -> None:
    code, prints = snippets(page)[number]
    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(ROOT),
            **DUMMY_AWS,
        },
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    if prints is not None:
        assert ran.stdout == prints
