"""One sync round (``docs/sync.md``): the folder's marker checked (a folder without one taken when it
holds only what a memory can hold), one listing pass of the memory's files (its pending directory jobs
finished first where the files changed since the last round), the folder scanned, the plan (``plan.plan``), each action done on the condition the plan
saw and journaled as soon as it is done, the report.

Every side effect is conditional: a push on the ETag the baseline saw (``If-None-Match`` for a new
file, through the checks of the memory tool's ``create``), a pull written locally only over the
file the scan saw, a deletion only of what the baseline saw on that side. What changed meanwhile is
left to the next round and reported. A round killed between any two steps is finished by the next:
what it wrote and did not journal is found the same on both sides (a reconcile with equal bytes),
and a conflict copy's name depends only on the path, the machine and the local file's mtime, so no
copy is made twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from s3memory.core.paths import MemoryPath, SharedName, check_new_name, memory_path
from s3memory.core.placement import require_file_path
from s3memory.crypto import plaintext_size
from s3memory.errors import CommandError, PreconditionFailed, StorageError, with_fix
from s3memory.ops.folders import LeftAlone, NameRefused, is_temporary
from s3memory.ops.progress import SILENT, Progress
from s3memory.placed import PlacedMemory
from s3memory.sync.folder import (
    CHANGED,
    KEPT_FOR_SYNC,
    STATE_DIRECTORY,
    SYNC_TEMPORARY_NAME,
    FolderRefused,
    LocalChanged,
    SyncFolder,
)
from s3memory.sync.local_entries import LocalStat
from s3memory.sync.plan import (
    NOT_PUSHED,
    Action,
    BaselineEntry,
    Kind,
    LocalSide,
    LocalVersion,
    RemoteSide,
    RemoteVersion,
    conflict_names,
    plan,
    same_etag,
)
from s3memory.sync.report import SyncReport
from s3memory.sync.state import Marker, RefusedPulls, SyncState, owner_fingerprint

ADOPTION_SHOWN = 5
"""The entries a refusal to take a folder names, at most."""
CHANGED_MEANWHILE = "changed in the memory while this round worked on it; the next round takes it"


def marker_of(memory: PlacedMemory) -> Marker:
    """The marker of a folder synced with ``memory``: its store's identity, its owner's fingerprint,
    its storage format."""
    owner = memory.owner
    principal = owner.principal if isinstance(owner, SharedName) else str(owner)
    identity = memory.store.identity
    return Marker(identity, owner_fingerprint(identity, principal), memory.format.storage_format)


def sync_round(
    memory: PlacedMemory,
    folder: SyncFolder,
    state: SyncState,
    *,
    machine: str,
    allow_deletes: bool = False,
    adopt: bool = False,
    rehash: bool = False,
    progress: Progress = SILENT,
    stop: Callable[[], bool] = lambda: False,
    pull_only: bool = False,
) -> SyncReport:
    """One round between ``memory`` (written as its author: ``PlacedMemory.by``) and ``folder``, from
    the baseline ``state`` keeps: what it did. ``machine`` names this machine in conflict copies'
    names. ``FolderRefused`` (nothing changed) for a folder of another memory, and for a folder
    without a marker that holds what a memory cannot (unless ``adopt``). ``allow_deletes`` lifts the
    mass-delete guard; ``rehash`` reads every local file, its stat unchanged or not. A failure of the
    store ends the round (``StorageError``): what was done is journaled, and the next round goes on.
    ``stop`` is asked before each file's action: True ends the round there (``SyncReport.stopped``),
    each file done and journaled, and the next round finishes it. ``pull_only``: the memory is never
    written (no push, no deletion, no conflict copy there, no pending job finished, no access record):
    what changed here stays here, a file deleted here is pulled back (``plan.plan``)."""
    max_bytes = memory.files.max_file_bytes
    report = SyncReport(pull_only=pull_only)
    marker = marker_of(memory)
    if state.check_marker(marker):
        state.load()
    else:
        offenders = [] if adopt else folder.adoptable(max_bytes, ADOPTION_SHOWN)
        if offenders:
            raise FolderRefused(
                f"{folder.directory} holds what a memory cannot hold ({'; '.join(offenders)}), and sync takes "
                "a folder it never synced only when it is empty or holds only memory files: give another "
                "folder, or run again with --adopt to take it as it is (what a memory cannot hold is then "
                "left alone and reported); nothing was changed"
            )
        state.reset()  # a baseline without a marker is no baseline of this memory's
        state.write_marker(marker)
        report.adopted = True
    if memory.upgrade is not None and not pull_only:
        memory.upgrade.ensure()
    before = state.refused()
    remote = listed(memory, state.baseline, {} if before is None else before.etags(), finish=not pull_only)
    local = scanned(folder, state.baseline, max_bytes, rehash)
    decided = plan(
        state.baseline,
        local,
        RemoteSide(remote, kept_names(remote)),
        allow_deletes=allow_deletes,
        pull_only=pull_only,
    )
    unchanged_folder = before is not None and before.folder == folder_digest(
        {path: version.stat for path, version in local.files.items()}, local.left_alone
    )
    report.left_alone.extend(decided.left_alone)
    report.withheld = [action.path for action in decided.withheld]
    report.guard = decided.guard
    report.unchanged = decided.in_step
    work = _Round(memory, folder, state, machine, local, remote, report, pull_only)
    work.known_refused = dict(before.paths) if before is not None and unchanged_folder else {}
    progress.expect(len(decided.actions))
    for action in decided.actions:
        if stop():
            report.stopped = True
            break
        work.run(action)
        progress.advance()
    state.compact()
    if not report.stopped:
        state.keep_refused(
            RefusedPulls(folder_digest(work.folder_after, local.left_alone), work.refused), before
        )
    if not pull_only:
        memory.access.touch()
    return report


def listed(
    memory: PlacedMemory,
    baseline: Mapping[str, BaselineEntry],
    refused: Mapping[str, str] | None = None,
    *,
    finish: bool = True,
) -> dict[str, RemoteVersion]:
    """Every file of ``memory`` by path, from one listing pass of its files (pages of 1,000 keys;
    format 2 decrypts each name without a request). Where the listing shows the memory changed since
    ``baseline`` (and the files the folder ``refused`` at their ETags, by path, which the last round
    saw too), its pending directory jobs are finished first (one listing of their records, as a
    command does) and the files listed again if one ran or ended: a round with no change lists its
    files and nothing else. Without ``finish``, the jobs are left to a writer."""
    found = _files(memory)
    if finish and _changed_since(found, baseline, refused or {}) and memory.jobs.finish_pending():
        found = _files(memory)
    return found


def _files(memory: PlacedMemory) -> dict[str, RemoteVersion]:
    layout = memory.layout
    found: dict[str, RemoteVersion] = {}
    for page in memory.bucket.pages(layout.memories_prefix):
        for item in page.objects:
            path = layout.path_of_key(item.key)
            if path is not None:
                found[path.canonical] = RemoteVersion(item.etag, item.size)
    return found


def _changed_since(
    found: Mapping[str, RemoteVersion], baseline: Mapping[str, BaselineEntry], refused: Mapping[str, str]
) -> bool:
    """True if the files listed (but those whose names no folder takes: ``kept_names``, and those the
    folder ``refused`` at the ETag listed) are not the baseline's, each at its ETag."""
    seen = {path for path, etag in refused.items() if path in found and same_etag(found[path].etag, etag)}
    if found.keys() - kept_names(found).keys() - seen != baseline.keys():
        return True
    return any(not same_etag(found[path].etag, entry.etag) for path, entry in baseline.items())


