"""Fault injection for the S3 tests: a botocore hook plan and an HTTP proxy, both on 127.0.0.1 only.

``FaultPlan`` sits inside one boto3 client (a ``before-send`` hook) and fails chosen requests:

    plan = FaultPlan()
    plan.fail("PutObject", Fault.SLOW_DOWN, call=3)                   # the 3rd PutObject, once
    plan.fail("PutObject", Fault.SLOW_DOWN, call=3, attempts=ALL)     # ... and all of its retries
    plan.fail("DeleteObjects", Fault.DROP, after=1, attempts=ALL)     # every DeleteObjects but the first
    plan.fail("PutObject", Fault.CRASH, call=2)                       # the process dies there
    plan.attach(client)
    ...
    plan.injected  # what was injected, in order

``instant_retries()`` drops botocore's back-off sleeps (1 s and more after a 503) while keeping its
attempts, so a test can fail all five attempts quickly.

A *call* is one API call of the client (botocore's ``invocation-id``); its *attempts* are the HTTP
requests botocore sends for it, retries included (our clients make up to 5). ``call``/``after``
count the calls that match the rule (operation, and ``where`` if given); ``attempts`` is how many
consecutive attempts of such a call fail (1 by default: standard retries survive it).

``FaultProxy`` is a threaded HTTP/1.1 forwarder in front of any S3 endpoint (moto's threaded server,
SeaweedFS): clients point ``endpoint_url`` at it, and its rules, chosen by method, path pattern or S3
operation, and the same call/attempt ordinals (botocore sends ``amz-sdk-invocation-id`` and
``amz-sdk-request``), drop the connection before or after forwarding, answer 500 or 503 with an S3
XML error body, or stall. Everything else is forwarded byte for byte.
"""

from __future__ import annotations

import contextlib
import enum
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

ALL = 1_000_000
"""``attempts=ALL``: fail every attempt of the call, so the fault survives any retry policy."""

_REDIRECT_HOST = "https://s3memory-fault-injected.invalid"


class SimulatedCrash(BaseException):
    """The process died here. Not an ``Exception``: no ``except Exception`` handler can catch it."""


class Fault(enum.Enum):
    """What a failing request does."""

    DROP = "drop"
    """The connection fails before the request reaches S3 (``EndpointConnectionError``); not applied."""
    DROP_AFTER = "drop-after"
    """S3 applies the request, then the connection closes before the answer (``ConnectionClosedError``)."""
    INTERNAL_ERROR = "500"
    """S3 answers 500 InternalError; not applied."""
    SLOW_DOWN = "503"
    """S3 answers 503 SlowDown; not applied."""
    CRASH = "crash"
    """The process dies before sending (``SimulatedCrash``); not applied."""
    CRASH_AFTER = "crash-after"
    """S3 applies the request, then the process dies before reading the answer."""


ERROR_BODIES = {
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
}


def s3_error_body(status: int, resource: str = "/") -> bytes:
    """An S3 XML error document for ``status`` (500 InternalError or 503 SlowDown)."""
    code, message = ERROR_BODIES[status]
    request_id = uuid.uuid4().hex[:16].upper()
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message><Resource>{resource}</Resource>"
        f"<RequestId>{request_id}</RequestId></Error>"
    ).encode()


@dataclass
class _Ordinals:
    """Which calls and attempts a rule fails: shared by the hook plan and the proxy."""

    call: int | None = None
    after: int | None = None
    attempts: int = 1
    times: int | None = None
    calls_seen: int = 0
    fired: int = 0
    _call_of: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.call is not None and self.after is not None:
            raise ValueError("give `call` or `after`, not both")
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")

    def decide(self, invocation: str, attempt: int) -> int | None:
        """The ordinal of this call among the rule's matches if this attempt fails, else None."""
        if invocation not in self._call_of:
            self.calls_seen += 1
            self._call_of[invocation] = self.calls_seen
        number = self._call_of[invocation]
        if self.call is not None and number != self.call:
            return None
        if self.after is not None and number <= self.after:
            return None
        if attempt > self.attempts:
            return None
        if self.times is not None and self.fired >= self.times:
            return None
        self.fired += 1
        return number


