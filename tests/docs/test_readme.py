"""The README's commands and snippets run: the Python snippet against moto and a scripted Claude, the
"Operate it" blocks as written, in order, each in a fresh ``bash`` after the Quickstart (the first
serving ``s3memory local-s3``), the Lambda payload through the memory handler. Every other shell block
is named in ``NOT_RUN`` with why it cannot run here, and each of its lines names a make target, an
option, a variable or a file that exists."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

import s3memory
from s3memory.assembly import make_memory
from s3memory.aws_lambda import memory_handler, runtime
from s3memory.cli import main as cli
from s3memory.demo import LOCAL_S3_ENV_FILE
from s3memory.settings import Settings
from s3memory.testing.script import Reply
from s3memory.testing.scripted_claude import ScriptedClaude
from tests.support.bucket import LOCAL_KEY_B64
from tests.support.local_s3 import CHECKOUT, LocalS3
from tests.support.markdown import blocks_of, section, shell_commands
from tests.support.terraform_example import example_settings
from tests.support.terraform_example import recipe as deploy_recipe

pytestmark = [pytest.mark.slow, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BUCKET = "readme-snippets"
AWS_TEST_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def blocks(language: str) -> list[str]:
    """The README's fenced blocks of ``language``."""
    return blocks_of(README, language)


def parses(words: list[str]) -> None:
    """``s3memory`` takes ``words`` (after the program's name) as they are."""
    assert words[0] == "s3memory", words
    cli._parser().parse_args(words[1:])


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))


def check_line(words: list[str]) -> None:
    """One shell line of the README names only what exists (see the module's docstring)."""
    program = words[0]
    if program == "make":
        assert set(words[1:]) <= make_targets(), words
    elif program == "s3memory":
        parses(words)
    elif program == "claude":
        assert words[1:3] == ["mcp", "add"], words
        # `--env` takes every word up to the next option as KEY=VALUE: the server's name goes before
        options = words[3 : words.index("--")]
        for start in (i + 1 for i, word in enumerate(options) if word == "--env"):
            taken = itertools.takewhile(lambda word: not word.startswith("-"), options[start:])
            assert all("=" in word for word in taken), words
        parses(words[words.index("--") + 1 :])
    elif program == "pip":
        extras = set(re.findall(r"^(\w+) = \[", (ROOT / "pyproject.toml").read_text(), re.MULTILINE))
        for word in words[2:]:
            for extra in re.findall(r"\[(\w+)\]", word):
                assert extra in extras, word
            if word.endswith(".whl") or ".whl[" in word:
                assert word.startswith(f"dist/s3memory-{s3memory.__version__}-py3-none-any.whl"), word
    elif program == "cd":
        assert (ROOT / words[1]).is_dir(), words
    elif program in ("cp", "terraform"):
        assert words in deploy_recipe(), words  # tests/deploy/test_deploy_recipe.py checks the recipe
    elif program == "aws":
        assert words[1:3] == ["lambda", "invoke"], words
        prefix = example_settings()["name_prefix"]  # the recipe applies a copy of example.tfvars
        assert words[words.index("--function-name") + 1] == f"{prefix}-memory", words
    else:
        raise AssertionError(f"a README command this test does not know: {words}")


NOT_RUN = {
    "make demo": "the Quickstart: the blocks after it run in its .venv, the one running this test "
    "(and make test would run this test again)",
    "pip install -e": "changes the venv, and pip fetches the build backend from PyPI; "
    "tests/deploy/test_packaging.py builds the wheel and installs it in a venv of its own",
    "claude mcp add": "needs Claude Code, and AWS for its bucket and KMS alias",
    "make lambda-zip": "needs an AWS account (terraform apply); tests/deploy/test_terraform.py validates the example",
    "aws lambda invoke": "needs the deployed function; its payload is served below by the memory handler",
}
"""The README's shell blocks not run here, each by the start of its first line, with why."""


def operating_blocks() -> list[str]:
    """The shell blocks of "Operate it", which run as written: the first serves ``s3memory local-s3``."""
    found = re.findall(r"^```sh\n(.*?)^```", section(README, "Operate it"), re.MULTILINE | re.DOTALL)
    assert len(found) >= 2 and "\ns3memory local-s3 " in found[0], found
    return found


def test_every_shell_block_runs_or_is_named_with_why_not() -> None:
    not_run = [block for block in blocks("sh") if block not in operating_blocks()]
    assert [[key for key in NOT_RUN if block.startswith(key)] for block in not_run] == [
        [key] for key in NOT_RUN
    ]


def test_every_line_not_run_names_what_exists() -> None:
    lines = [
        words for block in blocks("sh") if block not in operating_blocks() for words in shell_commands(block)
    ]
    assert {"make", "pip", "claude", "terraform", "aws"} <= {words[0] for words in lines}
    for words in lines:
        check_line(words)


@pytest.fixture
def store_environment(moto_endpoint_with_bucket: str) -> dict[str, str]:
    return {
        **AWS_TEST_ENVIRONMENT,
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_PREFIX": f"readme-{os.urandom(4).hex()}/",
        "S3MEMORY_ENDPOINT_URL": moto_endpoint_with_bucket,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
    }


