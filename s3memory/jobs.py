"""Job records: the plan of a directory rename or delete, stored before its first change. Pure, no I/O.

A record names exactly the objects the job will touch, each with the ETag it had when the job was
planned, under a random id and its creation time; the record is sealed (authenticated and encrypted)
with its own name as associated data. The protocol that runs records is in ``job_runner.py`` and
``docs/jobs.md``.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from typing import Literal

from .errors import CommandError, IntegrityError
from .paths import KeyLayout, MemoryPath, memory_path

JOB_PREFIX = "jobs/"
"""Where pending records live, below the user's internal prefix."""
QUARANTINE_PREFIX = "quarantine/"
"""Where records that can never run are moved, below the user's internal prefix."""
RECORD_PATH_PREFIX = "internal:"
"""Associated-data path of a record: no memory path starts with it, so no file can pass for one."""
RECORD_FORMAT = 2
MAX_SOURCES = 100_000
"""The most files one directory rename or delete may move or remove (its record stays a few MiB)."""
RECORD_MAX_BYTES = 32 * 1024 * 1024
"""No record s3memory writes is larger: a larger object is refused unread."""

_NAME = re.compile(r"(?P<created>[0-9]{13})-(?P<nonce>[0-9a-f]{32})")
JobKind = Literal["rename", "delete"]


class RecordRefused(IntegrityError):
    """A record that can never run: not in our format, or a plan that breaks the rules below."""


@dataclass(frozen=True)
class Source:
    """An object a job touches, and its ETag when the job was planned."""

    key: str
    etag: str


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

    @property
    def name(self) -> str:
        """The record's name below the internal prefix: oldest first in a listing."""
        return f"{JOB_PREFIX}{self.created:013d}-{self.nonce}"

    @property
    def record_path(self) -> str:
        """The associated-data path the record is sealed under."""
        return RECORD_PATH_PREFIX + self.name

    def encode(self) -> bytes:
        return json.dumps(
            {
                "format": RECORD_FORMAT,
                "created": self.created,
                "nonce": self.nonce,
                "kind": self.kind,
                "old": self.old,
                "new": self.new,
                "sources": [[source.key, source.etag] for source in self.sources],
            },
            separators=(",", ":"),
        ).encode("utf-8")

    @classmethod
    def decode(cls, name: str, data: bytes) -> Job:
        """The job in a decrypted record stored at ``name``; anything else is refused."""
        refused = RecordRefused("Error: A job record is not in the format s3memory writes.")
        try:
            fields = json.loads(data.decode("utf-8"))
            job = cls(
                fields["kind"],
                fields["old"],
                fields["new"],
                tuple(Source(key, etag) for key, etag in fields["sources"]),
                fields["created"],
                fields["nonce"],
            )
            valid = (
                fields["format"] == RECORD_FORMAT
                and isinstance(job.created, int)
                and isinstance(job.nonce, str)
                and isinstance(job.old, str)
                and (
                    (job.kind == "rename" and isinstance(job.new, str))
                    or (job.kind == "delete" and job.new is None)
                )
                and all(
                    isinstance(source.key, str) and isinstance(source.etag, str) for source in job.sources
                )
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise refused from None
        if not valid or job.name != name:
            raise refused
        return job


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
