"""The Lambda deadline: the invocation's :class:`Deadline` in a context variable, and the client
middleware that starts no Messages API request (retries included) too close to it."""

from __future__ import annotations

import contextlib
import json
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anthropic
from anthropic import APIRequest, APIResponse, CallNext, Middleware

from s3memory.aws_lambda.agent.event import is_number

REQUEST_RESERVE_SECONDS = 1.0
"""A request's timeout ends this long before the deadline, leaving time to answer."""
_RETRIED_STATUSES = frozenset({408, 409, 429})
_INITIAL_RETRY_DELAY = 0.5
_MAX_RETRY_DELAY = 8.0


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
        if not is_number(milliseconds):
            return None
        return cls(time.monotonic() + float(milliseconds) / 1000, margin)


current_deadline: ContextVar[Deadline | None] = ContextVar("s3memory_agent_deadline", default=None)
"""The deadline of the invocation being served (None outside Lambda); :class:`DeadlineGuard` reads it."""


class DeadlineReached(Exception):
    """The next Messages API request would start too close to the Lambda deadline."""


class NoTimeToRetry(Exception):
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


class DeadlineGuard(Middleware):
    """Runs around every HTTP attempt (retries included) of the client: refuses to start one with less
    than the margin left, bounds its timeout by the deadline, and stops retries that cannot finish."""

    def handle(self, request: APIRequest, call_next: CallNext) -> APIResponse[Any]:
        deadline = current_deadline.get()
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
            raise NoTimeToRetry(status, error_type)
        return response
