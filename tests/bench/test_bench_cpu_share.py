"""The bench's section 10 (``bench/cpu_share.py``) and its CPU quotas (``bench/cgroups.py``): a command
started in a group runs there from its start and is held to the group's quota; the group goes when it
is closed and when its owner is killed, with what was left in it; where no group can be made the
section says why and measures only the full CPU. No timing is asserted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import cgroups
from bench.cost_model import COMMANDS, MEMORY_SIZES, RENAME_DIR
from bench.cpu_share import FULL, cpu_share_lines, run
from bench.servers import REPO, Backend

needs_cgroups = pytest.mark.skipif(bool(cgroups.unavailable()), reason=cgroups.unavailable() or "available")

BUSY = """
import time
print([line for line in open("/proc/self/cgroup").read().splitlines() if line.split(":")[1] == "cpu"][0], flush=True)
started = time.process_time()
while time.process_time() - started < 0.3:
    pass
"""


def gone(path: Path, pid: int | None = None, seconds: float = 20.0) -> bool:
    """Whether ``path`` (and the process ``pid``) are gone, waiting up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = pid is not None and Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)
        if not path.exists() and not alive:
            return True
        time.sleep(0.05)
    return False


def entered(path: Path, pid: int, seconds: float = 20.0) -> bool:
    """Whether the process ``pid`` is in the group at ``path``, waiting up to ``seconds`` for its shell
    to move it there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if str(pid) in (path / "cgroup.procs").read_text().split():
            return True
        time.sleep(0.02)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_where_there_is_no_cgroup_v1_cpu_controller_it_says_so(tmp_path: Path) -> None:
    assert cgroups.unavailable(tmp_path) == (
        f"no cgroup v1 cpu controller at {tmp_path} (cgroup v2 or no cgroup file system)"
    )


def test_where_no_group_can_be_made_it_says_why(tmp_path: Path) -> None:
    (tmp_path / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / f"{cgroups.PREFIX}{os.getpid()}-probe").write_text("in the way")  # mkdir fails here
    assert cgroups.unavailable(tmp_path) == (
        f"no cgroup can be made under {tmp_path} (File exists): the CPU-share measurement needs root and a "
        "writable cgroup v1 cpu hierarchy"
    )


@needs_cgroups
def test_a_command_runs_in_its_group_from_its_start_held_to_the_quota() -> None:
    with cgroups.QuotaGroup("test-quota", 0.1) as group:
        assert (group.path / "cpu.cfs_period_us").read_text().strip() == "100000"
        assert (group.path / "cpu.cfs_quota_us").read_text().strip() == "10000"
        finished = subprocess.run(
            group.argv([sys.executable, "-c", BUSY]), capture_output=True, text=True, check=True
        )
        assert finished.stdout.split(":", 2)[2].strip() == f"/{group.path.name}"
        periods, waited = group.throttled()
        assert periods > 0 and waited > 0  # 0.3 s of CPU does not fit in 10 ms per 100 ms
        path = group.path
    assert not path.exists()


@needs_cgroups
def test_the_group_and_what_is_in_it_go_when_its_owner_is_killed() -> None:
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "from bench.cgroups import QuotaGroup\n"
            "group = QuotaGroup('test-killed', 0.5)\n"
            "child = subprocess.Popen(group.argv(['sleep', '300']))\n"
            "print(group.path, child.pid, flush=True)\n"
            "time.sleep(300)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert owner.stdout is not None
    path_text, pid_text = owner.stdout.readline().split()
    path, pid = Path(path_text), int(pid_text)
    try:
        assert entered(path, pid)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert gone(path, pid)


@pytest.mark.slow
@pytest.mark.bench
def test_the_section_measures_every_command_on_every_share(moto_endpoint: str) -> None:
    backend = Backend("moto", moto_endpoint, "moto's threaded server (the tests')", has_kms=False)
    found = run(backend, rounds=1, warmup=0, cold_reps=1, renames=1)
    labels = [share.label for share in found.shares]
    if found.skipped:
        assert labels == [FULL]
        assert f"CPU quotas skipped: {found.skipped}. Only *full* was measured." in cpu_share_lines([found])
    else:
        assert labels == [FULL, *[f"{size:,} MB" for size in sorted(MEMORY_SIZES, reverse=True)]]
        smallest = found.shares[-1]
        assert smallest.throttled_periods > 0  # a cold start does not fit in its quota
        assert not list(cgroups.ROOT.glob(f"{cgroups.PREFIX}{os.getpid()}-*"))  # every group removed
    for share in found.shares:
        assert set(share.seconds) == {*COMMANDS, RENAME_DIR}
        assert share.cold is not None and share.cold.n == 1
    lines = cpu_share_lines([found])
    assert any(line.startswith("| view file | ") for line in lines)
