"""What a command costs on AWS, from what it sent: the published prices and the arithmetic (pure).

S3 bills a request by its class (S3 Standard, us-east-1): PUT, COPY, POST and LIST at one price, GET,
SELECT and every other request at a tenth of it, DELETE free. KMS bills each request, Lambda each
invocation and its duration (rounded up to the millisecond) times its memory, and the HTTP API each
request it passes on. The commands the bench prices, and the inputs both its sections send
(``command_inputs``), are here too, so the request counts (``bench/cost.py``) and the Lambda
durations (``bench/cpu_share.py``) are of the same commands. Light to import: the CPU-share worker
imports it beside the Lambda handler and nothing else of the bench.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

PRICES_READ = "2026-12-07"
"""When the prices below were read from AWS's pages (``SOURCES``)."""
SOURCES = (
    ("S3 requests", "https://aws.amazon.com/s3/pricing/"),
    ("KMS requests", "https://aws.amazon.com/kms/pricing/"),
    ("Lambda duration and requests", "https://aws.amazon.com/lambda/pricing/"),
    ("Lambda memory and vCPU", "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html"),
    ("API Gateway HTTP API", "https://aws.amazon.com/api-gateway/pricing/"),
)

PUT_CLASS = frozenset(
    {
        "PutObject",
        "CopyObject",
        "ListObjectsV2",
        "ListObjects",
        "ListObjectVersions",
        "DeleteObjects",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
    }
)
"""S3 operations billed as PUT, COPY, POST or LIST. ``DeleteObjects`` is a POST: S3's pricing page
says DELETE requests are free and does not say how a multi-object delete is billed, so it is priced
here as a POST, the higher of the two."""
FREE = frozenset({"DeleteObject", "AbortMultipartUpload"})
"""S3 operations billed nothing (DELETE and CANCEL). Every other S3 operation is in the GET class."""

LAMBDA_VCPU_MB = 1769
"""At this memory size a Lambda function has one vCPU; below it, a share in proportion."""
MEMORY_SIZES = (256, 512, 1769)
"""The Lambda memory sizes measured: the memory function's default (256 MB), 512 MB and one vCPU."""
PRICED_SIZES = (512, 1769)
"""The memory sizes the cost table prices."""


def vcpu_share(memory_mb: int) -> float:
    """The share of one vCPU Lambda gives a function of ``memory_mb``."""
    return memory_mb / LAMBDA_VCPU_MB


@dataclass(frozen=True)
class Prices:
    """AWS's published us-east-1 prices (read ``PRICES_READ``), in dollars."""

    s3_put_per_1000: Decimal = Decimal("0.005")
    s3_get_per_1000: Decimal = Decimal("0.0004")
    kms_per_10000: Decimal = Decimal("0.03")
    lambda_per_gb_second: Decimal = Decimal("0.0000166667")
    """x86, the first 6 billion GB-seconds of a month."""
    lambda_per_million: Decimal = Decimal("0.20")
    http_api_per_million: Decimal = Decimal("1.00")
    """The first 300 million requests of a month, each up to 512 KB."""


PRICES = Prices()


@dataclass(frozen=True)
class Usage:
    """What a command (or a sequence of them) used: S3 requests by price class, KMS requests, Lambda
    invocations (each also an HTTP API request) and the billed milliseconds of all of them."""

    put_class: int
    get_class: int
    free: int
    kms: int
    invocations: int
    billed_ms: int

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.put_class + other.put_class,
            self.get_class + other.get_class,
            self.free + other.free,
            self.kms + other.kms,
            self.invocations + other.invocations,
            self.billed_ms + other.billed_ms,
        )


@dataclass(frozen=True)
class Dollars:
    """Dollars per million of something, by what bills them."""

    s3: Decimal
    kms: Decimal
    lambda_duration: Decimal
    lambda_requests: Decimal
    http_api: Decimal

    @property
    def total(self) -> Decimal:
        return self.s3 + self.kms + self.lambda_duration + self.lambda_requests + self.http_api