def kept_names(remote: Mapping[str, RemoteVersion]) -> dict[str, str]:
    """The memory's files no folder takes, left alone unread (the folder's side refuses to write
    them): below its ``STATE_DIRECTORY``, or named as it names its temporary files."""
    kept: dict[str, str] = {}
    for path in remote:
        segments = path.split("/")[2:]
        if segments[0] == STATE_DIRECTORY:
            kept[path] = KEPT_FOR_SYNC
        elif is_temporary(segments[-1]):
            kept[path] = SYNC_TEMPORARY_NAME
    return kept


def scanned(
    folder: SyncFolder, baseline: dict[str, BaselineEntry], max_bytes: int, rehash: bool
) -> LocalSide:
    """The folder's files (each not read where its stat is the baseline's, unless ``rehash``) and
    what it leaves alone, with why."""
    files: dict[str, LocalVersion] = {}
    left_alone: dict[str, str] = {}
    stats = {path: entry.stat for path, entry in baseline.items()}
    for entry in folder.scan(stats, max_bytes, rehash):
        if entry.problem is not None:
            left_alone[entry.path] = entry.problem
        elif entry.stat is not None:
            files[entry.path] = LocalVersion(entry.stat, None if entry.unchanged else entry.sha256)
    return LocalSide(files, left_alone)


