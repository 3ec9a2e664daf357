"""What one request, one user and the whole process may hold of the HTTP MCP server
(``s3memory mcp --transport http``), so that a stranger on the network cannot take it down: the limits
(``EdgeLimits``) and the two ASGI layers that enforce those of the app.

- ``EdgeGuard``, in front of every route: a declared body beyond the bound is ``413`` before anything
  is read, and an answer given before the request's body was read closes the connection (a refused
  client cannot go on sending).
- ``Admission``, in front of ``/mcp`` once the token is verified and the user known: a request
  beyond the user's in-flight cap is ``429``, beyond the process's ``503`` (a request without a
  valid token never counts, so a stranger cannot fill either); then the body is read, ``413`` as
  soon as it grows past the bound, ``408`` when it is not all there within the body deadline, and
  handed to the SDK only once whole.

Refusals are a short JSON body (``error_description``) with ``Connection: close``, ``Retry-After``
where waiting helps; they name no setting. The connections themselves (the head's deadline, the send
deadline, the bound on what is sent ahead, the cap on open connections, the open-file limit) are
uvicorn's, in ``connections.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from starlette.datastructures import Headers

from s3memory.memory import DEFAULT_MAX_FILE_BYTES

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

BODY_SLACK_BYTES = 64 * 1024
"""What a tool call's body carries besides its texts: the JSON-RPC envelope, the path, the command."""
RETRY_AFTER_SECONDS = 1
CLOSE = (b"connection", b"close")

LATE_HEAD = "Error: The request's headers did not arrive in time. Send the request again."
LATE_BODY = "Error: The request's body did not arrive in time. Nothing was changed; send the request again."
TOO_MANY_OF_USER = (
    "Error: Too many requests of this user are in progress. Nothing was changed; retry when one has "
    "been answered."
)
BUSY = "Error: The server is busy. Nothing was changed; retry in a moment."


def too_large(bound: int) -> str:
    return (
        f"Error: The request's body is larger than this server accepts ({bound:,} bytes). Nothing was "
        "changed."
    )


def body_bound(max_file_bytes: int) -> int:
    """The largest body a tool call the memory could accept needs: a ``str_replace`` of a whole
    largest file by another (two texts of ``max_file_bytes``), each byte escaped to two in JSON
    (a quote, a backslash, a newline), and the rest of the message."""
    return 4 * max_file_bytes + BODY_SLACK_BYTES


@dataclass(frozen=True)
class EdgeLimits:
    """The limits of the HTTP MCP server; the defaults are what ``s3memory mcp --transport http``
    serves with (``docs/mcp.md``, "What it withstands alone")."""

    header_seconds: float = 10.0
    """A request's head must be whole within this of its connection's opening, or of the previous
    answer on it; else ``408`` and the connection is closed."""
    body_seconds: float = 30.0
    """A request's body must be whole within this of its admission; else ``408``, closed."""
    max_body_bytes: int = body_bound(DEFAULT_MAX_FILE_BYTES)
    """The largest body (``body_bound`` of the largest file); a larger one is ``413``, never buffered."""
    send_seconds: float = 30.0
    """What the server sent must be taken by the client within this of the server's socket buffer
    filling; else the connection is closed at once, without an answer (the request it was answering
    ends, its place in flight freed)."""
    max_ahead_bytes: int = 16 * 1024
    """What a client may send ahead of the request being answered (HTTP pipelining) that the server
    holds; beyond it the connection is closed at once, without an answer."""
    max_connections: int = 4096
    """Open connections; beyond it the one waiting longest on its client, for a head (``408``) or to
    take what was sent (closed at once), is closed. At start-up, at most three quarters of the
    open-file limit."""
    max_in_flight: int = 64
    """Requests admitted (their token verified) and not yet answered, all users together; beyond it
    ``503``."""
    max_in_flight_per_user: int = 8
    """Requests of one user (a token's subject; the one user of ``--no-auth``) admitted and not yet
    answered; beyond it ``429``."""
    keep_alive_seconds: int = 5
    """An idle connection is closed this long after its last answer (uvicorn's ``timeout_keep_alive``)."""
    max_head_bytes: int = 16 * 1024
    """The largest request head (uvicorn's ``h11_max_incomplete_event_size``); a larger one is ``400``."""
    backlog: int = 2048
    """Connections the kernel queues before they are accepted (uvicorn's ``backlog``)."""


DEFAULT_LIMITS = EdgeLimits()


def refusal(
    status: int, message: str, *, retry_after: int | None = None
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body of a refusal that closes the connection."""
    body = json.dumps({"error_description": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), CLOSE]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    return headers, body


async def refuse(send: Send, status: int, message: str, *, retry_after: int | None = None) -> None:
    headers, body = refusal(status, message, retry_after=retry_after)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _declared_length(headers: Headers) -> int | None:
    """The body's declared length (h11 has refused a head whose length is no number)."""
    value = headers.get("content-length")
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


class EdgeGuard:
    """The ASGI middleware in front of every route (see the module's docstring)."""

    def __init__(self, app: ASGIApp, limits: EdgeLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = _declared_length(headers)
        if declared is not None and declared > self.limits.max_body_bytes:
            await refuse(send, 413, too_large(self.limits.max_body_bytes))
            return
        body_read = declared == 0 or (declared is None and "transfer-encoding" not in headers)

        async def tracked() -> Message:
            nonlocal body_read
            message = await receive()
            body_read = body_read or message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def closing(message: Message) -> None:
            headers = message.get("headers", [])
            if message["type"] == "http.response.start" and not body_read and CLOSE not in headers:
                message = {**message, "headers": [*headers, CLOSE]}
            await send(message)

        await self.app(scope, tracked, closing)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Admission:
    """The ASGI app in front of ``/mcp`` once ``user_of()`` names the request's verified user (see
    the module's docstring)."""

    def __init__(self, app: ASGIApp, limits: EdgeLimits, user_of: Callable[[], str]) -> None:
        self.app = app
        self.limits = limits
        self.user_of = user_of
        self.in_flight: dict[str, int] = {}
        """Each user's requests admitted and not yet answered (no entry for none)."""
        self.all_in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = self.user_of()
        held = self.in_flight.get(user, 0)
        if held >= self.limits.max_in_flight_per_user:
            await refuse(send, 429, TOO_MANY_OF_USER, retry_after=RETRY_AFTER_SECONDS)
            return
        if self.all_in_flight >= self.limits.max_in_flight:
            await refuse(send, 503, BUSY, retry_after=RETRY_AFTER_SECONDS)
            return
        self.in_flight[user] = held + 1
        self.all_in_flight += 1
        try:
            try:
                read = await self._body(receive)
            except _Refused as refused:
                await refuse(send, refused.status, refused.message)
                return
            if read is None:
                return  # the client went away: nobody to answer
            await self.app(scope, read, send)
        finally:
            self.all_in_flight -= 1
            held = self.in_flight.pop(user) - 1
            if held:
                self.in_flight[user] = held

    async def _body(self, receive: Receive) -> Receive | None:
        """``receive`` that gives the whole body, read, as its first message; None when the client
        disconnected first."""
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.limits.body_seconds):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.limits.max_body_bytes:
                    raise _Refused(413, too_large(self.limits.max_body_bytes))
                chunks.append(chunk)
                if not message.get("more_body", False):
                    whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                    return _replay(whole, receive)
        raise _Refused(408, LATE_BODY)


def _replay(whole: Message, receive: Receive) -> Receive:
    """``receive`` with the body read already given first."""
    pending = [whole]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
