"""The agent function: one Claude conversation turn with the memory tool, for one user.

Handler string: ``s3memory.aws_lambda.agent_handler``. The event is

- ``{"user_id": "alice", "prompt": "..."}``, or ``{"user_id": "alice", "messages": [...]}`` (Messages
  API message params, ending with the user's turn);
- optionally ``"model"``, ``"max_tokens"``, ``"max_iterations"``, and the request parameters of
  :data:`PASS_THROUGH` (``"system"``, ``"context_management"``, ``"betas"``, ``"temperature"``, ...).
  The same parameters can be set for every invocation in ``S3MEMORY_AGENT_PARAMS`` (a JSON object);
  the event's value of a parameter replaces the variable's. Any other key is refused.

The SDK's tool runner (``client.beta.messages.tool_runner``) drives :class:`S3MemoryTool` for that
user, on the bucket, prefix, S3 client and key provider of the container's runtime, the same one the
memory function uses (``memory.get_runtime``), so a warm container makes no KMS request. The answer::

    {"content": [...final assistant content blocks...], "text": "<their text, joined>",
     "stop_reason": "end_turn", "usage": {"input_tokens": <sum>, "output_tokens": <sum>},
     "iterations": <model turns>, "stopped_early": null | "max_iterations" | "deadline"}

or ``{"error": "<clear message>"}`` for a malformed event, a misconfigured function, or a Messages API
failure; the handler never raises.

**Bounds.** At most ``max_iterations`` model turns (event, ``S3MEMORY_MAX_ITERATIONS``, default 10).
No Messages API request, retries included, is started with less than the safety margin left before
the Lambda deadline (``S3MEMORY_DEADLINE_MARGIN_SECONDS``, default 10), and each request's timeout
ends a second before the deadline. Either way the memory tool calls of the last turn have run (as
the SDK does at ``max_iterations``) and the answer says ``stopped_early``.

**Configuration.** ``ANTHROPIC_API_KEY``, or ``ANTHROPIC_API_KEY_SECRET_ARN`` naming a Secrets
Manager secret whose string is the key or ``{"ANTHROPIC_API_KEY": "..."}`` (read once per container);
``S3MEMORY_MODEL`` (default ``claude-sonnet-4-5``), ``S3MEMORY_MAX_TOKENS`` (default 4096);
``ANTHROPIC_BASE_URL``; the ``S3MEMORY_*`` storage settings of ``s3memory.settings``.

One JSON log line per invocation names the request, user, model, turns, tool calls, outcome, tokens,
request counts and latency, never content or keys; one EMF line carries the metrics (``command`` is
``agent``; ``outcome`` is ``ok``, ``max_iterations``, ``deadline`` or ``error``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic import APIRequest, APIResponse, CallNext, Middleware

from ..cli import DEFAULT_MODEL
from ..errors import aws_error_code, shown, type_name, unexpected_failure
from ..paths import validate_namespace
from ..settings import SettingsError
from ..tool import S3MemoryTool
from . import metrics
from .memory import get_runtime

logger = logging.getLogger("s3memory")

API_KEY = "ANTHROPIC_API_KEY"
API_KEY_SECRET_ARN = "ANTHROPIC_API_KEY_SECRET_ARN"
BASE_URL = "ANTHROPIC_BASE_URL"
MODEL = "S3MEMORY_MODEL"
MAX_TOKENS = "S3MEMORY_MAX_TOKENS"
MAX_ITERATIONS = "S3MEMORY_MAX_ITERATIONS"
DEADLINE_MARGIN = "S3MEMORY_DEADLINE_MARGIN_SECONDS"
AGENT_PARAMS = "S3MEMORY_AGENT_PARAMS"

DEFAULT_MAX_TOKENS = 4096
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_DEADLINE_MARGIN_SECONDS = 10.0
ITERATIONS_LIMIT = 100
MAX_TOKENS_LIMIT = 128_000
API_MAX_RETRIES = 2
REQUEST_RESERVE_SECONDS = 1.0
"""A request's timeout ends this long before the deadline, leaving time to answer."""
MEMORY_BETA = "context-management-2025-06-27"
"""The memory tool's beta; always sent, with any others the parameters name."""
_UNFINISHED_STOP_REASONS = frozenset({"tool_use", "pause_turn", "compaction"})
_RETRIED_STATUSES = frozenset({408, 409, 429})
_INITIAL_RETRY_DELAY = 0.5
_MAX_RETRY_DELAY = 8.0


# -- the event ----------------------------------------------------------------------------------


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_number(value: object) -> bool:
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
    "temperature": ("a number", _is_number),
    "top_p": ("a number", _is_number),
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

