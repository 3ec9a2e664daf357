"""The memory function's two event shapes, and who each one says the user is.

- **Direct invocation** (Lambda Invoke API): ``{"user_id": "alice", "input": {...}}``, and an
  optional ``"actor"`` (who is writing: a session or agent id, recorded on every write). The caller
  names the user, so it is served only where ``S3MEMORY_DIRECT_INVOCATION`` allows it; a function
  behind the HTTP API refuses it.
- **API Gateway HTTP API, payload format 2.0** (any event with ``requestContext``): the body is
  ``{"input": {...}}`` (and an optional ``"actor"``) and the user is the ``sub`` of the bearer token,
  verified by the function
  itself (``s3memory.edge.tokens``), never anything else in the event.

Every refusal is a ``Refused`` with an HTTP status and a clear message (a function misconfigured to
serve the shape, a ``SettingsError``), raised before any storage request.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, TypeGuard

from s3memory.core.commands import COMMANDS
from s3memory.core.paths import UserId
from s3memory.crypto import validate_served_author
from s3memory.edge.tokens import TokenVerifier
from s3memory.errors import KeysUnavailable, TokenRefused, type_name
from s3memory.mounts import Grant, Mount, granted
from s3memory.settings import DIRECT_INVOCATION, JWT_ISSUER, Edge, SettingsError


@dataclass(frozen=True)
class Request:
    """A served event: whose memory, the raw tool_use input, and who the writes are by."""

    user_id: UserId
    tool_input: dict[str, Any]
    actor: str | None = None
    mounts: tuple[Mount, ...] = ()
    """The shared memories the verified token's claims mount (``S3MEMORY_MOUNTS``); none for a
    direct event."""


class Refused(Exception):
    """An event refused before any storage request; ``error_type`` names the kind for the record."""

    def __init__(self, status: int, message: str, error_type: str = "request") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type


def is_http(event: object) -> TypeGuard[dict[Any, Any]]:
    """Whether the event has the API Gateway shape (and so must carry a verifiable token)."""
    return isinstance(event, dict) and "requestContext" in event


def command_name(tool_input: object) -> str:
    """The command for the record, only when it is one of the six (no untrusted text in logs)."""
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    return command if isinstance(command, str) and command in COMMANDS else "unknown"


def _tool_input(container: dict[Any, Any], where: str) -> dict[str, Any]:
    if "input" not in container:
        raise Refused(400, f"Error: {where} has no `input` (the memory tool's tool_use input object).")
    raw_input = container["input"]
    if not isinstance(raw_input, dict):
        raise Refused(
            400, f"Error: `input` must be an object (the tool_use input), got {type_name(raw_input)}."
        )
    return raw_input


def actor_of(container: dict[Any, Any]) -> str | None:
    """The optional ``actor`` of an event or request body; refused unless a usable author name."""
    if "actor" not in container:
        return None
    try:
        return validate_served_author(container["actor"])
    except ValueError as error:
        raise Refused(400, f"Error: `actor` is not usable: {error}. Nothing was read or changed.") from None


def direct_request(event: object, edge: Edge) -> Request:
    """The user and input of a direct invocation, where the settings allow one."""
    if not edge.direct_invocation:
        raise Refused(
            403,
            "Error: This function serves the HTTP API only: direct invocation, where the event names "
            f"its own user, is refused ({DIRECT_INVOCATION}=refuse). Nothing was read or changed.",
            "direct_refused",
        )
    if not isinstance(event, dict):
        raise Refused(
            400,
            f"Error: The event must be an object with `user_id` and `input`, got {type_name(event)}.",
        )
    try:
        user_id = event_user(event)
    except ValueError as error:
        raise Refused(400, str(error)) from None
    return Request(user_id, _tool_input(event, "The event"), actor_of(event))


def event_user(event: dict[Any, Any]) -> UserId:
    """The user a direct event (of either function) names in ``user_id``, checked: the request's
    one check. ``ValueError`` with the refusal's message."""
    if "user_id" not in event:
        raise ValueError("Error: The event has no `user_id` (a non-empty string).")
    user_id = event["user_id"]
    if not isinstance(user_id, str) or not user_id:
        raise ValueError(f"Error: `user_id` must be a non-empty string, got {type_name(user_id)}.")
    try:
        return UserId(user_id)
    except ValueError as error:
        raise ValueError(f"Error: `user_id` is not a usable user id: {error}.") from None


def body_text(event: dict[Any, Any]) -> str:
    """The body of an HTTP API event as text ("" when it has none), decoded when API Gateway sent it
    base64-encoded."""
    body = event.get("body")
    if body is None:
        return ""
    if not isinstance(body, str):
        raise Refused(400, "Error: The request body must be JSON text.")
    if event.get("isBase64Encoded") is True:
        try:
            return base64.b64decode(body, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise Refused(400, "Error: The request body is not valid base64-encoded UTF-8.") from None
    return body


def _http_body(event: dict[Any, Any]) -> dict[Any, Any]:
    body = body_text(event)
    if body == "":
        raise Refused(400, "Error: The request has no body; send a JSON object with `input`.")
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        raise Refused(400, "Error: The request body is not valid JSON.") from None
    if not isinstance(parsed, dict):
        raise Refused(
            400, f"Error: The request body must be a JSON object with `input`, got {type_name(parsed)}."
        )
    return parsed


def _authorization(event: dict[Any, Any]) -> object:
    """The ``Authorization`` header (HTTP API payload 2.0 lower-cases header names)."""
    headers = event.get("headers")
    return headers.get("authorization") if isinstance(headers, dict) else None


def http_request(
    event: dict[Any, Any], tokens: TokenVerifier | None, grants: tuple[Grant, ...] = ()
) -> Request:
    """The user (the verified token's subject), the mounts its claims are ``grants``ed, and the input
    of an HTTP API request."""
    if tokens is None:
        raise SettingsError(
            f"{JWT_ISSUER} is required to serve HTTP API events (the function verifies each request's "
            "token itself)"
        )
    if event.get("version") != "2.0":
        raise Refused(400, "Error: Only API Gateway HTTP API events of payload format 2.0 are supported.")
    try:
        verified = tokens.verified(_authorization(event))
    except TokenRefused as refusal:
        raise Refused(refusal.status, refusal.message, "token") from None
    except KeysUnavailable as error:
        raise Refused(
            503, f"Error: The request's token could not be checked: {error}. Try again later.", "token_keys"
        ) from None
    try:
        user_id = UserId(verified.subject)  # the request's one check of its user id
    except ValueError as error:
        raise Refused(403, f"Error: The token's subject is not a usable user id: {error}.") from None
    body = _http_body(event)
    tool_input, actor = _tool_input(body, "The request body"), actor_of(body)
    return Request(user_id, tool_input, actor, granted(grants, verified.claims, user_id, actor))
