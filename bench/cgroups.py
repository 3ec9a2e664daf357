"""A share of one CPU for the processes the bench starts, as Lambda gives one: a cgroup v1 CPU quota.

``QuotaGroup`` makes a child of the cgroup v1 ``cpu`` hierarchy (``/sys/fs/cgroup/cpu``) whose
``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` is the share of one CPU its processes may use
together, threads included (the kernel's CFS bandwidth control: once they have used the quota of a
period they wait for the next). A command started with ``argv`` runs in it from its first
instruction: a shell writes its own process id to the group's ``cgroup.procs``, then ``exec``s it.

The group is removed however the bench ends. A watchdog process, in a session of its own (a signal
to the bench's process group does not reach it), holds the reading end of a pipe whose writing end
only the bench holds. It reads until end of file: when the bench closes the group, exits, or is
killed (even by SIGKILL), the kernel closes the pipe, and the watchdog kills what is still in the
group (only processes the bench started) and removes it.

Writing a cgroup needs root and a writable cgroup v1 ``cpu`` hierarchy; ``unavailable`` says why
not, for the section to print and skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/cpu")
PREFIX = "s3memory-bench-"
DEFAULT_PERIOD_US = 100_000
"""Linux's default CFS period (100 ms). Lambda does not publish the period of its CPU shares."""

WATCHDOG = r"""
import os, signal, sys, time
group = sys.argv[1]
while sys.stdin.buffer.read(65536):
    pass
deadline = time.monotonic() + 30
while True:
    try:
        with open(os.path.join(group, "cgroup.procs")) as handle:
            pids = [int(word) for word in handle.read().split()]
    except FileNotFoundError:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.rmdir(group)
        break
    except FileNotFoundError:
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"cgroup {group} still busy after 30 s; remove it with rmdir")
        time.sleep(0.05)
"""

ENTER = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
"""The shell that moves itself into the group (``$0``) and becomes the command."""


def unavailable(root: Path = ROOT) -> str:
    """Why no CPU quota group can be made here, or "" if one can."""
    if not (root / "cpu.cfs_quota_us").is_file():
        return f"no cgroup v1 cpu controller at {root} (cgroup v2 or no cgroup file system)"
    probe = root / f"{PREFIX}{os.getpid()}-probe"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as error:
        return (
            f"no cgroup can be made under {root} ({error.strerror}): the CPU-share measurement needs root "
            "and a writable cgroup v1 cpu hierarchy"
        )
    return ""


class QuotaGroup:
    """A cgroup whose processes share ``share`` of one CPU, removed on ``close`` or when the bench ends."""

    def __init__(
        self, name: str, share: float, period_us: int = DEFAULT_PERIOD_US, root: Path = ROOT
    ) -> None:
        if not 0 < share <= 64:
            raise ValueError(f"a CPU share must be above 0 and at most 64 CPUs, not {share}")
        self.share = share
        self.period_us = period_us
        self.quota_us = max(1000, round(share * period_us))
        self.path = root / f"{PREFIX}{os.getpid()}-{name}"
        self.path.mkdir()
        try:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-c", WATCHDOG, str(self.path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            (self.path / "cpu.cfs_period_us").write_text(f"{period_us}\n")
            (self.path / "cpu.cfs_quota_us").write_text(f"{self.quota_us}\n")
        except BaseException:
            self.close()
            raise

    def argv(self, command: list[str]) -> list[str]:
        """``command`` run inside the group from its start."""
        return ["/bin/sh", "-c", ENTER, str(self.path), *command]

    def throttled(self) -> tuple[int, float]:
        """Periods in which the group was throttled, and the seconds it waited (``cpu.stat``)."""
        stat = dict(
            line.split() for line in (self.path / "cpu.stat").read_text().splitlines() if line.strip()
        )
        return int(stat.get("nr_throttled", 0)), int(stat.get("throttled_time", 0)) / 1e9

    def close(self) -> None:
        """Kill what is left in the group and remove it (the watchdog does, and is waited for)."""
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is None:
            self.path.rmdir()
            return
        if watchdog.stdin is not None:
            watchdog.stdin.close()
        watchdog.wait(timeout=60)

    def __enter__(self) -> QuotaGroup:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
