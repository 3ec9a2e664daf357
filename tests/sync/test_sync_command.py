"""``s3memory sync --user ID DIR``: one round with ``--once`` (exit 0 whatever it reports), rounds every
``--interval`` seconds otherwise, each printed with one audit line of counts (no path), Ctrl-C between
rounds a clean stop; a folder of another memory and a bad ``--interval`` refused (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from s3memory.errors import StorageError
from s3memory.ops.operations import Operations
from s3memory.ops.sync import FolderSync
from s3memory.sync.folder import SyncFolder
from s3memory.sync.round import _Round
from tests.conftest import STORAGE_FORMAT
from tests.support.console import audit
from tests.support.console import run as command
from tests.support.synced import make_operations, tree, write

pytestmark = [pytest.mark.takes_format]


@pytest.fixture
def operations(s3: Any) -> Operations:
    return make_operations(s3, STORAGE_FORMAT)


def audits(err: str) -> list[dict[str, Any]]:
    """Every audit line among what the command wrote to standard error."""
    return [json.loads(line) for line in err.splitlines() if line.startswith('{"')]


def test_once_runs_one_round_and_audits_counts_only(operations: Operations, tmp_path: Path) -> None:
    write(tmp_path, "secret-name.md", "text\n")
    status, out, err = command(operations, "sync", "--user", "alice", str(tmp_path), "--once")
    assert status == 0
    assert out.splitlines() == [
        "took this folder for the memory (its first round)",
        "pushed /memories/secret-name.md",
        "1 pushed, 0 pulled, 0 deleted here, 0 deleted in the memory, 0 conflicts, 0 left alone, "
        "0 withheld, 0 unchanged",
    ]
    record = audit(err)
    assert (record["command"], record["status"], record["pushed"], record["unchanged"]) == ("sync", 0, 1, 0)
    assert "secret-name" not in err
    status, out, _ = command(operations, "sync", "--user", "alice", str(tmp_path), "--once", "--json")
    assert status == 0 and json.loads(out)["unchanged"] == 1


def test_a_round_that_reports_problems_still_exits_0(operations: Operations, tmp_path: Path) -> None:
    write(tmp_path, "notes.md", "n\n")
    command(operations, "sync", "--user", "alice", str(tmp_path), "--once")
    (tmp_path / "link.md").symlink_to(tmp_path / "notes.md")
    status, out, _ = command(operations, "sync", "--user", "alice", str(tmp_path), "--once")
    assert status == 0 and "left alone /memories/link.md: a symbolic link" in out


def test_a_folder_of_another_memory_is_refused_with_exit_2(operations: Operations, tmp_path: Path) -> None:
    write(tmp_path, "notes.md", "n\n")
    command(operations, "sync", "--user", "alice", str(tmp_path), "--once")
    status, out, err = command(operations, "sync", "--user", "bob", str(tmp_path), "--once")
    assert (status, out) == (2, "")
    assert err.splitlines()[0].startswith(
        "s3memory sync: this folder is synced with another memory of this store"
    )


@pytest.mark.parametrize("interval", ["4", "1.5", "86401", "x"])
def test_an_interval_under_5_seconds_is_refused(
    operations: Operations, tmp_path: Path, interval: str
) -> None:
    status, _, err = command(operations, "sync", "--user", "alice", str(tmp_path), "--interval", interval)
    assert status == 2
    assert f"a whole number of seconds from 5 to 86,400, not '{interval}'" in err


class Interrupted:
    """``time.sleep`` that lets ``rounds`` sleeps pass (recording them) and is interrupted at the next."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.slept: list[float] = []

    def __call__(self, seconds: float) -> None:
        if len(self.slept) == self.rounds:
            raise KeyboardInterrupt
        self.slept.append(seconds)


