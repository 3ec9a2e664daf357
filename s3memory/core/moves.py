"""How a file moves to a new path: the one place a rename's copy is made, relied on or withdrawn.

Format 1 binds content to its path, so a move reads the file and seals its text again for the new
path (the copy's ``s3memory-origin`` names the path it came from). Format 2 binds content to its
user and store only, so a move is a ``CopyObject`` on the server with a new place record in the
copy's metadata: no content passes through the client. A store moving from format 1 to format 2
reads each file as format 1 sealed it and seals it again in format 2 at the same path
(``UpgradeMover``, for ``formats.upgrade``). Either way a copy is written only where
nothing is, from the source's version with the ETag it was found with; the caller deletes the
source afterwards, only if it still has that ETag, and withdraws the copy when it does not, unless
another process marked it relied-on (a mark object of its own: the copy itself is never rewritten).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from s3memory.core.files import LOST, Lost, MemoryFiles, conflicting_writes, retried
from s3memory.core.job_records import place_digest
from s3memory.core.paths import MemoryPath
from s3memory.crypto import PLACE_METADATA
from s3memory.errors import ConditionalConflict, IntegrityError, PreconditionFailed, SourceChanged

MARK_PREFIX = "relied/"
"""Below the user's internal prefix: the relied-on marks, one empty object per copy that a process
other than its writer relied on to delete the copy's source, named by the copy (``Mover.mark_key``)."""
WITHDRAW_WINDOW_SECONDS = 15 * 60
"""A copy's writer withdraws it only this long (by its clock, read after it looked for the copy's
mark) after it started the copy; later, it keeps the copy. So a mark older than this (plus clock
skew: ``job_runner.MARK_MAX_AGE_SECONDS``) can no longer matter, and is removed."""

logger = logging.getLogger("s3memory")


@dataclass(frozen=True)
class Origin:
    """A file as the source of a move: its path, the ETag it was found with, and what its copy is
    made from (format 1: its text; format 2: its content header)."""

    path: MemoryPath
    etag: str
    text: str = ""
    header: bytes = b""
    place: str = ""
    """Format 2: the digest of its place record (``core.job_records.place_digest``)."""
    author: str | None = None
    """Who wrote it, where its copy keeps its author (``UpgradeMover``)."""
    recalled: bool = False
    """True if no request found it: it is what this process verified of the object with this ETag
    (``Mover.known``), and the object may have changed since (a copy's condition tells)."""


@dataclass(frozen=True)
class Copy:
    """A copy: its path, its ETag and, in format 2, its place record, which tells it from another
    copy of the same source (that has the same bytes, so the same ETag). ``started``: when this
    process started writing it (its clock), or 0 for a copy it found."""

    path: MemoryPath
    etag: str
    place: str | None = None
    started: float = 0.0

    @property
    def identity(self) -> str:
        """What tells this copy from any other object ever at its key: its place record (new with
        every write and copy), or in format 1 its ETag (every write seals anew)."""
        return self.place if self.place is not None else self.etag.strip('"')


