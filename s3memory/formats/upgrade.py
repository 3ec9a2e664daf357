"""Moving a user's memory from storage format 1 to format 2, and serving a store half moved.

A format-2 memory looks for its user's format-1 files before its first command (one listing, once
per process and user, until the store is marked migrated) and moves them first, so no command
ever sees a user's memory half in one format. ``s3memory migrate`` moves every user the same way,
then marks the store. Each file moves like a rename's copy (``docs/jobs.md``): written in format 2
only where nothing is, the format-1 object deleted only if it still has the ETag it was read
with, and a copy withdrawn when its source changed. Every step can be repeated: a move that dies
is finished by the next process that looks. The protocol and its invariants: ``docs/format-v2.md``
"Migration".
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from s3memory.core.files import MemoryFiles
from s3memory.core.job_runner import JobRunner
from s3memory.core.last_used import AccessRecord
from s3memory.core.moves import Movers, UpgradeMover
from s3memory.core.paths import MemoryPath
from s3memory.errors import (
    CommandError,
    IntegrityError,
    ObjectTooLarge,
    PreconditionFailed,
    StorageError,
    shown,
)
from s3memory.formats.names import user_of_namespace
from s3memory.formats.store_keys import MIGRATED_NAME, NONE_MISSING, Missing
from s3memory.storage.bucket import Bucket, Listed
from s3memory.storage.concurrency import parallel

BORN = b"born in format 2"
"""What the mark (``store_keys.MIGRATED_NAME``) of a store that never held format 1 says (nothing
of format 1 to look for, even to erase)."""
SETTLED = b"no format-1 files"
"""What the mark of any other store with no format-1 files left says (one moved from format 1, or
one whose mark was lost or not authentic): erase still looks for what format 1 may have left."""
MARK_KEY_INFO = b"s3memory/v2/mark-key"
"""HKDF info of the key (from the store key) that authenticates the mark."""
_MARK_LABEL = b"s3memory/v2/mark"
_MARK_TAG_BYTES = 32
MARK_MAX_BYTES = max(len(BORN), len(SETTLED)) + _MARK_TAG_BYTES
FILES_MOVED_PER_COMMAND = 1_000
"""A command moves at most about this many of its user's format-1 files (a listing page's worth)
before it is refused, so its work does not grow with files it does not name; the next goes on."""
MOVE_ATTEMPTS = 4
"""A file whose format-1 object keeps changing while it is moved is tried this many times."""
_SETTLED_LIMIT = 100_000
"""Users this process knows to have no format-1 files, before it forgets them all (and lists again)."""

logger = logging.getLogger("s3memory")


class SettledUsers:
    """The users of one store (by namespace) a process knows to have no format-1 files, shared by
    the store's memories (``store.Store.settled``); forgotten all at once beyond
    ``_SETTLED_LIMIT`` (then each is listed again)."""

    def __init__(self) -> None:
        self._users: set[str] = set()
        self._lock = threading.Lock()

    def __contains__(self, namespace: object) -> bool:
        with self._lock:
            return namespace in self._users

    def add(self, namespace: str) -> None:
        with self._lock:
            if len(self._users) >= _SETTLED_LIMIT:
                self._users.clear()
            self._users.add(namespace)


@dataclass
class UserMigration:
    """What moving one user's format-1 memory did: files moved now, files found moved already (by
    an earlier or concurrent try), and files left in format 1, by canonical path, with why."""

    moved: int = 0
    already: int = 0
    left: list[tuple[str, str]] = field(default_factory=list)
    finished: bool = True
    """False when a budget stopped the move with files still to look at."""

    @property
    def clean(self) -> bool:
        return not self.left


class Upgrade:
    """One user's format-1 memory (``legacy``, whose pending jobs move files as ``legacy_movers``
    makes them) in a store now served in format 2 (``target``); ``marked()``: whether the store is
    marked as holding no format-1 files now (``Store.marked``), so ``ensure`` looks for none;
    ``settled``: the store's users this process knows to have none."""

    def __init__(
        self,
        legacy: MemoryFiles,
        legacy_movers: Movers,
        marked: Callable[[], bool],
        target: MemoryFiles,
        clock: Callable[[], float],
        settled: SettledUsers,
    ) -> None:
        self._legacy = legacy
        self._marked = marked
        self._users = settled
        self._target = target
        self._bucket = target.bucket
        self._jobs = JobRunner(legacy, legacy_movers, clock)
        self._access = (AccessRecord(legacy, clock), AccessRecord(target, clock))
        self._mover = UpgradeMover(legacy, target, clock)
        self._user = legacy.layout.namespace

    def ensure(self) -> None:
        """Move the user's format-1 files, if any, unless this process knows there are none (it
        moved them or looked before)."""
        if self._user in self._users or self._marked():
            return
        if self.pending():
            report = self.run(FILES_MOVED_PER_COMMAND)
            if report.left:
                logger.warning(
                    "s3memory: %d format-1 files could not be moved; run s3memory migrate", len(report.left)
                )
            if not report.finished:
                raise CommandError(
                    "Error: This memory is moving to a new storage format, about "
                    f"{FILES_MOVED_PER_COMMAND:,} files per command: {report.moved:,} moved now, more "
                    "remain. The command was not run; send it again to go on."
                )
        self._users.add(self._user)

    def pending(self) -> bool:
        """True if the user has format-1 memory files (one one-key listing)."""
        return self._bucket.any_below(self._legacy.layout.memories_prefix)

    def run(self, budget: int | None = None) -> UserMigration:
        """Finish the user's pending format-1 jobs, move every format-1 file, and carry the access
        record over. Files that cannot move (unreadable, or a different file already in format 2)
        stay in format 1 and are reported. With a ``budget``, the move stops after the listing
        page on which ``budget`` files have moved (not ``finished``; the access record waits)."""
        self._jobs.finish_pending()
        report = UserMigration()
        for page in self._bucket.pages(self._legacy.layout.memories_prefix):
            parallel(lambda listed: self._move(listed, report), page.objects)
            if budget is not None and report.moved >= budget and page.truncated:
                report.finished = False
                return report
        self.carry_access()
        return report

    def _move(self, listed: Listed, report: UserMigration) -> None:
        path = self._legacy.layout.path_of_key(listed.key)
        if path is None:
            report.left.append((shown(listed.key), "a key that names no memory path"))
            return
        for _attempt in range(MOVE_ATTEMPTS):
            outcome = self._move_once(path, listed.key)
            if outcome is None:
                continue
            if outcome == "moved":
                report.moved += 1
            elif outcome == "already":
                report.already += 1
            else:
                report.left.append((path.canonical, outcome))
            return
        report.left.append((path.canonical, "it kept changing while it was moved"))

    def _move_once(self, path: MemoryPath, source: str) -> str | None:
        """Move one file: "moved", "already" (moved before), why it stays, or None to try again."""
        try:
            origin = self._mover.locate(path)
        except (IntegrityError, ObjectTooLarge):
            return "it fails its integrity check in format 1"
        if origin is None:
            return "already"  # moved by another process meanwhile
        try:
            self._target.layout.file_key(path)
        except CommandError:
            return "its path is too long for private names (export it with --storage-format 1, import it under a shorter path)"
        made = self._mover.place(origin, path)  # a storage or key failure fails the command: retried
        if made is None and not self._mover.accept(origin, path):
            return self._not_relied_on(path)
        try:
            self._legacy.delete(source, if_match=origin.etag)
        except PreconditionFailed as failed:
            gone = not self._bucket.exists(source)
            if gone and (failed.after_retry or made is None):
                return "moved" if made is not None else "already"
            if made is not None:
                self._mover.withdraw(made)
            return "already" if gone else None
        return "moved" if made is not None else "already"

    def _not_relied_on(self, path: MemoryPath) -> str | None:
        """Why the file at ``path`` in format 2 is not a copy to rely on; None (try again) if
        nothing is there now."""
        try:
            there = self._target.read(path)
        except IntegrityError:
            return "a file that fails its integrity check is at its path in format 2"
        return None if there is None else "a different file is at its path in format 2"

    def carry_access(self) -> None:
        """Keep the user's last access time (expiry reads it) in format 2, then drop the format-1
        record. An unreadable one is left for ``verify`` to report."""
        legacy, target = self._access
        try:
            before = legacy.read()
            if before.at is None:
                return
            now = target.read()
        except IntegrityError:
            return
        if now.at is None or now.at < before.at:
            target.write_at(before.at)
        self._bucket.delete(legacy.key)