def test_rounds_repeat_each_audited_until_ctrl_c_between_rounds(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "folder"
    write(local, "one.md", "1\n")
    sleep = Interrupted(rounds=2)
    monkeypatch.setattr(time, "sleep", sleep)
    log = tmp_path / "audit.log"
    status, out, err = command(
        operations, "sync", "--user", "alice", str(local), "--interval", "7", "--audit-log", str(log)
    )
    assert status == 0
    assert out.splitlines()[-1] == "stopped after 3 rounds"
    assert len(sleep.slept) == 2 and all(0 < seconds <= 7 for seconds in sleep.slept)
    records = audits(err)
    assert [record["pushed"] for record in records[:3]] == [1, 0, 0]
    assert [record.get("rounds") for record in records] == [None, None, None, 3]
    assert [json.loads(line) for line in log.read_text().splitlines()] == records
    assert tree(local) == {"/memories/one.md": b"1\n"}


def test_ctrl_c_during_a_round_stops_with_exit_1(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: FolderSync, *_: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(FolderSync, "round", interrupted)
    status, out, _ = command(operations, "sync", "--user", "alice", str(tmp_path))
    assert (status, out) == (1, "stopped during round 1: the next sync finishes it\n")


def test_a_round_the_store_fails_is_reported_and_the_next_goes_on(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = FolderSync.round
    calls: list[int] = []

    def failing_once(self: FolderSync, *arguments: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise StorageError("Error: S3 was unreachable.")
        return original(self, *arguments)

    monkeypatch.setattr(FolderSync, "round", failing_once)
    monkeypatch.setattr(time, "sleep", Interrupted(rounds=1))
    status, _, err = command(operations, "sync", "--user", "alice", str(tmp_path))
    assert status == 0 and len(calls) == 2
    assert "s3memory sync: Error: S3 was unreachable." in err.splitlines()
    assert [record["status"] for record in audits(err)] == [1, 0, 0]


def terminating(original: Callable[..., Any], after: int) -> Callable[..., Any]:
    """``original``, but ``os.kill(own pid, SIGTERM)`` after its ``after``-th call, as a service manager
    stopping the command then would."""
    calls: list[int] = []

    def call(*arguments: Any) -> Any:
        result = original(*arguments)
        calls.append(1)
        if len(calls) == after:
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    return call


@pytest.fixture
def sigterm_not_fatal() -> Iterator[None]:
    """SIGTERM raises in the test rather than ending the test run, where the command does not take it."""

    def unhandled(number: int, frame: object) -> None:
        raise AssertionError("SIGTERM was not handled by the command")

    previous = signal.signal(signal.SIGTERM, unhandled)
    yield
    assert signal.getsignal(signal.SIGTERM) is unhandled  # the command put the handler back
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.usefixtures("sigterm_not_fatal")
def test_sigterm_during_a_round_stops_after_the_file_in_progress_with_exit_0(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.md", "b.md", "c.md"):
        write(tmp_path, name, f"{name}\n")
    monkeypatch.setattr(_Round, "run", terminating(_Round.run, after=1))
    status, out, err = command(operations, "sync", "--user", "alice", str(tmp_path))
    assert status == 0
    assert out.splitlines() == [
        "took this folder for the memory (its first round)",
        "pushed /memories/a.md",
        "stopped (SIGTERM) after the file in progress, before the round's end: the next round finishes it",
        "1 pushed, 0 pulled, 0 deleted here, 0 deleted in the memory, 0 conflicts, 0 left alone, "
        "0 withheld, 0 unchanged",
        "stopped during round 1 (SIGTERM): the next sync finishes it",
    ]
    assert [record["status"] for record in audits(err)] == [1, 0]
    monkeypatch.undo()
    status, out, _ = command(operations, "sync", "--user", "alice", str(tmp_path), "--once")
    assert (status, out.splitlines()[:2]) == (0, ["pushed /memories/b.md", "pushed /memories/c.md"])


@pytest.mark.usefixtures("sigterm_not_fatal")
def test_sigterm_between_rounds_stops_with_exit_0(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", terminating(lambda seconds: None, after=1))
    status, out, _ = command(operations, "sync", "--user", "alice", str(tmp_path))
    assert (status, out.splitlines()[-1]) == (0, "stopped after 1 round (SIGTERM)")


@pytest.mark.usefixtures("sigterm_not_fatal")
def test_sigterm_during_a_once_round_stops_after_the_file_in_progress_with_exit_1(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.md", "b.md"):
        write(tmp_path, name, f"{name}\n")
    monkeypatch.setattr(_Round, "run", terminating(_Round.run, after=1))
    status, out, _ = command(operations, "sync", "--user", "alice", str(tmp_path), "--once")
    assert status == 1
    assert out.splitlines()[1:3] == [
        "pushed /memories/a.md",
        "stopped (SIGTERM) after the file in progress, before the round's end: the next round finishes it",
    ]


def test_a_round_that_finds_another_sync_in_the_folder_is_reported_and_the_next_goes_on(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "notes.md", "n\n")
    others = [SyncFolder(tmp_path)]  # another s3memory sync --once, working in the folder

    def sleep(seconds: float) -> None:
        if not others:
            raise KeyboardInterrupt
        others.pop().close()  # it finished

    monkeypatch.setattr(time, "sleep", sleep)
    status, out, err = command(operations, "sync", "--user", "alice", str(tmp_path))
    assert status == 0
    assert (
        f"s3memory sync: another s3memory sync is working in {tmp_path}; let it finish (or stop it), "
        "then sync again"
    ) in err.splitlines()
    assert [record["status"] for record in audits(err)] == [1, 0, 0]
    assert "pushed /memories/notes.md" in out.splitlines()


def test_a_folder_is_made_only_where_its_parent_is(operations: Operations, tmp_path: Path) -> None:
    mistyped = tmp_path / "projcets" / "memory"
    status, out, err = command(operations, "sync", "--user", "alice", str(mistyped), "--once")
    assert (status, out) == (2, "")
    assert err.splitlines()[0] == (
        f"s3memory sync: {mistyped.parent} does not exist, and sync makes the folder it is given but not "
        f"the folders above it (is the path mistyped?): make {mistyped.parent} first, or give another "
        "folder; nothing was made"
    )
    assert not mistyped.parent.exists()
    status, _, _ = command(operations, "sync", "--user", "alice", str(tmp_path / "memory"), "--once")
    assert status == 0 and stat.S_IMODE((tmp_path / "memory").stat().st_mode) == 0o700
