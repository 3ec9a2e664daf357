"""Idle expiry: the memory files of users who have not used their memory for a number of days go.

A user is idle when their access record (``core/last_used.py``) says no command ran since the cutoff, or,
without a record, by the files' own write times. Only files written before the cutoff go, each with
``If-Match`` on the ETag the listing showed, so a file written meanwhile stays; before each batch of
deletes the access record is read again, and a command of the user since the run began stops the
user's expiry. Nothing under ``internal/`` (wrapped keys, records) is ever deleted, and this module
writes nothing: it can run with list, read and delete rights only. The protocol and its invariants,
each with its test, are ``docs/expiry.md``.

Both storage formats are expired alike (``Operations.existing_placed`` places each user's memory in
the store's format): on format 2 the files are found by decrypting their keys, and a key that
decrypts to no path is left alone as on format 1.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from s3memory.core.last_used import RECORD_EVERY_SECONDS
from s3memory.core.paths import MemoryPath, check_owner
from s3memory.core.timestamps import when
from s3memory.errors import IntegrityError, PreconditionFailed, StorageError, escaped
from s3memory.ops.operations import Operations
from s3memory.ops.progress import SILENT, Progress
from s3memory.placed import PlacedMemory
from s3memory.storage.bucket import Listed
from s3memory.storage.concurrency import PARALLEL_REQUESTS, parallel

MAX_IDLE_DAYS = 3650
DAY_SECONDS = 24 * 3600
BATCH = PARALLEL_REQUESTS
"""Files deleted together (in flight at once) after one look at the access record."""

ACTIVE = "used since the cutoff"
PENDING_JOB = "a directory rename or delete is pending"
USED_MEANWHILE = "used while its files were expiring"
NOT_AUTHENTIC = "its access record failed authentication"
STORAGE_FAILED = "a storage request failed"
PROBLEMS = frozenset({NOT_AUTHENTIC, STORAGE_FAILED})
"""Reasons to leave a user alone that an operator should look at."""


@dataclass
class UserExpiry:
    """What expiry did to one user's files (in a dry run: would do)."""

    user_id: str
    last_access: float | None = None
    """When the access record says the user last used the memory (None: no record)."""
    expired: list[str] = field(default_factory=list)
    recent: int = 0
    """Files written since the cutoff: kept."""
    changed: list[str] = field(default_factory=list)
    """Files changed or removed by someone else between the listing and their delete: kept."""
    skipped: str | None = None
    """Why the user's files (or the rest of them) were left alone: one of the reasons above."""
    error: str | None = None
    """The storage failure's message (names the request and S3's error code, never content)."""

    @property
    def problem(self) -> bool:
        return self.skipped in PROBLEMS


@dataclass
class ExpiryReport:
    """What one expiry run did, user by user."""

    idle_days: int
    cutoff: float
    """Files written before this time (seconds since the epoch) of idle users expire."""
    dry_run: bool
    users: list[UserExpiry] = field(default_factory=list)
    finished: bool = True
    """False when the run stopped for lack of time; the users not reached wait for the next run."""

    @property
    def problems(self) -> list[UserExpiry]:
        return [user for user in self.users if user.problem]

    def counts(self) -> dict[str, int]:
        """Counts only: no user id or path (for audit lines and invocation records)."""

        def users(reason: str) -> int:
            return sum(user.skipped == reason for user in self.users)

        return {
            "users": len(self.users),
            "expired": sum(len(user.expired) for user in self.users),
            "kept_recent": sum(user.recent for user in self.users),
            "kept_changed": sum(len(user.changed) for user in self.users),
            "active": users(ACTIVE),
            "pending_job": users(PENDING_JOB),
            "used_meanwhile": users(USED_MEANWHILE),
            "problems": len(self.problems),
        }

    @property
    def complete(self) -> bool:
        """The run reached every user and found no problem."""
        return not self.problems and self.finished

    def lines(self) -> list[str]:
        """What was deleted (or would be) of each user, what was left and why, and the totals."""
        verb = "would expire" if self.dry_run else "expired"
        lines = [
            f"{verb} {escaped(user.user_id)} {escaped(path)}" for user in self.users for path in user.expired
        ]
        lines += [
            f"left {escaped(user.user_id)}: {user.skipped}"
            + (f" ({escaped(user.error)})" if user.error else "")
            for user in self.users
            if user.skipped is not None
        ]
        totals = self.counts()
        lines.append(
            f"{totals['expired']:,} files {verb} of {totals['users']:,} users; kept: "
            f"{totals['kept_recent']:,} written since the cutoff, {totals['kept_changed']:,} changed meanwhile, "
            f"{totals['active']:,} users active; {totals['problems']:,} problems"
        )
        return lines

    def document(self) -> dict[str, object]:
        return {**asdict(self), "counts": self.counts()}


