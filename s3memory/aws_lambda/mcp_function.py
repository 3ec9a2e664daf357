"""The MCP function: the memory tool for MCP clients (Claude Code, Claude Desktop, connectors) on AWS
Lambda, behind the HTTP API: ``ANY /mcp`` with the JWT authorizer, and ``GET
/.well-known/oauth-protected-resource`` (and its form suffixed with ``/mcp``) without one.

Each invocation is one HTTP request of MCP's streamable HTTP transport, stateless and with JSON
responses, served by the ASGI app of ``s3memory mcp --transport http`` (``mcp/http.py``): the function
verifies each request's bearer token itself (``s3memory.edge.tokens``, against ``S3MEMORY_JWT_*``), as the
memory function does, so a forged event from a direct invoker is refused; the user is the token's
subject, never a name in the request; a refusal is 401 with ``WWW-Authenticate`` and the
protected-resource metadata of ``S3MEMORY_MCP_URL`` (the route's public URL) is served to anyone. An
event that is not an API Gateway HTTP API event (payload 2.0) is refused: nothing else names a user.

The event becomes an ASGI request and the app's answer an API Gateway response. The container keeps
the runtime (``runtime``: the clients, the key provider, the issuer's keys, one memory per user); the
app and its event loop live for one invocation. The writes are by ``mcp``, as over HTTP. One record
per invocation (``record``, function ``mcp``): the MCP method (one of a fixed few, else ``other``),
the memory command of a ``tools/call``, the outcome (``error`` for a refused request, a JSON-RPC
error or a tool error), the status and the request counts; never content, paths, tokens or user ids.
The handler never raises.

Its callers are remote (``answers.remote``): a failure of the operator's (the store, a setting, a
fault) is answered with a fixed text naming the invocation's request id (Lambda's
``aws_request_id``), and diagnosed in the function's log under it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from s3memory.aws_lambda import record
from s3memory.aws_lambda.events import Refused, body_text, command_name, is_http
from s3memory.aws_lambda.runtime import Runtime, get_runtime
from s3memory.edge.answers import failed, remote
from s3memory.mcp.http import http_app
from s3memory.mcp.schema import MCP_ACTOR
from s3memory.mounts import Caller, UserMemory
from s3memory.settings import JWT_ISSUER, MCP_URL, SettingsError

if TYPE_CHECKING:
    from starlette.types import Message, Scope

FUNCTION = "mcp"
MCP_METHODS = frozenset({"initialize", "notifications/initialized", "ping", "tools/list", "tools/call"})
"""The MCP methods the record names; any other is ``other`` (no untrusted text in logs)."""
_JSON = "application/json"


@dataclass
class _Response:
    """What the app sent: the status, the headers and the body."""

    status: int = 500
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)


def _refused(status: int, message: str) -> _Response:
    body = json.dumps({"error_description": message}).encode()
    return _Response(status, [(b"content-type", _JSON.encode())], bytearray(body))


def _scope(event: dict[Any, Any]) -> Scope:
    """The ASGI scope of an HTTP API event (payload 2.0); ``Refused`` (400) when it is malformed."""
    if event.get("version") != "2.0":
        raise Refused(400, "Error: Only API Gateway HTTP API events of payload format 2.0 are supported.")
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, dict) else None
    method = http.get("method") if isinstance(http, dict) else None
    route = event.get("routeKey")
    # The route's own path (the stage is not in it); the raw path only for the catch-all route.
    path = route.partition(" ")[2] if isinstance(route, str) and " " in route else event.get("rawPath")
    headers = event.get("headers", {})
    cookies = event.get("cookies", [])
    query = event.get("rawQueryString", "")
    if not (
        isinstance(method, str)
        and isinstance(path, str)
        and path.startswith("/")
        and isinstance(headers, dict)
        and all(isinstance(name, str) and isinstance(value, str) for name, value in headers.items())
        and isinstance(cookies, list)
        and all(isinstance(cookie, str) for cookie in cookies)
        and isinstance(query, str)
    ):
        raise Refused(400, "Error: The event is not an API Gateway HTTP API request (payload format 2.0).")
    fields = [(name.lower(), value) for name, value in headers.items() if name.lower() != "cookie"]
    if cookies:
        fields.append(("cookie", "; ".join(cookies)))
    try:
        encoded = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in fields]
        raw_path, raw_query = path.encode("latin-1"), query.encode("latin-1")
    except UnicodeEncodeError:
        raise Refused(400, "Error: The request's path, query or headers are not Latin-1 text.") from None
    domain = context.get("domainName") if isinstance(context, dict) else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method.upper(),
        "scheme": "https",
        "path": path,
        "raw_path": raw_path,
        "query_string": raw_query,
        "root_path": "",
        "headers": encoded,
        "server": (domain if isinstance(domain, str) else "lambda", 443),
        "client": None,
        "state": {},
    }


class _Memories:
    """The app's ``memory_of`` for one invocation: the user's warm memory, its writes by ``mcp``, with
    the mounts the token was granted (``S3MEMORY_MOUNTS``); counts the job records the user's own
    memory set aside in quarantine."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.served: list[tuple[list[str], int]] = []
        """The records each served memory has set aside, and how many it had before."""

    def __call__(self, caller: Caller) -> UserMemory:
        memory = self.runtime.memory(caller.user).acting_as(MCP_ACTOR)
        set_aside = memory.placed.jobs.set_aside
        self.served.append((set_aside, len(set_aside)))
        return self.runtime.mounted(memory, caller.mounts)

    def set_aside(self) -> int:
        return sum(len(set_aside) - before for set_aside, before in self.served)


