"""One Terraform recipe: README.md, docs/deploy.md and terraform/README.md deploy the example
(``terraform/examples/complete``) with the same block, word for word. It builds the zip where the
example takes it from, applies a copy of ``example.tfvars`` that git ignores (a bucket name of one's
own is never committed, and the example stays as shipped) and that sets every variable without a
default; the pages that tear down destroy with the same file, and no page applies another. A check of
the text: no ``terraform`` binary needed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.markdown import shell_commands
from tests.support.terraform_example import (
    EXAMPLE,
    EXAMPLE_SETTINGS,
    RECIPES,
    ROOT,
    block_running,
    example_settings,
    recipe,
    variables,
)

TEAR_DOWNS = {"docs/deploy.md": "Tear down", "terraform/README.md": "Tear down"}
"""Each page that says how to destroy the example, and the title of its section that does."""
ZIP = ROOT / "dist" / "lambda.zip"
"""Where ``make lambda-zip`` writes the zip (``tools/build_lambda_zip.py``'s default)."""


def ignored_by_git(path: Path) -> bool:
    """Whether git ignores ``path`` in this checkout (by ``.gitignore``, whether or not it exists)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout with git on PATH: what git ignores cannot be asked")
    asked = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "-q", str(path.relative_to(ROOT))],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert asked.returncode in (0, 1), asked.stderr
    return asked.returncode == 0


def test_the_three_pages_deploy_with_one_recipe_word_for_word() -> None:
    blocks = {page: block_running(page, title, ["terraform", "apply"]) for page, title in RECIPES.items()}
    assert len(set(blocks.values())) == 1, blocks


def test_the_recipe_applies_a_copy_of_the_example_that_git_ignores() -> None:
    commands = recipe()
    assert [words[0] if words[0] != "terraform" else words[:2] for words in commands] == [
        "make",
        "cd",
        "cp",
        ["terraform", "init"],
        ["terraform", "apply"],
    ]
    make, (_, directory), (_, source, copy), init, apply = commands
    assert make == ["make", "lambda-zip"]
    assert ROOT / directory == EXAMPLE and EXAMPLE / source == EXAMPLE_SETTINGS
    assert (init, apply) == (["terraform", "init"], ["terraform", "apply", f"-var-file={copy}"])
    assert ignored_by_git(EXAMPLE / copy) and not ignored_by_git(EXAMPLE_SETTINGS)
    settings = example_settings()
    assert {name for name, has_default in variables().items() if not has_default} <= set(settings)
    assert set(settings) <= set(variables())
    assert (EXAMPLE / settings["lambda_zip_path"]).resolve() == ZIP


def test_the_pages_tear_down_what_the_recipe_applied() -> None:
    (_, directory), (*_, var_file) = recipe()[1], recipe()[-1]
    for page, title in TEAR_DOWNS.items():
        assert shell_commands(block_running(page, title, ["terraform", "destroy"])) == [
            ["cd", directory],
            ["terraform", "destroy", var_file],
        ], page


def test_no_page_applies_another_variables_file_or_sets_variables_one_by_one() -> None:
    var_file = recipe()[-1][-1]
    pages = [
        ROOT / "README.md",
        ROOT / "terraform" / "README.md",
        EXAMPLE_SETTINGS,
        *(ROOT / "docs").glob("*.md"),
    ]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert set(re.findall(r"(?<!-)-var-file=\S+", text)) <= {var_file}, page
        assert re.findall(r"terraform (?:plan|apply|destroy)\b[^\n]* -var ", text) == [], page
