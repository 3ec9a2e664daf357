"""Job records: the plan of a directory rename or delete, stored before its first change. Pure, no I/O.

A record names exactly the objects the job will touch, each with the ETag it had when the job was
planned (and, for a rename on storage format 2, a digest of its place record), under a random id and
its creation time; the record is padded so that its size shows no more of its paths than their
names do, and sealed (authenticated and encrypted) with its own name as associated data. The
protocol that runs records is in ``job_runner.py`` and ``docs/jobs.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from s3memory.core.paths import KeyLayout, MemoryPath, memory_path
from s3memory.errors import CommandError, RecordRefused

JOB_PREFIX = "jobs/"
"""Where pending records live, below the user's internal prefix."""
QUARANTINE_PREFIX = "quarantine/"
"""Where records that can never run are moved, below the user's internal prefix."""
RECORD_PATH_PREFIX = "internal:"
"""Associated-data path of a record: no memory path starts with it, so no file can pass for one."""
RECORD_FORMAT = 3
"""Records of this format bind each source to a place record (``Source.place``) and are padded."""
PREVIOUS_RECORD_FORMAT = 2
"""Records of this format (unpadded, no place records) are still run: jobs in flight at an upgrade
finish. They are older than ``job_runner.MAX_AGE_SECONDS`` a week after it, and set aside."""
PLACE_DIGEST_CHARS = 32
"""A place record's digest in a record: 128 bits, hex."""
_NAME_BLOCK = 16
"""Names show each path segment's length in steps of this many bytes (``formats/names.py``)."""
MAX_SOURCES = 100_000
"""The most files one directory rename or delete may move or remove (its record stays a few MiB)."""
RECORD_MAX_BYTES = 32 * 1024 * 1024
"""No record s3memory writes is larger: a larger object is refused unread."""

_NAME = re.compile(r"(?P<created>[0-9]{13})-(?P<nonce>[0-9a-f]{32})")
JobKind = Literal["rename", "delete"]


def place_digest(place: str) -> str:
    """The digest a record keeps of a place record (the ``s3memory-place`` metadata of a format-2
    file): every write and every copy makes a new place record, so it names one object's placement."""
    return hashlib.sha256(place.encode("utf-8")).hexdigest()[:PLACE_DIGEST_CHARS]


@dataclass(frozen=True)
class Source:
    """An object a job touches, its ETag when the job was planned and, in a format-2 rename, the
    digest of its place record then (``place_digest``). ``place`` is "" where the plan binds none (a
    delete, format 1, or a source that was not as listed when planned: never moved on format 2),
    and None where nothing was bound yet (a plan not yet recorded, or a record of
    ``PREVIOUS_RECORD_FORMAT``)."""

    key: str
    etag: str
    place: str | None = None


