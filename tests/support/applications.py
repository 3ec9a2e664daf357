"""An application's own test suite, run as it would run: its files in a directory of their own, a
pytest process of its own, this checkout on ``PYTHONPATH`` (``s3memory.testing``'s tests and
``docs/testing.md``'s)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]

PLUGIN_CONFTEST = 'pytest_plugins = ["s3memory.testing"]\n'
"""An application's ``conftest.py`` that names the plugin and nothing else."""

DEVELOPERS_SHELL = {
    "AWS_ACCESS_KEY_ID": "AKIAUSERSOWNKEY00000",
    "AWS_SECRET_ACCESS_KEY": "users-own-secret",
    "AWS_SESSION_TOKEN": "users-own-session-token",
    "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "S3MEMORY_BUCKET": "users-production-bucket",
    "S3MEMORY_KMS_KEY_ID": "alias/users-production-key",
    "S3MEMORY_ENDPOINT_URL": "http://127.0.0.1:9",
    "ANTHROPIC_API_KEY": "sk-ant-users-own-key",
    "ANTHROPIC_AUTH_TOKEN": "users-own-token",
    "ANTHROPIC_CUSTOM_HEADERS": "X-Team: users-own-header",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
}
"""A developer's shell: their own AWS keys and endpoint (nothing listens on port 9), production
settings, their API key, token and headers, a proxy. A test under the plugin's fixtures sends none of
it anywhere, and reaches neither that endpoint nor that proxy."""

_NOT_INHERITED = ("AWS_", "S3MEMORY_", "ANTHROPIC_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


def run_application_tests(directory: Path, files: Mapping[str, str], environment: Mapping[str, str]) -> str:
    """Write ``files`` (name: source) into ``directory`` and run pytest there, ``-rA``, in
    ``environment`` (beside what this process has that is not AWS, s3memory, Anthropic or a
    proxy); pytest's output, once it passed."""
    for name, source in files.items():
        (directory / name).write_text(source, encoding="utf-8")
    kept = {name: value for name, value in os.environ.items() if not name.upper().startswith(_NOT_INHERITED)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            str(directory),
        ],
        cwd=directory,
        env={**kept, "PYTHONPATH": str(_REPO), **environment},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
