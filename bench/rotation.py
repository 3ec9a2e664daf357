"""Section 8: key rotation at fleet scale (issue 26): ``rotate --all --wait`` on a store of N users.

A store of its own on the bench's endpoint (storage format 2, envelope keys from the endpoint's KMS,
a bucket with S3 versioning on, as ``terraform/s3.tf`` deploys it), N users (the full run: 200;
``--quick``: 10) with ``FILES`` each, written through the product (each user's ``create`` commands,
so each has its wrapped key ``keys/v1``, its files and its access record; never timed). Then what
``s3memory rotate --all --wait`` does, in a new operator's process (a new ``Operations`` with a
``KMSKeyProvider`` of its own, an empty key cache, its own counted clients):

- *listing*: every memory of the store (``operations.users()`` and ``shared_memories()``, as the
  command's ``--all`` lists them);
- *rotation*: ``rotation.rotate_waiting`` on them: every memory sealed again under a new key version
  (first pass), then one wait until no serving process can still seal with an old version, then
  every memory rotated again (second pass), which retires the old versions.

The wait is injected, not slept: ``clock`` is the real clock plus an offset, and ``sleep`` records the
seconds it was asked to wait and moves the offset on by as much. The rotation's own decisions (a
switch dated by S3's ``LastModified``, ``run_again_after``) see the time they would see after a real
wait, so the run does all the work a real one does, in its wall time minus the wait. The *projected*
wall time is the work (listing and both passes, measured) plus the waits requested; beside it, what
the command cost before, when it waited for each user in turn (the same work plus N waits: not run,
only computed).

With ``DROP_HISTORY`` (the bucket keeps each file's earlier S3 version, sealed with the old key),
the second pass also lists the versions and reads each earlier one, and removes the old wrapped keys;
without it they would stay for that history and no report would be complete.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from s3memory.crypto import FORMAT_2, KMSKeyProvider
from s3memory.ops.operations import Operations
from s3memory.ops.rotation import ROTATION_WAIT_SECONDS, rotate_waiting
from s3memory.ops.rotation_report import RotationReport
from s3memory.storage.bucket import Bucket

from .metrics import RequestCounter, describe, print_alone, quiet_gc
from .servers import REGION, Backend, fake_credentials, moto_backend, plain_client
from .tables import table
from .workload import note_text, s3memory_client

BUCKET = "bench-rotation"
PREFIX = "fleet/"
DROP_HISTORY = True
"""As ``rotate --all --wait --drop-history``: on a bucket with versioning, the old key goes even though
each file's earlier S3 version needs it (else it stays for that history, and no report is complete)."""
FILES = {
    "/memories/preferences.md": 12,
    "/memories/notes/today.md": 8,
    "/memories/projects/alpha/plan.md": 16,
    "/memories/projects/alpha/todo.md": 6,
}
"""Each user's files, by path, with their number of lines (about 60 characters each)."""
SEED_THREADS = 8


