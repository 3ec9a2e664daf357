"""A rename in one memory: the destination's checks, a file copied to its new path and deleted at
its old one if unchanged (``moves``), a directory's files moved by a job (``job_runner``); and the
answer of a rename or a delete that left files in place (a job leaves a file that changed under it).
"""

from __future__ import annotations

from dataclasses import dataclass

from s3memory.core.browse import Browser
from s3memory.core.files import MemoryFiles
from s3memory.core.job_records import Source
from s3memory.core.job_runner import Intent, JobRunner
from s3memory.core.moves import Origin
from s3memory.core.paths import MemoryPath, shown_path
from s3memory.core.placement import Refusal, Survey, require_depth, require_file_path
from s3memory.errors import CommandError, PreconditionFailed, SourceChanged
from s3memory.storage.concurrency import side

KEPT_SHOWN = 20
"""A partly done rename or delete names at most this many of the files it left in place."""


@dataclass(frozen=True)
class Renames:
    """Renames in one memory, over its files, what is at a path (``browse``) and its jobs."""

    files: MemoryFiles
    browser: Browser
    jobs: JobRunner

    def rename(self, old: MemoryPath, new: MemoryPath) -> str:
        """Rename ``old`` to ``new``, neither of them ``/memories`` (refused before any request, by
        the caller): the contract's answer, or ``CommandError`` with its refusal."""
        exists = CommandError(f"Error: The destination {new.quoted} already exists")
        pending = side(lambda: self.jobs.pending().touching(old, new))
        survey = self._destination_survey(old, new)
        found, sources = self.browser.file_or_sources(old, lambda: self.jobs.mover.locate(old))
        intent = Intent("rename", old, new, None if found is not None else sources)
        kept = self.jobs.settle(pending.result(), intent)
        if kept is not None or pending.result().moved_on:
            if survey is not None:
                survey.abandon()
            if kept is not None:
                return _renamed(old, new, shown_kept(kept, old))
            # jobs that ran or ended may have moved either path: look again
            survey = self._destination_survey(old, new)
            found, sources = self.browser.file_or_sources(old, lambda: self.jobs.mover.locate(old))
        if found is not None:
            return self._rename_file(old, new, found, exists, survey)
        if not sources or survey is None:
            if survey is not None:
                survey.abandon()
            if not sources:
                raise CommandError(f"Error: The path {old.quoted} does not exist")
            if new.canonical == old.canonical:
                raise CommandError(f"Error: The destination {new.quoted} already exists")
            raise CommandError(f"Error: Cannot move {old.quoted} into itself ({new.quoted})")
        survey.count_a_file_as_occupying()
        return self._rename_directory(old, new, sources, exists, survey)

    def _destination_survey(self, old: MemoryPath, new: MemoryPath) -> Survey | None:
        """The checks of a rename's destination, started before the source is known to be a file or
        a directory (None when ``new`` lies within ``old``: refused either way). A file already at
        ``new`` is asked for only when ``old`` was last seen as a directory; for a file, the
        conditional write answers that."""
        if new.is_within(old):
            return None
        return Survey(self.files, new, file_occupies=old in self.files.directories)

    def _rename_file(
        self, old: MemoryPath, new: MemoryPath, origin: Origin, exists: CommandError, survey: Survey | None
    ) -> str:
        """Copy the file to ``new`` (or rely on a copy an earlier try left there), then delete it at
        ``old`` if it has not changed. A copy this try created is withdrawn when the source turns
        out changed or gone (a late copy, or one that would shadow an edit)."""
        if new.segments == old.segments:
            raise exists
        if survey is None:  # new lies within old
            raise CommandError(
                f"Error: Cannot rename to {new.quoted}: {old.shown} is a file, not a directory."
            )
        refusal = _destination_refusal(new)
        require_file_path(new, refusal)
        obstacle = survey.obstacle(refusal, exists)
        if obstacle is not None:
            raise obstacle
        source = self.files.layout.file_key(old)
        try:
            created = self.jobs.mover.place(origin, new)
        except SourceChanged:
            raise self._moved_away(old, source) from None
        if created is None and not self.jobs.mover.accept(origin, new):
            raise exists
        self.files.directories.add(new.ancestors())
        try:
            self.files.delete(source, if_match=origin.etag)
        except PreconditionFailed as failed:
            gone = not self.files.bucket.exists(source)
            if gone and (failed.after_retry or created is None):
                return _renamed(old, new, [])  # our own delete's answer was lost, or a twin finished it
            if created is None:
                return _renamed(old, new, [old.shown])
            self.jobs.mover.withdraw(created)
            raise self._moved_away(old, source) from None
        return _renamed(old, new, [])

    def _moved_away(self, old: MemoryPath, source: str) -> CommandError:
        """The refusal of a file rename whose source changed or went while it was being renamed."""
        if not self.files.bucket.exists(source):
            return CommandError(f"Error: The path {old.quoted} does not exist")
        return CommandError(
            f"Error: {old.quoted} changed while it was being renamed; it was left where it is and "
            "nothing was renamed."
        )

    def _rename_directory(
        self, old: MemoryPath, new: MemoryPath, sources: list[Source], exists: CommandError, survey: Survey
    ) -> str:
        refusal = _destination_refusal(new)
        paths = [
            path for source in sources if (path := self.files.layout.path_of_key(source.key)) is not None
        ]
        try:
            require_depth(
                len(new.mount) + len(new.segments) + max(len(path.relative_to(old)) for path in paths),
                refusal,
            )
            for path in paths:
                self.files.layout.file_key(new.joined(path.relative_to(old)))
        except CommandError:
            survey.abandon()
            raise
        obstacle = survey.obstacle(refusal, exists)
        if obstacle is not None:
            raise obstacle
        self.files.directories.forget(old)
        kept = self.jobs.run(self.jobs.plan("rename", old, new, sources))
        self.files.directories.add([new, *new.ancestors()])
        return _renamed(old, new, shown_kept(kept, old))


def _destination_refusal(new: MemoryPath) -> Refusal:
    def refusal(reason: str) -> CommandError:
        return CommandError(f"Error: Cannot rename to {new.quoted}: {reason}.")

    return refusal


def shown_kept(kept: list[str], path: MemoryPath) -> list[str]:
    """The paths a job left in place (in ``path``'s memory), as the user sees them."""
    return [shown_path(canonical, path.mount, lookalike=path.lookalike) for canonical in kept]


def _left_in_place(kept: list[str]) -> str:
    names = ", ".join(kept[:KEPT_SHOWN])
    return names if len(kept) <= KEPT_SHOWN else f"{names} and {len(kept) - KEPT_SHOWN:,} more"


def _renamed(old: MemoryPath, new: MemoryPath, kept: list[str]) -> str:
    if not kept:
        return f"Successfully renamed {old.quoted} to {new.quoted}"
    raise CommandError(
        f"Error: Renamed {old.quoted} to {new.quoted}, except {len(kept)} file(s) that changed during the "
        f"rename and were left at their old paths: {_left_in_place(kept)}"
    )


def deleted(path: MemoryPath, kept: list[str]) -> str:
    """The answer of a delete of ``path`` that left ``kept`` in place (shown: ``shown_kept``)."""
    if not kept:
        return f"Successfully deleted {path.quoted}"
    raise CommandError(
        f"Error: Deleted {path.quoted}, except {len(kept)} file(s) that changed during the delete and were "
        f"left in place: {_left_in_place(kept)}"
    )
