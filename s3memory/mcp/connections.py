"""The connections of ``s3memory mcp --transport http``: uvicorn's configuration with the limits of
``limits.EdgeLimits``, and what uvicorn lacks.

uvicorn gives: a bound on a request head's size (``h11_max_incomplete_event_size``), an idle
connection's end after an answer (``timeout_keep_alive``), the accept ``backlog``, and it stops
reading while a request is answered. It has no deadline for a request head that is never finished (a
connection that sends half its headers, or nothing, is held forever), none for a client that does not
read what was sent (the answer waits for it forever, and the request it answers stays in flight; a
connection closed with data unsent is held until the data is taken), no bound on what a pipelining
client sent ahead of the request answered (what one read brought in, up to 256 KiB, is held), and no
cap on open connections: its ``limit_concurrency`` counts open connections when a request arrives and
answers ``503`` beyond them, so idle connections would turn every real request away.
``EdgeProtocol`` (its h11 protocol, always used, even where httptools is installed) adds them:

- a head not whole within ``header_seconds`` of the connection's opening or of the previous answer is
  ``408`` and the connection closed;
- writing pauses as soon as the client has not taken all that was sent (a write buffer limit of 0)
  and resumes once it has; paused for ``send_seconds``, the connection is aborted, which ends the
  answer's wait (its request leaves flight);
- more than ``max_ahead_bytes`` held beyond the request being answered aborts the connection;
- beyond ``max_connections``, the connection waiting longest on its client (for its head, or paused)
  is closed, so that a new one is served.

``raise_open_file_limit`` lifts the process's soft open-file limit to its hard one at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import struct
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


RESET_ON_CLOSE = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on, for no time: a close resets the connection, and the system drops what it held."""
LATE_HEAD_RESPONSE = _late_head()
"""The ``408`` of a head not whole in time, written as is: h11 answers only a request it has read."""


class EdgeProtocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines on each request head and on what the client is sent, a
    bound on what it sends ahead, and a cap on open connections (see the module's docstring).
    ``serving`` makes the subclass one server uses."""

    limits: ClassVar[EdgeLimits]
    waiting: ClassVar[dict[EdgeProtocol, None]]
    """The server's connections waiting on their client, for a request head or to take what was sent,
    the longest waiting first: those the cap closes first."""

    _head_timer: asyncio.TimerHandle | None = None
    _send_timer: asyncio.TimerHandle | None = None

    @classmethod
    def serving(cls, limits: EdgeLimits) -> type[EdgeProtocol]:
        """The protocol class of one server with ``limits`` (its own ``waiting``)."""
        return cast("type[EdgeProtocol]", type("EdgeProtocol", (cls,), {"limits": limits, "waiting": {}}))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        transport.set_write_buffer_limits(high=0)  # paused while anything sent is not taken
        self._watch_head()
        if len(self.connections) > self.limits.max_connections:
            next(iter(self.waiting), self)._evict()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._ahead() > self.limits.max_ahead_bytes:
            self._abort()
        else:
            self._watch_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_head()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self.limits.send_seconds, self._abort)
            self._wait()

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None
            self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _ahead(self) -> int:
        """The bytes held beyond the request being answered (none while no request is whole)."""
        if self.conn.their_state not in (h11.DONE, h11.MUST_CLOSE):
            return 0
        return len(self.conn.trailing_data[0])

    def _watch_head(self) -> None:
        """Time the head while the client owes one (h11's ``IDLE``: no request begun), else not."""
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            self._stop_head_timer()
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.header_seconds, self._head_late)
        self._wait()

    def _wait(self) -> None:
        """In ``waiting`` (where it was, if it was) while a head or the client's reading is timed."""
        if self._head_timer is None and self._send_timer is None:
            self.waiting.pop(self, None)
        else:
            self.waiting.setdefault(self, None)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _stop_waiting(self) -> None:
        self._stop_head_timer()
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None
        self.waiting.pop(self, None)

    def _evict(self) -> None:
        """Close for a new connection: paused, at once; else as a late head."""
        if self._send_timer is not None:
            self._abort()
        else:
            self._head_late()

    def _head_late(self) -> None:
        self._stop_head_timer()
        self._wait()
        if not self.transport.is_closing():
            self.transport.write(LATE_HEAD_RESPONSE)
            self.transport.close()

    def _abort(self) -> None:
        """Close at once, dropping what was not sent or read, the system's buffers too (a reset):
        the answer under way ends."""
        self._stop_waiting()
        connection = self.transport.get_extra_info("socket")
        if connection is not None:
            with contextlib.suppress(OSError):  # closed already
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
        self.transport.abort()


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
