"""``s3memory local-s3``: a local, versioned S3 whose settings another shell loads, and the operator
commands run against it there; the key is written only to a file this user alone may read."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .support.loopback_server import LoopbackServer

READY_SECONDS = 30


@dataclass(kw_only=True)
class LocalS3(LoopbackServer):
    """``s3memory local-s3`` in a process of its own, on a free port."""

    name = "local-s3"

    @property
    def env_file(self) -> Path:
        assert self.directory is not None
        return self.directory / "local.env"

    def arguments(self) -> list[str]:
        port, env_file = str(self.port), str(self.env_file)
        return [sys.executable, "-m", "s3memory.cli.main", "local-s3", "--port", port, "--env-file", env_file]

    def settings(self) -> dict[str, str]:
        """The env file's settings, once the command has written it."""
        deadline = time.monotonic() + READY_SECONDS
        while not self.env_file.exists():
            assert time.monotonic() < deadline, self.log_tail()
            time.sleep(0.05)
        time.sleep(0.1)  # written in one call; let it finish
        lines = self.env_file.read_text().splitlines()
        assert all(line.startswith("export ") for line in lines), lines
        return dict(line.removeprefix("export ").split("=", 1) for line in lines)


def s3memory(settings: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """The command in another shell that loaded the settings (and nothing else of this one's)."""
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", **settings}
    return subprocess.run(
        [sys.executable, "-m", "s3memory.cli.main", *argv],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_local_s3_serves_a_versioned_bucket_whose_settings_another_shell_loads(tmp_path: Path) -> None:
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "notes.md").write_text("first\n")
    with LocalS3() as server:
        settings = server.settings()
        assert stat.S_IMODE(server.env_file.stat().st_mode) == 0o600
        assert set(settings) == {
            "S3MEMORY_ENDPOINT_URL",
            "S3MEMORY_BUCKET",
            "S3MEMORY_LOCAL_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_DEFAULT_REGION",
        }
        assert settings["S3MEMORY_ENDPOINT_URL"] == server.endpoint
        assert settings["S3MEMORY_BUCKET"] == "s3memory-local"

        imported = s3memory(settings, "import", "--user", "alice", str(tmp_path))
        assert imported.returncode == 0, imported.stderr
        (tmp_path / "memories" / "notes.md").write_text("second\n")
        again = s3memory(settings, "import", "--user", "alice", str(tmp_path), "--overwrite", "--yes")
        assert again.returncode == 0, again.stderr
        assert s3memory(settings, "cat", "--user", "alice", "/memories/notes.md").stdout == "second\n"
        history = s3memory(settings, "history", "--user", "alice", "/memories/notes.md").stdout.splitlines()
        written = [line for line in history if line.split()[1] == "written"]
        assert len(written) == 2 and "(current)" in written[0]  # the bucket keeps versions

        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(READY_SECONDS) == 0
        log = server.log_path.read_text()
        assert not server.env_file.exists()
    assert log.splitlines()[0].startswith(
        f"s3memory local-s3: moto's S3 at {server.endpoint}, bucket s3memory-local"
    )
    assert log.splitlines()[-1] == "s3memory local-s3: stopped"
    assert settings["S3MEMORY_LOCAL_KEY"] not in log