@dataclass
class FleetRotation:
    """``rotate --all --wait`` on N users: what it sent, how long its work took, what it waited."""

    backend: str
    users: int
    storage_format: int = FORMAT_2
    versioned: bool = True
    drop_history: bool = DROP_HISTORY
    files: int = 0
    """Files seeded, over every user."""
    listed: int = 0
    """Memories the listing found (every user; no shared memory is seeded)."""
    list_seconds: float = 0.0
    list_requests: int = 0
    seconds: float = 0.0
    """Wall time of ``rotate_waiting`` (both passes; the wait injected, so not in it)."""
    first_pass_seconds: float = 0.0
    """From the start until the wait was asked for: every memory sealed again."""
    second_pass_seconds: float = 0.0
    """From the wait to the end: every memory rotated again, the old keys removed."""
    waits: list[float] = field(default_factory=list)
    """The seconds of each wait the rotation asked for."""
    s3_requests: dict[str, int] = field(default_factory=dict)
    kms_requests: dict[str, int] = field(default_factory=dict)
    """Requests of the rotation (not the listing), by operation."""
    call_ms: dict[str, float] = field(default_factory=dict)
    """The rotation's calls by operation: the median milliseconds of one, from the client's call to its
    answer (retries included)."""
    call_seconds: dict[str, float] = field(default_factory=dict)
    """The same, summed over the operation's calls (a user's files are read and written in parallel,
    so the sums exceed the wall time)."""
    reencrypted: int = 0
    records: int = 0
    retired: int = 0
    """Old key versions retired, over every user."""
    complete: int = 0
    """Reports complete: nothing sealed with an old version, every old version retired."""
    reports: int = 0
    bench_cpu: float = 0.0
    """The bench process's CPU seconds during the rotation (every thread)."""
    server_cpu: float | None = None
    """The server's, where Linux tells."""

    @property
    def requests(self) -> int:
        return sum(self.s3_requests.values()) + sum(self.kms_requests.values())

    @property
    def breakdown(self) -> str:
        return describe(Counter(self.s3_requests) + Counter(self.kms_requests))

    @property
    def waited(self) -> float:
        return sum(self.waits)

    @property
    def work_seconds(self) -> float:
        """Listing and both passes: the wall time of the command but for its wait."""
        return self.list_seconds + self.seconds

    @property
    def projected_seconds(self) -> float:
        """What ``rotate --all --wait`` takes: its work and the waits it asked for."""
        return self.work_seconds + self.waited

    @property
    def per_user_wait_seconds(self) -> float:
        """What it took when it waited for each user in turn: the same work and N waits."""
        return self.work_seconds + self.users * ROTATION_WAIT_SECONDS

    @property
    def all_complete(self) -> bool:
        return self.reports == self.users and self.complete == self.users

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "requests": self.requests,
            "breakdown": self.breakdown,
            "waited": self.waited,
            "work_seconds": self.work_seconds,
            "projected_seconds": self.projected_seconds,
            "per_user_wait_seconds": self.per_user_wait_seconds,
            "rotation_wait_seconds": ROTATION_WAIT_SECONDS,
        }


class CallTimer:
    """The seconds each API call of some botocore clients took, by operation (``before-call`` to
    ``after-call``: retries included), for calls made while ``on``."""

    def __init__(self, *clients: Any) -> None:
        self.on = False
        self.seconds: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._started = threading.local()
        for client in clients:
            client.meta.events.register("before-call", self._before)
            client.meta.events.register("after-call", self._after)

    def _before(self, model: Any = None, **_: Any) -> None:
        self._started.at = time.perf_counter()

    def _after(self, model: Any = None, **_: Any) -> None:
        started = getattr(self._started, "at", None)
        if self.on and started is not None and model is not None:
            with self._lock:
                self.seconds.setdefault(model.name, []).append(time.perf_counter() - started)

    def medians_ms(self) -> dict[str, float]:
        return {name: statistics.median(values) * 1000 for name, values in sorted(self.seconds.items())}

    def totals(self) -> dict[str, float]:
        return {name: sum(values) for name, values in sorted(self.seconds.items())}


def user_ids(users: int) -> list[str]:
    return [f"user-{number:04d}" for number in range(users)]


