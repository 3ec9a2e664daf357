"""The job runner: records a directory rename or delete, finds pending records, finishes them, and
sets aside the ones that can never run. The one place that decides when pending jobs are finished.

The protocol and its invariants are in ``docs/jobs.md``. In short: a job is planned from a listing
(every file below the directory, with its ETag; on storage format 2, a rename binds each source to
its place record too), recorded before its first change, then run; every copy and delete is
conditional on the recorded ETag, so a file written after the plan is never moved or deleted by it,
and a format-2 rename moves only a source that still has its recorded place record, so a record put
back after the tree came back to an equal state moves nothing. Whoever finds a record finishes the
job. A record that can never run (not ours, failing authentication, a plan that breaks the rules, or
older than ``MAX_AGE_SECONDS``) is moved to ``internal/quarantine/`` and logged, never run and never
left to fail the commands that find it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from s3memory.core.files import MemoryFiles
from s3memory.core.job_records import (
    JOB_PREFIX,
    QUARANTINE_PREFIX,
    RECORD_MAX_BYTES,
    RECORD_PATH_PREFIX,
    Job,
    JobKind,
    Source,
    plan_problem,
    record_name_is_ours,
)
from s3memory.core.listing import listed_past
from s3memory.core.moves import MARK_PREFIX, WITHDRAW_WINDOW_SECONDS, Copy, Movers, Origin
from s3memory.core.paths import MemoryPath, memory_path
from s3memory.core.timestamps import when
from s3memory.errors import (
    CommandError,
    FileTooLarge,
    IntegrityError,
    ObjectTooLarge,
    PreconditionFailed,
    RecordRefused,
    SourceChanged,
)
from s3memory.storage.bucket import Listed, ListingPage
from s3memory.storage.concurrency import parallel, quietly, side

MAX_AGE_SECONDS = 7 * 24 * 3600
"""A record older than this is set aside, not run: the next command of its user finishes a job long
before (the first call of every conversation does), so such a record is a replay or a relic."""
MAX_CLOCK_SKEW_SECONDS = 3600
"""A record from further in the future than this is set aside too."""
MARK_MAX_AGE_SECONDS = WITHDRAW_WINDOW_SECONDS + MAX_CLOCK_SKEW_SECONDS
"""A relied-on mark last written longer ago than this (its ``LastModified`` by this process's clock)
can no longer matter: its copy's writer has read it, or keeps the copy unread
(``moves.WITHDRAW_WINDOW_SECONDS``). A view of the root removes those it lists."""

logger = logging.getLogger("s3memory")


class Unsettled(CommandError):
    """A refusal that an unfinished job could explain (a path missing or taken): the command is
    retried once after the pending jobs that touch ``paths`` are finished (``JobRunner.retried``)."""

    def __init__(self, message: str, *paths: MemoryPath) -> None:
        super().__init__(message)
        self.paths = paths


@dataclass(frozen=True)
class Intent:
    """A directory command as it arrives, and what it finds below its path (None: a file is there)."""

    kind: JobKind
    old: MemoryPath
    new: MemoryPath | None
    found: list[Source] | None

    def is_retried_by(self, job: Job) -> bool:
        """True if ``job`` is this command asked before: the same command, and nothing found now
        below its path that the job did not plan (a retry finds what its first try left)."""
        same = (self.kind, self.old.canonical, None if self.new is None else self.new.canonical)
        return (
            self.found is not None
            and same == (job.kind, job.old, job.new)
            and {(found.key, found.etag) for found in self.found}
            <= {(source.key, source.etag) for source in job.sources}
        )


@dataclass(frozen=True)
class Pending:
    """The runnable jobs a listing found, oldest first, and whether a record it listed was gone
    when read (a job ended meanwhile, so what the caller read alongside may be stale)."""

    jobs: list[Job]
    vanished: bool = False

    def touching(self, *paths: MemoryPath) -> Pending:
        """The jobs a command on ``paths`` could see half done (``Job.touches``): the others are
        left to their runner, so no command finishes another process's job it has no need of."""
        return Pending([job for job in self.jobs if job.touches(paths)], self.vanished)

    @property
    def moved_on(self) -> bool:
        """True if the memory may have changed since the listing: a job is to run, or one ended."""
        return bool(self.jobs) or self.vanished


@dataclass(frozen=True)
class Judged:
    """A job record as read: its job if it can run, else why not (``problem``); neither when the
    record was gone when read."""

    name: str
    job: Job | None
    problem: str | None
    etag: str | None


class JobRunner:
    """Directory jobs of one user: recorded under ``internal/jobs/``, finished by whoever finds them."""

    def __init__(self, files: MemoryFiles, movers: Movers, clock: Callable[[], float] = time.time) -> None:
        self._files = files
        self._bucket = files.bucket
        self._layout = files.layout
        self.clock = clock
        self._movers = movers
        self.mover = movers(files, lambda: self.clock())
        """How the files move (their format's: ``formats.strategy.Format.mover``)."""
        self.set_aside: list[str] = []
        """Names of the records this process moved to quarantine (reported by the caller)."""

    def over(self, files: MemoryFiles) -> JobRunner:
        """A runner of the same format and clock over ``files`` (the same user's, another author)."""
        return JobRunner(files, self._movers, self.clock)

    @property
    def prefix(self) -> str:
        """The key prefix of pending records."""
        return self._layout.key_of_internal(JOB_PREFIX)

    def plan(self, kind: JobKind, old: MemoryPath, new: MemoryPath | None, sources: list[Source]) -> Job:
        """A new job of ``sources`` (from ``MemoryFiles.sources_below``), checked before it is stored."""
        job = Job.plan(kind, old, new, tuple(sources), self.clock())
        problem = plan_problem(job, self._layout)
        if problem is not None:  # sources_below gives only valid keys: a bug if this is reached
            raise CommandError(f"Error: s3memory planned a job with {problem}; nothing was changed.")
        return job

    # -- finding ----------------------------------------------------------------------------

    def pending(self) -> Pending:
        """The runnable jobs recorded for this user."""
        return self.load([listed for page in self._bucket.pages(self.prefix) for listed in page.objects])

    def load(self, listed: list[Listed]) -> Pending:
        """The runnable jobs recorded at ``listed`` (objects below ``prefix``). Records that can never
        run are set aside."""
        jobs: list[Job] = []
        vanished = False
        for record in listed:
            judged = self.judge(record)
            if judged.job is not None:
                jobs.append(judged.job)
            elif judged.problem is not None:
                self._set_aside(record.key, judged.name, judged.etag, judged.problem)
            else:
                vanished = True
        return Pending(sorted(jobs, key=lambda job: job.name), vanished)

    def judge(self, record: Listed) -> Judged:
        """What the record at ``record`` (listed below ``prefix``) is, read and changed nothing."""
        name = record.key[len(self._layout.internal_prefix) :]
        if not record_name_is_ours(name) or record.size > RECORD_MAX_BYTES:
            return Judged(name, None, "not a record s3memory writes", record.etag)
        try:
            stored = self._bucket.get(record.key, max_bytes=RECORD_MAX_BYTES)
        except ObjectTooLarge:
            return Judged(name, None, "not a record s3memory writes", None)
        if stored is None:
            return Judged(name, None, None, None)
        try:
            job = Job.decode(name, self._files.cipher.open(RECORD_PATH_PREFIX + name, stored.body))
        except RecordRefused:
            return Judged(name, None, "not in the record format", stored.etag)
        except IntegrityError:
            return Judged(name, None, "failed authentication", stored.etag)
        problem = plan_problem(job, self._layout) or self._age_problem(job)
        if problem is not None:
            return Judged(name, None, problem, stored.etag)
        return Judged(name, job, None, stored.etag)

    def _age_problem(self, job: Job) -> str | None:
        age = self.clock() - job.created / 1000
        if age > MAX_AGE_SECONDS:
            return "older than the age bound"
        if age < -MAX_CLOCK_SKEW_SECONDS:
            return "created in the future"
        return None

    def _set_aside(self, key: str, name: str, etag: str | None, reason: str) -> None:
        """Move the record at ``key`` to quarantine (unless it changed meanwhile) and log why."""
        suffix = (
            name[len(JOB_PREFIX) :] if record_name_is_ours(name) else hashlib.sha256(key.encode()).hexdigest()
        )
        if not self._bucket.copy(key, self._layout.key_of_internal(QUARANTINE_PREFIX + suffix)):
            return  # gone: another process has set it aside
        with contextlib.suppress(PreconditionFailed):  # replaced since read: judged again when found
            self._bucket.delete(key, if_match=etag)
        self.set_aside.append(name)
        logger.warning("s3memory: a job record was set aside in quarantine: %s", reason)

    def settle_listed(self, page: ListingPage) -> bool:
        """Finish the jobs recorded in ``page``, a listing of the user's whole namespace (internal
        objects sort before ``memories/``), listing the rest of them when the page stops among
        them, and remove the relied-on marks it shows that can no longer matter. True if a job ran
        or ended meanwhile: the page may not show the memory as it is."""
        marks = self._layout.key_of_internal(MARK_PREFIX)
        parallel(
            self._bucket.delete,
            [
                listed.key
                for listed in page.objects
                if listed.key.startswith(marks) and self._outlived(listed)
            ],
        )
        if page.truncated and not (page.objects and listed_past(page.objects[-1].key, self.prefix)):
            pending = self.pending()
        else:
            pending = self.load([listed for listed in page.objects if listed.key.startswith(self.prefix)])
        self.settle(pending)
        return pending.moved_on

    def _outlived(self, mark: Listed) -> bool:
        """True if the relied-on mark listed as ``mark`` was last written more than
        ``MARK_MAX_AGE_SECONDS`` ago."""
        return bool(mark.modified) and self.clock() - when(mark.modified).timestamp() > MARK_MAX_AGE_SECONDS

    # -- running ----------------------------------------------------------------------------

    def settle(self, pending: Pending, intent: Intent | None = None) -> list[str] | None:
        """Finish the ``pending`` jobs in order; if one of them is ``intent`` asked before (judged on
        what the intent found before any of them ran), the paths it kept, else None."""
        retried = None
        for job in pending.jobs:
            is_retry = retried is None and intent is not None and intent.is_retried_by(job)
            kept = self.finish(job)
            if is_retry:
                retried = kept
        return retried

    def finish_pending(self, *paths: MemoryPath) -> bool:
        """Finish the pending jobs of this user that touch ``paths`` (none given: every one); True if
        there were any, or one ended meanwhile."""
        pending = self.pending()
        if paths:
            pending = pending.touching(*paths)
        self.settle(pending)
        return pending.moved_on

    def retried(self, attempt: Callable[[], str]) -> str:
        """``attempt()``; if it refuses with what an unfinished job could explain (a path missing or
        taken), again once after the pending jobs that touch its paths finish."""
        try:
            return attempt()
        except Unsettled as refusal:
            if not self.finish_pending(*refusal.paths):
                raise
        return attempt()

    def run(self, job: Job) -> list[str]:
        """Bind ``job``'s sources, record it, then run it to the end; the paths kept because they
        changed meanwhile. Nothing changes before the record is stored."""
        bound, found = self._bound(job)
        recorded = side(lambda: self._record(bound))
        try:
            return self.finish(bound, recorded.result, found)
        except BaseException:
            quietly(recorded)
            raise

    def _bound(self, job: Job) -> tuple[Job, dict[str, Origin | None]]:
        """``job`` with every source bound for its record, and what binding found of its sources:
        the source as planned, or None for one found otherwise. A rename on storage format 2 binds
        each source to its place record, as this process verified it (``Mover.known``) or as a look
        finds it; a source not found as listed (changed, not placed at its path, or gone) is bound
        to none, so it is never moved. Other jobs bind none: format 1 changes a file's ETag with
        every move, and a replayed delete removes nothing a bucket writer could not (docs/jobs.md)."""
        if job.kind != "rename" or not self.mover.copies_keep_etags:
            return replace(job, sources=tuple(replace(source, place="") for source in job.sources)), {}
        found: dict[str, Origin | None] = {}
        unknown: list[tuple[Source, MemoryPath]] = []
        for source in job.sources:
            path = self._layout.path_of_key(source.key)
            if path is None:
                continue  # plan_problem refuses such a plan
            origin = self.mover.known(path, source.key, source.etag)
            if origin is not None:
                found[source.key] = origin
            else:
                unknown.append((source, path))

        def look(item: tuple[Source, MemoryPath]) -> None:
            source, path = item
            try:
                origin = self.mover.locate(path)
            except IntegrityError:
                found[source.key] = None
                return
            if origin is not None:  # else gone: looked for again when the job runs
                found[source.key] = origin if origin.etag == source.etag else None

        # only the looks go to the pool: each sends a request, so each call's time is a round trip
        parallel(look, unknown)
        sources = tuple(
            replace(source, place=origin.place if (origin := found.get(source.key)) is not None else "")
            for source in job.sources
        )
        return replace(job, sources=sources), found

    def _record(self, job: Job) -> None:
        sealed = self._files.cipher.seal(job.record_path, job.encode())
        self._files.put_new(self._layout.key_of_internal(job.name), sealed)

    def finish(
        self,
        job: Job,
        before_changes: Callable[[], object] = lambda: None,
        found: Mapping[str, Origin | None] | None = None,
    ) -> list[str]:
        """Run a recorded job to the end, idempotently; the paths kept because they changed since
        it was planned. ``before_changes`` is called (from any thread) before each first change: it
        returns once the job's record is stored, or raises. ``found``: what the planner of a rename
        found of its sources while binding it (``_bound``); every other source is looked at."""
        if job.kind == "delete":
            before_changes()
            if not self._still_recorded(job):
                return []  # another finisher ended it
            kept = self._files.delete_all(job.sources).changed
        else:
            kept = self._move(job, before_changes, found or {})
        before_changes()
        self._bucket.delete(self._layout.key_of_internal(job.name))
        return sorted(path.canonical for key in kept if (path := self._layout.path_of_key(key)) is not None)

    def _still_recorded(self, job: Job) -> bool:
        """True unless the job's record is gone: another finisher ended the job, so what this one
        copied came late, and its sources' ETags alone cannot tell it. A source gone may have been
        deleted by this finisher's own first attempt of a retried delete, or by the one that ended
        the job before the file at the destination was deleted; and a server-side copy keeps its
        source's bytes, so (where ETags are the bytes' digest) a file moved away and back after the
        job ended has its planned ETag again. Asked (one HEAD) before a job's deletes."""
        return self._bucket.exists(self._layout.key_of_internal(job.name))

    def _move(
        self, job: Job, before_changes: Callable[[], object], found: Mapping[str, Origin | None]
    ) -> list[str]:
        """Copy every source that still has its planned ETag (and, where the record binds it, its
        planned place record) below ``new``, then delete the sources whose copy is written, each
        only if it still has that ETag; the keys left in place. A source in ``found`` is copied as
        found there (None: it stays), any other is looked at first.

        A copy this process created where nothing was (rather than one it took over from another
        writer) is withdrawn when its source's delete finds the source changed or gone: the copy
        then came too late (another finisher ended the job, and the file may have been deleted or
        moved since) or would shadow an edit. A copy found at the destination is relied on only
        once it is marked so (``Mover.mark``), and its writer then keeps it: marked only after the
        record was found still there (a finisher that comes late marks no copy that came late too,
        whose writer then withdraws it), and the record looked for once more after the marks, before
        any source is deleted (a writer that found the record gone has found the mark).
        """
        old, new = memory_path(job.old), memory_path(job.new or "")
        copied: list[Source] = []
        created: dict[str, Copy] = {}
        found_copies: list[Copy] = []
        kept: list[str] = []

        def looked_at(path: MemoryPath, source: Source) -> Origin | None:
            """The source as found now if it is the planned one; else None (gone: moved or deleted
            already; changed: written after the plan, or on format 2 placed anew since, so it
            stays)."""
            origin = self.mover.locate(path)
            if origin is not None and (origin.etag != source.etag or not self._as_planned(origin, source)):
                kept.append(source.key)
                return None
            return origin

        def copy(source: Source) -> None:
            path = self._layout.path_of_key(source.key)
            if path is None:
                return  # plan_problem has refused such a record
            target = new.joined(path.relative_to(old))
            try:
                # a source found while binding (maybe known, not looked at) is copied as found:
                # the copy is conditional on its ETag (docs/format-v2.md, "Renames")
                origin = found[source.key] if source.key in found else looked_at(path, source)
                if origin is None:
                    if source.key in found:
                        kept.append(source.key)  # found otherwise while binding: it stays
                    return
                before_changes()
                made = self.mover.place(origin, target)
                if made is None and origin.recalled:
                    # something is at the destination: a source is looked at before a copy there
                    # is relied on (it may be a late copy of a source changed since)
                    origin = looked_at(path, source)
                    if origin is None:
                        return
            except (IntegrityError, ObjectTooLarge, FileTooLarge):
                kept.append(source.key)  # cannot be moved as it is: it stays where it is
                return
            except SourceChanged:
                if self._bucket.exists(source.key):
                    kept.append(source.key)  # changed since it was found: it stays
                return
            if made is not None:
                created[source.key] = made
            else:
                found_copy = self.mover.holds_copy(origin, target)
                if found_copy is None:
                    kept.append(source.key)  # something else is at the destination
                    return
                found_copies.append(found_copy)
            copied.append(source)

        def ended_elsewhere() -> bool:
            """True, with this finisher's copies withdrawn, if another finisher ended the job (its
            record is gone): what was copied here came late."""
            if self._still_recorded(job):
                return False
            for made in created.values():
                self.mover.withdraw(made)
            return True

        parallel(copy, job.sources)
        before_changes()  # the record is looked for only once it is stored (no copy may have waited)
        if ended_elsewhere():
            return []
        if found_copies:
            # relied on: marked, then the record looked for again before any source is deleted, so
            # a writer that withdraws its copy on finding the record gone has found the mark
            parallel(self.mover.mark, found_copies)
            if ended_elsewhere():
                return []
        left = self._files.delete_all(copied)
        for key in left.changed + left.gone:
            if key in created:
                self.mover.withdraw(created[key])
        return kept + left.changed

    def _as_planned(self, origin: Origin, source: Source) -> bool:
        """True unless the record binds ``source`` to a place record that ``origin`` does not have
        (on format 2, where the same bytes at the same key may be another placement)."""
        return not self.mover.copies_keep_etags or source.place is None or origin.place == source.place
