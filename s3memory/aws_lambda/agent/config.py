"""The agent's environment variables, their defaults, and :class:`AgentConfig` read from them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from s3memory.aws_lambda.agent.event import ITERATIONS_LIMIT, MAX_TOKENS_LIMIT, Invalid, checked_params
from s3memory.errors import type_name
from s3memory.settings import DEFAULT_MODEL, SettingsError, whole_number

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


class Misconfigured(SettingsError):
    """A missing or invalid setting of the function; the message names the variable, never a key."""


def setting(environ: Mapping[str, str], name: str) -> str | None:
    """The variable's value, stripped; None if it is unset or blank."""
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
        """Read and check the agent's variables; ``Misconfigured`` (or ``SettingsError``, for a whole
        number) names the one that is wrong."""
        model = setting(environ, MODEL) or DEFAULT_MODEL
        max_tokens = whole_number(environ, MAX_TOKENS, MAX_TOKENS_LIMIT) or DEFAULT_MAX_TOKENS
        max_iterations = whole_number(environ, MAX_ITERATIONS, ITERATIONS_LIMIT) or DEFAULT_MAX_ITERATIONS
        margin_text = setting(environ, DEADLINE_MARGIN)
        margin = DEFAULT_DEADLINE_MARGIN_SECONDS
        if margin_text is not None:
            try:
                margin = float(margin_text)
            except ValueError:
                margin = -1.0
            if not (math.isfinite(margin) and 0 <= margin <= 900):
                raise Misconfigured(f"{DEADLINE_MARGIN} must be a number of seconds from 0 to 900")
        params: dict[str, Any] = {}
        params_text = setting(environ, AGENT_PARAMS)
        if params_text is not None:
            try:
                raw = json.loads(params_text)
            except (ValueError, RecursionError):
                raise Misconfigured(f"{AGENT_PARAMS} must be a JSON object") from None
            if not isinstance(raw, dict):
                raise Misconfigured(f"{AGENT_PARAMS} must be a JSON object, got {type_name(raw)}")
            try:
                params = checked_params(raw, AGENT_PARAMS)
            except Invalid as error:
                raise Misconfigured(error.message.removeprefix("Error: ").rstrip(".")) from None
        return cls(model, max_tokens, max_iterations, margin, params)