@dataclass(frozen=True)
class Injection:
    """One injected fault: on the ``call``-th matching call, attempt ``attempt``."""

    operation: str
    fault: Fault
    call: int
    attempt: int
    url: str


@dataclass
class _HookRule:
    operation: str
    fault: Fault
    ordinals: _Ordinals
    where: Callable[[AWSPreparedRequest], bool] | None


class _RawBody:
    """The ``raw`` of a fake ``AWSResponse``: botocore reads it with ``stream()``."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        if self._body:
            yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body

    def close(self) -> None:
        pass


def _operation(event_name: str) -> str:
    return event_name.rsplit(".", 1)[-1]


class FaultPlan:
    """Fails chosen requests of the boto3 clients it is attached to, and records what it did."""

    def __init__(self) -> None:
        self._rules: list[_HookRule] = []
        self._lock = threading.Lock()
        self.injected: list[Injection] = []
        self.sent: list[tuple[str, int]] = []
        """Every attempt that reached the hook, as (operation, attempt), faults included."""

    def fail(
        self,
        operation: str,
        fault: Fault,
        *,
        call: int | None = None,
        after: int | None = None,
        attempts: int = 1,
        times: int | None = None,
        where: Callable[[AWSPreparedRequest], bool] | None = None,
    ) -> FaultPlan:
        """Fail ``operation`` ("PutObject", or "*" for any): the ``call``-th matching call, or every
        call ``after`` the first N, or (neither) every call; ``attempts`` consecutive attempts of
        each; at most ``times`` injections in all. ``where`` narrows the match (e.g. by URL)."""
        self._rules.append(_HookRule(operation, fault, _Ordinals(call, after, attempts, times), where))
        return self

    def attach(self, client: Any) -> Any:
        """Register on ``client`` (before any other ``before-send`` handler); returns the client."""
        client.meta.events.register_first("before-send.s3", self._before_send)
        return client

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("before-send.s3", self._before_send)

    def count(self, fault: Fault | None = None) -> int:
        return sum(1 for item in self.injected if fault is None or item.fault is fault)

    def _before_send(self, event_name: str, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        operation = _operation(event_name)
        retries = (request.context or {}).get("retries", {})
        invocation = str(retries.get("invocation-id") or id(request))
        attempt = int(retries.get("attempt") or 1)
        with self._lock:
            self.sent.append((operation, attempt))
            chosen: tuple[_HookRule, int] | None = None
            for rule in self._rules:
                if rule.operation not in ("*", operation):
                    continue
                if rule.where is not None and not rule.where(request):
                    continue
                number = rule.ordinals.decide(invocation, attempt)
                if number is not None and chosen is None:
                    chosen = (rule, number)
            if chosen is None:
                return None
            rule, number = chosen
            self.injected.append(Injection(operation, rule.fault, number, attempt, request.url))
        return inject(rule.fault, request, operation)


def inject(fault: Fault, request: AWSPreparedRequest, operation: str) -> AWSResponse | None:
    url = request.url
    if fault is Fault.CRASH:
        raise SimulatedCrash(f"simulated crash before {operation}")
    if fault is Fault.DROP:
        raise EndpointConnectionError(endpoint_url=url)
    if fault in (Fault.DROP_AFTER, Fault.CRASH_AFTER):
        _send_for_real(request)
        if fault is Fault.CRASH_AFTER:
            raise SimulatedCrash(f"simulated crash after {operation} was sent")
        raise ConnectionClosedError(endpoint_url=url)
    status = 500 if fault is Fault.INTERNAL_ERROR else 503
    body = b"" if request.method == "HEAD" else s3_error_body(status, urlsplit(url).path)
    headers = {
        "Content-Type": "application/xml",
        "Content-Length": str(len(body)),
        "x-amz-request-id": uuid.uuid4().hex[:16].upper(),
    }
    # Other before-send handlers still run after this one; moto's in-process stub would serve
    # (and apply) the request. Pointed at a host nobody serves, it is left alone.
    request.url = _REDIRECT_HOST + urlsplit(url).path
    return AWSResponse(url, status, headers, _RawBody(body))  # type: ignore[arg-type]


def _send_for_real(request: AWSPreparedRequest) -> None:
    """Deliver ``request`` now and discard the answer: in-process moto if it serves the URL, else HTTP."""
    with contextlib.suppress(ImportError):
        from moto.core.models import botocore_stubber

        if botocore_stubber.enabled and botocore_stubber.process_request(request) is not None:
            return
    from botocore.httpsession import URLLib3Session

    session = URLLib3Session(timeout=20)
    try:
        session.send(request).content  # noqa: B018 - read the answer, then lose it
    finally:
        session.close()


def held(client: Any, operation: str, url_part: str) -> tuple[threading.Event, threading.Event]:
    """Hold ``client``'s first ``operation`` request whose URL has ``url_part`` until released."""
    reached, release = threading.Event(), threading.Event()

    def hold(event_name: str, request: Any, **_: Any) -> None:
        if event_name.endswith(operation) and url_part in request.url and not release.is_set():
            reached.set()
            release.wait(60)

    client.meta.events.register_first("before-send.s3", hold)
    return reached, release


