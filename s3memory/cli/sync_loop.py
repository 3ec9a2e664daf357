"""The handler of ``s3memory sync`` (declared in ``cli.operator_commands``): one round, or a round
every ``--interval`` seconds until Ctrl-C or SIGTERM, each reported with its audit line, and how the
command stopped."""

from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from s3memory.cli.console import Console, Report, UsageError
from s3memory.errors import CommandError
from s3memory.sync.folder import FolderBusy, FolderRefused

if TYPE_CHECKING:
    from s3memory.ops.operations import Operations
    from s3memory.ops.sync import FolderSync


def run_sync(console: Console, operations: Operations) -> Report:
    """``s3memory sync``: one round with ``--once``, else rounds until stopped (``_sync_rounds``),
    SIGTERM taken as a request to stop (``_Termination``); a folder refused is a ``UsageError``."""
    arguments = console.arguments
    syncing = operations.syncing(
        arguments.user,
        arguments.directory,
        allow_deletes=arguments.allow_deletes,
        adopt=arguments.adopt,
        rehash=arguments.rehash,
        pull_only=arguments.pull_only,
    )
    try:
        with _Termination() as termination:
            if arguments.once:
                return _sync_round(console, syncing, termination)
            return _sync_rounds(console, syncing, termination)
    except FolderRefused as refused:
        raise UsageError(refused.reason) from None


class _Terminated(Exception):
    """SIGTERM between two rounds of ``sync``."""


class _Termination:
    """SIGTERM while ``sync`` runs, taken as a request to stop: during a round, it is noted (``asked``)
    and the round ends after the file in progress; while the command waits for the next round
    (``wait``), it ends the wait (``_Terminated``). The handler before is restored on exit. Off the
    main thread (a library's), no handler can be set: SIGTERM does what it did."""

    def __init__(self) -> None:
        self.requested = False
        self._waiting = False
        self._installed = False
        self._previous: Any = None

    def __enter__(self) -> _Termination:
        self._installed = threading.current_thread() is threading.main_thread()  # where one may be set
        if self._installed:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *_: object) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous or signal.SIG_DFL)

    def _handle(self, number: int, frame: object) -> None:
        self.requested = True
        if self._waiting:
            raise _Terminated

    def asked(self) -> bool:
        """True once SIGTERM came."""
        return self.requested

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``; ``_Terminated`` at once if SIGTERM came or comes meanwhile."""
        self._waiting = True
        try:
            if self.requested:
                raise _Terminated
            time.sleep(seconds)
        finally:
            self._waiting = False


def _sync_round(console: Console, syncing: FolderSync, termination: _Termination) -> Report:
    with console.progress("file") as progress:
        return Report.of(syncing.round(progress, termination.asked))


def _sync_rounds(console: Console, syncing: FolderSync, termination: _Termination) -> Report:
    """Rounds every ``--interval`` seconds, each printed with its audit line, until stopped. SIGTERM
    between rounds, or Ctrl-C, is a clean stop (exit 0); SIGTERM during a round ends it after the file
    in progress (journaled), also a clean stop; Ctrl-C during one exits 1 at once. Either way the next
    sync finishes the round cut off. A round that fails (the store unreachable, a memory still moving
    to format 2) or finds another sync working in the folder is reported (an error line, its audit
    line), and the next round tries again; a folder refused otherwise ends the command (exit 2)."""
    rounds = 0
    in_round = False
    try:
        while True:
            started = time.monotonic()
            in_round = True
            try:
                report = _sync_round(console, syncing, termination)
            except CommandError as error:  # the store's failure, or one a later round may not meet
                console.emit_error(error.message, time.monotonic() - started)
            except FolderBusy as busy:  # a sync --once in the folder: the next round may find it done
                console.emit_error(busy.reason, time.monotonic() - started)
            else:
                console.emit(report, time.monotonic() - started)
                if not report.complete:  # stopped by SIGTERM, after a file
                    line = f"stopped during round {rounds + 1:,} (SIGTERM): the next sync finishes it"
                    return _stopped(rounds, line, in_round=True)
            in_round = False
            rounds += 1
            termination.wait(max(0.0, console.arguments.interval - (time.monotonic() - started)))
    except _Terminated:
        return _stopped(rounds, f"stopped after {_rounds(rounds)} (SIGTERM)", in_round=False)
    except KeyboardInterrupt:
        if in_round:
            return _stopped(
                rounds,
                f"stopped during round {rounds + 1:,}: the next sync finishes it",
                in_round=True,
                complete=False,
            )
        return _stopped(rounds, f"stopped after {_rounds(rounds)}", in_round=False)


def _rounds(count: int) -> str:
    return f"{count:,} round" if count == 1 else f"{count:,} rounds"


def _stopped(rounds: int, line: str, *, in_round: bool, complete: bool = True) -> Report:
    """The last report of ``sync`` without ``--once``: the rounds it completed and how it stopped."""
    return Report({"rounds": rounds, "interrupted_round": in_round}, [line], {"rounds": rounds}, complete)
