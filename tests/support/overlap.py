"""Proof that a command's requests are in flight together."""

from __future__ import annotations

import threading
from typing import Any


class InFlightTogether:
    """Proof that requests overlap: the first ``count`` requests of ``operations`` a client sends
    are each held (in botocore's ``request-created`` hook) until all of them have been sent.

    Requests sent one after another can never all be sent at once: the first is held until the
    barrier gives up (after ``timeout`` seconds, a deadlock guard, not a timing), and the command
    then fails with ``threading.BrokenBarrierError``.
    """

    def __init__(self, client: Any, count: int, *operations: str, timeout: float = 10.0) -> None:
        self._barrier = threading.Barrier(count, timeout=timeout)
        self._count = count
        self._lock = threading.Lock()
        self._client = client
        self._events = [f"request-created.s3.{operation}" for operation in operations]
        self.held: list[str] = []

    def __enter__(self) -> InFlightTogether:
        for event in self._events:
            self._client.meta.events.register(event, self._hold)
        return self

    def __exit__(self, *_: object) -> None:
        for event in self._events:
            self._client.meta.events.unregister(event, self._hold)

    def _hold(self, operation_name: str, **_: Any) -> None:
        with self._lock:
            if len(self.held) >= self._count:
                return
            self.held.append(operation_name)
        self._barrier.wait()

    @property
    def met(self) -> bool:
        return len(self.held) == self._count and not self._barrier.broken