@contextlib.contextmanager
def instant_retries() -> Iterator[None]:
    """botocore's standard retries without their back-off sleeps (a throttled call otherwise waits
    seconds); attempts and retry decisions are unchanged."""
    from botocore.retries.standard import ExponentialBackoff

    original = ExponentialBackoff.delay_amount
    ExponentialBackoff.delay_amount = lambda self, context: 0.0  # type: ignore[method-assign]
    try:
        yield
    finally:
        ExponentialBackoff.delay_amount = original  # type: ignore[method-assign]


# -- the proxy ----------------------------------------------------------------------------------


class ProxyFault(enum.Enum):
    DROP_BEFORE = "drop-before"
    """Close the client's connection without forwarding the request or answering."""
    DROP_AFTER = "drop-after"
    """Forward the request, read S3's answer, then close the client's connection without it."""
    INTERNAL_ERROR = "500"
    """Answer 500 InternalError (S3 XML) without forwarding."""
    SLOW_DOWN = "503"
    """Answer 503 SlowDown (S3 XML) without forwarding."""
    STALL = "stall"
    """Wait ``stall_seconds`` (bounded), then forward and answer as usual."""


MAX_STALL_SECONDS = 30.0
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
SOCKET_TIMEOUT_SECONDS = 60.0


@dataclass
class ProxyRule:
    fault: ProxyFault
    method: str | None = None
    path: re.Pattern[str] | None = None
    operation: str | None = None
    ordinals: _Ordinals = field(default_factory=_Ordinals)
    stall_seconds: float = 0.0

    def matches(self, request: _Request) -> bool:
        if self.method is not None and request.method != self.method:
            return False
        if self.path is not None and not self.path.search(request.target):
            return False
        return self.operation is None or self.operation == request.operation


@dataclass(frozen=True)
class ProxyEvent:
    """One request the proxy saw, and what it did with it (``None``: forwarded untouched)."""

    method: str
    target: str
    operation: str
    call: int | None
    attempt: int
    fault: ProxyFault | None


@dataclass
class _Request:
    head: bytes
    body: bytes
    method: str
    target: str
    headers: dict[str, str]

    @property
    def operation(self) -> str:
        return s3_operation(self.method, self.target, self.headers)

    @property
    def invocation(self) -> str:
        return self.headers.get("amz-sdk-invocation-id") or uuid.uuid4().hex

    @property
    def attempt(self) -> int:
        found = re.search(r"attempt=(\d+)", self.headers.get("amz-sdk-request", ""))
        return int(found.group(1)) if found else 1