class Mover(ABC):
    """Moves one user's files: finds a source, writes its copy, relies on or withdraws copies."""

    copies_keep_etags = False
    """True if a copy has its source's bytes, so (where ETags are the bytes' digest) its ETag: a
    rename's record then binds each source to its place record too (``core.job_records.Source.place``)."""

    def __init__(self, files: MemoryFiles, clock: Callable[[], float] = time.time) -> None:
        self._files = files
        self._bucket = files.bucket
        self._clock = clock

    @abstractmethod
    def locate(self, path: MemoryPath) -> Origin | None:
        """The file at ``path`` as a move's source, or None if there is none; ``IntegrityError``
        when the object there is not a file s3memory placed at ``path`` for this user."""

    def known(self, path: MemoryPath, key: str, etag: str) -> Origin | None:
        """The file at ``path`` (its object ``key``) as a move's source, if its object has ``etag``,
        from what this process verified of that object, with no request; None if it knows nothing."""
        return None

    @abstractmethod
    def place(self, origin: Origin, target: MemoryPath) -> Copy | None:
        """Write ``origin``'s copy at ``target`` if nothing is there: the copy, or None if something
        is. Raises ``SourceChanged`` (format 2), or ``FileTooLarge`` over the size limit (format 1)."""

    @abstractmethod
    def holds_copy(self, origin: Origin, target: MemoryPath) -> Copy | None:
        """The copy of ``origin`` at ``target`` (made by any process), or None if ``target`` holds
        anything else, or nothing."""

    def accept(self, origin: Origin, target: MemoryPath) -> bool:
        """Rely on the copy of ``origin`` already at ``target`` (left by a process that may have
        died, or written by another finisher of the same job): it is marked relied-on by a mark
        object of its own (``mark_key``; the copy is not touched), so its writer will not withdraw
        it. False if ``target`` holds anything else, or nothing."""
        found = self.holds_copy(origin, target)
        if found is None:
            return False
        self.mark(found)
        return True

    def mark(self, copy: Copy) -> None:
        """Mark ``copy`` (found at its path, written by another process) relied-on, so its writer
        keeps it: an object of its own (``mark_key``), the copy untouched."""
        self._bucket.put(self.mark_key(copy), b"")

    def mark_key(self, copy: Copy) -> str:
        """The key of ``copy``'s relied-on mark: a digest of the copy's key and identity, so a mark
        names one copy, never a later object at the same key."""
        named = f"{self._files.layout.file_key(copy.path)}\n{copy.identity}".encode()
        return self._files.layout.key_of_internal(MARK_PREFIX + hashlib.sha256(named).hexdigest()[:32])

    def withdraw(self, copy: Copy) -> None:
        """Remove this process's own ``copy``, unless another process has marked it relied-on, or
        it was started more than ``WITHDRAW_WINDOW_SECONDS`` ago. Called when its source turned out
        changed or gone after the copy was written: the copy came too late, or would shadow an edit.
        A copy is marked before its source is deleted, so a copy whose source is gone and that is
        not marked is one nobody relied on. A mark found is removed: its one reader has read it."""
        key = self._files.layout.file_key(copy.path)
        mark = self.mark_key(copy)
        if self._bucket.exists(mark):
            self._bucket.delete(mark)
            return
        if self._clock() - copy.started > WITHDRAW_WINDOW_SECONDS:  # its mark may be removed by now
            logger.warning("s3memory: a late copy was kept: its writer came back after the withdrawal window")
            return
        if not self._is_ours(key, copy):
            return
        with contextlib.suppress(PreconditionFailed):
            self._files.delete(key, if_match=copy.etag)

    def _is_ours(self, key: str, copy: Copy) -> bool:
        """True unless the object at ``key`` is known to be another copy than ``copy``: in format 2,
        its place record tells (two copies of one source have the same bytes and ETag)."""
        if copy.place is None:
            return True
        head = self._bucket.head(key)
        return head is not None and head.metadata.get(PLACE_METADATA) == copy.place


Movers = Callable[[MemoryFiles, Callable[[], float]], "Mover"]
"""How a storage format makes the mover of some files, timed by a clock (``Format.mover``)."""


class RewriteMover(Mover):
    """Format 1: a move reads the file and seals its text again for the new path."""

    def locate(self, path: MemoryPath) -> Origin | None:
        found = self._files.read(path)
        return None if found is None else Origin(path, found.etag, text=found.text)

    def place(self, origin: Origin, target: MemoryPath) -> Copy | None:
        started = self._clock()
        sealed = self._files.encode(target, origin.text)
        etag = self._files.put_new(self._files.layout.file_key(target), sealed, origin=origin.path)
        return None if etag is None else Copy(target, etag, started=started)

    def holds_copy(self, origin: Origin, target: MemoryPath) -> Copy | None:
        """Its fingerprint names ``origin``'s path (under the key version it was made with, before
        or after a rotation) and it holds ``origin``'s text."""
        try:
            found = self._files.read(target)
        except IntegrityError:
            return None
        if (
            found is None
            or not self._files.cipher.made_of(found.origin, origin.path.canonical)
            or found.text != origin.text
        ):
            return None
        return Copy(target, found.etag)


