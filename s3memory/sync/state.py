"""What a synced folder keeps of its own in ``DIR/.s3memory-sync/``: the marker naming the store and the
memory it belongs to, the baseline the last round left, as a snapshot and an append-only journal, and
the memory's files the folder refused (``RefusedPulls``: a cache of what not to read again,
``docs/sync.md``).

The marker names the store by its identity (``Store.identity``, a digest) and the owner by a
fingerprint (``owner_fingerprint``: a digest of the id under the store's identity), never the user id
in clear. The baseline changes after each file a round finishes: one JSON line appended to the
journal by one ``write`` (a killed process loses no line it wrote; a power cut may lose the last
ones, which the next round does again: every side effect is conditional). The snapshot is rewritten
at the end of a round that changed it (``compact``), so the work stays linear and a round with no
change writes nothing. A last journal line cut short (no
newline, or no JSON) is a write a kill interrupted: it is ignored and cut away. Every file is opened
below the directory's handle without following a link; the folder's side locks the directory
(``folder.SyncFolder``), so one process syncs a folder at a time.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import json
import os
import stat
from dataclasses import dataclass
from types import TracebackType

from s3memory.sync.folder import FolderRefused
from s3memory.sync.local_entries import LocalStat
from s3memory.sync.plan import BaselineEntry

MARKER = "marker.json"
SNAPSHOT = "baseline.json"
JOURNAL = "journal.jsonl"
REFUSED = "refused.json"
VERSION = 1
"""The version of the files below; a newer one is refused."""
FILE_MODE = 0o600
_MARKER_MAX_BYTES = 4096
_OWNER_LABEL = b"s3memory/sync/owner\x00"
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_JOURNAL = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_STATE_FIX = (
    f"remove {SNAPSHOT} and {JOURNAL} from the folder's .s3memory-sync directory (the next round then "
    "compares every file again and loses nothing), then sync again"
)


def owner_fingerprint(store_identity: str, owner: str) -> str:
    """The fingerprint that names ``owner`` (a user id, or ``shared/<name>``) in the marker of a
    folder synced with it in the store of ``store_identity``: 64 hex digits of HMAC-SHA256 keyed by
    the store's identity. It names the owner without saying who: one who guesses the id can check the
    guess, no one can read it."""
    return hmac.new(
        store_identity.encode("utf-8"), _OWNER_LABEL + owner.encode("utf-8"), "sha256"
    ).hexdigest()


@dataclass(frozen=True)
class Marker:
    """The store (its identity), the owner (``owner_fingerprint``) and the storage format a folder
    is synced with."""

    store: str
    owner: str
    storage_format: int

    def document(self) -> dict[str, object]:
        return {
            "s3memory_sync": VERSION,
            "store": self.store,
            "owner": self.owner,
            "format": self.storage_format,
        }


@dataclass(frozen=True)
class RefusedPulls:
    """The memory's files the folder could not take when a round last tried (the local file system
    refused a name, or an entry was in the way), each by path with the ETag it had then and why;
    ``folder``: a digest of the folder as the round left it (``round.folder_digest``). A later round
    tries one again only where its ETag or the folder changed."""

    folder: str
    paths: dict[str, tuple[str, str]]

    def etags(self) -> dict[str, str]:
        """The ETag each refused file had, by path."""
        return {path: etag for path, (etag, _) in self.paths.items()}


class SyncState:
    """``DIR/.s3memory-sync`` (``directory``: a handle of it, which the caller keeps, locks for its
    process and closes: ``folder.SyncFolder``): the marker, the baseline (``baseline``, as the last
    round left it and as this one changes it), the journal (closed at the end of ``with``)."""

    def __init__(self, directory: int) -> None:
        self._directory = directory
        self._journal: int | None = None
        self._changed = False
        """True once the baseline differs from the snapshot (a journal line read or written)."""
        self.baseline: dict[str, BaselineEntry] = {}

    def __enter__(self) -> SyncState:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None

    # -- the marker ---------------------------------------------------------------------------------

    def marker(self) -> Marker | None:
        """The folder's marker, or None where it has none; ``FolderRefused`` for one that cannot be
        read (not JSON, not a marker, or of a newer version)."""
        data = self._read(MARKER, _MARKER_MAX_BYTES)
        if data is None:
            return None
        try:
            document = json.loads(data)
        except ValueError:
            document = None
        version = document.get("s3memory_sync") if isinstance(document, dict) else None
        if isinstance(version, int) and version > VERSION:
            raise FolderRefused(
                "this folder's sync marker (.s3memory-sync/marker.json) was written by a newer s3memory: "
                "sync it with that version; nothing was changed"
            )
        if not isinstance(document, dict) or version != VERSION:
            raise _damaged(MARKER)
        store, owner, storage_format = document.get("store"), document.get("owner"), document.get("format")
        if not (isinstance(store, str) and isinstance(owner, str) and isinstance(storage_format, int)):
            raise _damaged(MARKER)
        return Marker(store, owner, storage_format)

    def check_marker(self, expected: Marker) -> bool:
        """True if the folder's marker names ``expected``'s store and owner, False if it has none;
        ``FolderRefused`` naming the cause and the fix when it names another store or another
        memory (or cannot be read). A folder whose store moved to another format keeps its marker,
        with the new format written."""
        found = self.marker()
        if found is None:
            return False
        if found.store != expected.store:
            raise FolderRefused(
                "this folder is synced with another store (its .s3memory-sync/marker.json names it): sync "
                "it with the bucket and prefix it belongs to, or give another folder; nothing was changed"
            )
        if found.owner != expected.owner:
            raise FolderRefused(
                "this folder is synced with another memory of this store (its .s3memory-sync/marker.json "
                "names another user or shared memory): sync it with the --user it belongs to, or give "
                "another folder (one memory's folder is never merged into another's); nothing was changed"
            )
        if found.storage_format != expected.storage_format:
            self.write_marker(expected)
        return True

    def write_marker(self, marker: Marker) -> None:
        """Write the folder's marker (whole or not at all)."""
        self._replace(MARKER, json.dumps(marker.document(), sort_keys=True).encode("ascii") + b"\n")

    # -- the baseline -------------------------------------------------------------------------------

    def load(self) -> dict[str, BaselineEntry]:
        """The baseline the last round left (``baseline``, from now on): the snapshot, then each
        journal line over it, a last line cut short by a kill ignored and cut away.
        ``FolderRefused`` for a snapshot or an earlier line that cannot be read."""
        snapshot = self._read(SNAPSHOT)
        baseline: dict[str, BaselineEntry] = {}
        if snapshot is not None:
            try:
                document = json.loads(snapshot)
            except ValueError:
                raise _damaged(SNAPSHOT) from None
            files = document.get("files") if isinstance(document, dict) else None
            if not isinstance(document, dict) or document.get("s3memory_sync") != VERSION:
                raise _damaged(SNAPSHOT)
            if not isinstance(files, dict):
                raise _damaged(SNAPSHOT)
            for path, fields in files.items():
                baseline[path] = _entry(fields, SNAPSHOT)
        journal = self._opened_journal()
        os.lseek(journal, 0, os.SEEK_SET)
        data = _read_all(journal)
        *complete, _cut = data.split(b"\n")  # what follows the last newline: a line cut short
        kept = 0
        for number, line in enumerate(complete):
            try:
                path, entry = _change(line)
            except FolderRefused:
                if number == len(complete) - 1 and not _cut:
                    break  # the last line, cut short before its newline was written: ignored
                raise
            if entry is None:
                baseline.pop(path, None)
            else:
                baseline[path] = entry
            kept += len(line) + 1
        self._changed = kept > 0
        if kept != len(data):
            os.ftruncate(journal, kept)
        self.baseline = baseline
        return baseline

    def record(self, path: str, entry: BaselineEntry | None) -> None:
        """Note that both sides now agree on ``path`` as ``entry`` (None: it is on neither): one line
        appended to the journal in one write, and ``baseline`` changed."""
        if self._journal is None:
            raise RuntimeError("load() or reset() the state before recording")
        fields = None if entry is None else _fields(entry)
        line = json.dumps({"path": path, "entry": fields}).encode("ascii") + b"\n"
        _write_all(self._journal, line)
        self._changed = True
        if entry is None:
            self.baseline.pop(path, None)
        else:
            self.baseline[path] = entry

    def reset(self) -> None:
        """Forget the baseline, whatever the state held (a folder taken again: the next plan
        compares every file), and write that as the snapshot."""
        self._opened_journal()
        self.baseline = {}
        self._changed = True
        self.compact()

    def _opened_journal(self) -> int:
        """The journal's handle, opened (made if missing) on first need; ``FolderRefused`` for an
        entry there that is no regular file."""
        if self._journal is None:
            journal = os.open(JOURNAL, _JOURNAL, FILE_MODE, dir_fd=self._directory)
            try:
                _check_regular(journal, JOURNAL)
            except FolderRefused:
                os.close(journal)
                raise
            self._journal = journal
        return self._journal

    def compact(self) -> None:
        """Write ``baseline`` as the snapshot (whole, synced to disk) and empty the journal, where the
        baseline changed since the snapshot (a round with no change writes nothing)."""
        if self._journal is None:
            raise RuntimeError("load() or reset() the state before compacting")
        if not self._changed:
            return
        files = {path: _fields(entry) for path, entry in sorted(self.baseline.items())}
        self._replace(SNAPSHOT, json.dumps({"s3memory_sync": VERSION, "files": files}).encode("ascii"))
        os.ftruncate(self._journal, 0)
        self._changed = False

    # -- the pulls the folder refused ---------------------------------------------------------------

    def refused(self) -> RefusedPulls | None:
        """The pulls the folder refused when a round last tried (``RefusedPulls``), None where none is
        kept. A copy that cannot be read is none: it only saves reads, and the next round reads again."""
        try:
            data = self._read(REFUSED)
            document = None if data is None else json.loads(data)
        except (FolderRefused, ValueError):
            return None
        if not isinstance(document, dict) or document.get("s3memory_sync") != VERSION:
            return None
        folder, paths = document.get("folder"), document.get("paths")
        if not isinstance(folder, str) or not isinstance(paths, dict):
            return None
        kept: dict[str, tuple[str, str]] = {}
        for path, fields in paths.items():
            if not (
                isinstance(fields, list) and len(fields) == 2 and all(isinstance(f, str) for f in fields)
            ):
                return None
            kept[path] = (fields[0], fields[1])
        return RefusedPulls(folder, kept)

    def keep_refused(self, refused: RefusedPulls, before: RefusedPulls | None) -> None:
        """Keep ``refused`` for the next round where it differs from what was kept (``before``): none
        kept where it holds no path."""
        if refused == before or (not refused.paths and before is None):
            return
        if not refused.paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(REFUSED, dir_fd=self._directory)
            return
        paths = {path: list(fields) for path, fields in sorted(refused.paths.items())}
        document = {"s3memory_sync": VERSION, "folder": refused.folder, "paths": paths}
        self._replace(REFUSED, json.dumps(document).encode("ascii"))

    # -- files ---------------------------------------------------------------------------------------

    def _read(self, name: str, limit: int | None = None) -> bytes | None:
        """The bytes of ``name`` (at most ``limit``: more is damage), or None where it is missing."""
        try:
            descriptor = os.open(name, _READ, dir_fd=self._directory)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENXIO):
                raise _damaged(name) from None
            raise
        try:
            _check_regular(descriptor, name)
            data = _read_all(descriptor)
        finally:
            os.close(descriptor)
        if limit is not None and len(data) > limit:
            raise _damaged(name)
        return data

    def _replace(self, name: str, data: bytes) -> None:
        """``name`` replaced by ``data`` whole: written to ``<name>.new``, synced, renamed over it."""
        temporary = name + ".new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=self._directory)
        descriptor = os.open(temporary, _NEW, FILE_MODE, dir_fd=self._directory)
        try:
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.rename(temporary, name, src_dir_fd=self._directory, dst_dir_fd=self._directory)
        os.fsync(self._directory)


