"""The memory function: runs one memory-tool command per invocation, for one user.

Two event shapes:

- **Direct invocation** (Lambda Invoke API): ``{"user_id": "alice", "input": {...tool_use input...}}``
  answers ``{"content": "<text>", "is_error": false|true}``. The caller is trusted to name the user.
- **API Gateway HTTP API, payload format 2.0**: the user is the JWT authorizer's ``sub`` claim, never
  anything in the body; the body is ``{"input": {...}}``. The answer is an HTTP response whose body is
  ``{"content", "is_error"}``: 200 for every tool result (tool errors included), 400 for a malformed
  request, 401 without a subject, 403 for a subject that is not a usable user id, 500 for a
  misconfigured function or an unexpected fault.

The handler never raises: every failure is an answer with a clear message. Settings, the S3 client and
the key provider are built once per container and reused while the settings are unchanged (the KMS
provider's key cache is what keeps warm commands free of KMS requests). One JSON log line per
invocation names the request, command, user, outcome, latency and request counts, and never content
or paths; one CloudWatch Embedded Metric Format line per invocation (``s3memory.aws_lambda.metrics``)
carries ``Latency``, ``S3Requests`` and ``KMSRequests`` by ``command`` and ``outcome``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..commands import COMMANDS
from ..crypto import KeyProvider, KMSKeyProvider
from ..errors import CommandError, shown, type_name, unexpected_failure
from ..memory import S3Memory
from ..paths import validate_namespace
from ..settings import Settings, SettingsError
from ..store import S3Store
from . import metrics

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

logger = logging.getLogger("s3memory")
if logger.level == logging.NOTSET:
    # Lambda's root logger passes WARNING and above only; the invocation lines are INFO.
    logger.setLevel(logging.INFO)

_JSON_HEADERS = {"content-type": "application/json"}


@dataclass(frozen=True)
class Runtime:
    """What a warm container reuses: the settings it was built from, the S3 client, the key provider."""

    settings: Settings
    s3_client: S3Client
    key_provider: KeyProvider


_lock = threading.Lock()
_runtime: Runtime | None = None


def get_runtime(environ: Mapping[str, str] | None = None) -> Runtime:
    """The container's runtime, built on first use and rebuilt only when the settings change.

    Raises ``SettingsError`` (naming the variable) when the settings are missing or invalid.
    """
    global _runtime
    settings = Settings.from_env(os.environ if environ is None else environ)
    with _lock:
        current = _runtime
        if current is None or current.settings != settings:
            current = Runtime(settings, settings.make_s3_client(), settings.make_key_provider())
            _instrument(current)
            _runtime = current
        return current


def _instrument(runtime: Runtime) -> None:
    """Count the runtime's S3 and KMS requests per invocation (see ``metrics``)."""
    metrics.instrument(runtime.s3_client, "s3")
    if isinstance(runtime.key_provider, KMSKeyProvider):
        metrics.instrument(runtime.key_provider.client, "kms")


def _reset_for_tests() -> None:
    """Forget the cached runtime (the next invocation builds a new one)."""
    global _runtime
    with _lock:
        _runtime = None


class _Refused(Exception):
    """A request refused before any storage request: a malformed event or an unusable identity."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class _Answer:
    status: int
    content: str
    is_error: bool
    error_type: str | None = None


def _unexpected(error: Exception) -> _Answer:
    return _Answer(500, unexpected_failure(error), True, type(error).__name__)


def _checked_user(user_id: str, status: int, what: str) -> str:
    try:
        validate_namespace(user_id, "")
    except ValueError as error:
        raise _Refused(status, f"Error: {what} is not a usable user id: {error}.") from None
    return user_id


def _direct_request(event: object) -> tuple[str, dict[str, Any]]:
    """The user id and tool input of a direct invocation."""
    if not isinstance(event, dict):
        raise _Refused(
            400,
            f"Error: The event must be an object with `user_id` and `input`, got {type_name(event)}.",
        )
    if "user_id" not in event:
        raise _Refused(400, "Error: The event has no `user_id` (a non-empty string).")
    user_id = event["user_id"]
    if not isinstance(user_id, str) or not user_id:
        raise _Refused(400, f"Error: `user_id` must be a non-empty string, got {type_name(user_id)}.")
    _checked_user(user_id, 400, "`user_id`")
    return user_id, _tool_input(event, "The event")


def _tool_input(container: dict[Any, Any], where: str) -> dict[str, Any]:
    if "input" not in container:
        raise _Refused(400, f"Error: {where} has no `input` (the memory tool's tool_use input object).")
    raw_input = container["input"]
    if not isinstance(raw_input, dict):
        raise _Refused(
            400, f"Error: `input` must be an object (the tool_use input), got {type_name(raw_input)}."
        )
    return raw_input


def _subject(event: dict[Any, Any]) -> str:
    """The JWT authorizer's ``sub`` claim, or a 401/403 refusal."""
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, dict) else None
    jwt = authorizer.get("jwt") if isinstance(authorizer, dict) else None
    claims = jwt.get("claims") if isinstance(jwt, dict) else None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    if not isinstance(subject, str) or not subject:
        raise _Refused(401, "Error: The request is not authenticated: it carries no JWT subject (sub).")
    return _checked_user(subject, 403, "The token's subject")


