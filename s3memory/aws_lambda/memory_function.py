"""The memory function: runs one memory-tool command per invocation, for one user.

Two event shapes (``events``): a direct invocation ``{"user_id": "alice", "input": {...}}``, served only
where ``S3MEMORY_DIRECT_INVOCATION`` allows it, answers ``{"content": "<text>", "is_error": bool}``; an
API Gateway HTTP API event (payload 2.0, body ``{"input": {...}}``), whose user is the subject of the
bearer token the function verifies itself (``s3memory.edge.tokens``), answers an HTTP response with that body: 200
for every tool result (tool errors included), 400 for a malformed request, 401 without a valid token,
403 for a token that may not pass or a refused direct event, 500 for a misconfigured function or an
unexpected fault, 503 when the issuer's keys cannot be fetched.

Both shapes are remote callers (``answers.remote``): a direct invoker's answer is a tool result too,
for a model that may be prompt-injected. The memory tool contract's refusals are answered whole; a
failure of the operator's (the store, a setting, a fault) with a fixed text naming the invocation's
request id (Lambda's ``aws_request_id``), diagnosed in the function's log under it.

The handler never raises: every failure is an answer with a clear message. The container's runtime
(``runtime``) keeps the clients, the key provider and one memory object per user between
invocations. One record per invocation (``record``) names the request, command, outcome, latency,
request counts and the job records set aside in quarantine, never content, paths or user ids.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from s3memory.aws_lambda import record
from s3memory.aws_lambda.events import Refused, command_name, direct_request, http_request, is_http
from s3memory.aws_lambda.runtime import get_runtime
from s3memory.core.commands import parse_command
from s3memory.edge.answers import failed, remote
from s3memory.errors import CommandError
from s3memory.settings import SettingsError
from s3memory.storage.bucket import watching

_JSON_HEADERS = {"content-type": "application/json"}


@dataclass(frozen=True)
class _Answer:
    status: int
    content: str
    is_error: bool
    error_type: str | None = None


def _serve(event: object, environ: Mapping[str, str], invocation: record.Invocation) -> _Answer:
    try:
        runtime = get_runtime(environ)
        if is_http(event):
            request = http_request(event, runtime.tokens, runtime.settings.edge.grants)
        else:
            request = direct_request(event, runtime.settings.edge)
    except SettingsError as error:
        return _Answer(500, failed(error), True, "configuration")
    except Refused as refusal:
        return _Answer(refusal.status, refusal.message, True, refusal.error_type)
    except Exception as error:  # the runtime could not be built: no request of a command was sent
        return _Answer(500, failed(error), True, type(error).__name__)
    invocation.command = command_name(request.tool_input)
    with watching() as changes:
        try:
            # before the memory is opened: bad input writes nothing
            command = parse_command(request.tool_input)
            with runtime.serving(request.user_id, invocation.fields, request.actor) as own:
                return _Answer(200, runtime.mounted(own, request.mounts).run_command(command), False)
        except CommandError as error:
            return _Answer(200, failed(error, changed=changes.maybe), True, type(error).__name__)
        except Exception as error:
            return _Answer(500, failed(error, changed=changes.maybe), True, type(error).__name__)


def handle(event: object, context: object = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Serve one event (``environ`` defaults to ``os.environ``); never raises."""
    environment = os.environ if environ is None else environ
    http = is_http(event)
    with record.invocation("memory", context, environment) as invocation, remote(invocation.request_id):
        invocation.fields["source"] = "http" if http else "direct"
        try:
            answer = _serve(event, environment, invocation)
        except Exception as error:  # pragma: no cover - _serve answers every failure itself
            answer = _Answer(500, failed(error, changed=True), True, type(error).__name__)
        invocation.outcome = "error" if answer.is_error else "ok"
        invocation.error_type = answer.error_type
        invocation.failed = answer.status >= 500
        if http:
            invocation.fields["status"] = answer.status
    result = {"content": answer.content, "is_error": answer.is_error}
    if not http:
        return result
    return {"statusCode": answer.status, "headers": dict(_JSON_HEADERS), "body": json.dumps(result)}


def memory_handler(event: object, context: object = None) -> dict[str, Any]:
    """The Lambda handler (``s3memory.aws_lambda.memory_handler``)."""
    return handle(event, context)
