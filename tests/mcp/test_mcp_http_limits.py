"""``s3memory mcp --transport http`` against a stranger on the network (issue 37, E1 and E2): each limit
of ``s3memory/mcp/limits.py`` and ``connections.py`` met by raw sockets on loopback.

Each server is the app the command serves, on uvicorn with the command's options (``served``, on a
daemon thread: it ends with the test run), with short deadlines and small caps so that a test waits
seconds, not minutes. A test never times the server: it waits, with a generous margin, for the
answer or the close the limit promises. The limits' defaults, and what they hold against thousands
of connections, are measured by ``python -m bench.edge_load`` (``docs/mcp.md``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import resource
import selectors
import socket
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from s3memory.edge.answers import answer
from s3memory.mcp.connections import raise_open_file_limit, within_open_files
from s3memory.mcp.limits import DEFAULT_LIMITS, EdgeLimits, body_bound
from tests.mcp.test_mcp_http import authenticated_app, served
from tests.support.issuer import Issuer, loopback_issuer
from tests.support.mcp_messages import MCP_HEADERS, tools_call
from tests.support.mcp_servers import (
    AWS_TEST_ENVIRONMENT,
    directory,
    http_command,
    library,
    store_environment_named,
)

BUCKET = "mcp-http-limits-test-memory"
WAIT_SECONDS = 30.0
"""How long a test waits for an answer or a close the server owes: far beyond any deadline here."""
SHORT = replace(DEFAULT_LIMITS, header_seconds=1.0, body_seconds=1.0)
HELD = replace(
    DEFAULT_LIMITS, header_seconds=60.0, body_seconds=60.0, send_seconds=60.0, max_ahead_bytes=1 << 30
)
"""Deadlines and a bound on what is sent ahead that no test reaches: what a test holds stays held."""
ASKED = 1000
"""Requests of the resource's metadata (about 80 bytes, each answered in about 330) sent at once
(pipelined) by a client that does not read the answers: they fill every buffer on the way, the
server's own too."""
VIEWS = 30
"""Views of a 16,000-character file sent at once (pipelined) by a client that does not read them:
the same."""

LATE_HEAD = {
    "error_description": "Error: The request's headers did not arrive in time. Send the request again."
}
LATE_BODY = {
    "error_description": "Error: The request's body did not arrive in time. Nothing was changed; send the "
    "request again."
}


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with loopback_issuer() as served_issuer:
        yield served_issuer


@pytest.fixture(scope="module")
def environment(moto_endpoint_with_bucket: str, issuer: Issuer) -> dict[str, str]:
    return {
        **store_environment_named(moto_endpoint_with_bucket, BUCKET, "mcp-http-limits"),
        **issuer.environ(),
    }


@contextlib.contextmanager
def server(environment: dict[str, str], limits: EdgeLimits) -> Iterator[str]:
    with served(authenticated_app(environment, limits), limits) as url:
        yield url


# -- speaking HTTP by hand -------------------------------------------------------------------------


def connect(url: str) -> socket.socket:
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    connection = socket.create_connection((parts.hostname, parts.port), timeout=WAIT_SECONDS)
    return connection


