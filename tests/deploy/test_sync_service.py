"""``deploy/sync/``, the user services of ``docs/sync.md``, as the service managers run them: the systemd
unit passes ``systemd-analyze verify``; its ``ExecStart``, expanded as systemd expands it (``%h``, and
``${VAR}`` from the ``EnvironmentFile`` written from ``sync.env.example`` with test values), and the
launchd agent's ``ProgramArguments`` and ``EnvironmentVariables`` each run the real ``s3memory sync``
against ``s3memory local-s3`` in a process of its own (stopped with the test run, however it ends):
a round completes, the folder's file reaches the memory, and SIGTERM, which both managers send to
stop a service, ends it with exit 0, which both take as a clean stop."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.local_s3 import CHECKOUT, LocalS3, in_another_shell
from tests.support.loopback_server import STOP_TIMEOUT_SECONDS, WATCHDOG

DEPLOY = CHECKOUT / "deploy" / "sync"
UNIT = DEPLOY / "s3memory-sync.service"
ENV_EXAMPLE = DEPLOY / "sync.env.example"
PLIST = DEPLOY / "com.s3memory.sync.plist"
EXAMPLE_HOME = "/Users/alice"
"""The home the plist names, replaced by the test's."""
OFFLINE = {"S3MEMORY_KMS_KEY_ID", "AWS_PROFILE"}
"""The examples' settings that need AWS: the test gives local-s3's local key and credentials instead."""
ROUND_SECONDS = 120
"""How long a round may take before the test gives up on it (a wait, not a measure)."""
NOTE = "- metric units\n"


def unit_sections(text: str) -> dict[str, dict[str, str]]:
    """A unit file's ``[Section]`` ``Key=value`` lines (comments and blank lines left out)."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        else:
            key, _, value = line.partition("=")
            assert key not in current, f"{key} given twice"
            current[key.strip()] = value.strip()
    return sections


def environment_file(text: str) -> dict[str, str]:
    """The variables of an ``EnvironmentFile``, as systemd reads one written as the example is: a
    ``NAME=value`` a line, comments and blank lines left out, no quotes."""
    found = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith(("#", ";")):
            name, _, value = line.partition("=")
            assert not value.startswith(("'", '"')) and "\\" not in value, line
            found[name.strip()] = value.strip()
    return found


def expanded(command: str, home: Path, variables: dict[str, str]) -> list[str]:
    """``command`` as systemd runs it: ``%h`` the home, a word ``${VAR}`` one word, ``$VAR`` split at
    white space (the unit uses no other specifier or expansion)."""
    assert not re.search(r"%[^h]", command), command
    words: list[str] = []
    for word in shlex.split(command.replace("%h", str(home))):
        whole = re.fullmatch(r"\$\{(\w+)\}", word)
        split = re.fullmatch(r"\$(\w+)", word)
        if whole:
            words.append(variables[whole[1]])
        elif split:
            words.extend(variables[split[1]].split())
        else:
            assert "$" not in word, word
            words.append(word)
    return words


def with_values(example: str, values: dict[str, str]) -> str:
    """The env file ``example`` with ``values``: each of its lines that sets one (commented out or not)
    set to it, the others added, its lines that set what needs AWS (``OFFLINE``) left out."""
    lines, given = [], set()
    for line in example.splitlines():
        name, equals, _ = line.removeprefix("# ").partition("=")
        if equals and name in OFFLINE:
            continue
        if equals and name in values:
            line = f"{name}={values[name]}"
            given.add(name)
        lines.append(line)
    lines += [f"{name}={value}" for name, value in values.items() if name not in given]
    return "\n".join(lines) + "\n"


def installed(home: Path) -> Path:
    """``home/.local/bin/s3memory``: this checkout's ``s3memory``, where the unit and the plist expect it."""
    program = home / ".local" / "bin" / "s3memory"
    program.parent.mkdir(parents=True)
    program.write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(CHECKOUT))} exec {shlex.quote(sys.executable)} "
        '-m s3memory.cli.main "$@"\n'
    )
    program.chmod(0o755)
    return program


def offline(settings: dict[str, str], example: dict[str, str], server: LocalS3) -> dict[str, str]:
    """``example``'s settings with local-s3's values: its bucket, and its local key and credentials for
    the KMS key and the AWS profile; the others (``SYNC_*``) from ``settings``."""
    assert set(example) >= OFFLINE | {"S3MEMORY_BUCKET"}
    given = {**server.settings(), **settings}
    assert set(example) - OFFLINE <= set(given), example
    return {name: value for name, value in given.items() if name not in OFFLINE}


@pytest.fixture(scope="module")
def server() -> Iterator[LocalS3]:
    with LocalS3() as started:
        yield started


def audit_lines(log: Path) -> list[dict[str, object]]:
    """The audit lines written to ``log``."""
    return [
        dict(json.loads(line))
        for line in log.read_text().splitlines()
        if '"event": "s3memory.operator"' in line
    ]


def until_a_round(process: subprocess.Popen[bytes], log: Path) -> dict[str, object]:
    """The audit line of the first round ``process`` writes to ``log``."""
    deadline = time.monotonic() + ROUND_SECONDS
    while time.monotonic() < deadline:
        lines = audit_lines(log)
        if lines:
            return lines[0]
        assert process.poll() is None, f"exited {process.returncode}: {log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"no round in {ROUND_SECONDS} s: {log.read_text()}")


