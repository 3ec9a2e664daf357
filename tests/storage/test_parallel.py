"""``parallel``: the in-flight rule (Little's law over the fastest call), and that ``parallel``
follows it, stops at the first failure and carries contexts. Call durations come from an injected
clock, so no test depends on how fast this machine is."""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable

import pytest

from s3memory.storage import concurrency
from s3memory.storage.concurrency import MAX_IN_FLIGHT, PARALLEL_REQUESTS, in_flight, parallel

WAIT = 30.0
"""Seconds a fake call waits for its companions before the test fails (never reached when it passes)."""


@pytest.mark.parametrize(
    ("fastest", "target"),
    [
        (None, PARALLEL_REQUESTS),  # nothing completed yet
        (0.0005, PARALLEL_REQUESTS),  # loopback: 2 wanted, the floor
        (0.004, PARALLEL_REQUESTS),  # 14 wanted
        (0.005, 18),  # 17.5 rounded up
        (0.01, 35),  # a 10 ms round trip
        (0.018, 63),
        (0.02, MAX_IN_FLIGHT),  # 70 wanted: the connection pool's bound
        (0.05, MAX_IN_FLIGHT),
    ],
)
def test_the_target_is_the_write_rate_times_the_fastest_call_within_its_bounds(
    fastest: float | None, target: int
) -> None:
    assert in_flight(fastest) == target


def test_the_bounds_are_read_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Serial means serial: with both bounds at 1 no round trip raises the target."""
    monkeypatch.setattr(concurrency, "PARALLEL_REQUESTS", 1)
    monkeypatch.setattr(concurrency, "MAX_IN_FLIGHT", 1)
    assert in_flight(None) == in_flight(0.05) == 1


def stepping_clock(step: float) -> Callable[[], float]:
    """A clock that moves ``step`` on each reading, on each thread by itself: every call that reads
    it once before and once after takes exactly ``step``."""
    local = threading.local()

    def clock() -> float:
        local.now = getattr(local, "now", 0.0) + step
        return float(local.now)

    return clock


def peak_in_flight(call_seconds: float, held: int) -> int:
    """The most calls ``parallel`` had running at once over ``PARALLEL_REQUESTS`` calls that return
    at once and then 4 times ``held`` calls that each wait until ``held`` of them are running, every call
    taking ``call_seconds`` by the clock."""
    lock = threading.Lock()
    running = 0
    peak = 0
    gate = threading.Barrier(held)

    def call(index: int) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            if index >= PARALLEL_REQUESTS:
                gate.wait(timeout=WAIT)
        finally:
            with lock:
                running -= 1

    parallel(call, range(PARALLEL_REQUESTS + 4 * held), clock=stepping_clock(call_seconds))
    return peak


def test_long_round_trips_put_more_calls_in_flight() -> None:
    """Calls of 50 ms: once the first have completed, ``MAX_IN_FLIGHT`` run at once."""
    assert peak_in_flight(0.05, MAX_IN_FLIGHT) == MAX_IN_FLIGHT


def test_short_round_trips_keep_the_floor() -> None:
    """Calls of 1 ms (3.5 wanted): never more than ``PARALLEL_REQUESTS`` at once."""
    assert peak_in_flight(0.001, PARALLEL_REQUESTS) == PARALLEL_REQUESTS


def test_the_first_failure_stops_what_has_not_started_and_is_raised_once_the_started_calls_end() -> None:
    started: list[int] = []
    ended: list[int] = []
    lock = threading.Lock()
    refused = threading.Event()

    def call(index: int) -> None:
        with lock:
            started.append(index)
        if index == 0:
            refused.set()
            raise ValueError("refused")
        refused.wait(timeout=WAIT)  # no call ends before the first one has failed
        with lock:
            ended.append(index)

    with pytest.raises(ValueError, match="refused"):
        parallel(call, range(1000), clock=stepping_clock(0.001))
    assert len(started) < 1000
    assert sorted(ended) == sorted(set(started) - {0})


def test_calls_run_in_the_callers_context_and_one_item_runs_inline() -> None:
    name: contextvars.ContextVar[str] = contextvars.ContextVar("name")
    name.set("caller")
    seen: list[tuple[str, str]] = []
    parallel(lambda _item: seen.append((name.get(), threading.current_thread().name)), [1, 2, 3])
    assert [value for value, _thread in seen] == ["caller"] * 3
    seen.clear()
    parallel(lambda _item: seen.append((name.get(), threading.current_thread().name)), [1])
    assert seen == [("caller", threading.current_thread().name)]


def test_a_process_forked_after_the_pool_was_used_gets_a_pool_of_its_own() -> None:
    """A server that forks its workers after the library has sent a side request (gunicorn's
    ``--preload``, a ``fork`` multiprocessing pool, mutmut) gives each child a pool whose threads did
    not survive the fork: before, a side request there waited forever."""
    assert concurrency.side(lambda: "parent").result(timeout=WAIT) == "parent"
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        try:
            answered = concurrency.side(lambda: "child").result(timeout=5)
        except BaseException:
            os._exit(3)
        os._exit(0 if answered == "child" else 4)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
