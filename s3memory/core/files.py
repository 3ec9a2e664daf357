"""One user's encrypted memory files: reads, conditional writes, batched deletes, directory hints.

Every memory file the client reads or writes passes through here, sealed for (and opened at) its
own path; a format-2 rename copies on the server instead (``moves``). Writes are conditional;
deletes tell the usage tracker to measure again.
"""

from __future__ import annotations

import copy
import hashlib
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, Protocol, TypeVar

from s3memory.core.job_records import MAX_SOURCES, Source, place_digest
from s3memory.core.paths import KeyLayout, MemoryPath
from s3memory.core.quota import Usage
from s3memory.crypto import HEADER_BYTES, PLACE_METADATA, ObjectCipher, Opened, Sealed, plaintext_size
from s3memory.errors import (
    CommandError,
    ConditionalConflict,
    FileTooLarge,
    IntegrityError,
    ObjectRefused,
    ObjectTooLarge,
    PreconditionFailed,
    StorageError,
    StorageRefusal,
)
from s3memory.storage.bucket import DELETE_BATCH, BatchDeleted, Bucket, Listed
from s3memory.storage.concurrency import parallel

ORIGIN_METADATA = "s3memory-origin"
"""Metadata on a renamed file: the keyed fingerprint of the path it was copied from, naming the key
version it was made with (``ObjectCipher.fingerprint``). Not authenticated: only a hint, matched
against authentic paths."""
WRITE_ATTEMPTS = 32
"""Conditional writes that lose to another writer (409) are retried this many times."""
_SEALED_SLACK = 4096
"""A stored file may exceed the size limit by the format's overhead; reads allow this much."""


def backoff(attempt: int) -> None:
    """Sleep a jittered, growing, bounded time before retrying a lost conditional write."""
    time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))


class Lost(Enum):
    """An attempt's answer when its conditional write lost to another writer: try again."""

    LOST = "lost"


LOST = Lost.LOST
"""The answer of an attempt that lost: ``retried`` backs off and tries again."""
_Result = TypeVar("_Result")


def retried(attempt: Callable[[int], _Result | Lost], exhausted: Callable[[], Exception]) -> _Result:
    """What ``attempt(n)`` answers for n = 0, 1, ... once it is not ``LOST``, backing off after each
    loss; ``exhausted()`` is raised when all ``WRITE_ATTEMPTS`` attempts lost."""
    for number in range(WRITE_ATTEMPTS):
        result = attempt(number)
        if result is not LOST:
            return result
        backoff(number)
    raise exhausted()


def conflicting_writes() -> StorageError:
    """The error when S3 keeps answering 409 to a conditional write."""
    return StorageRefusal(
        "Error: S3 kept reporting conflicting writes at this path; nothing was changed. Try again."
    )


class KnownDirectories:
    """Paths this process last saw as directories: a hint that orders requests, never a proof."""

    LIMIT = 4096
    CHARACTER_LIMIT = 128 * 1024
    """Hints of long names are forgotten sooner: a warm Lambda container keeps many users' hints."""

    def __init__(self) -> None:
        self._paths: set[tuple[str, ...]] = set()
        self._characters = 0
        self._lock = threading.Lock()

    def __contains__(self, path: MemoryPath) -> bool:
        return path.segments in self._paths

    def add(self, paths: Iterable[MemoryPath]) -> None:
        with self._lock:
            for path in paths:
                if not path.is_root and path.segments not in self._paths:
                    self._paths.add(path.segments)
                    self._characters += _characters(path.segments)
            if len(self._paths) > self.LIMIT or self._characters > self.CHARACTER_LIMIT:
                self._paths.clear()
                self._characters = 0

    def forget(self, path: MemoryPath) -> None:
        """Forget ``path`` and every directory below it."""
        depth = len(path.segments)
        with self._lock:
            self._paths = {known for known in self._paths if known[:depth] != path.segments}
            self._characters = sum(_characters(known) for known in self._paths)


def _characters(segments: tuple[str, ...]) -> int:
    return sum(len(segment) for segment in segments)


class Verified(NamedTuple):
    """What this process verified of one object: its content header, and the digest of the place
    record it saw with it (``core.job_records.place_digest``)."""

    header: bytes
    place: str


