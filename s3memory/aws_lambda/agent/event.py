"""The agent's event: its keys, the request parameters it may pass through, and their checks."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from s3memory.aws_lambda.events import event_user
from s3memory.core.paths import UserId
from s3memory.crypto import validate_served_author
from s3memory.errors import shown, type_name

ITERATIONS_LIMIT = 100
MAX_TOKENS_LIMIT = 128_000


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_string(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) and item for item in value)


def _is_text_or_blocks(value: object) -> bool:
    return (isinstance(value, str) and bool(value)) or (
        isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)
    )


PASS_THROUGH: dict[str, tuple[str, Callable[[object], bool]]] = {
    "system": ("a non-empty string or a list of text blocks", _is_text_or_blocks),
    "context_management": ("an object", _is_object),
    "betas": ("a list of non-empty strings", _is_strings),
    "temperature": ("a number", is_number),
    "top_p": ("a number", is_number),
    "top_k": ("a whole number", _is_whole),
    "stop_sequences": ("a list of non-empty strings", _is_strings),
    "thinking": ("an object", _is_object),
    "tool_choice": ("an object", _is_object),
    "metadata": ("an object", _is_object),
    "output_config": ("an object", _is_object),
    "cache_control": ("an object", _is_object),
    "service_tier": ("a non-empty string", _is_string),
    "inference_geo": ("a non-empty string", _is_string),
    "speed": ("a non-empty string", _is_string),
    "thread": ("false (send the whole history every turn)", lambda value: value is False),
}
"""Request parameters an event (or ``S3MEMORY_AGENT_PARAMS``) may set, with the type each needs.
Those the installed SDK's ``tool_runner`` takes as keywords go there; the others go in the body."""

_EVENT_KEYS = frozenset({"user_id", "actor", "prompt", "messages", "model", "max_tokens", "max_iterations"})
_ROLES = ("user", "assistant")


class Invalid(Exception):
    """A malformed event or setting; the message is the answer."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class AgentRequest:
    """A validated event."""

    user_id: UserId
    messages: list[dict[str, Any]]
    model: str | None = None
    max_tokens: int | None = None
    max_iterations: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    actor: str | None = None
    """Who the memory writes are by (a session or agent id), when the event names one."""


def _whole_in_range(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    shown_value = value if _is_whole(value) else type_name(value)
    raise Invalid(f"Error: `{name}` must be a whole number from {low} to {high}, got {shown_value}.")


def checked_params(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The pass-through parameters of ``raw`` (an event's or ``S3MEMORY_AGENT_PARAMS``), checked;
    ``Invalid`` names an unknown or mistyped one, and ``where`` says whose."""
    params: dict[str, Any] = {}
    for name, value in raw.items():
        expected = PASS_THROUGH.get(name)
        if expected is None:
            raise Invalid(f"Error: {where} has an unknown parameter {shown(str(name))!r}.")
        description, check = expected
        if not check(value):
            raise Invalid(f"Error: `{name}` must be {description}, got {type_name(value)}.")
        params[name] = value
    return params


def _checked_messages(raw: object) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise Invalid(f"Error: `messages` must be a non-empty list of message objects, got {type_name(raw)}.")
    for index, message in enumerate(raw):
        if not isinstance(message, dict):
            raise Invalid(f"Error: `messages[{index}]` must be an object, got {type_name(message)}.")
        if message.get("role") not in _ROLES:
            raise Invalid(f"Error: `messages[{index}].role` must be 'user' or 'assistant'.")
        if not _is_text_or_blocks(message.get("content")):
            raise Invalid(
                f"Error: `messages[{index}].content` must be a non-empty string or a list of content blocks."
            )
    if raw[-1]["role"] != "user":
        raise Invalid("Error: The last of `messages` must have role 'user' (the turn to answer).")
    return raw


def parse_event(event: object) -> AgentRequest:
    """The validated request of an event; ``Invalid`` with a clear message otherwise."""
    if not isinstance(event, dict):
        raise Invalid(
            "Error: The event must be an object with `user_id` and `prompt` or `messages`, "
            f"got {type_name(event)}."
        )
    unknown = sorted(str(key) for key in event if key not in _EVENT_KEYS and key not in PASS_THROUGH)
    if unknown:
        allowed = ", ".join(sorted(_EVENT_KEYS | PASS_THROUGH.keys()))
        raise Invalid(
            f"Error: The event has unknown keys: {', '.join(shown(key) for key in unknown[:5])} "
            f"(allowed: {allowed})."
        )
    try:
        user_id = event_user(event)
    except ValueError as error:
        raise Invalid(str(error)) from None

    if ("prompt" in event) == ("messages" in event):
        raise Invalid("Error: The event needs exactly one of `prompt` (a string) and `messages` (a list).")
    if "prompt" in event:
        prompt = event["prompt"]
        if not isinstance(prompt, str) or not prompt.strip():
            raise Invalid(f"Error: `prompt` must be a non-empty string, got {type_name(prompt)}.")
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    else:
        messages = _checked_messages(event["messages"])

    model = event.get("model")
    if model is not None and not _is_string(model):
        raise Invalid(f"Error: `model` must be a non-empty string, got {type_name(model)}.")
    max_tokens = event.get("max_tokens")
    if max_tokens is not None:
        max_tokens = _whole_in_range(max_tokens, "max_tokens", 1, MAX_TOKENS_LIMIT)
    max_iterations = event.get("max_iterations")
    if max_iterations is not None:
        max_iterations = _whole_in_range(max_iterations, "max_iterations", 1, ITERATIONS_LIMIT)
    params = checked_params({k: v for k, v in event.items() if k in PASS_THROUGH}, "The event")
    actor = None
    if "actor" in event:
        try:
            actor = validate_served_author(event["actor"])
        except ValueError as error:
            raise Invalid(f"Error: `actor` is not usable: {error}.") from None
    return AgentRequest(user_id, messages, model, max_tokens, max_iterations, params, actor)
