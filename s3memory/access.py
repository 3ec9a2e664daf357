"""When a user last used the memory: one sealed record per user, written off the answer's path.

S3 keeps no access times, so ``S3Memory.run`` keeps one: ``internal/access``, sealed with the user's
key under the associated-data path ``internal:access`` (no memory path or job record has it), holding
``{"at": <milliseconds since the epoch>}``. Every command answered counts, reads as much as writes; a
refused command changes nothing, this record included. A memory object writes the record after the
first command it answers, then after the first one answered at least ``RECORD_EVERY_SECONDS`` after
its last: one unconditional PutObject on the shared worker pool, started once the answer is ready,
so the answer never waits for it (and no Lambda invocation's request tally counts it). A write that
fails is logged (never the user, a path or content) and the next command tries again. Idle expiry
reads the record (``expiry.py``); the protocol and its invariants are ``docs/expiry.md``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass

from .concurrency import side
from .errors import IntegrityError
from .files import MemoryFiles
from .jobs import RECORD_PATH_PREFIX
from .store import ObjectTooLarge

RECORD_EVERY_SECONDS = 3600
"""A memory object writes the record again on its first command this long after its last record."""
ACCESS_NAME = "access"
"""The record's name below the user's internal prefix."""
ACCESS_RECORD_PATH = RECORD_PATH_PREFIX + ACCESS_NAME
"""The associated-data path the record is sealed under."""
ACCESS_MAX_BYTES = 4096
"""No access record s3memory writes is larger: a larger object is refused unread."""

logger = logging.getLogger("s3memory")
_in_flight: set[Future[None]] = set()
"""The record writes this process has started and not seen end, of every user."""
_in_flight_lock = threading.Lock()


def settle() -> None:
    """Return once every access record write this process has started has ended (before a bucket
    is emptied or removed under them; they never raise)."""
    with _in_flight_lock:
        writing = list(_in_flight)
    wait(writing)


@dataclass(frozen=True)
class Access:
    """The access record as read: when the user last used the memory (seconds since the epoch), and
    the record's ETag; both None when there is no record."""

    at: float | None
    etag: str | None


def _ended(writing: Future[None]) -> None:
    with _in_flight_lock:
        _in_flight.discard(writing)


class AccessRecord:
    """One user's access record: written by the commands of one memory object, read by expiry."""

    def __init__(self, files: MemoryFiles, clock: Callable[[], float] = time.time) -> None:
        self._files = files
        self.key = files.layout.key_of_internal(ACCESS_NAME)
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._writing: Future[None] | None = None

    def touch(self) -> None:
        """Note that a command was answered now: start writing the record if this object never has,
        or last did at least ``RECORD_EVERY_SECONDS`` ago. Returns at once."""
        now = self.clock()
        with self._lock:
            if self._last is not None and now - self._last < RECORD_EVERY_SECONDS:
                return
            self._last = now
            # in a context of its own: it outlives the answer, so no invocation's request tally counts it
            writing = self._writing = side(lambda: contextvars.Context().run(self._write, now))
            with _in_flight_lock:
                _in_flight.add(writing)
        writing.add_done_callback(_ended)

    def wait(self, timeout: float | None = None) -> None:
        """Return once the record write in flight, if any, has ended, or ``timeout`` seconds have
        passed (it never raises)."""
        writing = self._writing
        if writing is not None:
            wait([writing], timeout=timeout)

    def _write(self, noted: float) -> None:
        """Store the record of the answer noted at ``noted``. It holds the time it is sealed, never
        earlier: a write held up (a frozen Lambda container) says later, never that the user left sooner."""
        try:
            self.write_at(self.clock())
        except Exception as error:
            with self._lock:
                if self._last == noted:
                    self._last = None  # the next command tries again
            logger.warning("s3memory: the access record could not be written (%s)", type(error).__name__)

    def write_at(self, at: float) -> None:
        """Store the record saying the user last used the memory at ``at`` (seconds since the epoch)."""
        body = json.dumps({"at": int(at * 1000)}, separators=(",", ":")).encode("utf-8")
        self._files.store.put(self.key, self._files.cipher.seal(ACCESS_RECORD_PATH, body))

    def read(self) -> Access:
        """The record as stored now; ``IntegrityError`` when it is not one s3memory sealed for this
        user (tampered, planted, copied from another user) or not in the record's format."""
        refused = IntegrityError("Error: The access record is not one s3memory wrote for this user.")
        try:
            stored = self._files.store.get(self.key, max_bytes=ACCESS_MAX_BYTES)
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