def _serve_request(runtime: Runtime, scope: Scope, body: bytes, memories: _Memories) -> _Response:
    """Serve one request with a fresh app (its session manager runs once) in a fresh event loop."""
    resource = runtime.settings.edge.mcp_url
    assert resource is not None and runtime.tokens is not None
    host = scope["server"][0]
    grants = runtime.settings.edge.grants
    # API Gateway hands over whole bodies it bounded, and this app serves one request: no edge limits.
    app = http_app(
        memories, host=host, resource=resource, verifier=runtime.tokens, grants=grants, limits=None
    )
    response = _Response()
    received: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        if received:
            return received.pop()
        await anyio.sleep_forever()  # the client never disconnects before the answer
        raise AssertionError  # pragma: no cover - sleep_forever returns only by cancellation

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            response.body += message.get("body", b"")

    async def serve() -> None:
        async with app.router.lifespan_context(app):
            await app(scope, receive, send)

    anyio.run(serve)
    return response


def _note_call(body: bytes, invocation: record.Invocation) -> None:
    """The MCP method and the memory command of the request, for the record."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        message = None
    method = message.get("method") if isinstance(message, dict) else None
    invocation.fields["mcp_method"] = method if isinstance(method, str) and method in MCP_METHODS else "other"
    params = message.get("params") if isinstance(message, dict) else None
    if method == "tools/call" and isinstance(params, dict):
        invocation.command = command_name(params.get("arguments"))


def _outcome(response: _Response) -> tuple[str, str | None]:
    """``ok``, or ``error`` with its kind: a refused request, a JSON-RPC error, a tool error."""
    if response.status >= 400:
        return "error", "request"
    try:
        message = json.loads(response.body) if response.body else None
    except (ValueError, RecursionError):
        message = None
    if isinstance(message, dict) and "error" in message:
        return "error", "jsonrpc"
    result = message.get("result") if isinstance(message, dict) else None
    if isinstance(result, dict) and result.get("isError") is True:
        return "error", "tool"
    return "ok", None


def _serve(event: object, environ: Mapping[str, str], invocation: record.Invocation) -> _Response:
    try:
        runtime = get_runtime(environ)
        if runtime.tokens is None or runtime.settings.edge.mcp_url is None:
            missing = JWT_ISSUER if runtime.tokens is None else MCP_URL
            why = (
                "each request's token is verified"
                if runtime.tokens is None
                else "the resource clients are told"
            )
            raise SettingsError(f"the MCP function needs {missing} ({why})")
    except SettingsError as error:
        return _refused(500, failed(error))
    except Exception as error:  # the runtime could not be built: no request of a command was sent
        invocation.error_type = type(error).__name__
        return _refused(500, failed(error))
    if not is_http(event):
        return _refused(
            403,
            "Error: The MCP function serves API Gateway HTTP API events only: an event that names its "
            "own user is refused. Nothing was read or changed.",
        )
    try:
        scope = _scope(event)
        body = body_text(event).encode("utf-8")
    except Refused as refusal:
        return _refused(refusal.status, refusal.message)
    _note_call(body, invocation)
    memories = _Memories(runtime)
    response = _serve_request(runtime, scope, body, memories)
    invocation.fields["job_records_set_aside"] = memories.set_aside()
    return response


def _api_response(response: _Response) -> dict[str, Any]:
    headers: dict[str, str] = {}
    cookies = []
    for raw_name, raw_value in response.headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name == "set-cookie":
            cookies.append(value)
        else:
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    answer: dict[str, Any] = {"statusCode": response.status, "headers": headers}
    if cookies:
        answer["cookies"] = cookies
    try:
        answer["body"], answer["isBase64Encoded"] = bytes(response.body).decode("utf-8"), False
    except UnicodeDecodeError:  # pragma: no cover - the app answers JSON or text only
        import base64

        answer["body"], answer["isBase64Encoded"] = base64.b64encode(response.body).decode(), True
    return answer


def handle(event: object, context: object = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Serve one event (``environ`` defaults to ``os.environ``); never raises."""
    environment = os.environ if environ is None else environ
    with record.invocation(FUNCTION, context, environment) as invocation, remote(invocation.request_id):
        invocation.fields["source"] = "http"
        try:
            response = _serve(event, environment, invocation)
        except Exception as error:
            response = _refused(500, failed(error, changed=True))
            invocation.error_type = type(error).__name__
        invocation.fields["status"] = response.status
        invocation.failed = response.status >= 500
        invocation.outcome, kind = _outcome(response)
        invocation.error_type = invocation.error_type or kind
    return _api_response(response)


def mcp_handler(event: object, context: object = None) -> dict[str, Any]:
    """The Lambda handler (``s3memory.aws_lambda.mcp_handler``)."""
    return handle(event, context)
