"""``Operations.sync``: a folder kept the same as a user's (or a shared) memory, both ways, one round at
a time (``sync/round.py``; ``docs/sync.md``). A task of ``Operations`` as the others are: the store,
its limits and the memory on it are the operator's (``StoreContext``); the round itself takes a
placed memory and nothing of ``Operations``, so a library can run one without it.

The memory is written as ``sync:<machine>`` (the machine's host name, where an author may hold it;
else ``sync``), so each version says it came from sync and from which machine (``s3memory history``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from s3memory.core.paths import UserId, check_user_id, owner_of
from s3memory.crypto import validate_author
from s3memory.ops.context import StoreContext
from s3memory.ops.progress import SILENT, Progress
from s3memory.placed import PlacedMemory
from s3memory.sync.folder import SyncFolder
from s3memory.sync.report import SyncReport
from s3memory.sync.round import sync_round
from s3memory.sync.state import SyncState

SYNC_AUTHOR = "sync"


def sync_author(machine: str) -> str:
    """Who the versions sync writes name: ``sync:<machine>``, or ``sync`` where the machine's name
    is no author's (``crypto.validate_author``)."""
    try:
        return validate_author(f"{SYNC_AUTHOR}:{machine}")
    except ValueError:
        return SYNC_AUTHOR


@dataclass(frozen=True)
class FolderSync:
    """One folder kept the same as one memory, round after round (``round``): the memory placed once
    (its keys, directory hints and access record kept between rounds), the folder opened and locked
    for each round."""

    memory: PlacedMemory
    directory: Path
    machine: str
    allow_deletes: bool = False
    adopt: bool = False
    rehash: bool = False
    pull_only: bool = False

    def round(self, progress: Progress = SILENT, stop: Callable[[], bool] = lambda: False) -> SyncReport:
        """One round (``sync_round``; ``stop`` asked before each file): what it did."""
        with SyncFolder(self.directory) as folder, SyncState(folder.state_directory) as state:
            return sync_round(
                self.memory,
                folder,
                state,
                machine=self.machine,
                allow_deletes=self.allow_deletes,
                adopt=self.adopt,
                rehash=self.rehash,
                progress=progress,
                stop=stop,
                pull_only=self.pull_only,
            )


class SyncOptions(TypedDict, total=False):
    """How a folder is synced (``SyncTask.syncing``)."""

    machine: str | None
    """This machine's name in conflict copies and authors (default: the host name)."""
    allow_deletes: bool
    """Lift the mass-delete guard (``plan.guarded``)."""
    adopt: bool
    """Take a folder never synced even where it holds what a memory cannot (left alone)."""
    rehash: bool
    """Read every local file, its stat unchanged too."""
    pull_only: bool
    """Never write the memory: pull what changed there, keep what changed here (``sync_round``)."""


class SyncTask(StoreContext):
    """Sync a folder with a memory of the store."""

    def syncing(self, user_id: str, directory: Path, **options: Unpack[SyncOptions]) -> FolderSync:
        """``directory`` kept the same as ``user_id``'s memory (``shared/NAME``: a shared memory),
        made (0700) on the first round where there is none and its parent is (``SyncOptions``). The
        memory is placed now (the store resolved on first need). A reserved user id
        (``paths.RESERVED_USER_PREFIX``) is refused (``ValueError``)."""
        if isinstance(owner_of(user_id), UserId):
            check_user_id(user_id)
        machine = options.get("machine") or socket.gethostname()
        memory = self.placed(user_id).by(sync_author(machine))
        return FolderSync(
            memory,
            directory,
            machine,
            options.get("allow_deletes", False),
            options.get("adopt", False),
            options.get("rehash", False),
            options.get("pull_only", False),
        )

    def sync(
        self, user_id: str, directory: Path, *, progress: Progress = SILENT, **options: Unpack[SyncOptions]
    ) -> SyncReport:
        """One round between ``directory`` and ``user_id``'s memory (``syncing``): what it did."""
        return self.syncing(user_id, directory, **options).round(progress)
