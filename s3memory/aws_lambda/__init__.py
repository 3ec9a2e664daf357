"""AWS Lambda entry points. Handler strings: ``s3memory.aws_lambda.memory_handler``,
``s3memory.aws_lambda.agent_handler`` and ``s3memory.aws_lambda.mcp_handler``.

Importing this package, or serving the memory handler, imports neither ``anthropic`` nor ``mcp``:
the memory function serves the core only. ``agent_handler`` and ``mcp_handler`` are lazy attributes;
the agent module (and with it ``anthropic``) or the MCP function's (and the MCP SDK) is imported on
first access, which the Lambda runtime does once, at init.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from s3memory.aws_lambda.memory_function import memory_handler

if TYPE_CHECKING:
    from s3memory.aws_lambda.agent import agent_handler
    from s3memory.aws_lambda.mcp_function import mcp_handler

__all__ = ["agent_handler", "mcp_handler", "memory_handler"]


def __getattr__(name: str) -> Any:
    if name == "agent_handler":
        from s3memory.aws_lambda.agent import agent_handler as handler
    elif name == "mcp_handler":
        from s3memory.aws_lambda.mcp_function import mcp_handler as handler
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = handler  # later look-ups skip this function
    return handler