@dataclass(frozen=True)
class Job:
    """Move (``rename``) or remove (``delete``) ``sources``, the files below ``old`` when planned.

    ``created`` is milliseconds since the epoch; ``nonce`` makes every record unique.
    """

    kind: JobKind
    old: str
    new: str | None
    sources: tuple[Source, ...]
    created: int
    nonce: str

    @classmethod
    def plan(
        cls, kind: JobKind, old: MemoryPath, new: MemoryPath | None, sources: tuple[Source, ...], now: float
    ) -> Job:
        """A new job, unique by its random nonce; ``now`` is seconds since the epoch."""
        return cls(
            kind,
            old.canonical,
            None if new is None else new.canonical,
            sources,
            int(now * 1000),
            secrets.token_hex(16),
        )

    def touches(self, paths: Iterable[MemoryPath]) -> bool:
        """True if a command on ``paths`` could see this job half done: one of its directories
        (``old``, ``new``) is one of ``paths``, lies below one, or holds one."""
        own = [memory_path(self.old)] + ([] if self.new is None else [memory_path(self.new)])
        return any(mine.is_within(path) or path.is_within(mine) for mine in own for path in paths)

    @property
    def name(self) -> str:
        """The record's name below the internal prefix: oldest first in a listing."""
        return f"{JOB_PREFIX}{self.created:013d}-{self.nonce}"

    @property
    def record_path(self) -> str:
        """The associated-data path the record is sealed under."""
        return RECORD_PATH_PREFIX + self.name

    def encode(self) -> bytes:
        """The record's plaintext: its JSON, padded (ISO/IEC 7816-4) to ``padded_size``. A source
        bound to nothing yet is recorded as bound to no place record."""
        places = [source.place or "" for source in self.sources]
        data = self._json(self.old, self.new, places)
        return data + b"\x80" + b"\x00" * (self.padded_size - len(data) - 1)

    @property
    def padded_size(self) -> int:
        """The size of the record's plaintext: that of its JSON with each path as long as the
        longest its names allow (each segment's length in 16-byte steps, as its keys show it, each
        byte escaped) and every rename source bound, plus one. So the size shows the sources' keys,
        ETags and number (a listing shows them too), never more of a path than its names do."""
        reserved = PLACE_DIGEST_CHARS if self.kind == "rename" else 0
        longest = self._json(
            _longest(self.old),
            None if self.new is None else _longest(self.new),
            ["-" * reserved] * len(self.sources),
        )
        return len(longest) + 1

    def _json(self, old: str, new: str | None, places: list[str]) -> bytes:
        return json.dumps(
            {
                "format": RECORD_FORMAT,
                "created": self.created,
                "nonce": self.nonce,
                "kind": self.kind,
                "old": old,
                "new": new,
                "sources": [
                    [source.key, source.etag, place]
                    for source, place in zip(self.sources, places, strict=True)
                ],
            },
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")

    @classmethod
    def decode(cls, name: str, data: bytes) -> Job:
        """The job in a decrypted record stored at ``name`` (of ``RECORD_FORMAT``, padded, or of
        ``PREVIOUS_RECORD_FORMAT``, unpadded); anything else is refused, malformed padding too."""
        refused = RecordRefused("Error: A job record is not in the format s3memory writes.")
        unpadded = _unpadded(data)
        try:
            fields = json.loads((data if unpadded is None else unpadded).decode("utf-8"))
            bound = fields["format"] == RECORD_FORMAT
            job = cls(
                fields["kind"],
                fields["old"],
                fields["new"],
                tuple(_source(source, bound) for source in fields["sources"]),
                fields["created"],
                fields["nonce"],
            )
            valid = (
                (bound if unpadded is not None else fields["format"] == PREVIOUS_RECORD_FORMAT)
                and isinstance(job.created, int)
                and isinstance(job.nonce, str)
                and isinstance(job.old, str)
                and (
                    (job.kind == "rename" and isinstance(job.new, str))
                    or (job.kind == "delete" and job.new is None)
                )
                and all(
                    isinstance(source.key, str)
                    and isinstance(source.etag, str)
                    and (isinstance(source.place, str) or not bound)
                    for source in job.sources
                )
                and (not bound or len(data) == job.padded_size)
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise refused from None
        if not valid or job.name != name:
            raise refused
        return job


def _source(fields: object, bound: bool) -> Source:
    """A source as a record lists it: ``[key, etag, place]`` (``bound``: ``RECORD_FORMAT``), or
    ``[key, etag]``; its fields' types are checked by the caller."""
    if not isinstance(fields, list) or len(fields) != (3 if bound else 2):
        raise ValueError("not a source")
    return Source(*fields)


def _longest(path: str) -> str:
    """A stand-in for ``path`` as long as the longest path whose segments' names are as long as
    this one's, every byte escaped (JSON doubles a quote; memory paths hold no other escape)."""
    root, *segments = path.split("/")[1:]
    steps = [len(segment.encode("utf-8")) // _NAME_BLOCK + 1 for segment in segments]
    return "/" + root + "".join("/" + "-" * (2 * _NAME_BLOCK * step) for step in steps)


def _unpadded(data: bytes) -> bytes | None:
    """``data`` without its padding (ISO/IEC 7816-4), or None if it ends as no padding does."""
    stripped = data.rstrip(b"\x00")
    if not stripped or stripped[-1] != 0x80:
        return None
    return stripped[:-1]


def record_name_is_ours(name: str) -> bool:
    """True if ``name`` (below the internal prefix) has the shape of a job record's name."""
    return name.startswith(JOB_PREFIX) and _NAME.fullmatch(name[len(JOB_PREFIX) :]) is not None


def plan_problem(job: Job, layout: KeyLayout) -> str | None:
    """Why ``job`` can never run (a short reason naming no path), or None if its plan holds.

    A plan holds when its paths are valid, a rename's destination lies outside its source, and
    every source is a distinct key of a valid memory path strictly below ``old`` (with, for a
    rename, a valid key below ``new``).
    """
    try:
        old = memory_path(job.old)
        new = None if job.new is None else memory_path(job.new)
    except CommandError:
        return "an invalid path"
    if old.is_root or (new is not None and (new.is_root or new.is_within(old))):
        return "a path it may not touch"
    if len(job.sources) > MAX_SOURCES or len({source.key for source in job.sources}) != len(job.sources):
        return "too many or repeated sources"
    for source in job.sources:
        path = layout.path_of_key(source.key)
        if path is None or path == old or not path.is_within(old):
            return "a source outside its directory"
        if new is not None:
            try:
                layout.file_key(new.joined(path.relative_to(old)))
            except CommandError:
                return "a destination too long for S3"
    return None
