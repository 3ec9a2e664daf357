"""An HTTP API in front of a Lambda handler, in process: each request of an ``httpx2`` client becomes the
payload-2.0 event API Gateway would send for the route it matches, the handler's answer becomes the
response. No authorizer runs: the handler's own token check is what it meets, as a forged event from a
direct invoker would.

The official ``mcp`` client talks to the MCP function through it exactly as to a server over HTTP.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
import httpx2
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .issuer import http_event
from .mcp_servers import CALL_TIMEOUT_SECONDS, McpClient

DOMAIN = "abc123.execute-api.us-east-1.amazonaws.com"
MCP_URL = f"https://{DOMAIN}/mcp"
ROUTES = {
    "/mcp": "ANY /mcp",
    "/.well-known/oauth-protected-resource": "GET /.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp": "GET /.well-known/oauth-protected-resource/mcp",
}
"""The MCP function's routes (terraform/api.tf): the path each serves, and its route key."""

Handler = Callable[[dict[str, Any], object], dict[str, Any]]


def event_of(request: httpx2.Request, body: bytes) -> dict[str, Any] | None:
    """The event of ``request`` (None when no route matches: API Gateway answers 404 itself)."""
    route = ROUTES.get(request.url.path)
    if route is None or (not route.startswith("ANY ") and route.split(" ")[0] != request.method):
        return None
    headers = {name.lower(): value for name, value in request.headers.items()}
    event = http_event(None, claimed_sub=None, route=route, method=request.method, headers=headers)
    event["rawQueryString"] = request.url.query.decode("ascii")
    if body:
        event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
    return event


def gateway(handler: Handler) -> httpx2.MockTransport:
    """A transport that answers each request with ``handler``, run in a worker thread."""

    async def answer(request: httpx2.Request) -> httpx2.Response:
        event = event_of(request, await request.aread())
        if event is None:
            return httpx2.Response(404, json={"message": "Not Found"})
        served = await anyio.to_thread.run_sync(handler, event, None)
        body = served.get("body", "")
        raw = base64.b64decode(body) if served.get("isBase64Encoded") else body.encode("utf-8")
        return httpx2.Response(served["statusCode"], headers=served.get("headers", {}), content=raw)

    return httpx2.MockTransport(answer)


@contextmanager
def client_through(handler: Handler, token: str | None) -> Iterator[McpClient]:
    """The official client, connected to ``handler`` through the gateway, sending ``token``."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with start_blocking_portal() as portal:
        http = httpx2.AsyncClient(transport=gateway(handler), headers=headers, timeout=CALL_TIMEOUT_SECONDS)
        with portal.wrap_async_context_manager(http):
            client = Client(
                streamable_http_client(MCP_URL, http_client=http), read_timeout_seconds=CALL_TIMEOUT_SECONDS
            )
            with portal.wrap_async_context_manager(client):
                yield McpClient(portal, client, None)
