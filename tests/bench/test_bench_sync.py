"""The bench's section 11 (``bench/sync.py``): sync rounds on a small memory, on moto's server, send
what the section's targets say (the first rounds move every file, a round with no change lists once
and reads nothing, a ``--once`` round reads the keys again, each pulled file is made durable), and
the report and the targets render and judge them; the quick plan runs it small. No timing is
asserted."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench.metrics import describe
from bench.plan import FULL, QUICK
from bench.results_model import REPORTED, sync_targets
from bench.servers import Backend
from bench.sync import (
    EXPORT,
    EXPORT_IMPORT,
    IMPORT,
    PULL,
    PUSH,
    QUIET,
    QUIET_ONCE,
    WHAT,
    Measured,
    SyncBench,
    run,
    sync_lines,
)

FILES = 6
REPS = 2


@pytest.fixture(scope="module")
def synced(moto_endpoint: str) -> SyncBench:
    backend = Backend("moto", moto_endpoint, "moto's threaded server (the tests')", has_kms=True)
    return run(backend, FILES, quiet_reps=REPS, first_reps=REPS)


@pytest.mark.slow
@pytest.mark.bench
def test_each_round_sends_what_its_target_says(synced: SyncBench) -> None:
    measured = synced.measured
    assert all(len(measured[name].seconds) == REPS for name in WHAT)
    assert synced.keys > FILES  # the files, and the memory's own objects
    assert measured[PUSH].count("PutObject") >= FILES and measured[PUSH].count("GetObject") == 0
    assert measured[IMPORT].count("GetObject") == FILES  # import reads what is stored first
    assert measured[PULL].count("GetObject") == measured[EXPORT].count("GetObject") == FILES
    assert all(len(fsyncs) >= FILES for fsyncs in measured[PULL].fsyncs)  # each file made durable
    assert all(fsyncs == [] for fsyncs in measured[EXPORT].fsyncs)
    assert all(calls == {"ListObjectsV2": 1} for calls in measured[QUIET].requests)
    assert measured[QUIET_ONCE].count("GetObject") > 0  # a new process reads the keys again
    assert measured[EXPORT_IMPORT].count("GetObject") == 2 * FILES


@pytest.mark.slow
@pytest.mark.bench
def test_the_report_and_the_targets_show_it(synced: SyncBench) -> None:
    json.dumps(synced.as_dict())
    text = "\n".join(sync_lines(synced))
    assert "## 11. Sync: a folder kept the same as a memory" in text
    assert f"**moto**, {FILES:,} files; the memory's namespace holds {synced.keys:,} keys" in text
    assert all(what in text for what in WHAT.values())
    quiet = sync_targets(synced)[0]
    assert (quiet.status, quiet.measured, quiet.goal) == (
        "PASS",
        "LIST",
        f"0 GET, ≤ ⌈{synced.files} files/1000⌉ = 1 LIST",
    )


def bench(quiet: dict[str, int], keys: int = 1001, ratio: float = 0.5, fsyncs: int = 0) -> SyncBench:
    """Section 11's figures as given: each round with no change sent ``quiet``; every sync round
    took ``ratio`` of its comparison's time, each pull made ``fsyncs`` fsyncs of 10 ms."""
    found = SyncBench("moto", 1000, keys=keys)
    for name in WHAT:
        seconds = ratio if name in (PUSH, PULL, QUIET) else 1.0
        requests = Counter(quiet if name == QUIET else {"GetObject": 2, "ListObjectsV2": 3})
        found.measured[name].add(seconds, 0.1, requests, [0.01] * fsyncs if name == PULL else [])
    return found


def test_a_round_with_no_change_is_judged_on_gets_and_the_pages_of_its_files() -> None:
    assert sync_targets(bench({"ListObjectsV2": 1}))[0].status == "PASS"
    assert sync_targets(bench({"ListObjectsV2": 2}))[0].status == "FAIL"
    assert sync_targets(bench({"ListObjectsV2": 1, "GetObject": 1}))[0].status == "FAIL"
    assert sync_targets(SyncBench("moto", 1001, keys=1004))[0].goal == "0 GET, ≤ ⌈1,001 files/1000⌉ = 2 LIST"
    assert sync_targets(SyncBench("moto", 1000, keys=1000))[0].status == "FAIL"  # nothing measured


def test_a_once_round_is_reported_and_each_sync_round_judged_against_its_comparison() -> None:
    ahead = sync_targets(bench({"ListObjectsV2": 1}))
    assert ahead[1].status == REPORTED and ahead[1].measured == describe(
        Counter({"GetObject": 2, "ListObjectsV2": 3})
    )
    assert [target.status for target in ahead[2:]] == ["PASS"] * 3
    behind = sync_targets(bench({"ListObjectsV2": 1}, ratio=2.0, fsyncs=2000))
    assert [target.status for target in behind[2:]] == ["FAIL"] * 3
    assert behind[3].target == f"{WHAT[PULL]}: ahead of {WHAT[EXPORT]} (1,000 files)"
    assert behind[3].measured == "sync / the other 2.00\u00d7 (2.00\u20132.00)"
    assert behind[3].note == "sync made each file durable: 2,000 fsyncs, 20.0 s"


def test_the_section_renders_its_figures_and_says_when_it_did_not_run() -> None:
    assert sync_lines(None)[-2:] == ["Not measured in this run.", ""]
    text = "\n".join(sync_lines(bench({"ListObjectsV2": 2}, fsyncs=2000)))
    assert (
        f"| {WHAT[PULL]} | 1 | 500 (500\u2013500) | 100 (100\u2013100) | 2,000 in 20.0 s | 5 | 2 GET+3 LIST |"
        in text
    )
    assert f"| {WHAT[QUIET]} | 1 | 500 (500\u2013500) | 100 (100\u2013100) | none | 2 | 2 LIST |" in text
    assert f"| {WHAT[QUIET]} / {WHAT[EXPORT_IMPORT]} | 0.50\u00d7 (0.50\u20130.50) |" in text


def test_measured_takes_the_repetition_that_sent_the_most() -> None:
    measured = Measured()
    assert (measured.most, measured.count("GetObject")) == ({}, 0)
    measured.add(1.0, 0.5, Counter({"GetObject": 1, "ListObjectsV2": 5}), [])
    measured.add(1.0, 0.5, Counter({"GetObject": 3}), [])
    assert measured.most == {"GetObject": 1, "ListObjectsV2": 5}
    assert (measured.count("GetObject"), measured.count("ListObjectsV2")) == (3, 5)


def test_the_full_run_syncs_the_issues_thousand_files_and_the_quick_one_a_few() -> None:
    assert (FULL.sync_files, QUICK.sync_files) == (1000, 100)
    assert QUICK.sync_quiet_reps < FULL.sync_quiet_reps and QUICK.sync_first_reps <= FULL.sync_first_reps
