"""The connections of ``s3memory mcp --transport http``: uvicorn's configuration with the limits of
``limits.EdgeLimits``, and what uvicorn lacks.

uvicorn gives: a bound on a request head's size (``h11_max_incomplete_event_size``), an idle
connection's end after an answer (``timeout_keep_alive``), the accept ``backlog``. It has no deadline
for a request head that is never finished (a connection that sends half its headers, or nothing, is
held forever) and no cap on open connections: its ``limit_concurrency`` counts open connections
when a request arrives and answers ``503`` beyond them, so idle connections would turn every real
request away. ``EdgeProtocol`` (its h11 protocol, always used, even where httptools is installed)
adds both: a head not whole within ``header_seconds`` of the connection's opening or of the previous
answer is ``408`` and the connection closed; beyond ``max_connections``, the connection waiting
longest for its head is closed, so that a new one is served. ``raise_open_file_limit`` lifts the
process's soft open-file limit to its hard one at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from dataclasses import replace
from typing import Any, ClassVar, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from s3memory.mcp.limits import LATE_HEAD, EdgeLimits, refusal


def raise_open_file_limit() -> int:
    """Lift the soft limit on open files (``RLIMIT_NOFILE``) to the hard one; the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        # macOS refuses an unlimited hard limit as the soft one: the soft limit stays.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def within_open_files(limits: EdgeLimits, open_files: int) -> EdgeLimits:
    """``limits`` with at most three quarters of ``open_files`` as connections: the rest is for the
    S3 client's connections, threads and files."""
    return replace(limits, max_connections=min(limits.max_connections, open_files * 3 // 4))


def _late_head() -> bytes:
    headers, body = refusal(408, LATE_HEAD)
    lines = [b"HTTP/1.1 408 Request Timeout", *(name + b": " + value for name, value in headers)]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


LATE_HEAD_RESPONSE = _late_head()
"""The ``408`` of a head not whole in time, written as is: h11 answers only a request it has read."""


class EdgeProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head and a cap on open connections
    (see the module's docstring). ``serving`` makes the subclass one server uses."""

    limits: ClassVar[EdgeLimits]
    waiting: ClassVar[dict[EdgeProtocol, None]]
    """The server's connections waiting for a request head, the longest waiting first."""

    _head_timer: asyncio.TimerHandle | None = None

    @classmethod
    def serving(cls, limits: EdgeLimits) -> type[EdgeProtocol]:
        """The protocol class of one server with ``limits`` (its own ``waiting``)."""
        return cast("type[EdgeProtocol]", type("EdgeProtocol", (cls,), {"limits": limits, "waiting": {}}))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_head()
        if len(self.connections) > self.limits.max_connections:
            next(iter(self.waiting), self)._head_late()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        """Time the head while the client owes one (h11's ``IDLE``: no request begun), else not."""
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            self._stop_watching()
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.header_seconds, self._head_late)
            self.waiting[self] = None

    def _stop_watching(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.waiting.pop(self, None)

    def _head_late(self) -> None:
        self._stop_watching()
        if not self.transport.is_closing():
            self.transport.write(LATE_HEAD_RESPONSE)
            self.transport.close()


def uvicorn_options(limits: EdgeLimits) -> dict[str, Any]:
    """The options of ``uvicorn.run`` (or ``uvicorn.Config``) that serve with ``limits``."""
    return dict(
        http=EdgeProtocol.serving(limits),
        ws="none",
        timeout_keep_alive=limits.keep_alive_seconds,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        backlog=limits.backlog,
        access_log=False,
        log_level="warning",
        lifespan="on",
    )
