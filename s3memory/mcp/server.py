"""The MCP server of the memory tool, on the official SDK's low-level ``Server`` (the ``mcp`` extra).

``build_server`` takes two functions, so that every transport builds the same server: the memory of a
user (``memory_of``), and the user of the request being served (``user_of_request``). On stdio the user
is the one ``--user`` named (``stdio.py``); over HTTP it will be the subject of the request's verified
bearer token, never a name in the request. The server keeps nothing of a user between calls beyond
what ``memory_of`` keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from s3memory._version import __version__
from s3memory.answers import answer
from s3memory.core.paths import UserId
from s3memory.errors import shown
from s3memory.mcp.tool import ANNOTATIONS, INPUT_SCHEMA, INSTRUCTIONS, TOOL_DESCRIPTION, TOOL_NAME
from s3memory.memory import S3Memory

SERVER_NAME = "s3memory"
SERVER_TITLE = "s3memory: Claude's memory tool on S3, encrypted on the client"

MemoryOf = Callable[[UserId], S3Memory]
"""The memory of a user id (checked by whoever named the user)."""
UserOfRequest = Callable[[], UserId]
"""The user of the request being served; raises when there is none (no command runs then)."""


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


def build_server(memory_of: MemoryOf, user_of_request: UserOfRequest) -> Server[Any]:
    """An MCP server with one tool, ``memory``, for the user of each request, and the instructions."""
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
        user = user_of_request()
        arguments = {} if params.arguments is None else params.arguments
        # The core is synchronous (boto3): a worker thread runs the command, the loop serves on. The
        # commands have threads of their own, so calls stuck on a slow S3 never starve the transport's.
        result = await anyio.to_thread.run_sync(
            lambda: answer(memory_of(user), arguments), limiter=commands()
        )
        return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.is_error)

    return Server(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
