"""A scripted stand-in for Claude: the Anthropic Messages API on 127.0.0.1, playing the turns a test
wrote, for offline tests and the demo (``docs/testing.md``).

:meth:`ScriptedClaude.client` and :meth:`ScriptedClaude.async_client` are the real SDK's clients
(``Anthropic``, ``AsyncAnthropic``) pointed at it, so the SDK's ``tool_runner`` runs the real tool
offline; :meth:`ScriptedClaude.environment` points a client the application builds itself there.

It answers ``POST /v1/messages`` (with or without the SDK's ``?beta=true``) with the JSON the real
API returns, playing a *script*: one entry per assistant turn, consumed in order. An entry (its words
are ``script``'s) is

- a ``str`` or :func:`reply`: a final text answer (``stop_reason: "end_turn"``);
- :func:`memory_call`: one call of the memory tool (``stop_reason: "tool_use"``);
- a sequence of memory tool inputs: one ``tool_use`` block each, in one turn;
- a :class:`Reply`: some text followed by tool calls, as Claude often says what it is about to do;
- a callable receiving the request's ``messages`` and returning one of the above, so a turn can
  read the ``tool_result`` blocks it was sent (see :func:`last_tool_results`) and answer from them.

Like the real API, a request whose history has ``tool_use`` blocks without a ``tool_result`` right
after is refused with a 400, so a client that forgets to answer a tool call fails loudly; so is a
request when the script has no turn left.

Server-held threads are played too (the SDK's tool runner uses them by default): ``"thread":
{"type": "create"}`` keeps the conversation under the response's ``id``, and ``{"type": "continue",
"previous_message_id": ...}`` prepends the held history to the new messages, so a scripted turn always
sees the whole conversation. An unknown or already continued ``previous_message_id`` is refused with
the API's ``error.details.error_code`` (``thread_not_found``, ``thread_already_continued``), which
the SDK answers by replaying the full history.

Any credential is accepted and recorded. Plain HTTP and JSON: ``anthropic`` is imported only by the
methods that build its clients.
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from s3memory.testing.script import (
    Reply,
    ToolResult,
    Turn,
    last_tool_results,
    tool_results,
)

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic

MESSAGES_PATH = "/v1/messages"
API_KEY = "scripted-claude"
"""The key the stand-in's clients send: never a real one."""
_MAX_BODY_BYTES = 32 * 1024 * 1024


