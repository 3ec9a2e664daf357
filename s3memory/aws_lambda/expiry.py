"""The expiry function (``s3memory.aws_lambda.expiry.handler``): idle expiry for every user, on a
schedule (EventBridge Scheduler).

The event is ignored but for an optional ``{"dry_run": true}``. Settings are the other handlers'
(``S3MEMORY_*``, the storage format and store id included) and ``S3MEMORY_EXPIRE_IDLE_DAYS``
(required: a whole number from 1 to 3,650). A run begins at a user chosen at random and goes round
the list of users; it stops ``STOP_MARGIN_MS`` before the Lambda deadline, so runs too short for
every user still reach every user over time. The function only lists, reads and deletes
(``ops/idle_expiry.py``): it writes no object, no access record, and finishes no job. It answers with counts
only, and writes one invocation record (``record``) with the same counts and the metrics
``ExpiredFiles`` and ``ExpiryProblems``, never a user id or a path. It never raises.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from s3memory.aws_lambda import metrics, record
from s3memory.aws_lambda.runtime import get_runtime
from s3memory.errors import CommandError, unexpected_failure
from s3memory.ops.idle_expiry import MAX_IDLE_DAYS, expire
from s3memory.ops.operations import Operations
from s3memory.settings import SettingsError, whole_number

IDLE_DAYS = "S3MEMORY_EXPIRE_IDLE_DAYS"
STOP_MARGIN_MS = 60_000
"""No user or batch is begun with less than this left before the deadline."""


def _out_of_time(context: object) -> Callable[[], bool]:
    """True once less than the margin is left (never without a Lambda context)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return lambda: False
    return lambda: bool(remaining() < STOP_MARGIN_MS)


def _dry_run(event: object) -> bool:
    value = event.get("dry_run", False) if isinstance(event, dict) else False
    if not isinstance(value, bool):
        raise ValueError("`dry_run` must be true or false")
    return value


def _run(
    event: object,
    context: object,
    environ: Mapping[str, str],
    invocation: record.Invocation,
    clock: Callable[[], float],
) -> dict[str, Any]:
    try:
        dry_run = _dry_run(event)
    except ValueError as error:
        invocation.error_type = "request"
        return {"outcome": "error", "error": f"Error: {error}; nothing was deleted."}
    try:
        idle_days = whole_number(environ, IDLE_DAYS, MAX_IDLE_DAYS)
        if idle_days is None:
            raise SettingsError(
                f"{IDLE_DAYS} is required: the days without use after which a user's memory goes"
            )
        runtime = get_runtime(environ)
    except SettingsError as error:
        invocation.error_type, invocation.failed = "configuration", True
        return {"outcome": "error", "error": f"Error: s3memory's expiry is misconfigured: {error}."}
    operations = Operations.from_settings(
        runtime.settings, runtime.s3_client, key_provider=runtime.key_provider
    )  # the store's format and limits, as the memory function serves it
    try:
        users = list(operations.users())
        start = random.randrange(len(users)) if users else 0
        report = expire(
            operations,
            idle_days,
            users[start:] + users[:start],
            now=clock(),
            dry_run=dry_run,
            out_of_time=_out_of_time(context),
        )
    except CommandError as error:
        invocation.error_type, invocation.failed = type(error).__name__, True
        return {"outcome": "error", "error": error.message}
    counts = report.counts()
    invocation.fields.update(counts)
    invocation.metrics.update(
        ExpiredFiles=(counts["expired"], metrics.COUNT), ExpiryProblems=(counts["problems"], metrics.COUNT)
    )
    invocation.outcome = "ok" if report.finished else "incomplete"
    return {"outcome": invocation.outcome, "dry_run": dry_run, **counts}


def handle(
    event: object,
    context: object = None,
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Run expiry once, as of ``clock()`` (``environ`` defaults to ``os.environ``); never raises."""
    environment = os.environ if environ is None else environ
    with record.invocation("expiry", context, environment) as invocation:
        invocation.command = "expire"
        try:
            return _run(event, context, environment, invocation, clock)
        except Exception as error:
            invocation.error_type, invocation.failed = type(error).__name__, True
            return {"outcome": "error", "error": unexpected_failure(error, "s3memory's expiry", "")}


def handler(event: object, context: object = None) -> dict[str, Any]:
    """The Lambda handler (``s3memory.aws_lambda.expiry.handler``)."""
    return handle(event, context)