class VerifiedHeaders:
    """Format 2: the content headers of objects this process verified or made, by object key and
    ETag: a read that opened the object at its path, a write of content sealed for its path, a copy
    placed at its path by this process (the ETag S3 answered). What a HEAD shows is never learned.

    An entry says: the object whose bytes have this ETag, at this key, holds content with this
    header, placed at the key's path (by the place record whose digest it keeps). Bytes do not
    change under an ETag, so the header never goes stale; the place record may (the same bytes
    copied back to the key have a new one). An entry only matters when a listing shows that key
    with that ETag again: the rename this process plans then copies the object without a
    ``HeadObject``, on the condition that it still has that ETag (``moves.ServerCopyMover.known``,
    ``docs/format-v2.md`` "Renames"). Bounded (least recently used first out); shared by a memory's
    twins (``MemoryFiles.by``)."""

    LIMIT = 1024
    """A warm Lambda container keeps up to 128 users' memories (``memories.WARM_USERS``): each entry
    takes about 400 bytes whatever the key's length (the key and ETag are kept as a 16-byte digest),
    so at most about 50 MB of these in all."""

    def __init__(self) -> None:
        self._headers: OrderedDict[bytes, Verified] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._headers)

    def get(self, key: str, etag: str) -> Verified | None:
        """What this process verified of the object at ``key`` whose bytes have ``etag``, if anything."""
        entry = _entry(key, etag)
        with self._lock:
            verified = self._headers.get(entry)
            if verified is not None:
                self._headers.move_to_end(entry)
            return verified

    def add(self, key: str, etag: str, header: bytes, place: str) -> None:
        """Remember ``header`` and the place record ``place`` (the metadata itself) of the object at
        ``key`` with ``etag``."""
        if not etag or len(header) != HEADER_BYTES:
            return
        entry = _entry(key, etag)
        with self._lock:
            self._headers[entry] = Verified(header, place_digest(place))
            self._headers.move_to_end(entry)
            while len(self._headers) > self.LIMIT:
                self._headers.popitem(last=False)


def _entry(key: str, etag: str) -> bytes:
    """The entry of ``key`` with ``etag``: a 16-byte BLAKE2b digest of both (no two of a process's
    objects share one: finding a pair that does takes about 2^64 tries)."""
    encoded = key.encode("utf-8", "surrogatepass")
    framed = len(encoded).to_bytes(4, "big") + encoded + _unquoted(etag).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(framed, digest_size=16).digest()


def _unquoted(etag: str) -> str:
    """An ETag as a listing, a HEAD or a write's answer may spell it (quoted or not), unquoted."""
    return etag.strip('"')


@dataclass(frozen=True)
class Found:
    """A file's text, the ETag of the object it was read from, who wrote it (None: unnamed), the
    fingerprint of the path a rename copied it from (``ORIGIN_METADATA``, format 1), and its place
    record (``PLACE_METADATA``, format 2)."""

    text: str
    etag: str
    author: str | None = None
    origin: str | None = None
    place: str | None = None


class FileFormat(Protocol):
    """What the files ask of their storage format (each ``formats.strategy.Format`` is one): how a
    file is sealed and opened at its path, and what a moved file's metadata says of its origin."""

    @property
    def places_files(self) -> bool:
        """True if a file is placed at its path by a place record in its metadata."""

    def seal_file(self, cipher: ObjectCipher, path: str, plaintext: bytes, author: str | None) -> Sealed:
        """A memory file at ``path`` written by ``author``, sealed."""

    def open_file(self, cipher: ObjectCipher, path: str, blob: bytes, metadata: Mapping[str, str]) -> Opened:
        """A memory file read at ``path``, opened (refused unless it belongs there)."""

    def origin_metadata(self, cipher: ObjectCipher, origin: MemoryPath) -> dict[str, str]:
        """The metadata that names ``origin`` on a file moved from it."""