def s3_classes(calls: Mapping[str, int]) -> tuple[int, int, int]:
    """S3 requests by operation name → (PUT class, GET class, free)."""
    put = sum(count for name, count in calls.items() if name in PUT_CLASS)
    free = sum(count for name, count in calls.items() if name in FREE)
    return put, sum(calls.values()) - put - free, free


def billed_ms(seconds: Iterable[float]) -> int:
    """Lambda's billed milliseconds of invocations lasting ``seconds`` each (each rounded up)."""
    return sum(math.ceil(round(value * 1000, 6)) for value in seconds)


def usage(
    s3_calls: Mapping[str, int], kms_requests: int, invocations: int, durations: Iterable[float]
) -> Usage:
    """The ``Usage`` of counted S3 requests (by operation), KMS requests, invocations and their durations."""
    put, get, free = s3_classes(s3_calls)
    return Usage(put, get, free, kms_requests, invocations, billed_ms(durations))


def per_million(used: Usage, memory_mb: int, prices: Prices = PRICES) -> Dollars:
    """Dollars for a million of what ``used`` describes, on a Lambda function of ``memory_mb`` MB."""
    million = Decimal(1_000_000)
    gb_seconds = Decimal(used.billed_ms) / 1000 * Decimal(memory_mb) / 1024
    return Dollars(
        s3=(used.put_class * prices.s3_put_per_1000 + used.get_class * prices.s3_get_per_1000)
        / 1000
        * million,
        kms=used.kms * prices.kms_per_10000 / 10000 * million,
        lambda_duration=gb_seconds * prices.lambda_per_gb_second * million,
        lambda_requests=used.invocations * prices.lambda_per_million,
        http_api=used.invocations * prices.http_api_per_million,
    )


COMMANDS = ("view file", "view dir", "create", "str_replace", "insert", "delete file", "rename file")
"""The commands priced one by one, in the order one round of them runs (each round's file is made by
its create, edited, renamed and deleted, so a round leaves the memory as it found it)."""
TURN = ("view dir", "view file", "str_replace", "create")
"""A typical agent turn: look at the memory, read a note, edit one, write a new one."""
RENAME_DIR = "rename dir"
"""A directory rename of ``RENAME_FILES`` files another process wrote."""
RENAME_FILES = 100
SEEDED = {
    "/memories/notes/a.md": 40,
    "/memories/notes/b.md": 40,
    "/memories/notes/c.md": 40,
    "/memories/preferences.md": 30,
}
"""The files every priced memory starts with (path → lines), besides its ``edit.md``."""


def edit_path(tag: str) -> str:
    return f"/memories/{tag}/edit.md"


def command_inputs(tag: str, round_number: int) -> dict[str, dict[str, Any]]:
    """The tool inputs of ``COMMANDS`` for one round, in a directory ``/memories/<tag>`` of the
    memory (``edit.md`` there holds the line ``counter: <round_number>``)."""
    new = f"/memories/{tag}/n-{round_number}.md"
    moved = f"/memories/{tag}/moved/n-{round_number}.md"
    text = "".join(f"- line {line} of note {round_number}: prefers short answers\n" for line in range(40))
    return {
        "view file": {"command": "view", "path": "/memories/notes/a.md"},
        "view dir": {"command": "view", "path": "/memories/notes"},
        "create": {"command": "create", "path": new, "file_text": text},
        "str_replace": {
            "command": "str_replace",
            "path": edit_path(tag),
            "old_str": f"counter: {round_number}\n",
            "new_str": f"counter: {round_number + 1}\n",
        },
        "insert": {
            "command": "insert",
            "path": new,
            "insert_line": 1,
            "insert_text": f"inserted in round {round_number}",
        },
        "rename file": {"command": "rename", "old_path": new, "new_path": moved},
        "delete file": {"command": "delete", "path": moved},
    }


ROUND_ORDER = ("view file", "view dir", "create", "str_replace", "insert", "rename file", "delete file")
"""The order a round runs ``COMMANDS`` in: the new file is inserted into, renamed, then deleted."""


def edit_text(round_number: int = 0) -> str:
    """``edit.md`` before round ``round_number``."""
    return f"counter: {round_number}\n" + "".join(f"- kept line {line}\n" for line in range(30))