def synced_and_stopped(
    argv: list[str], environment: dict[str, str], home: Path, umask: int, log: Path, server: LocalS3
) -> None:
    """``argv`` run as a service manager runs it (from ``home``, stdout nowhere, stderr to ``log``), in
    a session of its own that a watchdog ends if the test run dies: a round pushes the folder's note,
    then SIGTERM stops it between rounds, with exit 0 (a clean stop for both managers)."""
    with open(log, "ab") as errors:
        process = subprocess.Popen(
            argv,
            cwd=home,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            umask=umask,
            start_new_session=True,
        )
    spare = home / "watchdog"  # the watchdog removes a directory once it is done: this empty one
    spare.mkdir()
    watchdog = subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, str(process.pid), str(spare), str(STOP_TIMEOUT_SECONDS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        audit = until_a_round(process, log)
        assert (audit["command"], audit["status"], audit["pushed"]) == ("sync", 0, 1)
        user = argv[argv.index("--user") + 1]
        read = in_another_shell(server.settings(), "cat", "--user", user, "/memories/note.md")
        assert (read.returncode, read.stdout) == (0, NOTE), read.stderr
        process.send_signal(signal.SIGTERM)
        assert process.wait(ROUND_SECONDS) == 0, log.read_text()
        assert audit_lines(log)[-1]["rounds"] >= 1  # the command's own last line: it stopped itself
    finally:
        assert watchdog.stdin is not None
        watchdog.stdin.close()  # the watchdog ends the process if it still runs
        watchdog.wait(ROUND_SECONDS)
        process.wait(ROUND_SECONDS)


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here (Debian and Ubuntu: the systemd package)")
    home = tmp_path / "home"
    installed(home)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    ran = subprocess.run(
        [analyze, "--user", "verify", str(UNIT)],
        env={"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")


def test_the_units_stop_is_clean_and_a_failure_is_retried() -> None:
    service = unit_sections(UNIT.read_text())["Service"]
    assert service["Type"] == "exec" and service["KillSignal"] == "SIGTERM"
    assert "SuccessExitStatus" not in service  # systemd's own: 0, what the command exits on SIGTERM
    assert (service["Restart"], service["StandardOutput"]) == ("on-failure", "null")


@pytest.mark.slow
@pytest.mark.processes
def test_the_units_command_syncs_and_stops_on_sigterm(server: LocalS3, tmp_path: Path) -> None:
    service = unit_sections(UNIT.read_text())["Service"]
    home = tmp_path / "home"
    installed(home)
    folder = home / "memory of a project"  # a space in the path: ${SYNC_DIR} stays one word
    folder.mkdir()
    (folder / "note.md").write_text(NOTE)
    example = environment_file(ENV_EXAMPLE.read_text())
    assert set(example) == {"S3MEMORY_BUCKET", "S3MEMORY_KMS_KEY_ID", "AWS_PROFILE", "SYNC_USER", "SYNC_DIR"}
    values = offline({"SYNC_USER": "bob", "SYNC_DIR": str(folder)}, example, server)  # the plist's is alice
    env_file = Path(service["EnvironmentFile"].replace("%h", str(home)))
    env_file.parent.mkdir(parents=True)
    env_file.write_text(with_values(ENV_EXAMPLE.read_text(), values))
    variables = environment_file(env_file.read_text())
    assert variables == values
    argv = expanded(service["ExecStart"], home, variables)
    assert argv[1:] == ["sync", "--user", "bob", str(folder)]
    environment = {"HOME": str(home), "PATH": "/usr/bin:/bin", **variables}
    synced_and_stopped(argv, environment, home, int(service["UMask"], 8), tmp_path / "journal", server)
    assert oct(os.stat(folder / ".s3memory-sync").st_mode & 0o777) == "0o700"


@pytest.mark.slow
@pytest.mark.processes
def test_the_launchd_agents_command_syncs_and_stops_on_sigterm(server: LocalS3, tmp_path: Path) -> None:
    agent = plistlib.loads(PLIST.read_bytes())
    assert agent["KeepAlive"] == {"SuccessfulExit": False} and agent["RunAtLoad"] is True
    home = tmp_path / "home"
    installed(home)

    def here(text: str) -> str:
        assert text.startswith(EXAMPLE_HOME) or EXAMPLE_HOME not in text, text
        return text.replace(EXAMPLE_HOME, str(home), 1)

    argv = [here(word) for word in agent["ProgramArguments"]]
    folder = Path(argv[-1])
    folder.mkdir(parents=True)
    (folder / "note.md").write_text(NOTE)
    example = dict(agent["EnvironmentVariables"])
    assert set(example) == {"S3MEMORY_BUCKET", "S3MEMORY_KMS_KEY_ID", "AWS_PROFILE"}
    environment = {"HOME": str(home), "PATH": "/usr/bin:/bin", **offline({}, example, server)}
    log = Path(here(agent["StandardErrorPath"]))
    log.parent.mkdir(parents=True)
    assert "StandardOutPath" not in agent  # launchd's default: stdout goes nowhere
    synced_and_stopped(argv, environment, home, agent["Umask"], log, server)