def s3_operation(method: str, target: str, headers: dict[str, str]) -> str:
    """The S3 API operation of a path-style request (the common ones; else METHOD)."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    path = unquote(parts.path).lstrip("/")
    has_key = bool(path.partition("/")[2])
    if method == "POST" and "delete" in query:
        return "DeleteObjects"
    if not has_key:
        bucket_operations = {"GET": "ListObjects", "PUT": "CreateBucket", "DELETE": "DeleteBucket"}
        if method == "GET" and query.get("list-type") == ["2"]:
            return "ListObjectsV2"
        if method == "GET" and not path:
            return "ListBuckets"
        if method == "HEAD":
            return "HeadBucket"
        return bucket_operations.get(method, method)
    if method == "PUT":
        return "CopyObject" if "x-amz-copy-source" in headers else "PutObject"
    return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, method)


class _Closed(Exception):
    """The peer closed the connection (cleanly, between messages, or not)."""


class _Reader:
    """Buffered reads of HTTP/1.1 messages from a socket, keeping every byte as received."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise _Closed
        self.buffer += chunk
        if len(self.buffer) > MAX_MESSAGE_BYTES:
            raise _Closed

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            self._fill()
        end = self.buffer.index(marker) + len(marker)
        data, self.buffer = self.buffer[:end], self.buffer[end:]
        return data

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self._fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def to_end(self) -> bytes:
        with contextlib.suppress(_Closed):
            while True:
                self._fill()
        data, self.buffer = self.buffer, b""
        return data

    def head(self) -> tuple[bytes, str, dict[str, str]]:
        """(raw head, first line, lower-cased headers)."""
        raw = self.until(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        return raw, lines[0], headers

    def body(self, headers: dict[str, str], *, until_close: bool) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return self._chunked()
        if "content-length" in headers:
            return self.exactly(int(headers["content-length"]))
        return self.to_end() if until_close else b""

    def _chunked(self) -> bytes:
        data = b""
        while True:
            size_line = self.until(b"\r\n")
            data += size_line
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = self.until(b"\r\n")
                    data += line
                    if line == b"\r\n":
                        return data
            data += self.exactly(size + 2)


class FaultProxy:
    """A fault-injecting HTTP forwarder on 127.0.0.1 in front of ``upstream`` (``http://host:port``)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError("upstream must be http://host:port")
        self.upstream = (parts.hostname, parts.port)
        self.rules: list[ProxyRule] = []
        self.events: list[ProxyEvent] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.2)  # so the accept loop sees a stop promptly
        self._address: tuple[str, int] = self._listener.getsockname()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._address
        return f"http://{host}:{port}"

    def add(
        self,
        fault: ProxyFault,
        *,
        method: str | None = None,
        path: str | None = None,
        operation: str | None = None,
        call: int | None = None,
        after: int | None = None,
        attempts: int = 1,
        times: int | None = None,
        stall_seconds: float = 0.0,
    ) -> FaultProxy:
        """A rule: requests with ``method``, a target matching the regex ``path`` and the S3
        ``operation`` (each optional); ``call``/``after``/``attempts``/``times`` as in FaultPlan."""
        rule = ProxyRule(
            fault,
            method,
            re.compile(path) if path is not None else None,
            operation,
            _Ordinals(call, after, attempts, times),
            min(max(stall_seconds, 0.0), MAX_STALL_SECONDS),
        )
        with self._lock:
            self.rules.append(rule)
        return self

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self.events.clear()

    def faults(self) -> list[ProxyEvent]:
        return [event for event in self.events if event.fault is not None]

    def start(self) -> FaultProxy:
        self._acceptor.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close every connection, wait (bounded) for the connection threads."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            open_sockets = list(self._sockets)
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self._acceptor.join(5)
        for thread in list(self._threads):
            thread.join(5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _track(self, sock: socket.socket) -> socket.socket:
        sock.settimeout(SOCKET_TIMEOUT_SECONDS)
        with self._lock:
            self._sockets.add(sock)
        return sock

    def _forget(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.discard(sock)
        with contextlib.suppress(OSError):
            sock.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._stopping.is_set():
                client.close()
                return
            thread = threading.Thread(target=self._serve, args=(self._track(client),), daemon=True)
            with self._lock:
                self._threads = [known for known in self._threads if known.is_alive()]
                self._threads.append(thread)
            thread.start()

    def _choose(self, request: _Request) -> tuple[ProxyRule | None, int | None]:
        with self._lock:
            chosen: tuple[ProxyRule | None, int | None] = (None, None)
            invocation, attempt = request.invocation, request.attempt
            for rule in self.rules:
                if not rule.matches(request):
                    continue
                number = rule.ordinals.decide(invocation, attempt)
                if number is not None and chosen[0] is None:
                    chosen = (rule, number)
            rule, number = chosen
            self.events.append(
                ProxyEvent(
                    request.method,
                    request.target,
                    request.operation,
                    number,
                    attempt,
                    rule.fault if rule is not None else None,
                )
            )
            return chosen

    def _serve(self, client: socket.socket) -> None:
        reader = _Reader(client)
        upstream: socket.socket | None = None
        upstream_reader: _Reader | None = None
        try:
            while not self._stopping.is_set():
                try:
                    head, first_line, headers = reader.head()
                except (_Closed, OSError):
                    return
                method, target, *_ = [*first_line.split(" "), "", ""]
                if "100-continue" in headers.get("expect", "").lower():
                    client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = reader.body(headers, until_close=False)
                request = _Request(head, body, method, target, headers)
                rule, _ = self._choose(request)
                fault = rule.fault if rule is not None else None
                if fault is ProxyFault.DROP_BEFORE:
                    return
                if fault in (ProxyFault.INTERNAL_ERROR, ProxyFault.SLOW_DOWN):
                    client.sendall(
                        _error_response(500 if fault is ProxyFault.INTERNAL_ERROR else 503, request)
                    )
                    continue
                if fault is ProxyFault.STALL and rule is not None and self._stopping.wait(rule.stall_seconds):
                    return
                if upstream is None:
                    upstream = self._track(socket.create_connection(self.upstream, timeout=10))
                    upstream_reader = _Reader(upstream)
                assert upstream_reader is not None
                upstream.sendall(head + body)
                answer, keep_open = _read_response(upstream_reader, method)
                if not keep_open:
                    self._forget(upstream)
                    upstream, upstream_reader = None, None
                if fault is ProxyFault.DROP_AFTER:
                    return
                client.sendall(answer)
                if not keep_open:
                    return
        except (_Closed, OSError):
            return
        finally:
            self._forget(upstream)
            self._forget(client)


def _read_response(reader: _Reader, method: str) -> tuple[bytes, bool]:
    """One final response, raw (interim 1xx answers are skipped: the proxy sent its own 100 Continue),
    and whether the upstream connection stays usable."""
    while True:
        head, status_line, headers = reader.head()
        status = int(status_line.split(" ")[1])
        if 100 <= status < 200:
            continue
        break
    no_body = method == "HEAD" or status in (204, 304)
    framed = "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
    body = b"" if no_body else reader.body(headers, until_close=True)
    keep_open = (no_body or framed) and headers.get("connection", "").lower() != "close"
    if status_line.startswith("HTTP/1.0") and headers.get("connection", "").lower() != "keep-alive":
        keep_open = False
    return head + body, keep_open


def _error_response(status: int, request: _Request) -> bytes:
    reason = "Internal Server Error" if status == 500 else "Service Unavailable"
    body = b"" if request.method == "HEAD" else s3_error_body(status, urlsplit(request.target).path)
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"x-amz-request-id: {uuid.uuid4().hex[:16].upper()}\r\n"
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime())}\r\n"
        "\r\n"
    )
    return head.encode("latin-1") + body


class ProcessDeath:
    """The process dies at the ``ordinal``-th ``operation`` request of ``client`` and stays dead:
    that request and every later one of the client raise ``SimulatedCrash`` before they are sent."""

    def __init__(self, client: Any, operation: str, ordinal: int) -> None:
        self.operation = operation
        self.ordinal = ordinal
        self.seen = 0
        self.dead = False
        self._lock = threading.Lock()
        client.meta.events.register_first("before-send.s3", self._before_send)

    def _before_send(self, event_name: str, **_: Any) -> None:
        with self._lock:
            if _operation(event_name) == self.operation:
                self.seen += 1
                self.dead = self.dead or self.seen >= self.ordinal
            if self.dead:
                raise SimulatedCrash(f"died at {self.operation} #{self.ordinal}")