def expire(
    operations: Operations,
    idle_days: int,
    user_ids: Iterable[str],
    *,
    now: float | None = None,
    dry_run: bool = False,
    progress: Progress = SILENT,
    out_of_time: Callable[[], bool] = lambda: False,
) -> ExpiryReport:
    """Delete the files of each of ``user_ids`` who has been idle ``idle_days`` (a whole number from
    1 to ``MAX_IDLE_DAYS``) as of ``now`` (default: the clock), written before that cutoff; with
    ``dry_run``, report what would go and change nothing. Bad input (``ValueError``) changes
    nothing. ``out_of_time`` is asked before each user and each batch: once it says so, the run
    stops (``finished`` is False) and a later run goes on. A run cut off anywhere is finished by
    running it again."""
    if isinstance(idle_days, bool) or not isinstance(idle_days, int) or not 1 <= idle_days <= MAX_IDLE_DAYS:
        raise ValueError(f"idle_days must be a whole number of days from 1 to {MAX_IDLE_DAYS:,}")
    if now is not None and (
        isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now)
    ):
        raise ValueError("now must be a time in seconds since the epoch")
    users = list(user_ids)
    for user_id in users:
        check_owner(user_id, operations.prefix)
    moment = time.time() if now is None else float(now)
    report = ExpiryReport(idle_days, moment - idle_days * DAY_SECONDS, dry_run)
    progress.expect(len(users))
    for user_id in users:
        if out_of_time():
            report.finished = False
            break
        expiry = UserExpiry(user_id)
        report.users.append(expiry)
        memory = operations.existing_placed(user_id)  # a store key that fails ends the run
        if memory is None:  # a format-2 store without a store key holds no memory
            progress.advance()
            continue
        try:
            report.finished = _expire_user(memory, expiry, report, out_of_time)
        except IntegrityError:
            expiry.skipped = NOT_AUTHENTIC
        except StorageError as error:
            expiry.skipped, expiry.error = STORAGE_FAILED, error.message
        expiry.expired.sort()
        expiry.changed.sort()
        if not report.finished:
            break
        progress.advance()
    return report


def _expire_user(
    memory: PlacedMemory, expiry: UserExpiry, report: ExpiryReport, out_of_time: Callable[[], bool]
) -> bool:
    """Expire one user's idle files into ``expiry``; False if it ran out of time. ``IntegrityError``
    when the access record is not authentic."""
    seen = memory.access.read()
    expiry.last_access = seen.at
    if seen.at is not None and seen.at >= report.cutoff - RECORD_EVERY_SECONDS:
        expiry.skipped = ACTIVE
        return True
    if _job_pending(memory):
        expiry.skipped = PENDING_JOB
        return True
    idle: list[tuple[MemoryPath, Listed]] = []
    for page in memory.bucket.pages(memory.layout.memories_prefix):
        for listed in page.objects:
            path = memory.layout.path_of_key(listed.key)
            if path is None:
                continue  # no memory path: never shown, moved or deleted
            if _written_before(listed, report.cutoff):
                idle.append((path, listed))
            else:
                expiry.recent += 1
    for start in range(0, len(idle), BATCH):
        batch = idle[start : start + BATCH]
        if out_of_time():
            return False
        if report.dry_run:
            expiry.expired.extend(path.text for path, _ in batch)
            continue
        if memory.access.read().etag != seen.etag:  # a command of the user ran since the start
            expiry.skipped = USED_MEANWHILE
            return True
        if _job_pending(memory):  # a command not yet answered (so not yet recorded) moves files
            expiry.skipped = PENDING_JOB
            return True
        parallel(lambda item: _delete(memory, expiry, *item), batch)
    return True


def _job_pending(memory: PlacedMemory) -> bool:
    """True if a directory job of the user can still run (its files may be half moved). Records that
    never can are no reason to wait: the user's next command sets them aside."""
    return any(
        memory.jobs.judge(listed).job is not None
        for page in memory.bucket.pages(memory.jobs.prefix)
        for listed in page.objects
    )


def _written_before(listed: Listed, cutoff: float) -> bool:
    """True if S3 says the object was last written before ``cutoff``; a time it cannot parse keeps it."""
    try:
        return when(listed.modified).timestamp() < cutoff
    except ValueError:
        return False


def _delete(memory: PlacedMemory, expiry: UserExpiry, path: MemoryPath, listed: Listed) -> None:
    """Delete the file if it still has the listed ETag; else it changed meanwhile and stays."""
    try:
        memory.files.delete(listed.key, if_match=listed.etag)
    except PreconditionFailed as failed:
        if failed.after_retry and not memory.bucket.exists(listed.key):
            expiry.expired.append(path.text)  # our own delete, whose answer was lost
        else:
            expiry.changed.append(path.text)
        return
    expiry.expired.append(path.text)
