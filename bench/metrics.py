"""Counting requests and summarising repeated measurements.

Requests are counted on botocore clients with a ``request-created`` hook, which fires once per HTTP
attempt (retries included). Every figure the bench reports is a median with its interquartile range
(p25-p75); every comparison is a ratio taken pair by pair from runs interleaved in the same process.
"""

from __future__ import annotations

import gc
import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

SHORT_NAMES = {
    "GetObject": "GET",
    "PutObject": "PUT",
    "HeadObject": "HEAD",
    "ListObjectsV2": "LIST",
    "ListObjects": "LIST",
    "DeleteObject": "DELETE",
    "DeleteObjects": "DELETE_BATCH",
    "CopyObject": "COPY",
    "GenerateDataKey": "KMS_GENERATE",
    "Decrypt": "KMS_DECRYPT",
}


class RequestCounter:
    """Counts the HTTP requests one botocore client sends, by operation; safe across threads."""

    def __init__(self, client: Any) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        client.meta.events.register("request-created", self._count)

    def _count(self, operation_name: str = "?", **_: Any) -> None:
        with self._lock:
            self._calls[operation_name] += 1

    @property
    def calls(self) -> Counter[str]:
        """The requests counted so far (since the last ``reset``), by operation: a copy."""
        with self._lock:
            return Counter(self._calls)

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()

    @contextmanager
    def window(self) -> Iterator[Counter[str]]:
        """Yields a Counter that, after the block, holds the requests sent inside it."""
        before = self.calls
        seen: Counter[str] = Counter()
        try:
            yield seen
        finally:
            after = self.calls
            after.subtract(before)
            seen.update({name: count for name, count in after.items() if count})


def describe(calls: Counter[str]) -> str:
    """``GET+PUT`` style text, in a stable order (``2 LIST`` when an operation repeats)."""
    parts = []
    for name in sorted(calls, key=lambda item: SHORT_NAMES.get(item, item)):
        count = calls[name]
        short = SHORT_NAMES.get(name, name)
        parts.append(short if count == 1 else f"{count} {short}")
    return "+".join(parts) if parts else "none"


@contextmanager
def quiet_gc() -> Iterator[None]:
    """No cyclic garbage collection inside a timed block (both arms of a comparison get the same)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def timed(function: Callable[[], object]) -> float:
    """Seconds that one call takes, with the collector paused."""
    with quiet_gc():
        start = time.perf_counter()
        function()
        return time.perf_counter() - start


def timed_cpu(function: Callable[[], object]) -> tuple[float, float]:
    """Seconds and client CPU seconds (``time.process_time``: every thread) that one call takes,
    with the collector paused."""
    with quiet_gc():
        cpu, started = time.process_time(), time.perf_counter()
        function()
        return time.perf_counter() - started, time.process_time() - cpu


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (q in [0, 1]) of a non-empty sequence."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Summary:
    """Median and interquartile range of repeated measurements."""

    median: float
    p25: float
    p75: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        if not values:
            return cls(float("nan"), float("nan"), float("nan"), 0)
        return cls(statistics.median(values), quantile(values, 0.25), quantile(values, 0.75), len(values))

    def scaled(self, factor: float) -> Summary:
        return Summary(self.median * factor, self.p25 * factor, self.p75 * factor, self.n)

    def ms(self, digits: int = 1) -> str:
        """``12.3 (11.9-13.0)``: milliseconds, median (p25-p75)."""
        return f"{self.median * 1000:.{digits}f} ({self.p25 * 1000:.{digits}f}\u2013{self.p75 * 1000:.{digits}f})"

    def seconds(self, digits: int = 2) -> str:
        return f"{self.median:.{digits}f} ({self.p25:.{digits}f}\u2013{self.p75:.{digits}f})"

    def ratio(self, digits: int = 2) -> str:
        """``1.04x (1.01-1.08)`` with a multiplication sign."""
        return f"{self.median:.{digits}f}\u00d7 ({self.p25:.{digits}f}\u2013{self.p75:.{digits}f})"

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "p25": self.p25, "p75": self.p75, "n": self.n}


def plain(fields: dict[str, Any]) -> dict[str, Any]:
    """A result's fields for JSON: each ``Summary`` as its dict, the rest as they are."""
    return {key: value.as_dict() if isinstance(value, Summary) else value for key, value in fields.items()}


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> Summary:
    """Median and IQR of per-pair ratios (pairs measured side by side)."""
    return Summary.of([a / b for a, b in zip(numerators, denominators, strict=True) if b > 0])


def print_alone(lines: list[str], json_path: str | None, found: object) -> None:
    """What a section run alone prints (its part of ``latest.md``), and ``found`` written as JSON to
    ``json_path`` when given."""
    print("\n".join(lines))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(found, handle, indent=1)


def load_average() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            return " ".join(handle.read().split()[:3])
    except OSError:
        return "n/a"
