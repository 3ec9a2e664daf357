"""One conversation turn: the SDK's tool runner driving the memory tool, its turns, tool calls and
tokens counted, and the answer built from the last message."""

from __future__ import annotations

from typing import Any

import anthropic

from s3memory.aws_lambda.agent.config import AgentConfig
from s3memory.aws_lambda.agent.deadline import DeadlineReached
from s3memory.aws_lambda.agent.event import AgentRequest
from s3memory.tool import S3MemoryTool

MEMORY_BETA = "context-management-2025-06-27"
"""The memory tool's beta; always sent, with any others the parameters name."""
_UNFINISHED_STOP_REASONS = frozenset({"tool_use", "pause_turn", "compaction"})


def _block(block: Any) -> dict[str, Any]:
    if hasattr(block, "to_dict"):
        converted: dict[str, Any] = block.to_dict(mode="json")
        return converted
    return dict(block)


def run(
    request: AgentRequest,
    config: AgentConfig,
    client: anthropic.Anthropic,
    tool: S3MemoryTool,
    record: dict[str, Any],
) -> dict[str, Any]:
    """Run the conversation to its end, ``max_iterations`` or the deadline; counts the turns, tool
    calls and tokens into ``record`` (tokens even when the run fails) and returns the answer."""
    from anthropic.resources.beta.messages import Messages

    params = {**config.params, **request.params}
    params["betas"] = list(dict.fromkeys([MEMORY_BETA, *params.get("betas", [])]))
    keywords = _runner_keywords(Messages)
    arguments = {name: value for name, value in params.items() if name in keywords}
    extra_body = {name: value for name, value in params.items() if name not in keywords}
    max_iterations = request.max_iterations or config.max_iterations

    runner = client.beta.messages.tool_runner(
        model=request.model or config.model,
        max_tokens=request.max_tokens or config.max_tokens,
        messages=request.messages,  # type: ignore[arg-type]
        tools=[tool],
        max_iterations=max_iterations,
        extra_body=extra_body or None,
        **arguments,
    )
    last: Any = None
    usage = {"input_tokens": 0, "output_tokens": 0}
    stopped_early: str | None = None
    try:
        for message in runner:
            last = message
            record["iterations"] += 1
            record["tool_calls"] += sum(1 for block in message.content if block.type == "tool_use")
            usage["input_tokens"] += int(message.usage.input_tokens or 0)
            usage["output_tokens"] += int(message.usage.output_tokens or 0)
    except DeadlineReached:
        stopped_early = "deadline"
    finally:
        record["input_tokens"], record["output_tokens"] = usage["input_tokens"], usage["output_tokens"]
    stop_reason = None if last is None else last.stop_reason
    if (
        stopped_early is None
        and record["iterations"] >= max_iterations
        and stop_reason in _UNFINISHED_STOP_REASONS
    ):
        stopped_early = "max_iterations"
    content = [] if last is None else [_block(block) for block in last.content]
    return {
        "content": content,
        "text": "".join(block.get("text", "") for block in content if block.get("type") == "text"),
        "stop_reason": stop_reason,
        "usage": usage,
        "iterations": record["iterations"],
        "stopped_early": stopped_early,
    }


_keywords_cache: dict[type, frozenset[str]] = {}


def _runner_keywords(messages_class: type) -> frozenset[str]:
    """The parameters the installed SDK's ``tool_runner`` takes by keyword."""
    import inspect

    cached = _keywords_cache.get(messages_class)
    if cached is None:
        cached = frozenset(inspect.signature(messages_class.tool_runner).parameters) - {"self"}  # type: ignore[attr-defined]
        _keywords_cache[messages_class] = cached
    return cached