def migrated(
    bucket: Bucket,
    prefix: str,
    identity: str,
    key: bytes,
    missing: Missing = NONE_MISSING,
    stored_mark: Callable[[], bytes | None] | None = None,
) -> bool:
    """True if the store at ``prefix`` (of ``identity`` and store key ``key``) has no format-1
    files: its mark authenticates, or (then it is marked now) ``missing`` says nothing at all was
    below the prefix (a new store), or the first page of its namespaces shows only format-2 ones.
    A mark that does not authenticate (planted, forged, or written before marks were sealed) is no
    mark. ``stored_mark`` gives the mark's stored bytes when they were fetched already (alongside
    the store key: ``fetch_mark``); without it the mark is read here. Asked once per process
    (``store.Store``, which ``Store.mark_migrated`` then updates); until the store is marked, each
    user's first command in a process lists the user's format-1 namespace, whose key names the user."""
    if missing.mark:
        known = False
    else:
        stored = fetch_mark(bucket, prefix) if stored_mark is None else stored_mark()
        known = mark_state(stored, identity, key) is not None
    born = None if known else True if missing.anything else _born_by_namespaces(bucket, prefix, key)
    if born is not None:
        try:
            mark_migrated(bucket, prefix, identity, key, born=born)
            known = True
        except StorageError:  # a role that may not write (expiry's): look for format-1 files
            pass
    return known