def test_the_python_snippet_runs_and_its_memory_is_in_s3(store_environment: dict[str, str]) -> None:
    (snippet,) = blocks("python")
    create = {"command": "create", "path": "/memories/preferences.md", "file_text": "- metric units\n"}
    with ScriptedClaude([Reply("I'll remember that.", [create]), "Noted: metric units."]) as api:
        ran = subprocess.run(
            [sys.executable, "-c", snippet],
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                **store_environment,
                "ANTHROPIC_API_KEY": "test-key",
                "ANTHROPIC_BASE_URL": api.base_url,
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        assert api.remaining == 0 and {body["model"] for body in api.requests} == {"claude-sonnet-4-5"}
    assert "Noted: metric units." in ran.stdout
    memory = make_memory(Settings.from_env(store_environment), "alice")
    assert memory.run({"command": "view", "path": "/memories/preferences.md"}).endswith(
        "     1\t- metric units"
    )


FRESH_BASH = ["bash", "--noprofile", "--norc", "-e", "-c"]
"""A shell as a new terminal's, reading no rc file, stopping at the first command that fails."""


def after_the_quickstart(checkout: Path) -> dict[str, str]:
    """``checkout`` as the Quickstart leaves one (its ``.venv``: the venv running this test), and the
    environment of a fresh shell there: HOME in it, PATH without the venv."""
    venv = Path(sys.prefix)
    assert venv != Path(sys.base_prefix) and (venv / "bin" / "activate").is_file(), (
        "the README's blocks run in the venv the Quickstart makes: run the tests from it (make test)"
    )
    (checkout / ".venv").symlink_to(venv, target_is_directory=True)
    # this checkout's code, as support/local_s3 runs it (the venv may be another checkout's install)
    return {"HOME": str(checkout), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(CHECKOUT)}


@dataclass(kw_only=True)
class ServingBlock(LocalS3):
    """The README's block that starts ``s3memory local-s3``, run as written by a fresh ``bash`` in a
    checkout after the Quickstart; ready once its env file is written and its message printed."""

    name = "readme"
    block: str
    shell_environment: dict[str, str] | None = None

    def arguments(self) -> list[str]:
        assert self.directory is not None
        self.shell_environment = after_the_quickstart(self.directory)
        return [*FRESH_BASH, self.block]

    def environment(self) -> dict[str, str]:
        assert self.shell_environment is not None
        return self.shell_environment


def git_status(checkout: Path, environment: dict[str, str]) -> str:
    """What ``git status`` shows of ``checkout`` made a repository with this checkout's .gitignore."""
    shutil.copy(CHECKOUT / ".gitignore", checkout / ".gitignore")
    for command in (["init", "--quiet"], ["status", "--porcelain", "--untracked-files=all"]):
        ran = subprocess.run(
            ["git", *command], cwd=checkout, env=environment, capture_output=True, text=True, timeout=60
        )
        assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_the_operating_blocks_run_as_written_in_fresh_shells_after_the_quickstart() -> None:
    serving, *others = operating_blocks()
    with ServingBlock(block=serving) as server:
        checkout, environment = server.directory, server.shell_environment
        assert checkout is not None and environment is not None
        ran = [
            subprocess.run(
                [*FRESH_BASH, block],
                cwd=checkout,
                env=environment,
                capture_output=True,
                text=True,
                timeout=300,
            )
            for block in others
        ]
        assert [(shell.returncode, shell.stderr) for shell in ran if shell.returncode] == []
        assert "\n- metric units\n" in ran[-1].stdout  # s3memory cat
        assert (checkout / "backup" / "memories" / "preferences.md").read_text() == "- metric units\n"
        status = git_status(checkout, environment)
        assert LOCAL_S3_ENV_FILE in os.listdir(checkout) and LOCAL_S3_ENV_FILE not in status
        served = server.log_path.read_text().splitlines()
        found = subprocess.run(
            [*FRESH_BASH, ". .venv/bin/activate && command -v s3memory"],
            cwd=checkout,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        env_file = (checkout / LOCAL_S3_ENV_FILE).resolve()
    mcp = [found.stdout.strip(), "mcp", "--env-file", str(env_file), "--user", "alice"]
    assert f"  claude mcp add s3memory -- {shlex.join(mcp)}" in served  # the program the shell found


def test_the_lambda_payload_is_served_by_the_memory_function(
    store_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (invoke,) = [words for block in blocks("sh") for words in shell_commands(block) if words[0] == "aws"]
    payload = json.loads(invoke[invoke.index("--payload") + 1])
    for name in [name for name in os.environ if name.startswith("S3MEMORY_")]:
        monkeypatch.delenv(name)
    for name, value in store_environment.items():
        monkeypatch.setenv(name, value)
    runtime.reset()
    try:
        answer = memory_handler(payload, SimpleNamespace(aws_request_id="readme"))
    finally:
        runtime.reset()
    assert answer == {
        "content": "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items and node_modules:\n4.0K\t/memories",
        "is_error": False,
    }


def test_the_readme_stays_a_front_page() -> None:
    assert len(README.splitlines()) <= 200
    assert section(README, "Quickstart").count("```sh\nmake demo\nmake test\n```") == 1
