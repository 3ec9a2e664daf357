"""When a user last used the memory: one sealed record per user, written before the answer.

S3 keeps no access times, so ``S3Memory.run`` keeps one: ``internal/access``, sealed with the user's
key under the associated-data path ``internal:access`` (no memory path or job record has it), holding
``{"at": <milliseconds since the epoch>}``. Every command answered counts, reads as much as writes; a
refused command changes nothing, this record included. A memory object writes the record once the
first command it answers has its answer, then once the first one answered at least
``RECORD_EVERY_SECONDS`` after its last has: one unconditional PutObject, made by the command's own
thread before the answer is returned, so no write of the record outlives the command that made it.
A write that fails is logged (never the user, a path or content), fails no command, and the next
command tries again. Idle expiry reads the record (``ops/idle_expiry.py``); the protocol and its invariants
are ``docs/expiry.md``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from s3memory.core.files import MemoryFiles
from s3memory.core.job_records import RECORD_PATH_PREFIX
from s3memory.errors import IntegrityError, ObjectTooLarge

RECORD_EVERY_SECONDS = 3600
"""A memory object writes the record again on its first command this long after its last record."""
ACCESS_NAME = "access"
"""The record's name below the user's internal prefix."""
ACCESS_RECORD_PATH = RECORD_PATH_PREFIX + ACCESS_NAME
"""The associated-data path the record is sealed under."""
ACCESS_MAX_BYTES = 4096
"""No access record s3memory writes is larger: a larger object is refused unread."""

logger = logging.getLogger("s3memory")


@dataclass(frozen=True)
class Access:
    """The access record as read: when the user last used the memory (seconds since the epoch), and
    the record's ETag; both None when there is no record."""

    at: float | None
    etag: str | None


class AccessRecord:
    """One user's access record: written by the commands of one memory object, read by expiry."""

    def __init__(self, files: MemoryFiles, clock: Callable[[], float] = time.time) -> None:
        self._files = files
        self.key = files.layout.key_of_internal(ACCESS_NAME)
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None

    def touch(self) -> None:
        """Note that a command has its answer now: write the record if this object never has, or
        last did at least ``RECORD_EVERY_SECONDS`` ago, and return once it has landed or failed
        (logged; it never raises). A command that finds a write under way waits for it, so none
        answers before the record that covers it has landed; if that write failed, it writes."""
        with self._lock:
            now = self.clock()
            if self._last is not None and now - self._last < RECORD_EVERY_SECONDS:
                return
            try:
                self.write_at(now)
            except Exception as error:  # the command is applied: its answer goes back whatever this is
                logger.warning("s3memory: the access record could not be written (%s)", type(error).__name__)
                return
            self._last = now  # a failed write leaves it: the next command writes

    def write_at(self, at: float) -> None:
        """Store the record saying the user last used the memory at ``at`` (seconds since the epoch)."""
        body = json.dumps({"at": int(at * 1000)}, separators=(",", ":")).encode("utf-8")
        self._files.bucket.put(self.key, self._files.cipher.seal(ACCESS_RECORD_PATH, body))

    def read(self) -> Access:
        """The record as stored now; ``IntegrityError`` when it is not one s3memory sealed for this
        user (tampered, planted, copied from another user) or not in the record's format."""
        refused = IntegrityError("Error: The access record is not one s3memory wrote for this user.")
        try:
            stored = self._files.bucket.get(self.key, max_bytes=ACCESS_MAX_BYTES)
        except ObjectTooLarge:
            raise refused from None
        if stored is None:
            return Access(None, None)
        try:
            fields = json.loads(self._files.cipher.open(ACCESS_RECORD_PATH, stored.body).decode("utf-8"))
        except (IntegrityError, ValueError):  # not authentic; not UTF-8 or not JSON
            raise refused from None
        at = fields.get("at") if isinstance(fields, dict) else None
        if isinstance(at, bool) or not isinstance(at, int) or at < 0:
            raise refused
        return Access(at / 1000, stored.etag)