def _born_by_namespaces(bucket: Bucket, prefix: str, key: bytes) -> bool | None:
    """What the first page of the store's namespaces, if it is the only one, shows: no namespace
    at all (True: a new store, born in format 2), only format-2 ones (False: no format-1 files, but
    not known to have never held any), or (None) a format-1 one, or more than a page."""
    page = next(bucket.pages(prefix, delimiter=True))
    if page.truncated or not all(
        user_of_namespace(key, common[len(prefix) : -1]) is not None for common in page.prefixes
    ):
        return None
    return not page.prefixes


def mark_migrated(bucket: Bucket, prefix: str, identity: str, key: bytes, *, born: bool = False) -> None:
    """Mark the store at ``prefix`` as having no format-1 files left (``born``: never any), sealed
    under its store key ``key`` for its ``identity``."""
    state = BORN if born else SETTLED
    bucket.put(prefix + MIGRATED_NAME, state + _mark_tag(key, identity, state))


def fetch_mark(bucket: Bucket, prefix: str) -> bytes | None:
    """The stored bytes of the mark of the store at ``prefix``, or None if there is none; empty
    bytes, which no mark authenticates, for an object larger than any mark s3memory writes (one
    GET; its key needs no store key, so it can be sent alongside the store key's)."""
    try:
        stored = bucket.get(prefix + MIGRATED_NAME, max_bytes=MARK_MAX_BYTES)
    except ObjectTooLarge:
        return b""  # there, but not a mark s3memory wrote
    return None if stored is None else stored.body


def mark_state(stored: bytes | None, identity: str, key: bytes) -> bytes | None:
    """What the mark ``stored`` says (``BORN`` or ``SETTLED``), or None if there is none or it does
    not authenticate under the store key ``key`` for ``identity``."""
    if stored is None:
        return None
    for state in (BORN, SETTLED):
        tag = stored[len(state) :]
        if stored.startswith(state) and hmac.compare_digest(tag, _mark_tag(key, identity, state)):
            return state
    return None


def born_in_format_2(bucket: Bucket, prefix: str, identity: str, key: bytes | None) -> bool:
    """True if the store at ``prefix`` is marked, authentically, as never having held format 1;
    False without a store key (nothing is authentic then)."""
    return key is not None and mark_state(fetch_mark(bucket, prefix), identity, key) == BORN


def _mark_tag(key: bytes, identity: str, state: bytes) -> bytes:
    """HMAC-SHA256, under a key derived from the store key, of the store identity and the state."""
    mark_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=MARK_KEY_INFO).derive(key)
    framed = b"".join(struct.pack(">I", len(part)) + part for part in (identity.encode("utf-8"), state))
    return hmac.new(mark_key, _MARK_LABEL + framed, hashlib.sha256).digest()
