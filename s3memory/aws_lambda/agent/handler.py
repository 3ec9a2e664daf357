"""The handler: serves one event (parse, configure, run under the deadline) and maps every failure to
a clear ``{"error": ...}`` answer; the shared invocation record (``record``) notes what it did.

The caller and the model are remote (``answers.remote``, under the invocation's ``aws_request_id``):
the memory tool's results name nothing of the operator's, and neither does the answer to a
misconfigured function, a store that cannot be reached or a fault: each is a fixed text naming the
request id, diagnosed in the function's log under it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from s3memory.aws_lambda import metrics, record
from s3memory.aws_lambda.agent.config import BASE_URL, AgentConfig, setting
from s3memory.aws_lambda.agent.conversation import run
from s3memory.aws_lambda.agent.credentials import anthropic_client, api_key
from s3memory.aws_lambda.agent.deadline import Deadline, NoTimeToRetry, current_deadline
from s3memory.aws_lambda.agent.event import Invalid, parse_event
from s3memory.aws_lambda.runtime import get_runtime
from s3memory.edge.answers import diagnose, failed, remote
from s3memory.errors import CommandError, shown
from s3memory.settings import SettingsError
from s3memory.tool import S3MemoryTool

MISCONFIGURED = "Error: s3memory's agent is misconfigured; nothing was run. (request id {request_id})"
"""The answer to a missing or invalid setting (named in the log under the request id)."""
FAILED = "Error: s3memory's agent failed unexpectedly. (request id {request_id})"
"""The answer to a fault nobody foresaw (its type and frames in the log under the request id)."""

MODEL_ID = re.compile(r"[A-Za-z0-9._:/-]{1,100}")
"""What a model id looks like; the record names any other model ``other`` (the event's text is not logged)."""


def _api_error(error: anthropic.APIStatusError) -> str:
    kind = f" ({error.type})" if error.type else ""
    detail = f": {shown(error.api_message)}" if error.api_message else ""
    request = f" [request id {shown(error.request_id)}]" if error.request_id else ""
    return f"Error: The Messages API answered {error.status_code}{kind}{detail}{request}."


@dataclass
class _Outcome:
    answer: dict[str, Any]
    error_type: str | None = None


def _unexpected(error: Exception) -> _Outcome:
    return _Outcome({"error": FAILED.format(request_id=diagnose(error))}, type(error).__name__)


def _serve(event: object, context: object, environ: Mapping[str, str], fields: dict[str, Any]) -> _Outcome:
    try:
        request = parse_event(event)
    except Invalid as error:
        return _Outcome({"error": error.message}, "request")
    try:
        config = AgentConfig.from_env(environ)
        runtime = get_runtime(environ)
        key = api_key(environ)
    except SettingsError as error:  # Misconfigured too
        return _Outcome({"error": MISCONFIGURED.format(request_id=diagnose(error))}, "configuration")
    model = request.model or config.model
    fields["model"] = model if MODEL_ID.fullmatch(model) else "other"

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
    token = current_deadline.set(deadline)
    try:
        with runtime.serving(request.user_id, fields, request.actor) as memory:
            client = anthropic_client(key, setting(environ, BASE_URL))
            return _Outcome(run(request, config, client, S3MemoryTool.over(memory), fields))
    except CommandError as error:  # the store, before the conversation began
        return _Outcome({"error": failed(error)}, type(error).__name__)
    except NoTimeToRetry as error:
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
        return _unexpected(error)
    finally:
        current_deadline.reset(token)


def _outcome_name(outcome: _Outcome) -> str:
    if "error" in outcome.answer:
        return "error"
    stopped = outcome.answer.get("stopped_early")
    return stopped if isinstance(stopped, str) else "ok"


def handle(event: object, context: object = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Serve one event (``environ`` defaults to ``os.environ``); never raises."""
    environment = os.environ if environ is None else environ
    with record.invocation("agent", context, environment) as invocation, remote(invocation.request_id):
        fields = invocation.fields
        fields.update(model=None, iterations=0, tool_calls=0, input_tokens=0, output_tokens=0)
        invocation.command = "agent"
        try:
            outcome = _serve(event, context, environment, fields)
        except Exception as error:  # pragma: no cover - _serve answers every failure itself
            outcome = _unexpected(error)
        invocation.outcome = _outcome_name(outcome)
        invocation.error_type = outcome.error_type
        invocation.failed = outcome.error_type not in (None, "request")
        fields["stopped_early"] = outcome.answer.get("stopped_early")
        invocation.metrics = {
            "Iterations": (fields["iterations"], metrics.COUNT),
            "InputTokens": (fields["input_tokens"], metrics.COUNT),
            "OutputTokens": (fields["output_tokens"], metrics.COUNT),
        }
    return outcome.answer


def agent_handler(event: object, context: object = None) -> dict[str, Any]:
    """The Lambda handler (``s3memory.aws_lambda.agent_handler``)."""
    return handle(event, context)