class InjectedWait:
    """A clock that runs with the real one plus an offset, and a ``sleep`` that records the wait asked
    for and moves the offset on by as much, at once; ``asked`` is when (``perf_counter``) each came."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.waits: list[float] = []
        self.asked: list[float] = []

    def clock(self) -> float:
        return time.time() + self.offset

    def sleep(self, seconds: float) -> None:
        self.asked.append(time.perf_counter())
        self.waits.append(seconds)
        self.offset += seconds


def operations_of(backend: Backend, key_id: str, s3: Any, kms: Any) -> Operations:
    """An operator's process of the section's store: its own clients and key cache."""
    return Operations(
        Bucket(s3, BUCKET),
        KMSKeyProvider(key_id, kms_client=kms),
        prefix=PREFIX,
        storage_format=FORMAT_2,
    )


def seed(operations: Operations, users: list[str]) -> int:
    """``FILES`` for each user, written through the product (``create``); the files written."""

    def one(index_user: tuple[int, str]) -> int:
        index, user = index_user
        memory = operations.memory(user)
        for number, (path, lines) in enumerate(FILES.items()):
            memory.run(
                {"command": "create", "path": path, "file_text": note_text(index * 10 + number, lines)}
            )
        return len(FILES)

    first, rest = users[:1], users[1:]  # the first makes the store's key, the rest share it
    written = sum(map(one, enumerate(first)))
    with ThreadPoolExecutor(max_workers=SEED_THREADS) as pool:
        written += sum(pool.map(one, enumerate(rest, start=len(first))))
    return written


def run(backend: Backend, users: int) -> FleetRotation:
    """Seed ``users`` users, then list and rotate them as ``rotate --all --wait`` does (see the module)."""
    from s3memory.clients import make_kms_client

    result = FleetRotation(backend.name, users)
    admin = backend.admin
    backend.create_bucket(BUCKET)
    admin.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    _clear_versions(admin)
    key_id = plain_client(backend.endpoint_url, "kms").create_key(Description="s3memory bench rotation")[
        "KeyMetadata"
    ]["KeyId"]
    ids = user_ids(users)

    def kms_of() -> Any:
        return make_kms_client(endpoint_url=backend.endpoint_url, region_name=REGION)

    try:
        result.files = seed(operations_of(backend, key_id, s3memory_client(backend), kms_of()), ids)

        s3, kms = s3memory_client(backend), kms_of()
        s3_counter, kms_counter = RequestCounter(s3), RequestCounter(kms)
        timer = CallTimer(s3, kms)
        operations = operations_of(backend, key_id, s3, kms)
        with s3_counter.window() as s3_seen, kms_counter.window() as kms_seen, quiet_gc():
            started = time.perf_counter()
            listed = [*operations.users(), *operations.shared_memories()]
            result.list_seconds = time.perf_counter() - started
        result.list_requests = sum(s3_seen.values()) + sum(kms_seen.values())
        result.listed = len(listed)
        if sorted(listed) != ids:
            raise RuntimeError(f"the listing found {len(listed)} memories where {users} users were seeded")

        wait = InjectedWait()
        server_before = backend.server_cpu()
        timer.on = True
        with s3_counter.window() as s3_seen, kms_counter.window() as kms_seen, quiet_gc():
            cpu = time.process_time()
            started = time.perf_counter()
            reports = rotate_waiting(
                operations, listed, drop_history=DROP_HISTORY, clock=wait.clock, sleep=wait.sleep
            )
            ended = time.perf_counter()
            result.bench_cpu = time.process_time() - cpu
        timer.on = False
        result.call_ms, result.call_seconds = timer.medians_ms(), timer.totals()
        server_after = backend.server_cpu()
        if server_before is not None and server_after is not None:
            result.server_cpu = server_after - server_before
        result.seconds = ended - started
        asked = wait.asked[0] if wait.asked else ended
        result.first_pass_seconds, result.second_pass_seconds = asked - started, ended - asked
        result.waits = wait.waits
        result.s3_requests, result.kms_requests = dict(s3_seen), dict(kms_seen)
        _count(result, reports)
    finally:
        _clear_versions(admin)
    return result


def _count(result: FleetRotation, reports: list[RotationReport]) -> None:
    result.reports = len(reports)
    result.complete = sum(1 for report in reports if report.complete)
    result.reencrypted = sum(len(report.reencrypted) for report in reports)
    result.records = sum(len(report.records) for report in reports)
    result.retired = sum(len(report.retired) for report in reports)


def _clear_versions(admin: Any) -> None:
    """Every S3 version and delete marker in the section's bucket, deleted (setup and cleanup)."""
    for page in admin.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
        doomed = [
            {"Key": item["Key"], "VersionId": item["VersionId"]}
            for item in page.get("Versions", []) + page.get("DeleteMarkers", [])
        ]
        for start in range(0, len(doomed), 1000):
            with contextlib.suppress(Exception):
                admin.delete_objects(
                    Bucket=BUCKET, Delete={"Objects": doomed[start : start + 1000], "Quiet": True}
                )


