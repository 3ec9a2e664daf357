"""The Anthropic API key (from the environment or a Secrets Manager secret, read once per container)
and the container's Anthropic client."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping

import anthropic

from s3memory.aws_lambda.agent.config import API_KEY, API_KEY_SECRET_ARN, Misconfigured, setting
from s3memory.aws_lambda.agent.deadline import DeadlineGuard
from s3memory.errors import aws_error_code

API_MAX_RETRIES = 2

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
            raise Misconfigured(
                f"the secret named by {API_KEY_SECRET_ARN} is JSON without a non-empty {API_KEY!r} string"
            )
        return key.strip()
    if not text:
        raise Misconfigured(f"the secret named by {API_KEY_SECRET_ARN} is empty")
    return text


def _read_secret(secret_id: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    from s3memory.clients import make_secretsmanager_client

    parts = secret_id.split(":")
    region = parts[3] if len(parts) >= 7 and parts[0] == "arn" and parts[3] else None
    try:
        answer = make_secretsmanager_client(region_name=region).get_secret_value(SecretId=secret_id)
    except (ClientError, BotoCoreError) as error:
        raise Misconfigured(
            f"the Anthropic API key could not be read from Secrets Manager ({API_KEY_SECRET_ARN}): "
            f"{aws_error_code(error)}"
        ) from None
    secret = answer.get("SecretString")
    if not isinstance(secret, str):
        raise Misconfigured(f"the secret named by {API_KEY_SECRET_ARN} has no string value")
    return _key_from_secret(secret)


def api_key(environ: Mapping[str, str]) -> str:
    """``ANTHROPIC_API_KEY``, else the key in the secret of ``ANTHROPIC_API_KEY_SECRET_ARN`` (read once
    per container; a failed read is tried again on the next invocation)."""
    key = setting(environ, API_KEY)
    if key is not None:
        return key
    secret_id = setting(environ, API_KEY_SECRET_ARN)
    if secret_id is None:
        raise Misconfigured(f"set {API_KEY_SECRET_ARN} (a Secrets Manager secret) or {API_KEY}")
    with _lock:
        cached = _secret_keys.get(secret_id)
    if cached is not None:
        return cached
    key = _read_secret(secret_id)
    with _lock:
        _secret_keys[secret_id] = key
    return key


def anthropic_client(key: str, base_url: str | None) -> anthropic.Anthropic:
    """The container's client (its connection pool outlives invocations), rebuilt if the key or base
    URL changes. The deadline middleware reads each invocation's deadline from a context variable."""
    global _cached_client
    identity = (hashlib.sha256(key.encode("utf-8")).hexdigest(), base_url)
    with _lock:
        if _cached_client is None or _cached_client[0] != identity:
            client = anthropic.Anthropic(
                api_key=key, base_url=base_url, max_retries=API_MAX_RETRIES, middleware=[DeadlineGuard()]
            )
            _cached_client = (identity, client)
        return _cached_client[1]