class ScriptError(Exception):
    """The request cannot be answered; sent to the client as an API error (400 unless told)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        error_type: str = "invalid_request_error",
        error_code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.error_code = error_code

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.error_type, "message": self.message}
        if self.error_code is not None:
            error["details"] = {"error_code": self.error_code}
        return {"type": "error", "error": error}


def _tool_use_ids(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        str(block.get("id"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def check_tool_results_follow(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a history where an assistant ``tool_use`` is not answered by the next user message."""
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        wanted = _tool_use_ids(message)
        if not wanted:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = (
            {result.tool_use_id for result in tool_results(following)}
            if following is not None and following.get("role") == "user"
            else set()
        )
        missing = [tool_id for tool_id in wanted if tool_id not in answered]
        if missing:
            raise ScriptError(
                f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` "
                "block in the next message."
            )


def _estimate_tokens(value: object) -> int:
    """A rough token count (4 characters a token): the stand-in only needs plausible usage numbers."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


class ScriptedClaude:
    """The stand-in server, playing ``script`` and what :meth:`play` adds. Use as a context manager,
    or call :meth:`start` and :meth:`stop`.

    Recorded in arrival order: ``requests`` (the JSON bodies received), ``histories`` (each request's
    whole conversation, held thread history included), ``api_keys`` (the credential each request
    carried, from ``x-api-key`` or ``Authorization: Bearer``), ``headers`` (names lower-cased) and
    ``errors`` (the message of every error answered); :attr:`tool_results` are the results the
    client sent back.
    """

    def __init__(self, script: Iterable[Turn] = (), *, host: str = "127.0.0.1") -> None:
        self._host = host
        self._turns: list[Turn] = list(script)
        self._next_turn = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._threads: dict[str, list[dict[str, Any]]] = {}
        self._continued: set[str] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[dict[str, Any]] = []
        self.histories: list[list[dict[str, Any]]] = []
        self.api_keys: list[str | None] = []
        self.headers: list[dict[str, str]] = []
        self.errors: list[str] = []

    # -- the script ------------------------------------------------------------------------

    def play(self, *turns: Turn) -> None:
        """Queue more turns after the ones not yet played."""
        with self._lock:
            self._turns.extend(turns)

    @property
    def remaining(self) -> int:
        """How many queued turns have not been played yet."""
        with self._lock:
            return len(self._turns) - self._next_turn

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every tool result the client sent, in order: what the tool answered each scripted call."""
        with self._lock:
            histories = list(self.histories)
        return [result for history in histories for result in last_tool_results(history)]

    # -- clients ---------------------------------------------------------------------------

    def client(self, **options: Any) -> Anthropic:
        """The real SDK's client of this stand-in (``options``: ``Anthropic``'s, e.g. ``timeout``).
        It does not retry unless told, so an unplayable request fails at once, and no proxy the
        environment names carries its requests to loopback."""
        import anthropic

        options.setdefault("http_client", anthropic.DefaultHttpxClient(trust_env=False))
        return anthropic.Anthropic(**self._client_options(options))

    def async_client(self, **options: Any) -> AsyncAnthropic:
        """The same as :meth:`client`, for ``AsyncAnthropic``."""
        import anthropic

        options.setdefault("http_client", anthropic.DefaultAsyncHttpxClient(trust_env=False))
        return anthropic.AsyncAnthropic(**self._client_options(options))

    def _client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"api_key": API_KEY, "base_url": self.base_url, "max_retries": 0, **options}

    def environment(self) -> dict[str, str | None]:
        """The variables that point a client built without arguments (``anthropic.Anthropic()``) at
        this stand-in, with a dummy key; ``None`` removes one: the environment's token and extra
        headers, so that nothing of the user's own is sent."""
        return {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_AUTH_TOKEN": None,
            "ANTHROPIC_CUSTOM_HEADERS": None,
        }

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(
                "ScriptedClaude is not running: use it in a `with` block or call start() first"
            )
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ScriptedClaude:
        if self._server is not None:
            return self
        server = ThreadingHTTPServer((self._host, 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-messages-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedClaude:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- answering -------------------------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Messages API response to one request body; ``ScriptError`` if it cannot be answered."""
        model = body.get("model")
        messages = body.get("messages")
        if not isinstance(model, str) or not model:
            raise ScriptError("model: Field required")
        if isinstance(body.get("max_tokens"), bool) or not isinstance(body.get("max_tokens"), int):
            raise ScriptError("max_tokens: Field required")
        if not isinstance(messages, list) or not all(isinstance(message, dict) for message in messages):
            raise ScriptError("messages: Input should be a valid list of message objects")
        if body.get("stream"):
            raise ScriptError("stream: the scripted stand-in does not stream; use a non-streaming call")
        with self._lock:
            history, thread_id_source = self._history(body.get("thread"), body, messages)
            if not history:
                raise ScriptError("messages: at least one message is required")
            if history[-1].get("role") != "user":
                raise ScriptError(
                    "messages: the last message must have role `user` for the stand-in to answer"
                )
            check_tool_results_follow(history)
            if self._next_turn >= len(self._turns):
                raise ScriptError(
                    f"the script has no turn left (it had {len(self._turns)}); the client asked for one more"
                )
            turn = self._turns[self._next_turn]
            self._next_turn += 1
            self.histories.append(history)
        reply = self._resolve(turn, history)
        message = self._message(model, reply, history)
        if thread_id_source is not None:
            with self._lock:
                if thread_id_source:
                    self._continued.add(thread_id_source)
                self._threads[message["id"]] = [
                    *history,
                    {"role": "assistant", "content": message["content"]},
                ]
        return message

    def _history(
        self, thread: object, body: dict[str, Any], messages: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A request's whole conversation, and the id it continues ("" starts a thread, None: no thread)."""
        if thread is None:
            return list(messages), None
        if not isinstance(thread, dict) or thread.get("type") not in ("create", "continue"):
            raise ScriptError(
                "thread: must be {'type': 'create'} or {'type': 'continue', 'previous_message_id': ...}"
            )
        if thread["type"] == "create":
            return list(messages), ""
        previous = thread.get("previous_message_id")
        held = self._threads.get(previous) if isinstance(previous, str) else None
        if held is None or not isinstance(previous, str):
            raise ScriptError(
                f"thread: no thread holds a message with id {previous!r}",
                status=404,
                error_type="not_found_error",
                error_code="thread_not_found",
            )
        if previous in self._continued:
            raise ScriptError(
                f"thread: the message {previous} was already continued",
                error_code="thread_already_continued",
            )
        repeated = [name for name in ("system", "tools") if name in body]
        if repeated:
            raise ScriptError(f"thread: {', '.join(repeated)} cannot be sent when continuing a thread")
        return [*held, *messages], previous

    def _resolve(self, turn: Turn, messages: list[dict[str, Any]]) -> Reply:
        for _ in range(8):
            if isinstance(turn, Reply):
                return turn
            if isinstance(turn, str):
                return Reply(text=turn)
            if callable(turn):
                turn = turn(messages)
                continue
            calls = list(turn)
            if not all(isinstance(call, Mapping) for call in calls):
                raise ScriptError("a scripted turn's tool calls must be mappings (tool inputs)")
            return Reply(tool_calls=calls)
        raise ScriptError("a scripted turn kept returning callables")

    def _message(self, model: str, reply: Reply, history: list[dict[str, Any]]) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:24]}",
                    "name": reply.tool_name,
                    "input": dict(call),
                }
            )
        if not content:
            content.append({"type": "text", "text": ""})
        return {
            "id": f"msg_{next(self._ids):04d}{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": _estimate_tokens(history),
                "output_tokens": _estimate_tokens(content),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def _record(self, headers: dict[str, str], body: dict[str, Any]) -> None:
        authorization = headers.get("authorization", "")
        bearer = authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else None
        with self._lock:
            self.headers.append(headers)
            self.api_keys.append(headers.get("x-api-key", bearer))
            self.requests.append(body)

    def _record_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)


def _handler_for(api: ScriptedClaude) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "scripted-messages-api"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the stand-in never writes to stderr."""

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
            self.end_headers()
            self.wfile.write(data)

        def _refuse(self, error: ScriptError) -> None:
            api._record_error(error.message)
            self._send(error.status, error.body())

        def do_GET(self) -> None:
            self._refuse(
                ScriptError(
                    f"Not found: GET {urlsplit(self.path).path}", status=404, error_type="not_found_error"
                )
            )

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            length_header = self.headers.get("Content-Length")
            if length_header is None or not length_header.isdigit() or int(length_header) > _MAX_BODY_BYTES:
                self.close_connection = True
                self._refuse(ScriptError("A Content-Length of at most 32 MiB is required", status=413))
                return
            raw = self.rfile.read(int(length_header))
            if path != MESSAGES_PATH:
                self._refuse(ScriptError(f"Not found: POST {path}", status=404, error_type="not_found_error"))
                return
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                self._refuse(ScriptError(f"The request body is not valid JSON: {error}"))
                return
            if not isinstance(body, dict):
                self._refuse(ScriptError("The request body must be a JSON object"))
                return
            api._record({name.lower(): value for name, value in self.headers.items()}, body)
            try:
                payload = api.answer(body)
            except ScriptError as error:
                self._refuse(error)
                return
            except Exception as error:  # a bug in a scripted callable: report it, never have it retried
                self._refuse(ScriptError(f"the scripted turn failed: {error!r}"))
                return
            self._send(200, payload)

    return Handler


__all__ = [
    "API_KEY",
    "MESSAGES_PATH",
    "ScriptError",
    "ScriptedClaude",
    "check_tool_results_follow",
]
