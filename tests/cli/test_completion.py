"""``s3memory completion bash|zsh``: the script completes commands and options as bash runs it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from s3memory.cli import main as cli
from s3memory.cli.completion import completion_script


def completed(script: Path, words: list[str]) -> list[str]:
    """What bash offers for the command line ``words`` (the last one being completed)."""
    quoted = " ".join(f"'{word}'" for word in words)
    program = (
        f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
        '_s3memory_complete; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    ran = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, check=True)
    return [line for line in ran.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("bash") is None:
        pytest.skip("no bash on this machine")
    path = tmp_path_factory.mktemp("completion") / "s3memory.bash"
    path.write_text(completion_script(cli._parser(), "bash"))
    return path


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        (["s3memory", "l"], ["local-s3", "ls"]),
        (["s3memory", "re"], ["redact", "restore"]),
        (["s3memory", "--bucket", "mem", "us"], ["users"]),  # an option's value is no command
        (["s3memory", "ls", "--us"], ["--user"]),
        (["s3memory", "--json", "rotate", "--w"], ["--wait"]),
        (["s3memory", "mcp", "--mo"], ["--mount"]),
        (["s3memory", "ls", "--user", ""], []),  # a value: the shell's own completion
        (["s3memory", "completion", "--h"], ["--help"]),
    ],
)
def test_bash_completes_commands_options_and_skips_values(
    script: Path, words: list[str], offered: list[str]
) -> None:
    assert completed(script, words) == offered


def test_the_command_prints_the_script_for_each_shell(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["completion", "bash"]) == 0
    bash = capsys.readouterr().out
    assert bash == completion_script(cli._parser(), "bash") and bash.endswith(
        "complete -o default -F _s3memory_complete s3memory\n"
    )
    assert cli.main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert zsh.splitlines()[1] == "autoload -U +X bashcompinit && bashcompinit" and zsh.endswith(bash)
    with pytest.raises(SystemExit) as exited:
        cli.main(["completion", "fish"])
    assert exited.value.code == 2
