"""A server a test starts stops when the test run dies (``support/loopback_server.py``): killed with
SIGKILL, the test process can run no clean-up, so the server's watchdog ends its process group and
deletes its directory. Each server class of the tests is started in a process of its own, which is
then killed."""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

from tests.support.loopback_server import STOP_TIMEOUT_SECONDS

REPO = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from tests.support.{module} import {server_class}
server = {server_class}().start()
assert server.process is not None
print(server.process.pid, server.directory, flush=True)
sys.stdin.read()  # until it is killed
"""
"""Starts a server, prints its process group and directory, and waits."""

MATRIX_ONLY = [pytest.mark.slow, pytest.mark.server_matrix]
SERVERS = [
    pytest.param("backends", "SeaweedServer", marks=[pytest.mark.slow, pytest.mark.seaweedfs]),
    pytest.param("s3rver", "S3rverServer", marks=MATRIX_ONLY),
    pytest.param("localstack", "LocalStackServer", marks=MATRIX_ONLY),
]


def group_running(group: int) -> list[int]:
    """The processes of process group ``group`` that are running (not zombies: their new parent,
    after the test process died, may never reap them)."""
    running = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError, IndexError):
            state, _parent, member_of = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            if int(member_of) == group and state != "Z":
                running.append(int(entry.name))
    return running


@pytest.mark.parametrize(("module", "server_class"), SERVERS)
def test_a_server_stops_when_the_test_process_is_killed(module: str, server_class: str) -> None:
    why = importlib.import_module(f"tests.support.{module}").missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(module=module, server_class=server_class)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        text=True,
    )
    group, directory = 0, None
    try:
        assert holder.stdout is not None and holder.stderr is not None
        started = holder.stdout.readline().split()
        assert len(started) == 2, holder.stderr.read()
        group, directory = int(started[0]), Path(started[1])
        assert group_running(group) and directory.is_dir()

        holder.kill()
        holder.wait()
        deadline = time.monotonic() + 3 * STOP_TIMEOUT_SECONDS
        while (group_running(group) or directory.exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_running(group) == []
        assert not directory.exists()
    finally:
        holder.kill()
        holder.wait()
        if group:
            with suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
