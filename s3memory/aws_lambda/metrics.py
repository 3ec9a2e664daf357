"""Per-invocation AWS request counts and CloudWatch Embedded Metric Format (EMF) lines.

**Counting.** The S3 (and KMS) clients are built once per container and shared by every invocation,
and possibly by several threads at once, so a counter on the client would mix invocations. Instead a
botocore ``request-created`` hook (registered once per client, under a fixed ``unique_id``) adds each
HTTP request, retries included, to the :class:`RequestTally` of the invocation that made it: the one
held in a context variable by :func:`tally`. The core runs its parallel requests in copies of the
caller's context (``s3memory.concurrency``), so they are counted to the invocation that started
them; a thread that carries no invocation's context is counted to none.

**EMF.** One JSON object per line on stdout (CloudWatch Logs turns it into metrics; a logger would
prefix it and spoil the JSON): namespace ``s3memory``, one dimension set ``[command, outcome]``.
``S3MEMORY_METRICS=off`` turns the lines off (local runs, tests).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

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


@contextlib.contextmanager
def tally() -> Iterator[RequestTally]:
    """Count the requests made while the block runs (in this context) into a new tally."""
    counts = RequestTally()
    token = _current.set(counts)
    try:
        yield counts
    finally:
        _current.reset(token)


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
    """Whether EMF lines are written (``S3MEMORY_METRICS`` is not ``off``)."""
    value = environ.get(METRICS_VARIABLE, "")
    return not (isinstance(value, str) and value.strip().lower() in _OFF)


def emf_document(
    *,
    command: str,
    outcome: str,
    metrics: Mapping[str, tuple[float, str]],
    properties: Mapping[str, object] | None = None,
    timestamp_ms: int | None = None,
) -> dict[str, Any]:
    """One EMF document: ``metrics`` maps a metric name to (value, unit); ``properties`` are extra
    searchable fields (never dimensions, so they add no metric cardinality)."""
    document: dict[str, Any] = {}
    for name, value in (properties or {}).items():
        if name not in metrics and name not in DIMENSIONS and name != "_aws":
            document[name] = value
    document.update(
        {
            "_aws": {
                "Timestamp": int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
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
    )
    document.update({name: value for name, (value, _) in metrics.items()})
    return document


def emit(
    environ: Mapping[str, str],
    *,
    command: str,
    outcome: str,
    metrics: Mapping[str, tuple[float, str]],
    properties: Mapping[str, object] | None = None,
) -> None:
    """Write one EMF line to stdout, unless turned off; never fails the invocation."""
    with contextlib.suppress(Exception):
        if not enabled(environ):
            return
        document = emf_document(command=command, outcome=outcome, metrics=metrics, properties=properties)
        sys.stdout.write(json.dumps(document, separators=(",", ":")) + "\n")
        sys.stdout.flush()
