"""MCP messages as a client sends them on the wire (JSON-RPC), for tests that speak it themselves:
the HTTP edge, the MCP function's API Gateway events, a raw stdio server."""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = "2025-06-18"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": PROTOCOL_VERSION}
"""What a streamable-HTTP client sends with each request."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def tools_call(arguments: dict[str, Any], id_: int = 2) -> dict[str, Any]:
    """A ``tools/call`` of the memory tool with ``arguments``."""
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": "memory", "arguments": arguments},
    }