def folder_digest(files: Mapping[str, LocalStat], left_alone: Mapping[str, str]) -> str:
    """A digest of the folder as a scan sees it: each file's path and stat, each path left alone and
    why. A folder whose files are all unchanged by their stat, none added or removed, has the same."""
    document = [
        sorted((path, [stat.size, stat.mtime_ns, stat.inode, stat.ctime_ns]) for path, stat in files.items()),
        sorted(left_alone.items()),
    ]
    return sha256(json.dumps(document).encode("utf-8"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class _Round:
    """A round's actions done one by one, each journaled once done (``settled``: the paths this round
    journaled, which no later action touches again)."""

    memory: PlacedMemory
    folder: SyncFolder
    state: SyncState
    machine: str
    local: LocalSide
    remote: dict[str, RemoteVersion]
    report: SyncReport
    pull_only: bool = False
    settled: set[str] = field(default_factory=set)
    known_refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The pulls the folder refused when the last round tried, by path (the ETag, why), where the
    folder has not changed since: one still at that ETag is not read again."""
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The pulls the folder refuses in this round, as ``known_refused``."""
    folder_after: dict[str, LocalStat] = field(init=False)
    """The folder's files as this round leaves them (the scan's, with what it wrote or deleted)."""

    def __post_init__(self) -> None:
        self.folder_after = {path: version.stat for path, version in self.local.files.items()}

    def run(self, action: Action) -> None:
        """Do ``action`` unless this round settled its path already; what stops it at this path is
        reported as left alone, a failure of the store ends the round."""
        if action.path in self.settled:
            return
        try:
            self._do(action)
        except LocalChanged as changed:
            self._left(
                action.path, f"{changed.reason} while this round worked on it; the next round takes it"
            )
        except (LeftAlone, NameRefused) as refused:
            self._left(action.path, refused.reason)
        except StorageError:
            raise  # the store's failure, not the file's: every file would meet it
        except CommandError as error:  # this file's: the memory tool's refusal, failing authentication
            self._left(action.path, with_fix(error))

    def _do(self, action: Action) -> None:
        path = action.path
        match action.kind:
            case Kind.DELETE_REMOTE:
                self._delete_remote(action)
            case Kind.DELETE_LOCAL:
                if action.local is not None:
                    self.folder.delete(path, action.local)
                self._record(path, None)
                self.report.deleted_local.append(path)
            case Kind.PUSH:
                self._push(action)
            case Kind.PULL:
                self._pull(action)
            case Kind.RECONCILE:
                self._reconcile(action)
            case Kind.REFRESH:
                if action.local is not None:
                    self._record(path, replace(self.state.baseline[path], stat=action.local))
                self.report.unchanged += 1
            case Kind.FORGET:
                self._record(path, None)

    def _delete_remote(self, action: Action) -> None:
        key = self.memory.layout.file_key(memory_path(action.path))
        try:
            self.memory.files.delete(key, if_match=action.etag)
        except PreconditionFailed:
            self._left(action.path, CHANGED_MEANWHILE)
            return
        self._record(action.path, None)
        self.report.deleted_remote.append(action.path)

    def _push(self, action: Action, *, again: bool = True) -> None:
        """Write the local file to the memory over the ETag the baseline saw, or as a new file; the
        memory's file changed meanwhile: reconciled (``again``: once)."""
        assert action.local is not None
        data = self._local_bytes(action)
        path = memory_path(action.path)
        stored = self.memory.screen(path, _text(path, data))
        etag = self._create(path, stored) if action.etag is None else self._replace(path, stored, action.etag)
        if etag is None:
            if again:
                self._reconcile(replace(action, kind=Kind.RECONCILE), again=False)
            else:
                self._left(action.path, CHANGED_MEANWHILE)
            return
        kept, stat = stored.encode("utf-8"), action.local
        if kept != data:  # the content guard redacted what it stored: the folder takes that too
            stat = self.folder.write(action.path, kept, action.local)
        self._record(action.path, BaselineEntry(sha256(kept), etag, stat))
        self.report.pushed.append(action.path)

    def _create(self, path: MemoryPath, text: str) -> str | None:
        """``text`` as a new file at ``path``, refused as ``create`` refuses it: its ETag, or None
        where a file is."""

        def refusal(reason: str) -> CommandError:
            return CommandError(f"Error: Cannot create {path.quoted}: {reason}.")

        require_file_path(path, refusal)
        check_new_name(path)
        files = self.memory.files
        files.check_size(path, len(text.encode("utf-8")))
        return self.memory.create_file(path, files.encode(path, text), refusal)

    def _replace(self, path: MemoryPath, text: str, etag: str) -> str | None:
        """``text`` over the file at ``path`` if it still has ``etag``: its new ETag, or None."""
        files = self.memory.files
        files.check_size(path, len(text.encode("utf-8")))
        listed = self.remote.get(path.canonical)
        replaced = 0 if listed is None else plaintext_size(listed.size)
        return self.memory.replace_file(path, files.encode(path, text), etag, replaced)

    def _pull(self, action: Action) -> None:
        """Write the memory's file locally; where the folder refused it the last time it was tried, at
        this ETag and with the folder unchanged since, it is left alone again unread."""
        known = self.known_refused.get(action.path)
        if (
            action.local is None
            and known is not None
            and action.etag is not None
            and same_etag(known[0], action.etag)
        ):
            self.refused[action.path] = known
            self._left(action.path, known[1])
            return
        found = self.memory.files.read(memory_path(action.path))
        if found is None:
            self._left(action.path, CHANGED_MEANWHILE)
            return
        data = found.text.encode("utf-8")
        try:
            stat = self.folder.write(action.path, data, action.local)
        except (LeftAlone, NameRefused) as refused:
            if action.local is None and action.etag is not None and _lasting(refused):
                self.refused[action.path] = (action.etag, refused.reason)
            raise
        self._record(action.path, BaselineEntry(sha256(data), found.etag, stat))
        self.report.pulled.append(action.path)

    def _reconcile(self, action: Action, *, again: bool = True) -> None:
        """Both sides changed (or are new): the same bytes make the baseline; others a conflict, the
        memory's version kept at the path on both sides and this folder's beside it on both sides."""
        assert action.local is not None
        found = self.memory.files.read(memory_path(action.path))
        if found is None:  # gone from the memory meanwhile: the local file goes back as new
            if self.pull_only:
                self._left(action.path, NOT_PUSHED)
            elif again:
                self._push(replace(action, kind=Kind.PUSH, etag=None), again=False)
            else:
                self._left(action.path, CHANGED_MEANWHILE)
            return
        theirs = found.text.encode("utf-8")
        if sha256(theirs) == action.sha256:
            self._record(action.path, BaselineEntry(sha256(theirs), found.etag, action.local))
            self.report.unchanged += 1
            return
        keep = self._keep_copy_here if self.pull_only else self._keep_copy
        copy = keep(action.path, self._local_bytes(action), action.local)
        stat = self.folder.write(action.path, theirs, action.local)
        self._record(action.path, BaselineEntry(sha256(theirs), found.etag, stat))
        self.report.conflicts.append((action.path, copy))

    def _keep_copy(self, path: str, data: bytes, stat: LocalStat) -> str:
        """Keep ``data`` (the local version of ``path``, of ``stat``) as a conflict copy on both sides:
        the first of its names (``conflict_names``) free on both sides or holding these bytes (kept
        by a round cut off)."""
        kept = self.memory.screen(memory_path(path), _text(memory_path(path), data))
        data = kept.encode("utf-8")
        want = sha256(data)
        for name in conflict_names(path, self.machine, stat.mtime_ns):
            base = self.state.baseline.get(name)
            if base is not None:
                if base.sha256 == want:
                    return name  # both sides hold it already
                continue
            local = self.local.files.get(name)
            if name in self.local.left_alone or (local is not None and local.sha256 != want):
                continue
            etag = self._remote_copy(memory_path(name), kept, want)
            if etag is None:
                continue
            written = local.stat if local is not None else self.folder.write(name, data, None)
            self._record(name, BaselineEntry(want, etag, written))
            return name
        raise AssertionError("conflict_names never ends")

    def _keep_copy_here(self, path: str, data: bytes, stat: LocalStat) -> str:
        """Keep ``data`` (the local version of ``path``, of ``stat``) as a conflict copy in the folder
        only (pull-only): the first of its names free on both sides or holding these bytes here. It
        is a file of this folder's own from then on, which no round pushes."""
        want = sha256(data)
        for name in conflict_names(path, self.machine, stat.mtime_ns):
            local = self.local.files.get(name)
            if local is not None and local.sha256 == want:
                return name  # kept by a round cut off
            if (
                local is not None
                or name in self.state.baseline
                or name in self.remote
                or name in self.local.left_alone
            ):
                continue
            self.folder.write(name, data, None)
            return name
        raise AssertionError("conflict_names never ends")

    def _remote_copy(self, path: MemoryPath, text: str, want: str) -> str | None:
        """The ETag of the memory's file at ``path`` once it holds ``text`` (made if none is there),
        or None where another file is."""
        if path.canonical not in self.remote:
            etag = self._create(path, text)
            if etag is not None:
                return etag
        found = self.memory.files.read(path)
        return found.etag if found is not None and sha256(found.text.encode("utf-8")) == want else None

    def _local_bytes(self, action: Action) -> bytes:
        """The local file's bytes, as the scan saw them (``LocalChanged`` if they changed since)."""
        assert action.local is not None
        data = self.folder.read(action.path, action.local)
        if action.sha256 is not None and sha256(data) != action.sha256:
            raise LocalChanged(CHANGED)
        return data

    def _record(self, path: str, entry: BaselineEntry | None) -> None:
        self.state.record(path, entry)
        self.settled.add(path)
        if entry is None:
            self.folder_after.pop(path, None)
        else:
            self.folder_after[path] = entry.stat

    def _left(self, path: str, why: str) -> None:
        self.report.left_alone.append((path, why))


def _lasting(refused: LeftAlone | NameRefused) -> bool:
    """True if the folder's refusal of a write lasts until the folder or the memory's file changes: a
    name the local file system refuses, or an entry in the way of a directory; not a permission (a
    change of mode, which a scan does not see, lifts it), nor a temporary file lost."""
    return isinstance(refused, NameRefused) or refused.reason.endswith("; remove it to sync below it")


def _text(path: MemoryPath, data: bytes) -> str:
    """``data`` as text; ``CommandError`` where it is no UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"Error: {path.quoted} is not a valid UTF-8 text file.") from None
