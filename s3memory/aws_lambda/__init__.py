"""AWS Lambda entry points. Handler strings: ``s3memory.aws_lambda.memory_handler`` and
``s3memory.aws_lambda.agent_handler``.

Importing this package, or serving the memory handler, does not import ``anthropic``: the memory
function serves the core only. ``agent_handler`` is a lazy attribute; the agent module (and with it
``anthropic``) is imported on first access, which the Lambda runtime does once, at init.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from s3memory.aws_lambda.memory import memory_handler

if TYPE_CHECKING:
    from s3memory.aws_lambda.agent import agent_handler

__all__ = ["agent_handler", "memory_handler"]


def __getattr__(name: str) -> Any:
    if name == "agent_handler":
        from s3memory.aws_lambda.agent import agent_handler

        globals()["agent_handler"] = agent_handler  # later look-ups skip this function
        return agent_handler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
