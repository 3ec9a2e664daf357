"""The MCP server of the memory tool, on the official SDK's low-level ``Server`` (the ``mcp`` extra).

``build_server`` takes one function, so that every transport builds the same server: the memory of
the request being served (``memory_of_request``), asked at each call. On stdio it is the memory of the
user ``--user`` named (``stdio.py``); over HTTP, that of the subject of the request's verified bearer
token, never a name in the request, with the shared memories its claims are granted mounted in it
(``http.py``). The server keeps nothing of a user between calls beyond what that function keeps.

A server is ``remote`` unless told otherwise: each call answers as to a caller across a network
(``answers.remote``: the operator's failures with a fixed text and a request id, the diagnosis in
the log), under the request id of the Lambda invocation serving it where there is one, else a fresh
one per call. Only stdio, whose caller is the operator's own client, builds it with ``remote=False``
and answers every failure in full.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from s3memory._version import __version__
from s3memory.edge.answers import Answer, answered
from s3memory.edge.answers import remote as remote_caller
from s3memory.errors import shown
from s3memory.mcp.schema import ANNOTATIONS, INPUT_SCHEMA, INSTRUCTIONS, TOOL_DESCRIPTION, TOOL_NAME
from s3memory.mounts import UserMemory

SERVER_NAME = "s3memory"
SERVER_TITLE = "s3memory: Claude's memory tool on S3, encrypted on the client"

MemoryOfRequest = Callable[[], UserMemory]
"""The memory of the request being served (its user checked by whoever let the request in); raises
when there is none (no command runs then). It may send requests (a warm memory placed in its store on
first use): it is asked in the command's thread, and its failure is the command's."""


def memory_tool() -> types.Tool:
    """The ``memory`` tool as ``tools/list`` lists it."""
    return types.Tool.model_validate(
        {
            "name": TOOL_NAME,
            "title": ANNOTATIONS["title"],
            "description": TOOL_DESCRIPTION,
            "inputSchema": INPUT_SCHEMA,
            "annotations": ANNOTATIONS,
        }
    )


COMMANDS_IN_FLIGHT = 16
"""The most commands one server runs at once (each in a worker thread; the rest wait their turn)."""


def build_server(memory_of_request: MemoryOfRequest, *, remote: bool = True) -> Server[Any]:
    """An MCP server with one tool, ``memory``, for the user of each request, and the instructions;
    ``remote``: its callers are across a network (``answers.remote``), not the operator."""
    serving: Callable[[], contextlib.AbstractContextManager[object]] = (
        remote_caller if remote else contextlib.nullcontext
    )
    listed = types.ListToolsResult(tools=[memory_tool()])
    limiters: list[anyio.CapacityLimiter] = []

    def commands() -> anyio.CapacityLimiter:
        """The commands' own threads (made in the server's event loop, on its first call)."""
        if not limiters:
            limiters.append(anyio.CapacityLimiter(COMMANDS_IN_FLIGHT))
        return limiters[0]

    async def list_tools(
        context: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        context: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {shown(params.name)}")
        arguments = {} if params.arguments is None else params.arguments

        def run() -> Answer:
            with serving():
                return answered(lambda: memory_of_request().run(arguments))

        # The core is synchronous (boto3): a worker thread runs the command, the loop serves on. The
        # commands have threads of their own, so calls stuck on a slow S3 never starve the transport's.
        result = await anyio.to_thread.run_sync(run, limiter=commands())
        return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.is_error)

    return Server(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
