"""One record per invocation, for both handlers, written once through Python logging.

The record is a log call at INFO (ERROR when the function failed, not the caller) whose fields ride
in ``extra``: Lambda's JSON log format (``logging_config`` in the Terraform module) writes them as top
level keys, next to its own timestamp, level and request id. The same record carries the CloudWatch
Embedded Metric Format block (``_aws``) and the metric values, so CloudWatch turns the one line into
metrics by ``command`` and ``outcome`` (``S3MEMORY_METRICS=off`` leaves the block out).

Fields: ``function``, ``request_id``, ``command``, ``outcome``, ``error_type``, ``latency_ms``,
``s3_requests``, ``kms_requests``, and what a handler adds (numbers and fixed words only). Never
content, paths, user ids or keys. Nothing here configures logging: Lambda sets the level from the
function's ``application_log_level``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from s3memory.aws_lambda import metrics
from s3memory.errors import shown

logger = logging.getLogger("s3memory")

MESSAGE = "s3memory invocation"


class Invocation:
    """What one invocation did; the handler fills it in, ``invocation`` writes it once."""

    def __init__(self, function: str, context: object) -> None:
        self.function = function
        request_id = getattr(context, "aws_request_id", None)
        self.request_id = shown(request_id) if isinstance(request_id, str) else None
        self.command = "unknown"
        self.outcome = "error"
        self.error_type: str | None = None
        self.failed = False
        """The function failed (a misconfiguration, a fault): logged at ERROR."""
        self.fields: dict[str, Any] = {}
        self.metrics: dict[str, tuple[float, str]] = {}
        self._started = time.perf_counter()

    def fields_for(self, requests: metrics.RequestTally, with_metrics: bool) -> dict[str, Any]:
        """The record's fields, with the EMF block when ``with_metrics``."""
        latency = round((time.perf_counter() - self._started) * 1000, 1)
        record: dict[str, Any] = {
            "function": self.function,
            "request_id": self.request_id,
            "command": self.command,
            "outcome": self.outcome,
            "error_type": self.error_type,
            "latency_ms": latency,
            "s3_requests": requests.count("s3"),
            "kms_requests": requests.count("kms"),
            **self.fields,
        }
        if with_metrics:
            measured = {
                "Latency": (latency, metrics.MILLISECONDS),
                "S3Requests": (record["s3_requests"], metrics.COUNT),
                "KMSRequests": (record["kms_requests"], metrics.COUNT),
                **self.metrics,
            }
            record.update(metrics.emf_document(command=self.command, outcome=self.outcome, metrics=measured))
        return record


@contextlib.contextmanager
def invocation(function: str, context: object, environ: Mapping[str, str]) -> Iterator[Invocation]:
    """Count the block's AWS requests and write its record when it ends; writing never fails it."""
    current = Invocation(function, context)
    with metrics.tally() as requests:
        try:
            yield current
        finally:
            with contextlib.suppress(Exception):
                fields = current.fields_for(requests, metrics.enabled(environ))
                logger.log(logging.ERROR if current.failed else logging.INFO, MESSAGE, extra=fields)