def _http_body(event: dict[Any, Any]) -> dict[Any, Any]:
    body = event.get("body")
    if body is None or body == "":
        raise _Refused(400, "Error: The request has no body; send a JSON object with `input`.")
    if not isinstance(body, str):
        raise _Refused(400, "Error: The request body must be JSON text.")
    if event.get("isBase64Encoded") is True:
        try:
            body = base64.b64decode(body, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise _Refused(400, "Error: The request body is not valid base64-encoded UTF-8.") from None
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        raise _Refused(400, "Error: The request body is not valid JSON.") from None
    if not isinstance(parsed, dict):
        raise _Refused(
            400, f"Error: The request body must be a JSON object with `input`, got {type_name(parsed)}."
        )
    return parsed


def _http_request(event: dict[Any, Any]) -> tuple[str, dict[str, Any]]:
    """The user id (the JWT subject, never the body's) and tool input of an HTTP API request."""
    if event.get("version") != "2.0":
        raise _Refused(400, "Error: Only API Gateway HTTP API events of payload format 2.0 are supported.")
    user_id = _subject(event)
    return user_id, _tool_input(_http_body(event), "The request body")


def _command_name(raw_input: object) -> str | None:
    """The command name for the log, only when it is one of the six (no untrusted text in logs)."""
    command = raw_input.get("command") if isinstance(raw_input, dict) else None
    return command if isinstance(command, str) and command in COMMANDS else None


def _serve(event: object, environ: Mapping[str, str] | None, record: dict[str, Any], http: bool) -> _Answer:
    try:
        if http and isinstance(event, dict):
            user_id, raw_input = _http_request(event)
        else:
            user_id, raw_input = _direct_request(event)
    except _Refused as refusal:
        return _Answer(refusal.status, refusal.message, True, "request")
    record["user_id"] = user_id
    record["command"] = _command_name(raw_input)
    try:
        runtime = get_runtime(environ)
    except SettingsError as error:
        return _Answer(500, f"Error: s3memory is misconfigured: {error}.", True, "configuration")
    settings = runtime.settings
    try:
        memory = S3Memory(
            S3Store(runtime.s3_client, settings.bucket), user_id, runtime.key_provider, prefix=settings.prefix
        )
        return _Answer(200, memory.run(raw_input), False)
    except CommandError as error:
        return _Answer(200, error.message, True, type(error).__name__)
    except Exception as error:
        return _unexpected(error)


def _request_id(context: object) -> str | None:
    request_id = getattr(context, "aws_request_id", None)
    return shown(request_id) if isinstance(request_id, str) else None


def _log(record: dict[str, Any], answer: _Answer) -> None:
    record["outcome"] = "error" if answer.is_error else "ok"
    record["error_type"] = answer.error_type
    level = logging.ERROR if answer.status >= 500 else logging.INFO
    with contextlib.suppress(Exception):  # logging must never fail an invocation
        logger.log(level, json.dumps(record, sort_keys=True))


def handle(event: object, context: object = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Serve one event (``environ`` defaults to ``os.environ``); never raises."""
    started = time.perf_counter()
    http = isinstance(event, dict) and "requestContext" in event
    record: dict[str, Any] = {
        "event": "s3memory.invocation",
        "request_id": None,
        "source": "http" if http else "direct",
        "command": None,
        "user_id": None,
    }
    with metrics.tally() as requests:
        try:
            record["request_id"] = _request_id(context)
            answer = _serve(event, environ, record, http)
        except Exception as error:  # pragma: no cover - _serve answers every failure itself
            answer = _unexpected(error)
    record["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    record["s3_requests"] = requests.count("s3")
    record["kms_requests"] = requests.count("kms")
    if http:
        record["status"] = answer.status
    _log(record, answer)
    metrics.emit(
        os.environ if environ is None else environ,
        command=record["command"] or "unknown",
        outcome=record["outcome"],
        metrics={
            "Latency": (record["latency_ms"], metrics.MILLISECONDS),
            "S3Requests": (record["s3_requests"], metrics.COUNT),
            "KMSRequests": (record["kms_requests"], metrics.COUNT),
        },
        properties={"function": "memory", "request_id": record["request_id"]},
    )
    result = {"content": answer.content, "is_error": answer.is_error}
    if not http:
        return result
    return {"statusCode": answer.status, "headers": dict(_JSON_HEADERS), "body": json.dumps(result)}


def memory_handler(event: object, context: object = None) -> dict[str, Any]:
    """The Lambda handler (``s3memory.aws_lambda.memory_handler``)."""
    return handle(event, context)
