"""``s3memory local-s3``: a local, versioned S3 whose settings another shell loads, and the operator
commands run against it there; the key is written only to a file this user alone may read."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from s3memory.cli.main import main
from s3memory.demo.local_s3 import STOP_SIGNALS, mcp_recipes, running_program, serve
from tests.support.local_s3 import LocalS3, in_another_shell
from tests.support.loopback_server import ServerUnavailable

pytestmark = [pytest.mark.slow, pytest.mark.processes]

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

        server_env_file = server.env_file.resolve()
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(READY_SECONDS) == 0
        log = server.log_path.read_text()
        assert not server.env_file.exists()
    assert log.splitlines()[0].startswith(
        f"s3memory local-s3: moto's S3 at {settings['S3MEMORY_ENDPOINT_URL']}, bucket s3memory-local"
    )
    assert log.splitlines()[1:3] == ["In another shell:", "  . ./s3memory-local.env"]  # as the README
    started_as = [sys.executable, "-m", "s3memory.cli.main"]  # as LocalS3 starts it: the module
    mcp = [*started_as, "mcp", "--env-file", str(server_env_file), "--user", "alice"]
    assert f"  claude mcp add s3memory -- {shlex.join(mcp)}" in log.splitlines()
    assert log.splitlines()[-1] == "s3memory local-s3: stopped"
    assert settings["S3MEMORY_LOCAL_KEY"] not in log
    assert settings["AWS_SECRET_ACCESS_KEY"] not in log


# -- refusals: one line naming the cause and the fix, status 2, nothing started, written or deleted --


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """The block fails the test if it runs longer than ``seconds``, rather than hanging the run."""

    def hung(*_: object) -> None:
        pytest.fail(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def handlers() -> list[object]:
    return [signal.getsignal(number) for number in STOP_SIGNALS]


def test_a_port_in_use_is_refused_at_once_with_the_fix_and_leaves_nothing_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    threads, before = threading.enumerate(), handlers()
    with socket.create_server(("127.0.0.1", 0)) as taken, within(READY_SECONDS):
        port = taken.getsockname()[1]
        status = main(["local-s3", "--port", str(port)])
    assert status == 2  # as the CLI's other usage errors (a missing extra, a bad option)
    assert capsys.readouterr() == (
        "",
        f"s3memory local-s3: port {port} on 127.0.0.1 is in use by another program: "
        "give another --port, or --port 0 for a free one\n",
    )
    assert threading.enumerate() == threads  # no server thread, failed or waiting
    assert handlers() == before  # Ctrl-C is the test run's again
    assert list(tmp_path.iterdir()) == []  # no env file


@dataclass(kw_only=True)
class LocalS3With(LocalS3):
    """``s3memory local-s3 *options`` in a process of its own."""

    options: tuple[str, ...] = ()

    def arguments(self) -> list[str]:
        return [*super().arguments(), *self.options]


def test_the_command_on_a_port_in_use_exits_with_status_2_and_one_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        server = LocalS3With(options=("--port", str(port)), start_timeout=READY_SECONDS)
        with pytest.raises(ServerUnavailable) as refused:
            server.start()  # stopped (SIGTERM, then SIGKILL) if it does not exit by itself
    assert str(refused.value) == (
        "local-s3 exited with status 2 while starting\n--- local-s3 log (last lines) ---\n"
        f"s3memory local-s3: port {port} on 127.0.0.1 is in use by another program: "
        "give another --port, or --port 0 for a free one"
    )


@pytest.mark.parametrize("port", [65536, -1])
def test_a_port_that_is_no_port_is_refused(tmp_path: Path, port: int) -> None:
    out, err = io.StringIO(), io.StringIO()
    with within(READY_SECONDS):
        status = serve(out, port=port, bucket=new_bucket(), env_file=tmp_path / "local.env", err=err)
    assert (status, out.getvalue()) == (2, "")
    assert err.getvalue() == (
        f"s3memory local-s3: --port {port} is no port (0 to 65535): give another --port, or --port 0 for a free one\n"
    )
    assert list(tmp_path.iterdir()) == []


def new_bucket() -> str:
    """A bucket of the test's own: the servers share this process's moto."""
    return f"local-s3-{uuid.uuid4().hex[:12]}"


@pytest.mark.parametrize("kind", ["file", "symbolic link"])
def test_an_env_file_that_exists_is_refused_and_kept(tmp_path: Path, kind: str) -> None:
    mine = tmp_path / "mine.env"
    mine.write_text("export S3MEMORY_BUCKET=production\n")
    mine.chmod(0o644)
    env_file = tmp_path / "local.env"
    if kind == "symbolic link":
        env_file.symlink_to(mine)
    else:
        env_file = mine
    out, err, stop = io.StringIO(), io.StringIO(), threading.Event()
    stop.set()  # were it to serve, it would stop at once
    threads = threading.enumerate()
    with within(READY_SECONDS):
        status = serve(out, port=0, bucket=new_bucket(), env_file=env_file, stop=stop, err=err)
    assert (status, out.getvalue()) == (2, "")
    assert err.getvalue() == (
        f"s3memory local-s3: --env-file {env_file} already exists, and is left as it is: remove it "
        "(a local-s3 that was killed leaves its env file behind) or give another --env-file\n"
    )
    assert env_file.read_text() == "export S3MEMORY_BUCKET=production\n"
    assert env_file.is_symlink() == (kind == "symbolic link")
    assert stat.S_IMODE(mine.stat().st_mode) == 0o644
    assert threading.enumerate() == threads


def test_an_env_file_that_is_a_directory_or_in_no_folder_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "settings"
    directory.mkdir()
    (directory / "kept").write_text("")
    refusals = []
    for env_file in (directory, tmp_path / "nowhere" / "local.env"):
        out, err, stop = io.StringIO(), io.StringIO(), threading.Event()
        stop.set()
        with within(READY_SECONDS):
            status = serve(out, port=0, bucket=new_bucket(), env_file=env_file, stop=stop, err=err)
        assert (status, out.getvalue()) == (2, "")
        refusals.append(err.getvalue())
    assert refusals == [
        f"s3memory local-s3: --env-file {directory} is a directory: give a file's path, "
        f"e.g. --env-file {directory}/s3memory-local.env\n",
        f"s3memory local-s3: --env-file {tmp_path}/nowhere/local.env: the folder {tmp_path}/nowhere "
        "does not exist: create it or give another --env-file\n",
    ]
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["kept", "settings"]


class Terminal(io.StringIO):
    """What ``serve`` prints. When it flushes (its settings written, its message out), ``meanwhile``
    runs with what it printed, and then the server stops."""

    def __init__(self, meanwhile: Callable[[str], None], stop: threading.Event) -> None:
        super().__init__()
        self.meanwhile = meanwhile
        self.stop = stop

    def flush(self) -> None:
        super().flush()
        if not self.stop.is_set():
            try:
                self.meanwhile(self.getvalue())
            finally:
                self.stop.set()


def served(env_file: Path, meanwhile: Callable[[str], None]) -> tuple[int, str, str]:
    """``serve`` with ``env_file`` until ``meanwhile`` has run: its status, what it printed, its errors."""
    stop, err = threading.Event(), io.StringIO()
    out = Terminal(meanwhile, stop)
    with within(READY_SECONDS):
        status = serve(out, port=0, bucket=new_bucket(), env_file=env_file, stop=stop, err=err)
    return status, out.getvalue(), err.getvalue()


def test_a_file_put_in_place_of_the_env_file_is_not_deleted_at_stop(tmp_path: Path) -> None:
    env_file = tmp_path / "local.env"

    def replace(_: str) -> None:
        assert env_file.read_text().startswith("export S3MEMORY_ENDPOINT_URL=http://127.0.0.1:")
        env_file.unlink()
        env_file.write_text("export MINE=1\n")

    status, _, err = served(env_file, replace)
    assert (status, err) == (0, "")
    assert env_file.read_text() == "export MINE=1\n"


SHELLS = [shell for shell in ("sh", "dash", "bash", "zsh") if shutil.which(shell)]


@pytest.mark.parametrize(
    ("given", "command"),
    [
        ("s3memory-local.env", ". ./s3memory-local.env"),  # the default, as the README loads it
        ("settings/local.env", ". settings/local.env"),
        ("my settings.env", ". './my settings.env'"),
        ("ABSOLUTE/local.env", ". ABSOLUTE/local.env"),
    ],
)
def test_the_printed_command_loads_the_settings_in_a_posix_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "settings").mkdir()
    env_file = Path(given.replace("ABSOLUTE", str(tmp_path / "settings")))
    command = command.replace("ABSOLUTE", str(tmp_path / "settings"))
    loaded: dict[str, str] = {}

    def load(printed: str) -> None:
        lines = printed.splitlines()
        assert lines[1:4] == ["In another shell:", f"  {command}", "  s3memory users"]
        for shell in SHELLS:  # sh, dash, zsh: `.` looks a name without a slash up in PATH only
            loading = subprocess.run(
                [shell, "-c", f'{command} && printf %s "$S3MEMORY_ENDPOINT_URL"'],
                cwd=tmp_path,
                env={"PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=READY_SECONDS,
                check=False,
            )
            assert (loading.returncode, loading.stderr) == (0, ""), shell
            loaded[shell] = loading.stdout

    status, printed, err = served(env_file, load)
    assert (status, err) == (0, "")
    endpoint = printed.split("moto's S3 at ", 1)[1].split(",", 1)[0]
    assert loaded == dict.fromkeys(SHELLS, endpoint)
    assert "sh" in loaded
    assert not env_file.exists()


# -- the MCP recipes: the paths whole, the settings by --env-file, the key in no client's configuration --


def test_the_mcp_recipes_start_the_server_with_the_env_file_quoted_for_the_shell_and_in_json() -> None:
    printed = mcp_recipes(["/opt/my tools/bin/s3memory"], Path("/home/me/it's/s3memory-local.env"))
    assert printed == (
        "For Claude Code (the key stays in the env file: the server reads it when the client starts it):\n"
        "  claude mcp add s3memory -- '/opt/my tools/bin/s3memory' mcp --env-file "
        "'/home/me/it'\"'\"'s/s3memory-local.env' --user alice\n"
        "For Claude Desktop, in claude_desktop_config.json:\n"
        "  {\n"
        '    "mcpServers": {\n'
        '      "s3memory": {\n'
        '        "command": "/opt/my tools/bin/s3memory",\n'
        '        "args": ["mcp", "--env-file", "/home/me/it\'s/s3memory-local.env", "--user", "alice"]\n'
        "      }\n"
        "    }\n"
        "  }\n"
    )
    claude_code = shlex.split(printed.splitlines()[1])
    assert claude_code[claude_code.index("--") + 1 :] == [
        "/opt/my tools/bin/s3memory",
        "mcp",
        "--env-file",
        "/home/me/it's/s3memory-local.env",
        "--user",
        "alice",
    ]
    desktop = json.loads("".join(printed.splitlines(keepends=True)[3:]))
    assert desktop["mcpServers"]["s3memory"] == {
        "command": "/opt/my tools/bin/s3memory",
        "args": claude_code[claude_code.index("--") + 2 :],
    }


def test_the_program_in_the_recipes_is_the_one_started_whole_or_this_python_with_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "bin" / "s3memory"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert running_program(str(script), "/venv/bin/python") == [str(script)]
    assert running_program("bin/s3memory", "/venv/bin/python") == [str(script)]  # made absolute
    module = ["/venv/bin/python", "-m", "s3memory.cli.main"]
    main_py = tmp_path / "main.py"
    main_py.write_text("")
    main_py.chmod(0o755)
    assert running_program(str(main_py), "/venv/bin/python") == module  # python -m s3memory.cli.main
    assert running_program("-c", "/venv/bin/python") == module  # python -c
    script.chmod(0o644)
    assert running_program(str(script), "/venv/bin/python") == module  # not a program


def test_what_local_s3_prints_whole_with_no_key_and_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings: dict[str, str] = {}

    def read(_: str) -> None:
        for line in (tmp_path / "s3memory-local.env").read_text().splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            settings[name] = value

    stop, err = threading.Event(), io.StringIO()
    out = Terminal(read, stop)
    bucket = new_bucket()
    with within(READY_SECONDS):
        status = serve(
            out,
            port=0,
            bucket=bucket,
            env_file=Path("s3memory-local.env"),
            stop=stop,
            err=err,
            program=["/opt/s3memory/bin/s3memory"],
        )
    assert (status, err.getvalue()) == (0, "")
    endpoint = settings["S3MEMORY_ENDPOINT_URL"]
    env_file = os.path.join(os.getcwd(), "s3memory-local.env")
    assert out.getvalue() == (
        f"s3memory local-s3: moto's S3 at {endpoint}, bucket {bucket} (versioned), a new local key and "
        "new credentials.\n"
        "In another shell:\n"
        "  . ./s3memory-local.env\n"
        "  s3memory users\n"
        f"{mcp_recipes(['/opt/s3memory/bin/s3memory'], Path(env_file))}"
        "Stop with Ctrl-C: the memory is in this process and goes with it.\n"
        "s3memory local-s3: stopped\n"
    )
    assert f"--env-file {env_file} --user alice\n" in out.getvalue()
    for secret in ("S3MEMORY_LOCAL_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"):
        assert settings[secret] not in out.getvalue()
