"""The Terraform example the docs deploy (``terraform/examples/complete``): its variables, what its
``example.tfvars`` sets, and the recipe the pages deploy it with."""

from __future__ import annotations

import re
from pathlib import Path

from .markdown import blocks_of, section, shell_commands

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "terraform" / "examples" / "complete"
EXAMPLE_SETTINGS = EXAMPLE / "example.tfvars"
RECIPES = {
    "README.md": "Serve it from AWS Lambda",
    "docs/deploy.md": "Deploy in a few commands",
    "terraform/README.md": "Deploy",
}
"""Each page that gives the recipe, and the title of its section that does."""


def block_running(page: str, title: str, program: list[str]) -> str:
    """The one shell block of ``page``'s section ``title`` that runs ``program``."""
    text = section((ROOT / page).read_text(encoding="utf-8"), title)
    found = [
        block
        for block in blocks_of(text, "sh")
        if any(words[: len(program)] == program for words in shell_commands(block))
    ]
    assert len(found) == 1, (page, title, found)
    return found[0]


def recipe() -> list[list[str]]:
    """The recipe's commands, as the README gives them."""
    return shell_commands(block_running("README.md", RECIPES["README.md"], ["terraform", "apply"]))


def variables() -> dict[str, bool]:
    """The example's variables, each with whether it has a default."""
    text = (EXAMPLE / "variables.tf").read_text(encoding="utf-8")
    found: dict[str, bool] = {}
    for name, body in re.findall(r'^variable "([a-z_]+)" \{\n(.*?)^\}', text, re.MULTILINE | re.DOTALL):
        found[name] = re.search(r"^\s+default\s*=", body, re.MULTILINE) is not None
    return found


def example_settings() -> dict[str, str]:
    """What ``example.tfvars`` sets on a line of its own (not commented out): each name with its value
    as written, a string without its quotes."""
    text = EXAMPLE_SETTINGS.read_text(encoding="utf-8")
    return {
        name: value.strip().removeprefix('"').removesuffix('"')
        for name, value in re.findall(r"^([a-z_]+)\s*=\s*(\"[^\"]*\"|[^#\n]*)", text, re.MULTILINE)
    }