def _duration(seconds: float) -> str:
    """``12.3 s``, ``7.1 min``, ``23.4 h`` or ``4.9 days``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size * (2 if unit == "days" else 1):
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


ROTATION_ABOUT = (
    "What `s3memory rotate --all --wait` does (`bench/rotation.py`; alone: `python -m bench.rotation "
    "[--quick]`), on a store of its own: N users in storage format 2 with envelope keys from the "
    f"endpoint's KMS, {len(FILES)} small files each and their access record, written through the "
    "product; a bucket with S3 versioning (as the Terraform module deploys it), rotated with "
    "`--drop-history`. A new operator's process (its own clients, an empty key cache) lists the "
    "memories, then `rotation.rotate_waiting` seals every memory again under a new key version (first "
    "pass), waits once until no serving process can still seal with an old version "
    f"(`ROTATION_WAIT_SECONDS` = {ROTATION_WAIT_SECONDS:.0f} s: the key cache and the clock margin), then "
    "rotates each again (second pass: every file read again, each earlier S3 version read, the old "
    "wrapped key removed).",
    "",
    "The wait is **injected, not slept**: the rotation's clock is the real one plus an offset, and its "
    "`sleep` records the seconds asked for and moves the offset on by as much, so the second pass sees "
    "the time it would see after a real wait and does all the work a real one does. *Work* is the wall "
    "time measured (the listing and both passes); *projected* adds the waits asked for. Beside it, what "
    "the command cost when it rotated one user at a time and waited for each: the same work and N "
    "waits (computed, not run). Requests are the rotation's, S3 and KMS, counted on its clients.",
)
"""What section 8 measures (``bench/rotation.py``)."""


def rotation_lines(found: FleetRotation | None) -> list[str]:
    """Section 8 of ``latest.md``: ``rotate --all --wait`` on a store of N users."""
    out = ["## 8. Key rotation at fleet scale", "", *ROTATION_ABOUT, ""]
    if found is None:
        return [*out, "Not measured in this run.", ""]
    out += [f"**{found.backend}**, {found.users:,} users, {found.files:,} files", ""]
    out += table(
        [
            "users",
            "files",
            "sealed again",
            "records",
            "old keys retired",
            "complete",
            "requests",
            "per user",
            "which",
        ],
        [
            [
                f"{found.users:,}",
                f"{found.files:,}",
                f"{found.reencrypted:,}",
                f"{found.records:,}",
                f"{found.retired:,}",
                f"{found.complete:,} of {found.reports:,}",
                f"{found.requests:,}",
                f"{found.requests / found.users:.1f}" if found.users else "\u2013",
                found.breakdown,
            ]
        ],
    )
    server = "\u2013" if found.server_cpu is None else f"{found.server_cpu:.1f}"
    out += table(
        [
            "listing s",
            "first pass s",
            "second pass s",
            "work s",
            "work per user ms",
            "bench CPU s",
            "server CPU s",
            "waits",
            "waited s",
            "projected",
            "a wait per user",
        ],
        [
            [
                f"{found.list_seconds:.2f}",
                f"{found.first_pass_seconds:.2f}",
                f"{found.second_pass_seconds:.2f}",
                f"{found.work_seconds:.2f}",
                f"{found.work_seconds / found.users * 1000:.0f}" if found.users else "\u2013",
                f"{found.bench_cpu:.1f}",
                server,
                str(len(found.waits)),
                ", ".join(f"{wait:.0f}" for wait in found.waits) or "0",
                _duration(found.projected_seconds),
                _duration(found.per_user_wait_seconds),
            ]
        ],
    )
    if found.call_ms:
        calls = {**found.s3_requests, **found.kms_requests}
        out += [
            "Where the work went: each operation's calls, from the client's call to its answer. A user's "
            "files are read and written in parallel, so the sums exceed the wall time. On moto a listing "
            "costs the server in proportion to the whole bucket: `ListObjectsV2` scans and sorts every key, "
            "and `ListObjectVersions` copies every version of every object (bodies too) before it filters "
            "by prefix, so the work per user grows with the store there; on S3 a listing is a round trip "
            "by prefix.",
            "",
        ]
        out += table(
            ["operation", "requests", "median ms", "sum s"],
            [
                [
                    name,
                    f"{calls.get(name, 0):,}",
                    f"{found.call_ms[name]:.1f}",
                    f"{found.call_seconds[name]:.1f}",
                ]
                for name in sorted(found.call_seconds, key=lambda item: -found.call_seconds[item])
            ],
        )
    out += [
        f"`rotate --all --wait` on {found.users:,} users: {_duration(found.projected_seconds)}, of which "
        f"{_duration(found.waited)} waiting and {_duration(found.work_seconds)} of work; one wait per user "
        f"would have taken {_duration(found.per_user_wait_seconds)} "
        f"({found.users:,} \u00d7 {ROTATION_WAIT_SECONDS:.0f} s).",
        "",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run section 8 alone on a moto server of its own and print its part of ``latest.md``."""
    from .plan import FULL, QUICK

    parser = argparse.ArgumentParser(prog="python -m bench.rotation", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the size of `python -m bench --quick`")
    parser.add_argument("--users", type=int, help="users in the store (default: the plan's)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else FULL
    fake_credentials()
    with moto_backend() as backend:
        found = run(backend, options.users or plan.rotation_users)
    print_alone(rotation_lines(found), options.json, found.as_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
