"""What the command line loads before it needs a store (issue 40): its help, its completion script and
its refusal of a command line read no setting and build nothing, so they import neither botocore nor
the crypto library nor the store; reading the settings (``settings.py``) imports none of them either,
the objects being built from them elsewhere (``assembly.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("botocore", "cryptography", "s3memory.store", "s3memory.memory", "s3memory.assembly")
"""What a command that sends no request has no use for."""


def loaded_after(code: str) -> list[str]:
    """Which of ``HEAVY`` a fresh interpreter has imported once ``code`` has run."""
    body = textwrap.indent(textwrap.dedent(code).strip(), " " * 8)
    probe = (
        "import contextlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    try:\n{body}\n    except SystemExit:\n        pass\n"
        f"print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(ran.stdout))


@pytest.mark.parametrize(
    "words",
    [["--help"], ["completion", "bash"], ["users", "--help"], ["lsx"], ["cat", "--user"]],
    ids=["help", "completion", "command-help", "unknown-command", "missing-value"],
)
def test_help_completion_and_a_refused_command_line_import_no_aws_crypto_or_store(words: list[str]) -> None:
    assert loaded_after(f"from s3memory.cli.main import main\nmain({words!r})") == []


def test_reading_the_settings_imports_no_aws_crypto_or_store() -> None:
    code = """
    from s3memory.settings import Settings
    Settings.from_env({"S3MEMORY_BUCKET": "b", "S3MEMORY_KMS_KEY_ID": "alias/m", "S3MEMORY_QUOTA_FILES": "3"})
    """
    assert loaded_after(code) == []


def test_the_probe_sees_what_building_a_store_imports() -> None:
    code = """
    from s3memory.assembly import make_key_provider
    from s3memory.settings import Settings
    make_key_provider(Settings.from_env({"S3MEMORY_BUCKET": "b", "S3MEMORY_KMS_KEY_ID": "alias/m"}))
    """
    assert loaded_after(code) == list(HEAVY)
