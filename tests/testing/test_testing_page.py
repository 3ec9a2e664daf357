"""``docs/testing.md`` runs as written: its first ``python`` block is an application's ``conftest.py``,
every other block one of its test modules, run by pytest in a process of its own, in a developer's
shell (``support.applications.DEVELOPERS_SHELL``: their keys, endpoint, API key and a proxy that
nothing may reach). The README's tool-runner example runs there too, under the page's fixtures, as
the sentence after it says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.applications import DEVELOPERS_SHELL, PLUGIN_CONFTEST, run_application_tests

pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
README = ROOT / "README.md"
README_SECTION = "## Use it with the tool runner"

README_TEST = """
from s3memory.testing import memory_call, reply

README_EXAMPLE = {example!r}


def test_the_readmes_example_offline(s3memory_bucket, scripted_claude, capsys):
    scripted_claude.play(
        memory_call("create", path="/memories/preferences.md", file_text="- metric units\\n"),
        reply("Noted: metric units."),
    )
    exec(compile(README_EXAMPLE, "README.md", "exec"), {{}})

    assert "Noted: metric units." in capsys.readouterr().out
    assert scripted_claude.remaining == 0
    stored = s3memory_bucket.tool("alice").call({{"command": "view", "path": "/memories/preferences.md"}})
    assert stored.endswith("     1\\t- metric units")
"""


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(README_SECTION) :]
    section = section[: section.index("\n## ", len(README_SECTION))]
    (example,) = python_blocks(section)
    assert "run it offline" in section.split("```")[2] and "`docs/testing.md`" in section.split("```")[2]
    return example


def defined_tests(source: str) -> list[str]:
    return [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    ]


def test_every_block_of_the_page_and_the_readmes_example_run_as_an_applications_tests(tmp_path: Path) -> None:
    conftest, *modules = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert conftest == "# conftest.py\n" + PLUGIN_CONFTEST
    files = {"conftest.py": conftest}
    files |= {f"test_page_block_{number}.py": block for number, block in enumerate(modules, 1)}
    files["test_readme_example.py"] = README_TEST.format(example=readme_example())
    expected = {f"{name}::{test}" for name, source in files.items() for test in defined_tests(source)}
    assert all(defined_tests(source) for name, source in files.items() if name != "conftest.py")

    output = run_application_tests(tmp_path, files, DEVELOPERS_SHELL)

    passed = [line.split()[1] for line in output.splitlines() if line.startswith("PASSED ")]
    assert {test.split("[")[0] for test in passed} == expected
    summary = output.strip().splitlines()[-1]  # nothing skipped, failed or warned
    assert re.fullmatch(rf"{len(passed)} passed in [\d.]+s.*", summary), summary
