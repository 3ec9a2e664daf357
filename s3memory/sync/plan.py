"""What one sync round does to each path (pure): the decision for each pair of a local and a remote
side against the baseline the last round left, the mass-delete guard, and the names of conflict
copies (``docs/sync.md``).

A path is ``/memories/...`` on both sides: ``DIR/notes.md`` is ``/memories/notes.md``. Each side of
a path is the same as the baseline, changed, new (no baseline) or deleted (a baseline, no file);
a path left alone on either side (a link, a special file, a name refused...) takes no action on
either side, nor does anything below it: it never counts as a deletion of the other side's file.
Which paths a side leaves alone is the caller's (the folder's scan, ``sync/folder.py``).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum

from s3memory.core.paths import MEMORY_ROOT, S3_MAX_KEY_BYTES, check_new_name, memory_path
from s3memory.errors import CommandError, shown
from s3memory.sync.local_entries import LocalStat

GUARD_FILES = 8
"""A round deletes at most this many files unless allowed, when they are more than half the tree."""
MACHINE_CHARACTERS = 32
"""The most characters of the machine's name a conflict copy's name holds."""
NAME_BYTES = 255
NOT_PUSHED = "not pushed: pull-only (the memory is never written; the file stays here as it is)"
"""The longest name most local file systems take, in bytes."""


@dataclass(frozen=True)
class BaselineEntry:
    """What both sides agreed a path held when a round last saw it: the sha256 of the bytes (hex),
    the remote object's ETag, and the local file's stat."""

    sha256: str
    etag: str
    stat: LocalStat


Baseline = Mapping[str, BaselineEntry]
"""The state of the last round: an entry per path both sides held (none: on neither side)."""


@dataclass(frozen=True)
class LocalVersion:
    """A local file as a scan found it: its stat, and the sha256 of its bytes (None: not read, its
    stat being the baseline's)."""

    stat: LocalStat
    sha256: str | None = None


@dataclass(frozen=True)
class RemoteVersion:
    """A memory file as one listing showed it: its ETag and stored size."""

    etag: str
    size: int = 0


@dataclass(frozen=True)
class LocalSide:
    """The folder: its files by path, and the paths it leaves alone (with why)."""

    files: Mapping[str, LocalVersion]
    left_alone: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoteSide:
    """The memory: its files by path, and the paths the caller leaves alone (with why)."""

    files: Mapping[str, RemoteVersion]
    left_alone: Mapping[str, str] = field(default_factory=dict)


class Kind(Enum):
    """What a round does at a path."""

    DELETE_REMOTE = "delete remote"
    """The local file is gone and the memory's is the baseline's: delete it if it still is (``etag``)."""
    DELETE_LOCAL = "delete local"
    """The memory's file is gone and the local one is the baseline's: delete it if it still is (``local``)."""
    PUSH = "push"
    """Write the local file to the memory, over ``etag`` (None: only where no file is)."""
    PULL = "pull"
    """Read the memory's file, write it locally over ``local`` (None: only where no entry is)."""
    RECONCILE = "reconcile"
    """Both changed, or both new: read the memory's; the same bytes make the baseline, others a conflict."""
    REFRESH = "refresh"
    """The local file was read and is the baseline's bytes: its new stat is kept, nothing is written."""
    FORGET = "forget"
    """Deleted on both sides: the baseline's entry goes."""


DELETIONS = frozenset({Kind.DELETE_REMOTE, Kind.DELETE_LOCAL})


@dataclass(frozen=True)
class Action:
    """One thing a round does at ``path``, on the condition that the memory's file still has ``etag``
    (None: that there is none) and the local entry is still ``local`` (None: that there is none)."""

    kind: Kind
    path: str
    etag: str | None = None
    local: LocalStat | None = None
    sha256: str | None = None
    """The local file's sha256 where it was read (a push, a reconcile, a refresh)."""


@dataclass(frozen=True)
class Plan:
    """A round's actions (deletions first, then by path), the paths left alone (with why), the
    deletions the guard withheld with why (``guard``; None when it withheld none), and how many paths
    are in step."""

    actions: tuple[Action, ...]
    left_alone: tuple[tuple[str, str], ...] = ()
    withheld: tuple[Action, ...] = ()
    guard: str | None = None
    in_step: int = 0
    """Paths the same on both sides as in the baseline: nothing to do."""


def plan(
    baseline: Baseline,
    local: LocalSide,
    remote: RemoteSide,
    *,
    allow_deletes: bool = False,
    pull_only: bool = False,
) -> Plan:
    """What a round does to every path of ``baseline``, ``local`` and ``remote`` (the table in
    ``docs/sync.md``), the mass-delete guard applied unless ``allow_deletes`` (``guarded``). Work
    linear in the paths (each checked against the left-alone paths above it). ``pull_only``: nothing
    is pushed (``NOT_PUSHED``, left alone) and a file deleted here is pulled back, never deleted in
    the memory."""
    left_alone = {**remote.left_alone, **local.left_alone}
    actions: list[Action] = []
    not_pushed: dict[str, str] = {}
    in_step = 0
    for path in sorted(baseline.keys() | local.files.keys() | remote.files.keys()):
        if not _below_any(path, left_alone):
            action = decide(path, baseline.get(path), local.files.get(path), remote.files.get(path))
            if action is None:
                in_step += 1
            elif not pull_only:
                actions.append(action)
            elif action.kind is Kind.PUSH:
                not_pushed[path] = NOT_PUSHED
            else:  # a file deleted here is pulled back: the memory keeps it
                actions.append(
                    Action(Kind.PULL, path, action.etag) if action.kind is Kind.DELETE_REMOTE else action
                )
    left_alone.update(not_pushed)
    deletions = [action for action in actions if action.kind in DELETIONS]
    guard = None if allow_deletes else guarded(len(deletions), len(baseline))
    if guard is not None:
        actions = [action for action in actions if action.kind not in DELETIONS]
    actions.sort(key=lambda action: (action.kind not in DELETIONS, action.path))
    return Plan(
        tuple(actions),
        tuple(sorted(left_alone.items())),
        tuple(deletions) if guard is not None else (),
        guard,
        in_step,
    )


def decide(
    path: str, base: BaselineEntry | None, local: LocalVersion | None, remote: RemoteVersion | None
) -> Action | None:
    """The action at ``path`` for one cell of the table: the baseline's entry, the local file and the
    memory's (None: none); None where nothing is to be done."""
    local_changed = local is not None and (base is None or _changed(local, base))
    remote_changed = remote is not None and (base is None or not same_etag(remote.etag, base.etag))
    etag = None if remote is None else remote.etag
    stat = None if local is None else local.stat
    sha = None if local is None else local.sha256
    if local_changed and remote_changed:  # both changed, or both new
        return Action(Kind.RECONCILE, path, etag, stat, sha)
    if local_changed:  # the memory's is the baseline's, or gone
        return Action(Kind.PUSH, path, etag, stat, sha)
    if remote_changed:  # the local file is the baseline's, or gone
        return Action(Kind.PULL, path, etag, stat)
    if base is None:
        return None  # on neither side
    if local is None and remote is None:
        return Action(Kind.FORGET, path)
    if local is None:
        return Action(Kind.DELETE_REMOTE, path, etag)
    if remote is None:
        return Action(Kind.DELETE_LOCAL, path, None, stat)
    if local.stat != base.stat:  # read, and the baseline's bytes: keep its stat
        return Action(Kind.REFRESH, path, etag, stat, sha)
    return None


def _changed(local: LocalVersion, base: BaselineEntry) -> bool:
    """True if the local file is not the baseline's: read, with other bytes (a file not read is the
    baseline's by its stat)."""
    return local.sha256 is not None and local.sha256 != base.sha256


def same_etag(one: str, other: str) -> bool:
    """True if two ETags name the same object, as a listing, a read or a write's answer spells them
    (quoted or not)."""
    return one.strip('"') == other.strip('"')


def guarded(deletions: int, baseline_files: int) -> str | None:
    """Why a round withholds its ``deletions`` (both sides counted together) when the last round saw
    ``baseline_files``: more than ``GUARD_FILES`` and more than half of them; else None. One deletion
    in a small memory goes through; an emptied folder or a wiped memory deletes nothing."""
    if deletions <= GUARD_FILES or 2 * deletions <= baseline_files:
        return None
    return (
        f"this round would delete {deletions:,} of the {baseline_files:,} files the last round saw "
        f"(more than {GUARD_FILES} and more than half), as an unmounted disk, an emptied folder or a "
        "wiped memory would: none was deleted. If the deletions are meant, run again with --allow-deletes"
    )


def _below_any(path: str, left_alone: Collection[str]) -> bool:
    """True if ``path`` or a directory above it is in ``left_alone``."""
    if not left_alone:
        return False
    at = len(MEMORY_ROOT)
    while at != -1:
        at = path.find("/", at + 1)
        if (path if at == -1 else path[:at]) in left_alone:
            return True
    return False


def conflict_names(path: str, machine: str, when_ns: int) -> Iterator[str]:
    """The names a conflict copy of ``path`` may take, in the order they are tried: beside it,
    ``<stem>.conflict-<machine>-<YYYYmmddTHHMMSSZ><ext>`` (``when_ns``: the local file's mtime, so a
    round run again names the same copy), then with ``-2``, ``-3``... before the extension. Each
    passes the path policy (the machine's name cut to ``MACHINE_CHARACTERS`` of ``[A-Za-z0-9_-]``,
    left out where it does not fit) and makes a name of at most ``NAME_BYTES`` bytes (the stem cut where it is longer).
    Deterministic; ``CommandError`` when ``path``'s directory leaves no room for any name."""
    directory, _, name = path.rpartition("/")
    dot = name.rfind(".")
    stem, extension = (name[:dot], name[dot:]) if dot > 0 else (name, "")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when_ns // 1_000_000_000))
    machine = _machine(machine)
    number = 1
    while True:
        suffix = "" if number == 1 else f"-{number}"
        tags = [f".conflict-{machine}-{stamp}{suffix}"] if machine else []
        tags.append(f".conflict-{stamp}{suffix}")
        yield _fitting(directory, stem, tags, extension)
        number += 1


def conflict_name(path: str, machine: str, when_ns: int, taken: Collection[str]) -> str:
    """The first of ``conflict_names`` that is not ``taken`` (the paths on either side)."""
    return next(name for name in conflict_names(path, machine, when_ns) if name not in taken)


def _machine(machine: str) -> str:
    """``machine`` as a conflict copy's name holds it: ``[A-Za-z0-9_-]``, others as ``-``, cut."""
    kept = "".join(char if char.isascii() and (char.isalnum() or char in "_-") else "-" for char in machine)
    return kept.strip("-")[:MACHINE_CHARACTERS].strip("-")


def _fitting(directory: str, stem: str, tags: list[str], extension: str) -> str:
    """``directory/<stem><tag><extension>`` for the first tag that makes a path the policy takes, the
    stem cut (by whole characters) until the name fits in ``NAME_BYTES`` and the path in
    ``S3_MAX_KEY_BYTES``."""
    for tag in tags:
        kept = stem
        while kept and _too_long(f"{directory}/{kept}{tag}{extension}"):
            kept = kept[:-1]
        candidate = f"{directory}/{kept}{tag}{extension}"
        try:
            check_new_name(memory_path(candidate))
        except CommandError:
            continue
        return candidate
    raise CommandError(
        f"Error: No conflict copy of a file in {shown(directory)} can be named: its path leaves no room. "
        "Rename one of the two versions, then sync again."
    )


def _too_long(path: str) -> bool:
    """True if the last name of ``path`` is over ``NAME_BYTES`` or the path over ``S3_MAX_KEY_BYTES``."""
    encoded = path.encode("utf-8")
    return len(encoded) > S3_MAX_KEY_BYTES or len(encoded) - encoded.rfind(b"/") - 1 > NAME_BYTES
