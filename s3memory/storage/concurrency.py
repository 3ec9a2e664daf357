"""Bounded concurrency for independent requests: one shared worker pool, contexts carried along.

``parallel`` keeps as many calls in flight as Little's law asks of S3's write rate per prefix
(``in_flight``): on a loopback endpoint, where the client's CPU rules, ``PARALLEL_REQUESTS``; where
a round trip is long, more, up to the sockets of the client's connection pool.

Every task runs in a copy of the submitting thread's ``contextvars`` context, so per-invocation state
kept in context variables (the Lambda handler's request tally, for one) follows the work to the
worker. Only leaf work goes to the pool (requests, never a wait on another pooled task), so the
workers cannot all be blocked waiting on each other.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from s3memory.clients import POOL_CONNECTIONS
from s3memory.errors import CommandError

PARALLEL_REQUESTS = 16
"""Calls of one ``parallel`` in flight at once before any has completed, and the fewest after."""
MAX_IN_FLIGHT = POOL_CONNECTIONS
"""The most calls of one ``parallel`` in flight at once: the connections of the S3 client's pool."""
WRITE_RATE = 3500
"""Writes per second S3 accepts for one prefix."""

_T = TypeVar("_T")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=PARALLEL_REQUESTS, thread_name_prefix="s3memory")
        return _pool


def _forget_pool_in_child() -> None:
    """In a forked child: the parent's workers did not come along (a task given to its pool would wait
    forever), and its lock may have been held; the child makes its own of both when first asked."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


@contextlib.contextmanager
def holding(variable: contextvars.ContextVar[_T | None], value: _T) -> Iterator[_T]:
    """``variable`` set to ``value`` while the block runs (in this context, and so in the workers it
    starts), then reset; yields ``value``."""
    token = variable.set(value)
    try:
        yield value
    finally:
        variable.reset(token)


def side(function: Callable[[], _T]) -> Future[_T]:
    """Start ``function`` on a shared worker, to overlap an independent request with the caller's."""
    return _shared_pool().submit(contextvars.copy_context().run, function)


def quietly(future: Future[_T] | None) -> None:
    """Wait for ``future`` whose answer is no longer needed; a refusal or storage failure is dropped."""
    if future is not None:
        with contextlib.suppress(CommandError):
            future.result()


def in_flight(fastest: float | None) -> int:
    """Calls to keep in flight when the fastest call completed so far took ``fastest`` seconds
    (None: none has): ``WRITE_RATE`` times ``fastest`` rounded up (Little's law: as many as one
    prefix's writes per second over the round trip, with no queue), within ``PARALLEL_REQUESTS``
    and ``MAX_IN_FLIGHT``. The fastest call, not the mean: it is the round trip, where a mean
    grows with the queueing of a busy server and would feed on itself."""
    wanted = PARALLEL_REQUESTS if fastest is None else math.ceil(WRITE_RATE * fastest)
    return min(MAX_IN_FLIGHT, max(PARALLEL_REQUESTS, wanted))


def parallel(
    function: Callable[[_T], object], items: Sequence[_T], clock: Callable[[], float] = time.perf_counter
) -> None:
    """Run ``function`` over ``items``, as many at a time as ``in_flight`` asks of the fastest
    call completed so far (timed by ``clock``); the first failure stops what has not started and
    is raised once the started calls have ended."""
    if len(items) <= 1:
        for item in items:
            function(item)
        return

    def timed(item: _T) -> float:
        started = clock()
        function(item)
        return clock() - started

    fastest: float | None = None
    failure: BaseException | None = None
    submitted = 0
    running: set[Future[float]] = set()
    with ThreadPoolExecutor(max_workers=min(MAX_IN_FLIGHT, len(items))) as pool:
        while True:
            while failure is None and submitted < len(items) and len(running) < in_flight(fastest):
                running.add(pool.submit(contextvars.copy_context().run, timed, items[submitted]))
                submitted += 1
            if not running:
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                error = future.exception()
                if error is not None:
                    failure = failure or error
                else:
                    seconds = future.result()
                    fastest = seconds if fastest is None else min(fastest, seconds)
    if failure is not None:
        raise failure
