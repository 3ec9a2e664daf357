"""Shared memories mounted into a user's ``/memories``, read-only or read-write (``docs/shared.md``).

A shared memory (``paths.SharedName``, ``S3Memory(store, SharedName(...))``) belongs to no user: a
team's conventions, a customer's history, a runbook that many agents read and a few curate. A
``Mount`` puts one at ``/memories/<point>`` in a user's view; ``MountedMemory`` runs the six commands
over the user's own memory and its mounts, each command in the one memory its path lies in:

- every path at or below a mount point is the shared memory's, at the same place below its root (the
  user's own files there are hidden while it is mounted, never deleted);
- ``view /memories`` lists the user's own entries and each mount as a directory, with its entries;
  a directory listed in a read-only mount ends with a note that says so, every row kept as the
  contract writes rows;
- in a read-only mount every command but ``view`` is refused before any request: nothing is written.
  A view writes no access record; it may finish a job a writer left, as every reader does
  (``docs/jobs.md``);
- a mount point cannot be created, deleted or renamed, and a rename from one memory into another is
  refused: no job record can move files between two memories' keys with the protocol's guarantees;
- a write into a read-write mount is recorded as the user's (``<user>/<actor>`` with an actor).

Which mounts a user gets is the application's to decide: it is trusted, and passes them here. Behind
a token (the Lambda functions, the MCP server over HTTP), grants (``Grant``, ``S3MEMORY_MOUNTS``) give
the mounts the verified token's claims name, and no others (``granted``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, assert_never, cast

from s3memory.core.commands import Command, Create, Delete, Insert, Rename, StrReplace, View, parse_command
from s3memory.core.confusables import lookalike_key
from s3memory.core.listing import Tree, is_hidden, render_listing
from s3memory.core.paths import MemoryPath, SharedName, UserId, check_new_name, memory_path, shown_name
from s3memory.crypto import user_author
from s3memory.errors import CommandError
from s3memory.memory import S3Memory

Mode = Literal["read_only", "read_write"]
READ_ONLY: Mode = "read_only"
READ_WRITE: Mode = "read_write"
MAX_MOUNTS = 16
"""The most shared memories one user's view mounts (each costs ``view /memories`` one listing)."""
MAX_POINT_NAME = 64
"""The longest name of a mount point's directory, in characters (``/memories/<name>``)."""


@dataclass(frozen=True)
class Mount:
    """The shared memory ``memory`` seen at ``point`` (``/memories/<name>``, one level below the
    root, not hidden), ``read_only`` unless told."""

    point: str
    memory: str
    mode: Mode = READ_ONLY

    def __post_init__(self) -> None:
        try:
            path = check_new_name(memory_path(self.point))
        except CommandError as refused:
            raise ValueError(f"mount point: {refused.message}") from None
        if len(path.segments) != 1 or is_hidden(path.segments[0]) or path.text != path.canonical:
            raise ValueError(
                "a mount point is one visible directory just below /memories, like /memories/team"
            )
        if len(path.segments[0]) > MAX_POINT_NAME:
            raise ValueError(f"a mount point's name is at most {MAX_POINT_NAME} characters")
        SharedName(self.memory)
        if self.mode not in (READ_ONLY, READ_WRITE):
            raise ValueError(f"a mount's mode is {READ_ONLY!r} or {READ_WRITE!r}")

    @property
    def name(self) -> str:
        """The directory name the mount is seen at."""
        return self.point.rsplit("/", 1)[1]


def mount_of_option(text: str) -> Mount:
    """A mount as the command line gives it: ``POINT=MEMORY``, read-only, or ``POINT=MEMORY:MODE``
    (``read_only`` or ``read_write``). ``ValueError`` saying what is wrong."""
    point, equals, rest = text.rpartition("=")
    if not equals:
        raise ValueError(f"a mount is POINT=MEMORY[:{READ_WRITE}], like /memories/team=team-acme")
    memory, colon, mode = rest.partition(":")
    return Mount(point, memory, cast(Mode, mode) if colon else READ_ONLY)


@dataclass(frozen=True)
class Grant:
    """A token whose claim ``claim`` is ``value`` (or, a list, holds it; or, ``scope`` or ``scp``
    as a string, has it as a word) sees ``mount``."""

    claim: str
    value: str
    mount: Mount

    def holds(self, claims: Mapping[str, object]) -> bool:
        found = claims.get(self.claim)
        if isinstance(found, str):
            words = found.split() if self.claim in ("scope", "scp") else [found]
            return self.value in words
        return isinstance(found, list) and self.value in found


def granted(
    grants: Sequence[Grant], claims: Mapping[str, object], user: UserId, actor: str | None
) -> tuple[Mount, ...]:
    """The mounts ``claims`` are granted, one per point (read-write where any grant says so), by
    point; read-only where ``user``'s writes as ``actor`` cannot be recorded (an id too long for an
    author: ``crypto.user_author``), so that user still has its own memory and reads the others."""
    chosen: dict[str, Mount] = {}
    for grant in grants:
        if grant.holds(claims):
            held = chosen.get(grant.mount.point)
            if held is None or grant.mount.mode == READ_WRITE:
                chosen[grant.mount.point] = grant.mount
    try:
        user_author(user, actor)
    except ValueError:
        return tuple(replace(chosen[point], mode=READ_ONLY) for point in sorted(chosen))
    return tuple(chosen[point] for point in sorted(chosen))