def head(url: str, token: str | None, **headers: str | int) -> bytes:
    """The head of a POST to ``url``: the MCP headers, the token, and ``headers`` (``_`` for ``-``)."""
    fields = {
        "host": urllib.parse.urlsplit(url).netloc,
        "content-type": "application/json",
        **MCP_HEADERS,
        **({} if token is None else {"authorization": f"Bearer {token}"}),
        **{name.replace("_", "-"): str(value) for name, value in headers.items()},
    }
    lines = [
        f"POST {urllib.parse.urlsplit(url).path} HTTP/1.1",
        *(f"{name}: {value}" for name, value in fields.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def until_closed(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a failure if it does not)."""
    received = bytearray()
    with connection:
        while True:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                pytest.fail(f"the server kept the connection open after sending {bytes(received)!r}")
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
    return bytes(received)


def parsed(raw: bytes) -> tuple[int, dict[str, str], Any]:
    """The status, the headers (lower-cased) and the JSON body of one HTTP answer."""
    top, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


def call(url: str, token: str, arguments: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """One whole ``tools/call`` on a connection of its own, answered and closed."""
    body = json.dumps(tools_call(arguments)).encode()
    with connect(url) as connection:
        connection.sendall(head(url, token, content_length=len(body), connection="close") + body)
        return parsed(until_closed(connection))


def never_reading(url: str, requests: bytes) -> socket.socket:
    """A connection that sends ``requests`` at once (pipelined) and reads none of the answers until
    the test does: its receive buffer the smallest the system allows and its segments small, as over
    a network (on loopback the server's send buffer would start at megabytes), so what the server
    sends soon stops being taken. Returned once the server has begun to answer."""
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
    connection.settimeout(WAIT_SECONDS)
    connection.connect((parts.hostname, parts.port))
    connection.sendall(requests)
    with selectors.DefaultSelector() as answering:
        answering.register(connection, selectors.EVENT_READ)
        assert answering.select(WAIT_SECONDS), "the server did not begin to answer"
    return connection


def until_reset(connection: socket.socket) -> None:
    """Wait, reading nothing, until the server resets ``connection`` (a failure if it does not)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while connection.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != errno.ECONNRESET:
        assert time.monotonic() < deadline, "the server kept the connection"
        time.sleep(0.05)


def metadata_requests(url: str, count: int) -> bytes:
    """``count`` requests of the protected resource's metadata: no token needed."""
    netloc = urllib.parse.urlsplit(url).netloc
    return (
        f"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {netloc}\r\n\r\n".encode() * count
    )


def answers(received: bytes) -> int:
    """How many answers ``200`` are in ``received``."""
    return received.count(b"HTTP/1.1 200 OK\r\n")


def held_body(url: str, token: str, size: int, short_by: int = 10) -> socket.socket:
    """A connection whose request declares a body of ``size`` bytes and sends all but ``short_by``."""
    connection = connect(url)
    connection.sendall(head(url, token, content_length=size) + b" " * (size - short_by))
    return connection


def first_answered(connections: list[socket.socket]) -> tuple[int, dict[str, str], Any]:
    """The answer of whichever of ``connections`` is answered first (closed with it)."""
    with selectors.DefaultSelector() as waiting:
        for connection in connections:
            waiting.register(connection, selectors.EVENT_READ)
        ready = waiting.select(WAIT_SECONDS)
    assert ready, "no connection was answered"
    answered = ready[0][0].fileobj
    assert isinstance(answered, socket.socket)
    connections.remove(answered)
    return parsed(until_closed(answered))


def until(status: int, attempt: Callable[[], tuple[int, dict[str, str], Any]]) -> tuple[dict[str, str], Any]:
    """``attempt`` again until it is answered ``status`` (held requests are admitted in their own time)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        got, headers, body = attempt()
        if got == status:
            return headers, body
        assert time.monotonic() < deadline, f"never {status}; last {got} {body}"
        time.sleep(0.05)


def view(path: str) -> dict[str, Any]:
    return {"command": "view", "path": path}


# -- E1: a request head that never ends, and too many connections ----------------------------------


@pytest.mark.parametrize(
    "sent", [b"", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriz"], ids=["nothing", "half"]
)
def test_a_connection_whose_head_does_not_arrive_is_408_and_closed_after_the_deadline(
    environment: dict[str, str], sent: bytes
) -> None:
    with server(environment, SHORT) as url, connect(url) as connection:
        connection.sendall(sent)
        status, headers, body = parsed(until_closed(connection))
    assert (status, headers["connection"], body) == (408, "close", LATE_HEAD)


def test_the_head_deadline_runs_again_after_each_answer(environment: dict[str, str], issuer: Issuer) -> None:
    """A kept-alive connection that begins its next request and stalls is closed as a new one is."""
    body = json.dumps(tools_call(view("/memories"))).encode()
    with server(environment, SHORT) as url, connect(url) as connection:
        connection.sendall(head(url, issuer.token("alice"), content_length=len(body)) + body)
        connection.sendall(b"POST /mcp HTTP/1.1\r\n")
        first, _, second = until_closed(connection).partition(b"HTTP/1.1 408")
    assert first.startswith(b"HTTP/1.1 200 OK\r\n")
    status, headers, late = parsed(b"HTTP/1.1 408" + second)
    assert (status, headers["connection"], late) == (408, "close", LATE_HEAD)


def test_beyond_the_connection_cap_the_connection_waiting_longest_for_its_head_is_closed(
    environment: dict[str, str], issuer: Issuer
) -> None:
    limits = replace(HELD, max_connections=4)
    with server(environment, limits) as url:
        waiting = [connect(url) for _ in range(limits.max_connections)]
        for connection in waiting:
            connection.sendall(b"POST /mcp HTTP/1.1\r\n")
        status, _, result = call(url, issuer.token("alice"), view("/memories"))
        assert (status, result["result"]["isError"]) == (200, False)
        assert parsed(until_closed(waiting[0]))[::2] == (408, LATE_HEAD)
        for connection in waiting[1:]:  # the others were kept: they finish their request
            body = json.dumps(tools_call(view("/memories"))).encode()
            rest = head(url, issuer.token("bob"), content_length=len(body), connection="close")
            connection.sendall(rest.removeprefix(b"POST /mcp HTTP/1.1\r\n") + body)
            assert parsed(until_closed(connection))[0] == 200


def test_beyond_the_connection_cap_a_connection_whose_client_does_not_read_is_closed_first(
    environment: dict[str, str], issuer: Issuer
) -> None:
    """Connections a stranger fills with answers it does not read wait on their client as a stalled
    head does: beyond the cap the longest waiting is closed (at once, its answers dropped), so that a
    new connection is served."""
    limits = replace(HELD, max_connections=3, keep_alive_seconds=1)
    with server(environment, limits) as url:
        readers = [never_reading(url, metadata_requests(url, ASKED)) for _ in range(limits.max_connections)]
        # Until the server stops writing to a reader, each is answered and a newcomer is closed (408).
        until(200, lambda: call(url, issuer.token("bob"), view("/memories")))
        cut = sorted(answers(until_closed(reader)) for reader in readers)
    assert cut[0] < ASKED  # closed before it had all its answers
    assert cut[1:] == [ASKED, ASKED]  # the others, read at last, were answered in full


def test_a_client_that_sends_too_much_ahead_of_its_answers_is_cut_off(environment: dict[str, str]) -> None:
    """What a pipelining client sends ahead of the request answered is held only up to the bound."""
    limits = replace(HELD, max_ahead_bytes=DEFAULT_LIMITS.max_ahead_bytes)
    with server(environment, limits) as url, connect(url) as connection:
        requests = metadata_requests(url, ASKED)
        assert len(requests) > 4 * limits.max_ahead_bytes
        connection.sendall(requests)
        assert answers(until_closed(connection)) < ASKED


# -- E2: bodies that are too large or never end, and one user holding the server -------------------


def test_a_body_that_stalls_is_408_after_the_deadline_and_nothing_runs(
    environment: dict[str, str], issuer: Issuer
) -> None:
    path = f"{directory()}/never.txt"
    body = json.dumps(tools_call({"command": "create", "path": path, "file_text": "x"})).encode()
    with server(environment, SHORT) as url, connect(url) as connection:
        connection.sendall(head(url, issuer.token("alice"), content_length=len(body)) + body[:-10])
        status, headers, refused = parsed(until_closed(connection))
    assert (status, headers["connection"], refused) == (408, "close", LATE_BODY)
    assert answer(library(environment, "alice"), view(path)) == (
        f"The path {path} does not exist. Please provide a valid path.",
        True,
    )


def test_a_declared_body_beyond_the_bound_is_413_before_any_of_it_is_read(
    environment: dict[str, str], issuer: Issuer
) -> None:
    limits = replace(HELD, max_body_bytes=64 * 1024)
    with server(environment, limits) as url, connect(url) as connection:
        connection.sendall(head(url, issuer.token("alice"), content_length=limits.max_body_bytes + 1))
        status, headers, refused = parsed(until_closed(connection))
    assert (status, headers["connection"]) == (413, "close")
    assert refused == {
        "error_description": "Error: The request's body is larger than this server accepts (65,536 bytes). "
        "Nothing was changed."
    }


def test_a_chunked_body_that_grows_past_the_bound_is_413(environment: dict[str, str], issuer: Issuer) -> None:
    limits = replace(HELD, max_body_bytes=64 * 1024)
    chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"
    with server(environment, limits) as url, connect(url) as connection:
        connection.sendall(head(url, issuer.token("alice"), transfer_encoding="chunked"))
        for _ in range(limits.max_body_bytes // 0x4000 + 1):
            connection.sendall(chunk)
        status, headers, refused = parsed(until_closed(connection))
    assert (status, headers["connection"]) == (413, "close")
    assert refused["error_description"].startswith("Error: The request's body is larger than this server")


def test_the_largest_call_the_memory_accepts_fits_the_bound(
    environment: dict[str, str], issuer: Issuer
) -> None:
    """A ``str_replace`` of a whole largest file by another, every character one JSON escapes."""
    largest = 64 * 1024
    files = {**environment, "S3MEMORY_MAX_FILE_BYTES": str(largest)}
    limits = replace(HELD, max_body_bytes=body_bound(largest))
    path = f"{directory()}/largest.txt"
    token = issuer.token("alice")
    with server(files, limits) as url:
        status, _, created = call(url, token, {"command": "create", "path": path, "file_text": '"' * largest})
        assert (status, created["result"]["isError"]) == (200, False)
        replace_all = {
            "command": "str_replace",
            "path": path,
            "old_str": '"' * largest,
            "new_str": "\\" * largest,
        }
        assert len(json.dumps(tools_call(replace_all))) > 4 * largest
        status, _, replaced = call(url, token, replace_all)
    assert (status, replaced["result"]["isError"]) == (200, False)


def test_a_user_beyond_its_share_of_requests_is_429_while_another_user_is_served(
    environment: dict[str, str], issuer: Issuer
) -> None:
    limits = replace(HELD, max_in_flight_per_user=2)
    alice, bob = issuer.token("alice"), issuer.token("bob")
    with server(environment, limits) as url:
        # One more than the share, each held until closed: whichever is admitted last is refused.
        held = [held_body(url, alice, 1000) for _ in range(limits.max_in_flight_per_user + 1)]
        status, headers, refused = first_answered(held)
        assert (status, headers["retry-after"], headers["connection"]) == (429, "1", "close")
        assert refused == {
            "error_description": "Error: Too many requests of this user are in progress. Nothing was changed; "
            "retry when one has been answered."
        }
        status, _, result = call(url, bob, view("/memories"))
        assert (status, result["result"]["isError"]) == (200, False)
        for connection in held:
            connection.close()
        until(200, lambda: call(url, alice, view("/memories")))


def test_beyond_the_process_cap_of_requests_in_flight_a_request_is_503(
    environment: dict[str, str], issuer: Issuer
) -> None:
    limits = replace(HELD, max_in_flight=2)
    with server(environment, limits) as url:
        held = [held_body(url, issuer.token(user), 1000) for user in ("alice", "bob", "carol")]
        status, headers, refused = first_answered(held)
        assert (status, headers["retry-after"], headers["connection"]) == (503, "1", "close")
        assert refused == {
            "error_description": "Error: The server is busy. Nothing was changed; retry in a moment."
        }
        # A request without a valid token is refused before it counts: a stranger fills no cap.
        assert call(url, "not-a-token", view("/memories"))[0] == 401
        for connection in held:
            connection.close()
        until(200, lambda: call(url, issuer.token("carol"), view("/memories")))


def test_a_client_that_does_not_read_its_answers_is_cut_off_after_the_send_deadline(
    environment: dict[str, str], issuer: Issuer
) -> None:
    """One user's connections pipelining views and reading none of the answers hold its requests in
    flight (each the one its answer waits on) only until the send deadline: then they are closed and
    the user is served again."""
    limits = replace(HELD, max_in_flight_per_user=2, send_seconds=1.0)
    alice = issuer.token("alice")
    path = f"{directory()}/long.txt"
    answer(library(environment, "alice"), {"command": "create", "path": path, "file_text": "x" * 16000})
    body = json.dumps(tools_call(view(path))).encode()
    with server(environment, limits) as url:
        viewing = head(url, alice, content_length=len(body)) + body
        readers = [never_reading(url, viewing * VIEWS) for _ in range(limits.max_in_flight_per_user)]
        for reader in readers:
            until_reset(reader)
        until(200, lambda: call(url, alice, view("/memories")))  # 429 until both are freed
        cut = [answers(until_closed(reader)) for reader in readers]
    assert max(cut) < VIEWS


def test_an_answer_given_before_the_body_was_read_closes_the_connection(
    environment: dict[str, str],
) -> None:
    """A request refused without a token cannot go on sending its body on a connection kept open."""
    with server(environment, HELD) as url:
        connection = held_body(url, "not-a-token", 1000)
        status, headers, _ = parsed(until_closed(connection))
    assert (status, headers["connection"]) == (401, "close")


# -- the open-file limit, and the command as it serves ---------------------------------------------


def test_the_soft_open_file_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        assert raise_open_file_limit() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_connections_keep_a_quarter_of_the_open_files_for_the_rest() -> None:
    assert within_open_files(DEFAULT_LIMITS, 1024).max_connections == 768
    assert (
        within_open_files(DEFAULT_LIMITS, 1 << 20).max_connections == DEFAULT_LIMITS.max_connections == 4096
    )


def _lowered_open_files() -> None:  # pragma: no cover - runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@pytest.mark.slow
@pytest.mark.mcp
def test_the_command_serves_within_the_limits(environment: dict[str, str], tmp_path: Path) -> None:
    """The open-file limit raised, the body bound from ``S3MEMORY_MAX_FILE_BYTES``, a head's deadline."""
    settings = {**AWS_TEST_ENVIRONMENT, **environment, "S3MEMORY_MAX_FILE_BYTES": "1000", "PATH": ""}
    log = tmp_path / "server.log"
    with http_command(settings, log, preexec_fn=_lowered_open_files) as (url, process):
        limits = Path(f"/proc/{process.pid}/limits").read_text().splitlines()
        files = next(line for line in limits if line.startswith("Max open files")).split()
        assert files[3] == files[4]  # soft, hard
        with connect(url) as connection:
            connection.sendall(head(url, None, content_length=body_bound(1000) + 1))
            status, _, refused = parsed(until_closed(connection))
        assert (status, refused["error_description"]) == (
            413,
            "Error: The request's body is larger than this server accepts (69,536 bytes). Nothing was changed.",
        )
        with connect(url) as connection:
            connection.sendall(b"POST /mcp HTTP/1.1\r\n")
            assert parsed(until_closed(connection))[::2] == (408, LATE_HEAD)
