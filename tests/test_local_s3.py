"""``s3memory local-s3``: a local, versioned S3 whose settings another shell loads, and the operator
commands run against it there; the key is written only to a file this user alone may read."""

from __future__ import annotations

import signal
import stat
from pathlib import Path

from .support.local_s3 import LocalS3, in_another_shell

READY_SECONDS = 30


def test_local_s3_serves_a_versioned_bucket_whose_settings_another_shell_loads(tmp_path: Path) -> None:
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "notes.md").write_text("first\n")
    with LocalS3() as server:
        settings = server.settings()
        assert server.env_file.name == "s3memory-local.env"  # where the README sources it from
        assert stat.S_IMODE(server.env_file.stat().st_mode) == 0o600
        assert set(settings) == {
            "S3MEMORY_ENDPOINT_URL",
            "S3MEMORY_BUCKET",
            "S3MEMORY_LOCAL_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_DEFAULT_REGION",
        }
        assert settings["S3MEMORY_ENDPOINT_URL"].startswith("http://127.0.0.1:")
        assert settings["S3MEMORY_BUCKET"] == "s3memory-local"

        imported = in_another_shell(settings, "import", "--user", "alice", str(tmp_path))
        assert imported.returncode == 0, imported.stderr
        (tmp_path / "memories" / "notes.md").write_text("second\n")
        again = in_another_shell(settings, "import", "--user", "alice", str(tmp_path), "--overwrite", "--yes")
        assert again.returncode == 0, again.stderr
        assert in_another_shell(settings, "cat", "--user", "alice", "/memories/notes.md").stdout == "second\n"
        history = in_another_shell(
            settings, "history", "--user", "alice", "/memories/notes.md"
        ).stdout.splitlines()
        assert [line.split()[1] for line in history] == ["written", "written"]  # versions kept, none deleted
        assert "(current)" in history[0]

        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(READY_SECONDS) == 0
        log = server.log_path.read_text()
        assert not server.env_file.exists()
    assert log.splitlines()[0].startswith(
        f"s3memory local-s3: moto's S3 at {settings['S3MEMORY_ENDPOINT_URL']}, bucket s3memory-local"
    )
    assert log.splitlines()[-1] == "s3memory local-s3: stopped"
    assert settings["S3MEMORY_LOCAL_KEY"] not in log
