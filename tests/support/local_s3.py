"""``s3memory local-s3`` in a process of its own, run as the README runs it (no options, in its own
directory), ready once its env file is written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from s3memory.demo import LOCAL_S3_ENV_FILE

from .loopback_server import LoopbackServer, ServerUnavailable

CHECKOUT = Path(__file__).resolve().parents[2]
"""Whose ``s3memory`` the commands run: this checkout's, as the tests' own (not an installed one's)."""


@dataclass(kw_only=True)
class LocalS3(LoopbackServer):
    """The command's server; ``settings()`` are what its env file exports."""

    name = "local-s3"

    @property
    def env_file(self) -> Path:
        assert self.directory is not None
        return self.directory / LOCAL_S3_ENV_FILE

    def arguments(self) -> list[str]:
        return [sys.executable, "-m", "s3memory.cli.main", "local-s3"]

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "PYTHONPATH": str(CHECKOUT)}

    def _wait_until_ready(self, started: float) -> None:
        while not self.env_file.exists() or not self.log_path.read_text():  # the file, then the message
            assert self.process is not None
            if self.process.poll() is not None:
                self.failure = f"local-s3 exited with status {self.process.returncode} while starting"
                raise ServerUnavailable(self.failure)
            if time.monotonic() > started + self.start_timeout:
                self.failure = "local-s3 wrote no settings in time"
                raise ServerUnavailable(self.failure)
            time.sleep(0.05)

    @property
    def endpoint(self) -> str:
        return self.settings()["S3MEMORY_ENDPOINT_URL"]

    def settings(self) -> dict[str, str]:
        """The settings its env file exports."""
        lines = self.env_file.read_text().splitlines()
        assert all(line.startswith("export ") for line in lines), lines
        return dict(line.removeprefix("export ").split("=", 1) for line in lines)


def in_another_shell(
    settings: dict[str, str], *argv: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``s3memory *argv`` in a shell that loaded ``settings`` and nothing else of this one's."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd or "/nonexistent"),
        "PYTHONPATH": str(CHECKOUT),
        **settings,
    }
    return subprocess.run(
        [sys.executable, "-m", "s3memory.cli.main", *argv],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