_EVENT_KEYS = frozenset({"user_id", "prompt", "messages", "model", "max_tokens", "max_iterations"})
_ROLES = ("user", "assistant")


class _Invalid(Exception):
    """A malformed event or setting; the message is the answer."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Misconfigured(Exception):
    """A missing or invalid setting of the function; the message names the variable, never a key."""


@dataclass(frozen=True)
class AgentRequest:
    """A validated event."""

    user_id: str
    messages: list[dict[str, Any]]
    model: str | None = None
    max_tokens: int | None = None
    max_iterations: int | None = None
    params: dict[str, Any] = field(default_factory=dict)


def _whole_in_range(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    shown_value = value if _is_whole(value) else type_name(value)
    raise _Invalid(f"Error: `{name}` must be a whole number from {low} to {high}, got {shown_value}.")


def _checked_params(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in raw.items():
        expected = PASS_THROUGH.get(name)
        if expected is None:
            raise _Invalid(f"Error: {where} has an unknown parameter {shown(str(name))!r}.")
        description, check = expected
        if not check(value):
            raise _Invalid(f"Error: `{name}` must be {description}, got {type_name(value)}.")
        params[name] = value
    return params


def _checked_messages(raw: object) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise _Invalid(
            f"Error: `messages` must be a non-empty list of message objects, got {type_name(raw)}."
        )
    for index, message in enumerate(raw):
        if not isinstance(message, dict):
            raise _Invalid(f"Error: `messages[{index}]` must be an object, got {type_name(message)}.")
        if message.get("role") not in _ROLES:
            raise _Invalid(f"Error: `messages[{index}].role` must be 'user' or 'assistant'.")
        if not _is_text_or_blocks(message.get("content")):
            raise _Invalid(
                f"Error: `messages[{index}].content` must be a non-empty string or a list of content blocks."
            )
    if raw[-1]["role"] != "user":
        raise _Invalid("Error: The last of `messages` must have role 'user' (the turn to answer).")
    return raw


def parse_event(event: object) -> AgentRequest:
    """The validated request of an event; ``_Invalid`` with a clear message otherwise."""
    if not isinstance(event, dict):
        raise _Invalid(
            "Error: The event must be an object with `user_id` and `prompt` or `messages`, "
            f"got {type_name(event)}."
        )
    unknown = sorted(str(key) for key in event if key not in _EVENT_KEYS and key not in PASS_THROUGH)
    if unknown:
        allowed = ", ".join(sorted(_EVENT_KEYS | PASS_THROUGH.keys()))
        raise _Invalid(
            f"Error: The event has unknown keys: {', '.join(shown(key) for key in unknown[:5])} "
            f"(allowed: {allowed})."
        )
    if "user_id" not in event:
        raise _Invalid("Error: The event has no `user_id` (a non-empty string).")
    user_id = event["user_id"]
    if not isinstance(user_id, str) or not user_id:
        raise _Invalid(f"Error: `user_id` must be a non-empty string, got {type_name(user_id)}.")
    try:
        validate_namespace(user_id, "")
    except ValueError as error:
        raise _Invalid(f"Error: `user_id` is not a usable user id: {error}.") from None

    if ("prompt" in event) == ("messages" in event):
        raise _Invalid("Error: The event needs exactly one of `prompt` (a string) and `messages` (a list).")
    if "prompt" in event:
        prompt = event["prompt"]
        if not isinstance(prompt, str) or not prompt.strip():
            raise _Invalid(f"Error: `prompt` must be a non-empty string, got {type_name(prompt)}.")
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    else:
        messages = _checked_messages(event["messages"])

    model = event.get("model")
    if model is not None and not _is_string(model):
        raise _Invalid(f"Error: `model` must be a non-empty string, got {type_name(model)}.")
    max_tokens = event.get("max_tokens")
    if max_tokens is not None:
        max_tokens = _whole_in_range(max_tokens, "max_tokens", 1, MAX_TOKENS_LIMIT)
    max_iterations = event.get("max_iterations")
    if max_iterations is not None:
        max_iterations = _whole_in_range(max_iterations, "max_iterations", 1, ITERATIONS_LIMIT)
    params = _checked_params({k: v for k, v in event.items() if k in PASS_THROUGH}, "The event")
    return AgentRequest(user_id, messages, model, max_tokens, max_iterations, params)


# -- settings -----------------------------------------------------------------------------------


def _setting(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class AgentConfig:
    """The agent's settings from the environment."""

    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    deadline_margin: float = DEFAULT_DEADLINE_MARGIN_SECONDS
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> AgentConfig:
        """Read and check the agent's variables; ``_Misconfigured`` names the one that is wrong."""
        model = _setting(environ, MODEL) or DEFAULT_MODEL
        max_tokens = cls._whole(environ, MAX_TOKENS, DEFAULT_MAX_TOKENS, MAX_TOKENS_LIMIT)
        max_iterations = cls._whole(environ, MAX_ITERATIONS, DEFAULT_MAX_ITERATIONS, ITERATIONS_LIMIT)
        margin_text = _setting(environ, DEADLINE_MARGIN)
        margin = DEFAULT_DEADLINE_MARGIN_SECONDS
        if margin_text is not None:
            try:
                margin = float(margin_text)
            except ValueError:
                margin = -1.0
            if not (math.isfinite(margin) and 0 <= margin <= 900):
                raise _Misconfigured(f"{DEADLINE_MARGIN} must be a number of seconds from 0 to 900")
        params: dict[str, Any] = {}
        params_text = _setting(environ, AGENT_PARAMS)
        if params_text is not None:
            try:
                raw = json.loads(params_text)
            except (ValueError, RecursionError):
                raise _Misconfigured(f"{AGENT_PARAMS} must be a JSON object") from None
            if not isinstance(raw, dict):
                raise _Misconfigured(f"{AGENT_PARAMS} must be a JSON object, got {type_name(raw)}")
            try:
                params = _checked_params(raw, AGENT_PARAMS)
            except _Invalid as error:
                raise _Misconfigured(error.message.removeprefix("Error: ").rstrip(".")) from None
        return cls(model, max_tokens, max_iterations, margin, params)

    @staticmethod
    def _whole(environ: Mapping[str, str], name: str, default: int, high: int) -> int:
        text = _setting(environ, name)
        if text is None:
            return default
        if not text.isdigit() or not 1 <= int(text) <= high:
            raise _Misconfigured(f"{name} must be a whole number from 1 to {high}")
        return int(text)


