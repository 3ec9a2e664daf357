"""Bounded concurrency for independent requests: one shared worker pool, contexts carried along.

Every task runs in a copy of the submitting thread's ``contextvars`` context, so per-invocation state
kept in context variables (the Lambda handler's request tally, for one) follows the work to the
worker. Only leaf work goes to the pool (requests, never a wait on another pooled task), so the
workers cannot all be blocked waiting on each other.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from s3memory.errors import CommandError

PARALLEL_REQUESTS = 16
"""Requests of one command in flight at once."""

_T = TypeVar("_T")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=PARALLEL_REQUESTS, thread_name_prefix="s3memory")
        return _pool


def side(function: Callable[[], _T]) -> Future[_T]:
    """Start ``function`` on a shared worker, to overlap an independent request with the caller's."""
    return _shared_pool().submit(contextvars.copy_context().run, function)


def quietly(future: Future[_T] | None) -> None:
    """Wait for ``future`` whose answer is no longer needed; a refusal or storage failure is dropped."""
    if future is not None:
        with contextlib.suppress(CommandError):
            future.result()


def parallel(function: Callable[[_T], object], items: Sequence[_T]) -> None:
    """Run ``function`` over ``items``, at most ``PARALLEL_REQUESTS`` at a time; the first failure
    cancels what has not started and is raised once the started calls have ended."""
    if len(items) <= 1:
        for item in items:
            function(item)
        return
    with ThreadPoolExecutor(max_workers=min(PARALLEL_REQUESTS, len(items))) as pool:
        futures = [pool.submit(contextvars.copy_context().run, function, item) for item in items]
        try:
            for future in futures:
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
