"""The bench's section 9 (``bench/cost.py``, ``bench/cost_model.py``): the cost arithmetic, exactly, at
AWS's published prices; the table it renders from counted requests and section 10's durations; and the
counts themselves, from the real commands on moto's S3 and KMS. No timing is asserted."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest

from bench.cost import AGENT_TURN, CostCounts, Priced, cost_lines, count
from bench.cost_model import (
    COMMANDS,
    PRICES,
    RENAME_DIR,
    TURN,
    Dollars,
    Usage,
    billed_ms,
    per_million,
    s3_classes,
)
from bench.cpu_share import CpuShare, Share, durations
from bench.metrics import Summary
from bench.servers import Backend


def test_the_published_prices_are_the_ones_read() -> None:
    assert (
        PRICES.s3_put_per_1000,
        PRICES.s3_get_per_1000,
        PRICES.kms_per_10000,
        PRICES.lambda_per_gb_second,
        PRICES.lambda_per_million,
        PRICES.http_api_per_million,
    ) == (
        Decimal("0.005"),
        Decimal("0.0004"),
        Decimal("0.03"),
        Decimal("0.0000166667"),
        Decimal("0.20"),
        Decimal("1.00"),
    )


def test_a_million_creates_cost_their_requests_duration_and_invocations_exactly() -> None:
    """2 PUT-class and 1 GET-class requests, 30 ms at 512 MB: 10.4 + 0.2500005 + 0.20 + 1.00 dollars."""
    dollars = per_million(Usage(put_class=2, get_class=1, free=0, kms=0, invocations=1, billed_ms=30), 512)
    assert dollars == Dollars(
        s3=Decimal("10.4"),
        kms=Decimal("0"),
        lambda_duration=Decimal("0.2500005"),
        lambda_requests=Decimal("0.20"),
        http_api=Decimal("1.00"),
    )
    assert dollars.total == Decimal("11.8500005")


def test_kms_requests_and_a_whole_vcpu_are_priced_exactly() -> None:
    """3 KMS requests are $9 a million; 7 ms at 1,769 MB is 0.0120927734375 GB-s."""
    dollars = per_million(Usage(put_class=0, get_class=0, free=5, kms=3, invocations=1, billed_ms=7), 1769)
    assert dollars.s3 == 0  # DELETE is free
    assert dollars.kms == Decimal("9")
    assert dollars.lambda_duration == Decimal("0.20154662705078125")


def test_s3_requests_fall_in_their_price_classes() -> None:
    calls = {
        "PutObject": 1,
        "ListObjectsV2": 2,
        "CopyObject": 1,
        "DeleteObjects": 1,  # a POST: priced as one
        "GetObject": 3,
        "HeadObject": 1,
        "DeleteObject": 1,
    }
    assert s3_classes(calls) == (5, 4, 1)


def test_each_invocation_is_billed_in_whole_milliseconds_rounded_up() -> None:
    # 0.007 s is 7.000000000000001 ms in binary floating point: still 7 billed
    assert billed_ms([0.0301, 0.007, 0.012]) == 31 + 7 + 12
    assert billed_ms([]) == 0


def measured_shares() -> list[CpuShare]:
    def share(memory_mb: int, view_seconds: float) -> Share:
        found = Share(f"{memory_mb} MB", memory_mb, memory_mb / 1769)
        found.seconds = {name: Summary.of([view_seconds]) for name in COMMANDS}
        return found

    loopback = CpuShare("moto", 1, 0, 1, 100_000, shares=[share(512, 0.5), share(1769, 0.5)])
    far = CpuShare("moto+10ms", 1, 0, 1, 100_000, shares=[share(512, 0.0092), share(1769, 0.0061)])
    return [loopback, far]


def test_durations_come_from_the_endpoint_with_a_round_trip_where_it_ran() -> None:
    backend, seconds = durations(measured_shares(), 512)
    assert backend == "moto+10ms"
    assert seconds["view file"] == 0.0092
    assert durations([], 512) == ("", {})


def test_the_table_prices_each_command_and_the_turn_from_counts_and_durations() -> None:
    """A view file (one GET) of 9.2 ms at 512 MB is billed 10 ms: 0.40 + 0.0833335 + 0.20 + 1.00 dollars
    a million; a turn of four invocations is billed 40 ms there."""
    counts = CostCounts(
        "moto",
        [
            Priced(
                "view file", 1, {"GetObject": 1}, 0, {"GetObject": 4, "ListObjectsV2": 1, "PutObject": 1}, 2
            ),
            Priced(AGENT_TURN, 4, {"GetObject": 2, "HeadObject": 1, "ListObjectsV2": 2, "PutObject": 2}, 0),
        ],
    )
    lines = cost_lines(counts, measured_shares())
    # 1,769 MB: 7 ms, 0.40 + 0.2015466... + 0.20 + 1.00
    assert "| view file | 0 | 1 | 0 | GET | 0 | 2 (S3 4 GET+LIST+PUT) | 10 | 7 | $1.68 | $1.80 |" in lines
    # the turn: 4 PUT-class and 3 GET-class requests ($21.20 a million), 4 invocations of 10 ms at
    # 512 MB (0.04 s x 0.5 GB: $0.333334), $0.80 of Lambda requests and $4.00 of HTTP API requests
    assert (
        "| agent turn | 4 | 3 | 0 | 2 GET+HEAD+2 LIST+2 PUT | 0 | \u2013 | 40 | 28 | $26.33 | $26.81 |"
        in lines
    )
    assert "| 512 MB | $21.20 | $0.00 | $0.33 | $0.80 | $4.00 | **$26.33** |" in lines


def test_without_durations_no_dollars_are_shown() -> None:
    counts = CostCounts("moto", [Priced("view file", 1, {"GetObject": 1}, 0)])
    lines = cost_lines(counts, [])
    assert "| view file | 0 | 1 | 0 | GET | 0 | \u2013 | \u2013 | \u2013 | \u2013 | \u2013 |" in lines
    assert cost_lines(None, [])[-2] == "Not measured in this run."


@pytest.mark.slow
@pytest.mark.bench
def test_the_counts_are_of_the_real_commands_on_s3_and_kms(moto_endpoint: str) -> None:
    counted = count(Backend("moto", moto_endpoint, "moto's threaded server (the tests')", has_kms=True))
    priced = {item.name: item for item in counted.priced}
    assert list(priced) == [*COMMANDS, AGENT_TURN, RENAME_DIR]
    assert all(item.kms == 0 for item in priced.values())  # warm: every data key cached
    assert priced["view file"].s3 == {"GetObject": 1}
    assert priced["view dir"].s3 == {"ListObjectsV2": 1}
    assert all((item.kms_cold or 0) >= 1 for item in priced.values() if item.name != AGENT_TURN)
    # the turn, counted as one sequence, is its commands' warm requests added up
    assert Counter(priced[AGENT_TURN].s3) == sum((Counter(priced[name].s3) for name in TURN), Counter())
    assert priced[RENAME_DIR].s3.get("CopyObject") == 100