# -- the API key and the client -----------------------------------------------------------------

_lock = threading.Lock()
_secret_keys: dict[str, str] = {}
_cached_client: tuple[tuple[str, str | None], anthropic.Anthropic] | None = None


def _key_from_secret(secret: str) -> str:
    text = secret.strip()
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        key = document.get(API_KEY) if isinstance(document, dict) else None
        if not isinstance(key, str) or not key.strip():
            raise _Misconfigured(
                f"the secret named by {API_KEY_SECRET_ARN} is JSON without a non-empty {API_KEY!r} string"
            )
        return key.strip()
    if not text:
        raise _Misconfigured(f"the secret named by {API_KEY_SECRET_ARN} is empty")
    return text


def _read_secret(secret_id: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    from ..clients import make_secretsmanager_client

    parts = secret_id.split(":")
    region = parts[3] if len(parts) >= 7 and parts[0] == "arn" and parts[3] else None
    try:
        answer = make_secretsmanager_client(region_name=region).get_secret_value(SecretId=secret_id)
    except (ClientError, BotoCoreError) as error:
        raise _Misconfigured(
            f"the Anthropic API key could not be read from Secrets Manager ({API_KEY_SECRET_ARN}): "
            f"{aws_error_code(error)}"
        ) from None
    secret = answer.get("SecretString")
    if not isinstance(secret, str):
        raise _Misconfigured(f"the secret named by {API_KEY_SECRET_ARN} has no string value")
    return _key_from_secret(secret)


def api_key(environ: Mapping[str, str]) -> str:
    """``ANTHROPIC_API_KEY``, else the key in the secret of ``ANTHROPIC_API_KEY_SECRET_ARN`` (read once
    per container; a failed read is tried again on the next invocation)."""
    key = _setting(environ, API_KEY)
    if key is not None:
        return key
    secret_id = _setting(environ, API_KEY_SECRET_ARN)
    if secret_id is None:
        raise _Misconfigured(f"set {API_KEY_SECRET_ARN} (a Secrets Manager secret) or {API_KEY}")
    with _lock:
        cached = _secret_keys.get(secret_id)
    if cached is not None:
        return cached
    key = _read_secret(secret_id)
    with _lock:
        _secret_keys[secret_id] = key
    return key


def _anthropic_client(key: str, base_url: str | None) -> anthropic.Anthropic:
    """The container's client (its connection pool outlives invocations), rebuilt if the key or base
    URL changes. The deadline middleware reads each invocation's deadline from a context variable."""
    global _cached_client
    identity = (hashlib.sha256(key.encode("utf-8")).hexdigest(), base_url)
    with _lock:
        if _cached_client is None or _cached_client[0] != identity:
            client = anthropic.Anthropic(
                api_key=key, base_url=base_url, max_retries=API_MAX_RETRIES, middleware=[_DeadlineGuard()]
            )
            _cached_client = (identity, client)
        return _cached_client[1]


def _reset_for_tests() -> None:
    """Forget the cached API keys and client."""
    global _cached_client
    with _lock:
        _secret_keys.clear()
        _cached_client = None


# -- the deadline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deadline:
    """When the invocation must have answered (``time.monotonic()`` seconds), and the margin."""

    at: float
    margin: float

    def remaining(self) -> float:
        return self.at - time.monotonic()

    @property
    def reached(self) -> bool:
        """Less than the margin is left: no Messages API request may start."""
        return self.remaining() < self.margin

    @classmethod
    def of(cls, context: object, margin: float) -> Deadline | None:
        """From the Lambda context's remaining time; None without one (a local call)."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return None
        try:
            milliseconds = remaining()
        except Exception:
            return None
        if not _is_number(milliseconds):
            return None
        return cls(time.monotonic() + float(milliseconds) / 1000, margin)


_deadline: ContextVar[Deadline | None] = ContextVar("s3memory_agent_deadline", default=None)


class DeadlineReached(Exception):
    """The next Messages API request would start too close to the Lambda deadline."""


class _NoTimeToRetry(Exception):
    """A retryable API error, with no time left to retry before the deadline."""

    def __init__(self, status: int, error_type: str | None) -> None:
        super().__init__(status, error_type)
        self.status = status
        self.error_type = error_type


def _retry_wait(response: APIResponse[Any], retries_taken: int) -> float:
    """How long the SDK would sleep before retrying: the ``retry-after`` the API asked for, else its
    exponential backoff (0.5 s doubling, at most 8 s; jitter only shortens it)."""
    headers = response.http_response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        text = headers.get(name)
        with contextlib.suppress(TypeError, ValueError):
            value = float(text) * scale if text is not None else 0.0
            if value > 0:
                return value
    return float(min(_INITIAL_RETRY_DELAY * 2**retries_taken, _MAX_RETRY_DELAY))


class _DeadlineGuard(Middleware):
    """Runs around every HTTP attempt (retries included) of the client: refuses to start one with less
    than the margin left, bounds its timeout by the deadline, and stops retries that cannot finish."""

    def handle(self, request: APIRequest, call_next: CallNext) -> APIResponse[Any]:
        deadline = _deadline.get()
        if deadline is None:
            return call_next(request)
        if deadline.reached:
            raise DeadlineReached()
        budget = max(0.5, deadline.remaining() - REQUEST_RESERVE_SECONDS)
        given = request.timeout
        timeout = given if isinstance(given, int | float) and 0 < given <= budget else budget
        try:
            response = call_next(request.copy(timeout=timeout))
        except anthropic.APIConnectionError:
            if deadline.reached:
                raise DeadlineReached() from None
            raise
        status = response.http_response.status_code
        if (status in _RETRIED_STATUSES or status >= 500) and (
            deadline.remaining() - _retry_wait(response, request.retries_taken) < deadline.margin
        ):
            error_type = None
            with contextlib.suppress(Exception):
                body = json.loads(response.http_response.content)
                error_type = str(body["error"]["type"])
            raise _NoTimeToRetry(status, error_type)
        return response


# -- the invocation -----------------------------------------------------------------------------


def _block(block: Any) -> dict[str, Any]:
    if hasattr(block, "to_dict"):
        converted: dict[str, Any] = block.to_dict(mode="json")
        return converted
    return dict(block)


def _api_error(error: anthropic.APIStatusError) -> str:
    kind = f" ({error.type})" if error.type else ""
    detail = f": {shown(error.api_message)}" if error.api_message else ""
    request = f" [request id {shown(error.request_id)}]" if error.request_id else ""
    return f"Error: The Messages API answered {error.status_code}{kind}{detail}{request}."


def _run(
    request: AgentRequest,
    config: AgentConfig,
    client: anthropic.Anthropic,
    tool: S3MemoryTool,
    record: dict[str, Any],
) -> dict[str, Any]:
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


@dataclass
class _Outcome:
    answer: dict[str, Any]
    error_type: str | None = None


def _unexpected(error: Exception) -> _Outcome:
    return _Outcome(
        {"error": unexpected_failure(error, "s3memory's agent", consequence="")}, type(error).__name__
    )


def _serve(event: object, context: object, environ: Mapping[str, str], record: dict[str, Any]) -> _Outcome:
    try:
        request = parse_event(event)
    except _Invalid as error:
        return _Outcome({"error": error.message}, "request")
    record["user_id"] = request.user_id
    try:
        config = AgentConfig.from_env(environ)
        runtime = get_runtime(environ)
        key = api_key(environ)
    except (SettingsError, _Misconfigured) as error:
        return _Outcome({"error": f"Error: s3memory's agent is misconfigured: {error}."}, "configuration")
    record["model"] = shown(request.model or config.model)

    deadline = Deadline.of(context, config.deadline_margin)
    if deadline is not None and deadline.reached:
        return _Outcome(
            {
                "content": [],
                "text": "",
                "stop_reason": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
                "iterations": 0,
                "stopped_early": "deadline",
            }
        )
    settings = runtime.settings
    token = _deadline.set(deadline)
    try:
        tool = S3MemoryTool(
            bucket=settings.bucket,
            user_id=request.user_id,
            key_provider=runtime.key_provider,
            s3_client=runtime.s3_client,
            prefix=settings.prefix,
        )
        client = _anthropic_client(key, _setting(environ, BASE_URL))
        return _Outcome(_run(request, config, client, tool, record))
    except _NoTimeToRetry as error:
        kind = f" ({error.error_type})" if error.error_type else ""
        return _Outcome(
            {
                "error": f"Error: The Messages API answered {error.status}{kind}, and too little time is "
                "left before the Lambda deadline to retry."
            },
            "api_status",
        )
    except anthropic.APIStatusError as error:
        return _Outcome({"error": _api_error(error)}, "api_status")
    except anthropic.APITimeoutError:
        return _Outcome({"error": "Error: The Messages API did not answer in time (timeout)."}, "api_timeout")
    except anthropic.APIConnectionError as error:
        return _Outcome(
            {
                "error": f"Error: The Messages API could not be reached ({type(error.__cause__ or error).__name__})."
            },
            "api_connection",
        )
    except (TypeError, ValueError) as error:
        return _Outcome(
            {"error": f"Error: The request was refused before it was sent: {shown(str(error))}"},
            type(error).__name__,
        )
    except Exception as error:
        logger.error("s3memory agent: unexpected %s", type(error).__name__)
        return _unexpected(error)
    finally:
        _deadline.reset(token)


def _outcome_name(outcome: _Outcome) -> str:
    if "error" in outcome.answer:
        return "error"
    stopped = outcome.answer.get("stopped_early")
    return stopped if isinstance(stopped, str) else "ok"


def handle(event: object, context: object = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Serve one event (``environ`` defaults to ``os.environ``); never raises."""
    started = time.perf_counter()
    environment = os.environ if environ is None else environ
    record: dict[str, Any] = {
        "event": "s3memory.agent_invocation",
        "request_id": None,
        "user_id": None,
        "model": None,
        "iterations": 0,
        "tool_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
    }
    with metrics.tally() as requests:
        try:
            request_id = getattr(context, "aws_request_id", None)
            record["request_id"] = shown(request_id) if isinstance(request_id, str) else None
            outcome = _serve(event, context, environment, record)
        except Exception as error:  # pragma: no cover - _serve answers every failure itself
            outcome = _unexpected(error)
    record["outcome"] = _outcome_name(outcome)
    record["stopped_early"] = outcome.answer.get("stopped_early")
    record["error_type"] = outcome.error_type
    record["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    record["s3_requests"] = requests.count("s3")
    record["kms_requests"] = requests.count("kms")
    level = logging.ERROR if outcome.error_type not in (None, "request") else logging.INFO
    with contextlib.suppress(Exception):  # logging must never fail an invocation
        logger.log(level, json.dumps(record, sort_keys=True))
    metrics.emit(
        environment,
        command="agent",
        outcome=record["outcome"],
        metrics={
            "Latency": (record["latency_ms"], metrics.MILLISECONDS),
            "S3Requests": (record["s3_requests"], metrics.COUNT),
            "KMSRequests": (record["kms_requests"], metrics.COUNT),
            "Iterations": (record["iterations"], metrics.COUNT),
            "InputTokens": (record["input_tokens"], metrics.COUNT),
            "OutputTokens": (record["output_tokens"], metrics.COUNT),
        },
        properties={"function": "agent", "request_id": record["request_id"]},
    )
    return outcome.answer


def agent_handler(event: object, context: object = None) -> dict[str, Any]:
    """The Lambda handler (``s3memory.aws_lambda.agent_handler``)."""
    return handle(event, context)