def grants_from_json(text: str) -> tuple[Grant, ...]:
    """The grants of ``S3MEMORY_MOUNTS``: a JSON array of ``{"claim", "value", "point", "memory",
    "mode"}`` (``mode`` ``read_only`` unless told). ``ValueError`` saying what is wrong."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError("it is not valid JSON") from None
    if not isinstance(parsed, list):
        raise ValueError('it must be a JSON array of {"claim", "value", "point", "memory", "mode"} objects')
    grants: list[Grant] = []
    for number, item in enumerate(parsed, 1):
        fields = {"claim", "value", "point", "memory", "mode"}
        if not isinstance(item, dict) or not {"claim", "value", "point", "memory"} <= set(item) <= fields:
            raise ValueError(
                f'grant {number} must be an object with "claim", "value", "point", "memory" and "mode"'
            )
        claim, value = item["claim"], item["value"]
        if not all(isinstance(word, str) and word and word.isprintable() for word in (claim, value)):
            raise ValueError(f"grant {number}: claim and value must be non-empty printable strings")
        try:
            mount = Mount(item["point"], item["memory"], item.get("mode", READ_ONLY))
        except ValueError as error:
            raise ValueError(f"grant {number}: {error}") from None
        grants.append(Grant(claim, value, mount))
    memories: dict[str, str] = {}
    for grant in grants:
        if memories.setdefault(grant.mount.point, grant.mount.memory) != grant.mount.memory:
            raise ValueError(f"{grant.mount.point} is granted two shared memories")
    if len(memories) > MAX_MOUNTS:
        raise ValueError(f"it grants more than {MAX_MOUNTS} mount points")
    return tuple(grants)


@dataclass(frozen=True)
class Caller:
    """Who a request is from, checked where it came in: the user, and the mounts it was granted."""

    user: UserId
    mounts: tuple[Mount, ...] = ()


SharedOf = Callable[[SharedName], S3Memory]
"""A process's warm shared memory of a name (``memories.Memories``)."""


def with_mounts(
    own: S3Memory, mounts: Sequence[Mount], shared_of: SharedOf | None = None
) -> S3Memory | MountedMemory:
    """``own``, with ``mounts`` mounted in it when there are any."""
    return MountedMemory(own, mounts, shared_of) if mounts else own


