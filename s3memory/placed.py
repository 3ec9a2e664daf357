"""One user's (or one shared) memory placed in a resolved store: what the model's commands
(``memory.S3Memory``) and the operators' tasks (``ops/*``) stand on.

``place`` builds one from a store, an owner, its ``MemoryLimits`` and an author, and nothing else does:
the store resolved first (``Store.resolve``), the memory placed where the store's format puts it
(``Store.placement``), with a user's files of an older format it moves (``Format.upgrade``).
``PlacedMemory.by`` gives the same memory written by another author.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from s3memory.core.browse import Browser
from s3memory.core.files import Found, MemoryFiles
from s3memory.core.guard import ContentGuard
from s3memory.core.job_runner import JobRunner
from s3memory.core.keyvault import KeyVault
from s3memory.core.last_used import AccessRecord
from s3memory.core.paths import KeyLayout, MemoryPath, SharedName, UserId
from s3memory.core.placement import Refusal, write_new_file
from s3memory.core.quota import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_LIMIT, Quota, Usage
from s3memory.core.text import Edit
from s3memory.crypto import OVERHEAD, DataKeySource, KeyOwner, ObjectCipher, Sealed
from s3memory.errors import StoreMisconfigured
from s3memory.formats.strategy import Format
from s3memory.formats.upgrade import Upgrade
from s3memory.storage.bucket import Bucket
from s3memory.store import Store

DEFAULT_GUARD = ContentGuard()


@dataclass(frozen=True)
class MemoryLimits:
    """What a memory's writes are held to, and the clock its records are dated by (the options
    ``max_file_bytes``, ``content_guard``, ``quota`` and ``clock`` of ``memory.MemoryOptions``, with
    their defaults); ``ValueError`` naming the option that is not of its kind."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    content_guard: ContentGuard | None = DEFAULT_GUARD
    quota: Quota | None = None
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        size = self.max_file_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError("max_file_bytes must be a positive integer")
        if self.content_guard is not None and not isinstance(self.content_guard, ContentGuard):
            raise ValueError("content_guard must be a ContentGuard or None")
        if self.quota is not None and not isinstance(self.quota, Quota):
            raise ValueError("quota must be a Quota or None")
        if not callable(self.clock):
            raise ValueError("clock must be a function that returns seconds since the epoch")


@dataclass(frozen=True)
class PlacedMemory:
    """One memory placed in a resolved store (``place``): whose it is, what it is held to, and the
    parts its commands and the operators' tasks use."""

    store: Store
    owner: UserId | SharedName
    limits: MemoryLimits
    format: Format
    """The storage format's strategy the store is served in."""
    layout: KeyLayout
    """Where the memory's objects live."""
    key_owner: KeyOwner
    """Whose data keys the memory's objects are sealed with."""
    usage: Usage
    files: MemoryFiles
    browser: Browser
    jobs: JobRunner
    access: AccessRecord
    """When the user last used the memory: each command answered notes it (``core/last_used.py``)."""
    upgrade: Upgrade | None
    """Format 2: the user's format-1 files, moved before the first command unless the store is
    marked as holding none (``formats/upgrade.py``); None for a shared memory and in format 1."""

    @property
    def bucket(self) -> Bucket:
        """The store's bucket."""
        return self.store.bucket

    def by(self, author: str | None) -> PlacedMemory:
        """The same memory, its writes recorded as ``author``'s (directory hints and usage shared)."""
        files = self.files.by(author)
        return replace(self, files=files, browser=Browser(files), jobs=self.jobs.over(files))

    def write_over(self, path: MemoryPath, sealed: Sealed, found: Found) -> bool:
        """Write ``sealed`` over the file at ``path`` in one request, conditional on the object
        ``found`` was read from, its growth checked against the quota first (``CommandError``);
        False, writing nothing, if the file changed since."""
        return self.replace_file(path, sealed, found.etag, len(found.text.encode("utf-8"))) is not None

    def replace_file(self, path: MemoryPath, sealed: Sealed, etag: str, replaced_bytes: int) -> str | None:
        """Write ``sealed`` over the file of ``replaced_bytes`` at ``path`` in one request, if it still
        has ``etag``, its growth checked against the quota first (``CommandError``): the new object's
        ETag, or None, writing nothing, if the file changed since."""
        growth = len(sealed.body) - OVERHEAD - replaced_bytes
        self.usage.check(path, growth, 0)
        written = self.files.replace(path, sealed, etag)
        if written is not None:
            self.usage.add(growth, 0)
        return written

    def create_file(self, path: MemoryPath, sealed: Sealed, refusal: Refusal) -> str | None:
        """Write ``sealed`` as a new file at ``path`` (one ``require_file_path`` passed), its place
        checked as ``create`` checks it (``placement.write_new_file``: ``refusal`` makes the refusal)
        and the quota first: the new object's ETag, or None, writing nothing, if a file is there."""
        size = len(sealed.body) - OVERHEAD
        self.usage.check(path, size, 1)
        etag = write_new_file(self.files, path, sealed, refusal, refusal(f"{path.shown} is a directory"))
        if etag is not None:
            self.usage.add(size, 1)
            self.files.directories.add(path.ancestors())
        return etag

    def screen(self, path: MemoryPath, text: str) -> str:
        """``text`` to write at ``path`` once the content guard has screened it (``GuardRefusal``)."""
        guard = self.limits.content_guard
        return text if guard is None else guard.screen(path.quoted, text)

    def screened(self, path: MemoryPath, edit: Edit) -> Edit:
        """``edit`` once the content guard has screened the stored text around what it wrote."""
        guard = self.limits.content_guard
        return edit if guard is None else guard.screen_edit(path.quoted, edit)


def place(store: Store, owner: UserId | SharedName, limits: MemoryLimits, author: str | None) -> PlacedMemory:
    """``owner``'s memory in ``store`` (resolved now if it was not), written by ``author``: placed
    where the store's format puts it (``Store.placement``), with a user's files of an older format
    it moves (``Format.upgrade``; a shared memory has none). ``StoreMisconfigured`` for a shared
    memory in a store whose format serves none."""
    resolution = store.resolve()
    shared = isinstance(owner, SharedName)
    if shared and not resolution.format.serves_shared_memories:
        raise StoreMisconfigured(
            f"Error: A shared memory cannot be opened in this store: shared memories need storage format 2 "
            f"and the store is served in format {resolution.format.storage_format} (`s3memory migrate` moves "
            "a store to format 2). Nothing was read or changed."
        )
    layout, key_owner = store.placement(owner.principal if isinstance(owner, SharedName) else owner)
    bucket, prefix = store.bucket, store.prefix
    keys = DataKeySource(store.key_provider, key_owner, KeyVault(bucket, layout))
    cipher = ObjectCipher(keys, resolution.format.object_format)
    usage = Usage(limits.quota, lambda: files.measure())
    files = MemoryFiles(bucket, layout, cipher, resolution.format, limits.max_file_bytes, usage, author)
    upgrade = (
        None
        if isinstance(owner, SharedName)
        else resolution.format.upgrade(
            bucket,
            owner,
            prefix,
            store.key_provider,
            lambda: store.marked,
            files,
            limits.clock,
            store.settled,
            MAX_FILE_BYTES_LIMIT,
        )
    )
    return PlacedMemory(
        store,
        owner,
        limits,
        resolution.format,
        layout,
        key_owner,
        usage,
        files,
        Browser(files),
        JobRunner(files, resolution.format.mover, limits.clock),
        AccessRecord(files, limits.clock),
        upgrade,
    )
