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

Which mounts a user gets is the application's to decide: it is trusted, and passes them here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, assert_never

from s3memory.core.commands import Command, Create, Delete, Insert, Rename, StrReplace, View, parse_command
from s3memory.core.listing import Tree, is_hidden, render_listing
from s3memory.core.paths import MemoryPath, SharedName, memory_path
from s3memory.errors import CommandError
from s3memory.memory import S3Memory

Mode = Literal["read_only", "read_write"]
READ_ONLY: Mode = "read_only"
READ_WRITE: Mode = "read_write"
MAX_MOUNTS = 16
"""The most shared memories one user's view mounts (each costs ``view /memories`` one listing)."""


@dataclass(frozen=True)
class Mount:
    """The shared memory ``memory`` seen at ``point`` (``/memories/<name>``, one level below the
    root, not hidden), ``read_only`` unless told."""

    point: str
    memory: str
    mode: Mode = READ_ONLY

    def __post_init__(self) -> None:
        try:
            path = memory_path(self.point)
        except CommandError as refused:
            raise ValueError(f"mount point: {refused.message}") from None
        if len(path.segments) != 1 or is_hidden(path.segments[0]) or path.text != path.canonical:
            raise ValueError(
                "a mount point is one visible directory just below /memories, like /memories/team"
            )
        SharedName(self.memory)
        if self.mode not in (READ_ONLY, READ_WRITE):
            raise ValueError(f"a mount's mode is {READ_ONLY!r} or {READ_WRITE!r}")

    @property
    def name(self) -> str:
        """The directory name the mount is seen at."""
        return self.point.rsplit("/", 1)[1]


class MountedMemory:
    """A user's memory (``own``) with shared memories mounted in it: the six commands, each run in the
    memory its path lies in. Building one sends no request."""

    def __init__(self, own: S3Memory, mounts: Sequence[Mount]) -> None:
        if len(mounts) > MAX_MOUNTS:
            raise ValueError(f"at most {MAX_MOUNTS} shared memories can be mounted")
        names = [mount.name for mount in mounts]
        if len(set(names)) != len(names):
            raise ValueError("two mounts share a mount point")
        self.own = own
        self.mounts = {mount.name: mount for mount in mounts}
        self._shared = {
            mount.name: own.shared(SharedName(mount.memory), writes=mount.mode == READ_WRITE)
            for mount in mounts
        }

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
                    return self.own.run_command(command)
                return self._view(name, inner, view_range)
            case Create(path) | StrReplace(path) | Insert(path):
                return self._write(command, path)
            case Delete(path):
                if self._is_mount_point(path):
                    raise CommandError(f"Error: Cannot delete {path.text}: {self._mounted_there(path)}")
                return self._write(command, path)
            case Rename(old_path, new_path):
                return self._rename(command, old_path, new_path)
            case _:
                assert_never(command)

    # -- where a path lies ----------------------------------------------------------------------

    def _located(self, path: MemoryPath) -> tuple[str | None, MemoryPath]:
        """The mount ``path`` lies in (None: the user's own memory), and the path in that memory."""
        if not path.segments or path.segments[0] not in self.mounts:
            return None, path
        name = path.segments[0]
        return name, MemoryPath(path.text, path.segments[1:], (name,))

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
            return render_listing(path.text, path.canonical, own.mounted(trees), _note(read_only))

        return self.own.answering(listing)

    def _view(self, name: str, inner: MemoryPath, view_range: list[int] | None) -> str:
        shared = self._shared[name]
        if not self._read_only(name):
            return shared.run_command(View(inner, view_range))
        # No access record, no upgrade: a read-only mount writes nothing of its own.
        note = _note([self.mounts[name].point])
        return shared.jobs.retried(lambda: shared.view(inner, view_range, note))

    def _write(self, command: Create | StrReplace | Insert | Delete, path: MemoryPath) -> str:
        """A write in the memory ``path`` lies in (at a mount point, a directory: refused)."""
        name, inner = self._located(path)
        if name is None:
            return self.own.run_command(command)
        self._require_writable(name, path)
        if inner.is_root and isinstance(command, Create):
            raise CommandError(f"Error: Cannot create {path.text}: {path.canonical} is a directory.")
        return self._shared[name].run_command(replace(command, path=inner))

    def _rename(self, command: Rename, old: MemoryPath, new: MemoryPath) -> str:
        if old.is_root or new.is_root:
            return self.own.run_command(command)  # refused there, as the root is never moved
        for path in (old, new):
            if self._is_mount_point(path):
                raise CommandError(
                    f"Error: Cannot rename {old.text} to {new.text}: {self._mounted_there(path)}"
                )
        old_name, old_inner = self._located(old)
        new_name, new_inner = self._located(new)
        for name, path in ((old_name, old), (new_name, new)):
            if name is not None:
                self._require_writable(name, path)
        if old_name != new_name:
            shared = old_name if old_name is not None else new_name
            assert shared is not None
            raise CommandError(
                f"Error: Cannot rename {old.text} to {new.text}: they lie in different memories "
                f"({self.mounts[shared].point} is a shared memory). Nothing was changed; create the "
                "file at the new path and delete the old one instead."
            )
        if old_name is None:
            return self.own.run_command(command)
        return self._shared[old_name].run_command(Rename(old_inner, new_inner))

    def _read_only(self, name: str) -> bool:
        return self.mounts[name].mode == READ_ONLY

    def _require_writable(self, name: str, path: MemoryPath) -> None:
        if self._read_only(name):
            raise CommandError(
                f"Error: Cannot change {path.text}: {self.mounts[name].point} is a read-only shared memory. "
                "Nothing was changed."
            )


def _note(read_only: list[str]) -> str:
    """The last line of a listing that shows the read-only mounts ``read_only`` ("" for none)."""
    if not read_only:
        return ""
    return f"[Read-only shared memory: {', '.join(read_only)}; writes there are refused.]"


__all__ = ["MAX_MOUNTS", "READ_ONLY", "READ_WRITE", "Mount", "MountedMemory"]