class MountedMemory:
    """A user's memory (``own``) with shared memories mounted in it: the six commands, each run in the
    memory its path lies in; each shared memory ``shared_of`` its name when given (a process's warm
    one). Building one sends no request."""

    def __init__(self, own: S3Memory, mounts: Sequence[Mount], shared_of: SharedOf | None = None) -> None:
        if len(mounts) > MAX_MOUNTS:
            raise ValueError(f"at most {MAX_MOUNTS} shared memories can be mounted")
        names = [mount.name for mount in mounts]
        if len(set(names)) != len(names):
            raise ValueError("two mounts share a mount point")
        self.own = own
        self.mounts = {mount.name: mount for mount in mounts}
        self._shared = {
            mount.name: own.shared(
                SharedName(mount.memory),
                writes=mount.mode == READ_WRITE,
                base=None if shared_of is None else shared_of(SharedName(mount.memory)),
            )
            for mount in mounts
        }

    def clear_all(self) -> str:
        """``clear_all_memory``: the user's own memory only, never a mounted one."""
        return self.own.clear_all()

    def run(self, raw_input: object) -> str:
        """Run one raw ``tool_use`` input and return the answer text (``S3Memory.run``)."""
        return self.run_command(parse_command(raw_input))

    def run_command(self, command: Command) -> str:
        """Run one parsed command in the memory its path lies in."""
        match command:
            case View(path, view_range):
                if path.is_root:
                    return self._view_root(path)
                name, inner = self._located(path)
                if name is None:
                    return self.own.run_command(View(inner, view_range))
                return self._view(name, inner, view_range)
            case Create(path) | StrReplace(path) | Insert(path):
                return self._write(command, path)
            case Delete(path):
                if self._is_mount_point(path):
                    raise CommandError(f"Error: Cannot delete {path.quoted}: {self._mounted_there(path)}")
                return self._write(command, path)
            case Rename(old_path, new_path):
                return self._rename(command, old_path, new_path)
            case _:
                assert_never(command)

    # -- where a path lies ----------------------------------------------------------------------

    def _located(self, path: MemoryPath) -> tuple[str | None, MemoryPath]:
        """The mount ``path`` lies in (None: the user's own memory), and the path in that memory
        (in the user's own memory, marked ``lookalike`` where its first name looks like a mount
        point's, so that answers show that name escaped)."""
        if not path.segments:
            return None, path
        name = path.segments[0]
        if name not in self.mounts:
            return None, replace(path, lookalike=self._looks_like(name) is not None)
        return name, MemoryPath(path.text, path.segments[1:], (name,))

    def _looks_like(self, name: str) -> Mount | None:
        """The mount whose point ``name``, a name in the user's own memory, looks like (TR39's
        skeleton of its NFKC form, white space at either end aside: ``core.confusables``)."""
        return self._mount_keys.get(lookalike_key(name))

    @functools.cached_property
    def _mount_keys(self) -> dict[str, Mount]:
        return {lookalike_key(name): mount for name, mount in self.mounts.items()}

    def _lookalike_refusal(self, action: str, path: MemoryPath) -> CommandError:
        """The refusal of ``action`` (``Cannot create <path>``) where ``path``'s first name looks
        like a mount point's."""
        mount = self._looks_like(path.segments[0])
        assert mount is not None
        return CommandError(
            f"Error: {action}: {shown_name(path.segments[0], whole=True)} looks like {mount.point}, where a shared memory "
            "is mounted, and could pass for it; use another name. Nothing was changed."
        )

    def _is_mount_point(self, path: MemoryPath) -> bool:
        return len(path.segments) == 1 and path.segments[0] in self.mounts

    def _mounted_there(self, path: MemoryPath) -> str:
        return f"a shared memory is mounted at {path.canonical}. Nothing was changed."

    # -- the commands ---------------------------------------------------------------------------

    def _view_root(self, path: MemoryPath) -> str:
        """The user's own entries and each mount's, as a command of the user's own memory."""

        read_only = [self.mounts[name].point for name in sorted(self.mounts) if self._read_only(name)]

        def listing() -> str:
            own = self.own.root_tree() or Tree()
            trees = {name: self._shared[name].root_tree() for name in sorted(self.mounts)}
            shown = own.mounted(trees, lambda name: self._looks_like(name) is not None)
            return render_listing(path.quoted, path.canonical, shown, _note(read_only))

        return self.own.answering(listing)

    def _view(self, name: str, inner: MemoryPath, view_range: list[int] | None) -> str:
        shared = self._shared[name]
        if not self._read_only(name):
            return shared.run_command(View(inner, view_range))
        # No access record, no upgrade: a read-only mount writes nothing of its own.
        note = _note([self.mounts[name].point])
        return shared.placed.jobs.retried(lambda: shared.view(inner, view_range, note))

    def _write(self, command: Create | StrReplace | Insert | Delete, path: MemoryPath) -> str:
        """A write in the memory ``path`` lies in (at a mount point, a directory: refused)."""
        name, inner = self._located(path)
        if name is None:
            if inner.lookalike and isinstance(command, Create):
                raise self._lookalike_refusal(f"Cannot create {inner.quoted}", inner)
            return self.own.run_command(replace(command, path=inner))
        self._require_writable(name, path)
        if inner.is_root and isinstance(command, Create):
            raise CommandError(f"Error: Cannot create {path.quoted}: {path.canonical} is a directory.")
        return self._shared[name].run_command(replace(command, path=inner))

    def _rename(self, command: Rename, old: MemoryPath, new: MemoryPath) -> str:
        if old.is_root or new.is_root:
            return self.own.run_command(command)  # refused there, as the root is never moved
        old_name, old_inner = self._located(old)
        new_name, new_inner = self._located(new)
        action = f"Cannot rename {old_inner.quoted} to {new_inner.quoted}"
        for path in (old, new):
            if self._is_mount_point(path):
                raise CommandError(f"Error: {action}: {self._mounted_there(path)}")
        for name, path in ((old_name, old), (new_name, new)):
            if name is not None:
                self._require_writable(name, path)
        if old_name != new_name:
            shared = old_name if old_name is not None else new_name
            assert shared is not None
            raise CommandError(
                f"Error: {action}: they lie in different memories "
                f"({self.mounts[shared].point} is a shared memory). Nothing was changed; create the "
                "file at the new path and delete the old one instead."
            )
        if old_name is None:
            if new_inner.lookalike:
                raise self._lookalike_refusal(action, new_inner)
            return self.own.run_command(Rename(old_inner, new_inner))
        return self._shared[old_name].run_command(Rename(old_inner, new_inner))

    def _read_only(self, name: str) -> bool:
        return self.mounts[name].mode == READ_ONLY

    def _require_writable(self, name: str, path: MemoryPath) -> None:
        if self._read_only(name):
            raise CommandError(
                f"Error: Cannot change {path.quoted}: {self.mounts[name].point} is a read-only shared memory. "
                "Nothing was changed."
            )


UserMemory = S3Memory | MountedMemory
"""A user's memory, with shared memories mounted in it or not: what the edges serve."""


def _note(read_only: list[str]) -> str:
    """The last line of a listing that shows the read-only mounts ``read_only`` ("" for none)."""
    if not read_only:
        return ""
    return f"[Read-only shared memory: {', '.join(read_only)}; writes there are refused.]"


__all__ = [
    "MAX_MOUNTS",
    "READ_ONLY",
    "READ_WRITE",
    "Caller",
    "Grant",
    "Mount",
    "MountedMemory",
    "UserMemory",
    "granted",
    "grants_from_json",
    "with_mounts",
]