def _fields(entry: BaselineEntry) -> list[str | int]:
    """``entry`` as the state files keep it: ``[sha256, etag, size, mtime_ns, inode, ctime_ns]``."""
    stat = entry.stat
    return [entry.sha256, entry.etag, stat.size, stat.mtime_ns, stat.inode, stat.ctime_ns]


def _entry(fields: object, name: str) -> BaselineEntry:
    """A baseline entry as the state files keep it (``_fields``)."""
    if (
        isinstance(fields, list)
        and len(fields) == 6
        and all(isinstance(field, str) for field in fields[:2])
        and all(isinstance(field, int) and not isinstance(field, bool) for field in fields[2:])
    ):
        return BaselineEntry(fields[0], fields[1], LocalStat(*fields[2:]))
    raise _damaged(name)


def _damaged(name: str) -> FolderRefused:
    if name == MARKER:
        return FolderRefused(
            "this folder's sync marker (.s3memory-sync/marker.json) cannot be read: it is damaged or was "
            "replaced. Remove it only if the folder belongs to this memory (a first round then takes the "
            "folder again), then sync again; nothing was changed"
        )
    return FolderRefused(
        f"the state sync keeps of this folder (.s3memory-sync/{name}) cannot be read: it is damaged or "
        f"was replaced. To go on, {_STATE_FIX}; nothing was changed"
    )


def _change(line: bytes) -> tuple[str, BaselineEntry | None]:
    """The path and the entry (None: forgotten) of a journal line; ``FolderRefused`` if it is none."""
    try:
        change = json.loads(line)
    except ValueError:
        raise _damaged(JOURNAL) from None
    if not isinstance(change, dict) or not isinstance(change.get("path"), str) or "entry" not in change:
        raise _damaged(JOURNAL)
    fields = change["entry"]
    return change["path"], None if fields is None else _entry(fields, JOURNAL)


def _check_regular(descriptor: int, name: str) -> None:
    """``FolderRefused`` unless ``descriptor`` is a regular file's (``name``'s)."""
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        raise _damaged(name)


def _read_all(descriptor: int) -> bytes:
    chunks = []
    while chunk := os.read(descriptor, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