class MemoryFiles:
    """One user's memory files in one bucket, encrypted with the user's keys and stored as their
    storage format (``FileFormat``) stores them."""

    def __init__(
        self,
        bucket: Bucket,
        layout: KeyLayout,
        cipher: ObjectCipher,
        storage_format: FileFormat,
        max_file_bytes: int,
        usage: Usage,
        author: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.layout = layout
        self.cipher = cipher
        self.format = storage_format
        """How the files are sealed and opened (``formats.strategy.FormatOne`` or ``FormatTwo``)."""
        self.max_file_bytes = max_file_bytes
        self.usage = usage
        self.author = author
        """Named as the author of every write (bound into each object's authentication)."""
        self.directories = KnownDirectories()
        self.verified = VerifiedHeaders()
        """Format 2: the headers of objects this process read, wrote or copied (shared by twins)."""

    def by(self, author: str | None) -> MemoryFiles:
        """These files, written by ``author``: the directory hints, verified headers and usage stay
        shared."""
        twin = copy.copy(self)
        twin.author = author
        return twin

    def read(self, path: MemoryPath, version_id: str | None = None) -> Found | None:
        """The file at ``path`` (its version ``version_id`` if given), or None if there is none."""
        key = self.layout.file_key(path)
        stored = self.bucket.get(key, max_bytes=self.max_file_bytes + _SEALED_SLACK, version_id=version_id)
        if stored is None:
            return None
        text, author = self.decode(path, stored.body, stored.metadata)
        place = stored.metadata.get(PLACE_METADATA)
        if version_id is None and place is not None and self.format.places_files:
            self.verified.add(key, stored.etag, stored.body[:HEADER_BYTES], place)  # opened at ``path``
        return Found(text, stored.etag, author, stored.metadata.get(ORIGIN_METADATA), place)

    def decode(self, path: MemoryPath, body: bytes, metadata: Mapping[str, str]) -> tuple[str, str | None]:
        """The text and the author of ``body`` read at ``path`` with ``metadata``; refused unless
        s3memory sealed it for this user and placed it at ``path``."""
        try:
            opened = self.format.open_file(self.cipher, path.canonical, body, metadata)
        except IntegrityError as refused:
            if not path.mount:
                raise
            # The refusal names the path the object is bound to; the user sees it below the mount.
            raise ObjectRefused(
                refused.message.replace(f" {path.canonical} ", f" {path.shown} ", 1)
            ) from None
        try:
            return opened.plaintext.decode("utf-8"), opened.author
        except UnicodeDecodeError:
            raise ObjectRefused(f"Error: The file {path.quoted} is not a valid UTF-8 text file.") from None

    def check_size(self, path: MemoryPath, size: int) -> None:
        """Refuse a file of ``size`` bytes over the limit; nothing is changed."""
        if size > self.max_file_bytes:
            raise FileTooLarge(
                f"Error: The file {path.quoted} would be {size:,} bytes; the limit is "
                f"{self.max_file_bytes:,} bytes. Nothing was changed."
            )

    def encode(self, path: MemoryPath, text: str) -> Sealed:
        """``text`` sealed for ``path`` and this author; refused over the size limit."""
        data = text.encode("utf-8")
        self.check_size(path, len(data))
        return self.format.seal_file(self.cipher, path.canonical, data, self.author)

    def put_new(self, key: str, sealed: Sealed | bytes, origin: MemoryPath | None = None) -> str | None:
        """Write ``sealed`` (a file, or an internal object's bytes) at ``key`` only if no object is
        there; its ETag, or None if one is.

        With ``origin``, the object's metadata names that path where the format keeps origins
        (format 1: its fingerprint; see ``moves.RewriteMover``).
        """
        body, metadata = (sealed, {}) if isinstance(sealed, bytes) else (sealed.body, dict(sealed.metadata))
        if origin is not None:
            metadata.update(self.format.origin_metadata(self.cipher, origin))

        def attempt(_number: int) -> str | Lost | None:
            try:
                etag: str | None = self.bucket.put(key, body, if_none_match=True, metadata=metadata)
            except PreconditionFailed as lost:
                etag = self.landed(key, body) if lost.after_retry else None
            except ConditionalConflict:
                return LOST
            if etag is not None and isinstance(sealed, Sealed):
                self._learn(key, etag, sealed)
            return etag

        return retried(attempt, conflicting_writes)

    def _learn(self, key: str, etag: str, sealed: Sealed, path: MemoryPath | None = None) -> None:
        """Remember the header of ``sealed``, written at ``key`` with ``etag``, if it is format-2
        content placed at the path of ``key`` (``path`` if known): checked, not assumed."""
        if not self.format.places_files:
            return
        placed_at = path or self.layout.path_of_key(key)
        if placed_at is None:
            return
        header = sealed.body[:HEADER_BYTES]
        try:
            if self.cipher.place_of(placed_at.canonical, sealed.metadata).header != header:
                return
        except IntegrityError:
            return
        self.verified.add(key, etag, header, sealed.metadata[PLACE_METADATA])

    def replace(self, path: MemoryPath, sealed: Sealed, etag: str, origin: str | None = None) -> str | None:
        """Write ``sealed`` over the file at ``path`` if it still has ``etag``: the new object's ETag,
        or None if it changed. ``origin``: a stored fingerprint (``ORIGIN_METADATA``) the new object
        keeps."""
        key = self.layout.file_key(path)
        metadata = dict(sealed.metadata)
        if origin is not None:
            metadata[ORIGIN_METADATA] = origin
        try:
            written: str | None = self.bucket.put(key, sealed.body, if_match=etag, metadata=metadata)
        except PreconditionFailed as lost:
            written = self.landed(key, sealed.body) if lost.after_retry else None
        except ConditionalConflict:
            return None
        if written is not None:
            self._learn(key, written, sealed, path)
        return written

    def landed(self, key: str, body: bytes) -> str | None:
        """The ETag of the object at ``key`` if it is exactly ``body``: our own write, whose answer was
        lost and whose retry then lost to it. Every sealed body is unique (fresh salt and nonce), so
        equal bytes prove it."""
        try:
            stored = self.bucket.get(key, max_bytes=len(body))
        except ObjectTooLarge:
            return None  # larger than ours: another writer's
        return stored.etag if stored is not None and stored.body == body else None

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        """Delete one object (only if it still has ``if_match``, when given: else PreconditionFailed)."""
        self.usage.forget()
        self.bucket.delete(key, if_match=if_match)

    def delete_all(self, sources: Sequence[Source]) -> BatchDeleted:
        """Delete ``sources`` in parallel batches of 1,000, each only if it still has its ETag (an
        empty ETag: unconditionally); what they left (see ``Bucket.delete_batch``)."""
        self.usage.forget()
        left = BatchDeleted()
        batches = [sources[start : start + DELETE_BATCH] for start in range(0, len(sources), DELETE_BATCH)]

        def delete(batch: Sequence[Source]) -> None:
            outcome = self.bucket.delete_batch([(source.key, source.etag or None) for source in batch])
            left.changed.extend(outcome.changed)
            left.gone.extend(outcome.gone)

        parallel(delete, batches)
        return left

    def measure(self) -> tuple[int, int]:
        """The plaintext bytes and the number of the user's memory files, from a full listing."""
        sizes = [
            listed.size for page in self.bucket.pages(self.layout.memories_prefix) for listed in page.objects
        ]
        return sum(plaintext_size(size) for size in sizes), len(sizes)

    def sources_below(self, directory: MemoryPath, listed: list[Listed] | None = None) -> list[Source]:
        """The files below ``directory`` with their ETags, from ``listed`` (every object below it,
        when the caller has listed them) or a listing. Keys that map to no valid memory path are
        left out: nothing s3memory does touches them. More than ``MAX_SOURCES`` files are refused."""
        found: list[Source] = []
        pages: Iterable[list[Listed]] = (
            [listed]
            if listed is not None
            else (page.objects for page in self.bucket.pages(self.layout.directory_prefix(directory)))
        )
        for objects in pages:
            for item in objects:
                if self.layout.path_of_key(item.key) is not None:
                    found.append(Source(item.key, item.etag))
            if len(found) > MAX_SOURCES:
                raise CommandError(
                    f"Error: {directory.quoted} holds more than {MAX_SOURCES:,} files, more than one command "
                    "moves or deletes; work on its subdirectories one at a time. Nothing was changed."
                )
        return found