class ServerCopyMover(Mover):
    """Format 2: a move is a copy made on the server, placed at its new path by new metadata."""

    copies_keep_etags = True

    def locate(self, path: MemoryPath) -> Origin | None:
        head = self._bucket.head(self._files.layout.file_key(path))
        if head is None:
            return None
        header = self._files.cipher.place_of(path.canonical, head.metadata).header
        return Origin(path, head.etag, header=header, place=place_digest(head.metadata[PLACE_METADATA]))

    def known(self, path: MemoryPath, key: str, etag: str) -> Origin | None:
        """With no ``HeadObject``: what this process verified of the object at ``key`` with ``etag``
        (``MemoryFiles.verified``). Its metadata is not looked at, and need not be for a copy: equal
        ETags are equal bytes (the copy's ``CopySourceIfMatch`` holds the server to them), those
        bytes were seen placed at ``path``, and the copy gets a new place record of its own. The
        place record it gives is the one this process saw, which the object may no longer have (the
        same bytes copied back get a new one): only a look tells what the object has now."""
        verified = self._files.verified.get(key, etag)
        if verified is None:
            return None
        return Origin(path, etag, header=verified.header, place=verified.place, recalled=True)

    def place(self, origin: Origin, target: MemoryPath) -> Copy | None:
        """The copy keeps the source's bytes; its metadata places the content at ``target``, moved
        there by this author. Its place record is new, so it tells this copy from any other. A
        source sealed under an older key version is sealed again instead (read and written, as in
        format 1): a copy would keep the version that a rotation is retiring."""
        if not self._files.cipher.is_current(origin.header):
            return self._sealed_again(origin, target)
        layout = self._files.layout
        source, key = layout.file_key(origin.path), layout.file_key(target)
        metadata = self._files.cipher.placed(target.canonical, origin.header, self._files.author)
        place = metadata[PLACE_METADATA]
        started = self._clock()

        def attempt(_number: int) -> Copy | Lost | None:
            try:
                etag = self._bucket.copy_new(source, key, source_etag=origin.etag, metadata=metadata)
            except PreconditionFailed as lost:
                return self._refused(target, place, started, after_retry=lost.after_retry)
            except ConditionalConflict:
                return LOST
            if etag is None:  # no source to copy
                return self._refused(target, place, started, after_retry=False)
            self._files.verified.add(key, etag, origin.header, place)
            return Copy(target, etag, place, started)

        return retried(attempt, conflicting_writes)

    def _sealed_again(self, origin: Origin, target: MemoryPath) -> Copy | None:
        started = self._clock()
        found = self._files.read(origin.path)
        if found is None or found.etag != origin.etag:
            raise SourceChanged(origin.path.canonical)
        sealed = self._files.encode(target, found.text)
        etag = self._files.put_new(self._files.layout.file_key(target), sealed)
        return None if etag is None else Copy(target, etag, sealed.metadata[PLACE_METADATA], started)

    def _refused(self, target: MemoryPath, place: str, started: float, *, after_retry: bool) -> Copy | None:
        """What a refused copy to ``target`` means: None if something is there; our own copy if it
        is (its answer was lost, and the retry lost to it); ``SourceChanged`` if nothing is. A copy
        known by a HEAD alone is not remembered as verified (``MemoryFiles.verified``)."""
        head = self._bucket.head(self._files.layout.file_key(target))
        if head is None:
            raise SourceChanged(target.canonical)
        if after_retry and head.metadata.get(PLACE_METADATA) == place:
            return Copy(target, head.etag, place, started)
        return None

    def holds_copy(self, origin: Origin, target: MemoryPath) -> Copy | None:
        """It places ``origin``'s content at ``target``, authentically: the same header (every
        write's header is unique), or, for a source sealed again (an older key version), the same
        text while the source is still as it was found."""
        cipher = self._files.cipher
        head = self._bucket.head(self._files.layout.file_key(target))
        try:
            if head is None:
                return None
            found = Copy(target, head.etag, head.metadata.get(PLACE_METADATA))
            if cipher.place_of(target.canonical, head.metadata).header == origin.header:
                return found
            if cipher.is_current(origin.header):
                return None
            source, there = self._files.read(origin.path), self._files.read(target)
        except IntegrityError:
            return None
        if source is None or there is None or source.etag != origin.etag or source.text != there.text:
            return None
        return Copy(target, there.etag, there.place)


class UpgradeMover(Mover):
    """Format 1 to format 2 (``formats.upgrade``): a move reads the file as format 1 sealed it (``legacy``)
    and seals its text in format 2 at the same path, by its original author."""

    def __init__(
        self, legacy: MemoryFiles, files: MemoryFiles, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(files, clock)
        self._legacy = legacy

    def locate(self, path: MemoryPath) -> Origin | None:
        found = self._legacy.read(path)
        return None if found is None else Origin(path, found.etag, text=found.text, author=found.author)

    def place(self, origin: Origin, target: MemoryPath) -> Copy | None:
        started = self._clock()
        key = self._files.layout.file_key(target)
        sealed = self._files.format.seal_file(
            self._files.cipher, target.canonical, origin.text.encode("utf-8"), origin.author
        )
        etag = self._files.put_new(key, sealed)
        return None if etag is None else Copy(target, etag, sealed.metadata[PLACE_METADATA], started)

    def holds_copy(self, origin: Origin, target: MemoryPath) -> Copy | None:
        """It holds ``origin``'s text (an earlier or concurrent mover's copy)."""
        try:
            found = self._files.read(target)
        except IntegrityError:
            return None
        return None if found is None or found.text != origin.text else Copy(target, found.etag, found.place)
