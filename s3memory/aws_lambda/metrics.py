"""Per-invocation AWS request counts and CloudWatch Embedded Metric Format (EMF) lines.

**Counting.** The S3 (and KMS) clients are built once per container and shared by every invocation,
and possibly by several threads at once, so a counter on the client would mix invocations. Instead a
botocore ``request-created`` hook (registered once per client, under a fixed ``unique_id``) adds each
HTTP request, retries included, to the :class:`RequestTally` of the invocation that made it: the one
held in a context variable by :func:`tally`. The core runs its parallel requests in copies of the
caller's context (``s3memory.storage.concurrency``), so they are counted to the invocation that started
them; a thread that carries no invocation's context is counted to none.

**EMF.** The metadata and values that make a JSON log record a set of CloudWatch metrics: namespace
``s3memory``, one dimension set ``[command, outcome]``. The invocation record (``record``) carries
them; ``S3MEMORY_METRICS=off`` leaves them out.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from s3memory.storage.concurrency import holding

NAMESPACE = "s3memory"
DIMENSIONS = ("command", "outcome")
METRICS_VARIABLE = "S3MEMORY_METRICS"
_OFF = frozenset({"off", "none", "false", "0", "no"})

MILLISECONDS = "Milliseconds"
COUNT = "Count"


class RequestTally:
    """How many HTTP requests one invocation sent, by service (``"s3"``, ``"kms"``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, service: str) -> None:
        with self._lock:
            self._counts[service] += 1

    def count(self, service: str) -> int:
        with self._lock:
            return self._counts[service]


_current: ContextVar[RequestTally | None] = ContextVar("s3memory_request_tally", default=None)


def tally() -> contextlib.AbstractContextManager[RequestTally]:
    """Count the requests made while the block runs (in this context) into a new tally."""
    return holding(_current, RequestTally())


class _Hook:
    """The ``request-created`` handler of one service; botocore passes keyword arguments only."""

    def __init__(self, service: str) -> None:
        self.service = service

    def __call__(self, **_: Any) -> None:
        owner = _current.get()
        if owner is not None:
            owner.add(self.service)


_HOOKS: dict[str, _Hook] = {}
_HOOKS_LOCK = threading.Lock()


def instrument(client: Any, service: str) -> None:
    """Count ``client``'s requests as ``service``; registering twice on one client is a no-op."""
    with _HOOKS_LOCK:
        hook = _HOOKS.setdefault(service, _Hook(service))
    client.meta.events.register("request-created", hook, unique_id=f"s3memory.metrics.{service}")


def enabled(environ: Mapping[str, str]) -> bool:
    """Whether records carry EMF metrics (``S3MEMORY_METRICS`` is not ``off``)."""
    value = environ.get(METRICS_VARIABLE, "")
    return not (isinstance(value, str) and value.strip().lower() in _OFF)


def emf_document(
    *,
    command: str,
    outcome: str,
    metrics: Mapping[str, tuple[float, str]],
) -> dict[str, Any]:
    """The EMF fields of a record: ``metrics`` maps a metric name to (value, unit)."""
    document: dict[str, Any] = {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [list(DIMENSIONS)],
                    "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in metrics.items()],
                }
            ],
        },
        "command": command,
        "outcome": outcome,
    }
    document.update({name: value for name, (value, _) in metrics.items()})
    return document
