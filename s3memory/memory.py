"""The six memory commands on S3, for one user. No ``anthropic`` import: Lambda runs this directly.

Each command returns the contract's answer text or raises ``CommandError`` with the contract's
refusal. Paths are validated before any request; building a memory sends none (the first command
resolves its store, ``store.Store``, and places the user's memory in it: ``placed.PlacedMemory``).
What the commands stand on lives beside this module: ``placed`` (the memory placed in its store),
``files`` (one user's encrypted objects), ``placement`` (where a new file may go), ``browse`` (what
is at a path), ``renames``, ``quota``, ``job_runner`` (directory renames and deletes) and
``concurrency`` (overlapping independent requests).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Unpack, assert_never, cast

from s3memory.core.commands import Command, Create, Delete, Insert, Rename, StrReplace, View, parse_command
from s3memory.core.files import LOST, Lost, retried
from s3memory.core.guard import ContentGuard
from s3memory.core.job_records import Source
from s3memory.core.job_runner import Intent, Unsettled
from s3memory.core.listing import Tree, render_listing
from s3memory.core.paths import ROOT, MemoryPath, SharedName, UserId, validate_namespace
from s3memory.core.placement import require_file_path
from s3memory.core.quota import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_LIMIT, Quota
from s3memory.core.renames import Renames, deleted, shown_kept
from s3memory.core.text import Edit, edit_snippet, insert_at, render_file, replace_unique
from s3memory.crypto import KeyProvider, user_author, validate_author
from s3memory.errors import CommandError, StorageRefusal
from s3memory.placed import (
    DEFAULT_GUARD,
    MemoryLimits,
    PlacedMemory,
    place,
)
from s3memory.storage.bucket import Bucket, ListingPage
from s3memory.storage.concurrency import side
from s3memory.store import Store, StoreOptions, refuse_unknown

__all__ = [
    "DEFAULT_GUARD",
    "DEFAULT_MAX_FILE_BYTES",
    "MAX_FILE_BYTES_LIMIT",
    "MemoryOptions",
    "Quota",
    "S3Memory",
    "Store",
]


class MemoryOptions(StoreOptions, total=False):
    """The options of a memory, each declared here once: ``S3Memory(store_or_bucket, user_id,
    key_provider, **options)`` and the SDK adapters (``S3MemoryTool(bucket=..., user_id=...,
    key_provider=..., **options)``), which hand them on; ``assembly.memory_options`` and
    ``Operations.memory_options`` give them. The store's (``StoreOptions``: ``prefix``,
    ``storage_format``, ``store_id``, ``weak_server``) go to the ``Store`` built over a bucket; the
    rest are the memory's own, their defaults ``S3Memory``'s."""

    max_file_bytes: int
    """The largest file, in bytes of UTF-8 (default ``DEFAULT_MAX_FILE_BYTES``)."""
    content_guard: ContentGuard | None
    """What to do with secrets in a write (default ``DEFAULT_GUARD``: refuse; None: off)."""
    quota: Quota | None
    """The user's limits (default None: none)."""
    actor: str | None
    """Who writes, recorded with every write (default None: nobody named)."""
    clock: Callable[[], float]
    """Seconds since the epoch (default ``time.time``): job records and the last-used record."""


class S3Memory:
    """One user's memory directory in a store, encrypted on the client; or, with a ``SharedName`` for
    ``user_id``, a shared memory that belongs to no user (format 2 only; ``mounts.py`` mounts it).

    ``store`` is a ``store.Store``, or the bucket (``Bucket``) with the store's settings:
    ``key_provider`` and the store's options (``StoreOptions``), which a ``Store`` holds itself;
    ``options`` are ``MemoryOptions``. Building one sends no request:
    the first command resolves the store (``Store.resolve``) and places the user's memory in it.
    """

    def __init__(
        self,
        store: Store | Bucket,
        user_id: str | SharedName,
        key_provider: KeyProvider | None = None,
        **options: Unpack[MemoryOptions],
    ) -> None:
        refuse_unknown(options, MemoryOptions.__optional_keys__, "S3Memory")
        self.store = _store(store, key_provider, options)
        """The store the memory lives in (``store.Store``), resolved by the first command."""
        self.limits = MemoryLimits(
            options.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES),
            options.get("content_guard", DEFAULT_GUARD),
            options.get("quota"),
            options.get("clock", time.time),
        )
        """What the memory's writes are held to, and its clock (``placed.MemoryLimits``)."""
        self._owner: UserId | SharedName
        if isinstance(user_id, SharedName):
            self._owner = user_id
        else:
            self._owner = UserId(user_id)
            validate_namespace(self._owner, self.store.prefix)
        self._author = _author(options.get("actor"))
        self._base: S3Memory | None = None
        self._placed: PlacedMemory | None = None
        self._lock = threading.Lock()

    @property
    def placed(self) -> PlacedMemory:
        """The memory placed in its store on first need (``StorageError`` or ``IntegrityError`` if the
        store cannot be reached or served): what the commands stand on and operators' tasks take."""
        return self._place()

    def _place(self) -> PlacedMemory:
        placed = self._placed
        if placed is not None:
            return placed
        with self._lock:
            if self._placed is None:
                if self._base is not None:
                    self._placed = self._base._place().by(self._author)
                else:
                    self._placed = place(self.store, self._owner, self.limits, self._author)
            return self._placed

    def resolve(self) -> None:
        """Resolve the store and place the user's memory in it now, not on the first command
        (``StorageError`` or ``IntegrityError`` if the store cannot be reached or served)."""
        self._place()

    def acting_as(self, actor: str | None) -> S3Memory:
        """This memory with every write recorded as ``actor``'s (what this process learned of the
        user's memory stays shared: directory hints, usage). Sends no request."""
        author = _author(actor)
        if author == self._author:
            return self
        twin = copy.copy(self)
        twin._author = author
        twin._base = self if self._base is None else self._base
        twin._lock = threading.Lock()
        twin._placed = None if self._placed is None else self._placed.by(author)
        return twin

    def shared(self, name: SharedName, *, writes: bool, base: S3Memory | None = None) -> S3Memory:
        """The shared memory ``name`` in this user's store (``base``, a process's warm one, when
        given; else one with this memory's limits, its usage counted on its own). When it ``writes``,
        its writes are recorded as this user's (``crypto.user_author``: ``<user>/<actor>`` when an
        actor writes; ``ValueError`` for a user id too long for an author: it mounts read-only)."""
        if isinstance(self._owner, SharedName):
            raise ValueError("a shared memory is mounted into a user's memory, not into another")
        author = None
        if writes:
            try:
                author = user_author(self._owner, self._author)
            except ValueError as error:
                raise ValueError(
                    f"this user cannot write into a shared memory ({error}); mount it read-only"
                ) from None
        if base is None:
            limits = self.limits
            base = S3Memory(
                self.store,
                SharedName(name),
                max_file_bytes=limits.max_file_bytes,
                content_guard=limits.content_guard,
                quota=limits.quota,
                clock=limits.clock,
            )
        return base.acting_as(author)

    def run(self, raw_input: object) -> str:
        """Run one raw ``tool_use`` input and return the answer text.

        A refusal that an unfinished job could explain is retried once after pending jobs finish.
        A command answered notes the user's access (``core.last_used``) before its answer is returned.
        """
        return self.run_command(parse_command(raw_input))

    def run_command(self, command: Command) -> str:
        """Run one parsed command (``commands.parse_command``) and return the answer text, as
        ``run`` does."""
        return self.answering(lambda: self._dispatch(command))

    def answering(self, command: Callable[[], str]) -> str:
        """Answer ``command``, a command on this memory, as ``run`` answers one: the user's older files
        moved first, retried once after pending jobs finish, the access noted before the answer."""
        placed = self.placed
        if placed.upgrade is not None:
            placed.upgrade.ensure()
        answer = placed.jobs.retried(command)
        placed.access.touch()
        return answer

    def _dispatch(self, command: Command) -> str:
        match command:
            case View(path, view_range):
                return self.view(path, view_range)
            case Create(path, file_text):
                return self.create(path, file_text)
            case StrReplace(path, old_str, new_str):
                return self.str_replace(path, old_str, new_str)
            case Insert(path, insert_line, insert_text):
                return self.insert(path, insert_line, insert_text)
            case Delete(path):
                return self.delete(path)
            case Rename(old_path, new_path):
                return self.rename(old_path, new_path)
            case _:
                assert_never(command)

    # -- view ----------------------------------------------------------------------------------

    def view(self, path: MemoryPath, view_range: list[int] | None = None, last: str = "") -> str:
        """A file's lines, or a directory's listing (ending with ``last`` when given: a mount's note)."""
        placed = self.placed
        if path.is_root:
            tree: Tree | None = self.root_tree()
        else:
            found, tree = placed.browser.file_or_tree(path)
            if found is not None:
                placed.files.directories.forget(path)
                return render_file(path.quoted, found.text, view_range)
        if tree is None:
            raise Unsettled(f"The path {path.quoted} does not exist. Please provide a valid path.", path)
        return render_listing(path.quoted, path.shown, tree, last)

    def root_tree(self) -> Tree | None:
        """``/memories`` after pending jobs finish, usually from one listing of the user's namespace:
        its internal objects (job records among them) sort before ``memories/``."""
        placed = self.placed
        page = next(placed.bucket.pages(placed.layout.namespace))
        if placed.jobs.settle_listed(page):
            return placed.browser.tree(ROOT)
        memories = [listed for listed in page.objects if listed.key.startswith(placed.layout.memories_prefix)]
        reached = page.objects[-1].key if page.objects else None
        return placed.browser.tree(ROOT, ListingPage(memories, [], page.truncated), listed_to=reached)

    # -- create --------------------------------------------------------------------------------

    def create(self, path: MemoryPath, file_text: str) -> str:
        def refusal(reason: str) -> CommandError:
            return Unsettled(f"Error: Cannot create {path.quoted}: {reason}.", path)

        require_file_path(path, refusal)
        placed = self.placed
        placed.files.check_size(path, len(file_text.encode("utf-8")))
        sealed = placed.files.encode(path, placed.screen(path, file_text))
        if placed.create_file(path, sealed, refusal) is None:
            raise Unsettled(f"Error: File {path.quoted} already exists", path)
        return f"File created successfully at: {path.quoted}"

    # -- str_replace and insert ----------------------------------------------------------------

    def str_replace(self, path: MemoryPath, old_str: str, new_str: str) -> str:
        placed = self.placed
        placed.files.check_size(path, len(new_str.encode("utf-8")))

        def change(content: str) -> tuple[Edit, str]:
            edit = placed.screened(path, replace_unique(path.quoted, content, old_str, new_str))
            return edit, edit_snippet(edit)

        return self._edit(
            path, f"Error: The path {path.quoted} does not exist. Please provide a valid path.", change
        )

    def insert(self, path: MemoryPath, insert_line: int, insert_text: str) -> str:
        placed = self.placed
        placed.files.check_size(path, len(insert_text.encode("utf-8")))
        return self._edit(
            path,
            f"Error: The path {path.quoted} does not exist",
            lambda content: (
                placed.screened(path, insert_at(path.quoted, content, insert_line, insert_text)),
                f"The file {path.quoted} has been edited.",
            ),
        )

    def _edit(self, path: MemoryPath, missing: str, change: Callable[[str], tuple[Edit, str]]) -> str:
        """Read-modify-write with ``IfMatch``, retried with jitter when another writer wins."""
        placed = self.placed

        def attempt(_number: int) -> str | Lost:
            found = None if path.is_root else placed.files.read(path)
            if found is None:
                raise Unsettled(missing, path)
            edit, answer = change(found.text)
            if placed.write_over(path, placed.files.encode(path, edit.text), found):
                return answer
            return LOST

        return retried(
            attempt,
            lambda: StorageRefusal(
                f"Error: {path.quoted} kept changing under concurrent edits; the edit was not applied. Try again."
            ),
        )

    # -- delete --------------------------------------------------------------------------------

    def delete(self, path: MemoryPath) -> str:
        if path.is_root:
            raise CommandError("Error: Cannot delete the /memories directory itself")
        placed = self.placed
        key = placed.layout.file_key(path)

        def probe() -> bool | None:
            return placed.bucket.exists(key) or None

        pending = side(lambda: placed.jobs.pending().touching(path))
        is_file, sources = placed.browser.file_or_sources(path, probe)
        kept = placed.jobs.settle(
            pending.result(), Intent("delete", path, None, None if is_file else sources)
        )
        if kept is not None:
            return deleted(path, shown_kept(kept, path))
        if pending.result().moved_on:  # jobs that ran or ended may have changed the path: look again
            is_file, sources = placed.browser.file_or_sources(path, probe)
        if is_file:
            placed.files.delete(key)
            return deleted(path, [])
        if not sources:
            raise CommandError(f"Error: The path {path.quoted} does not exist")
        placed.files.directories.forget(path)
        return deleted(
            path, shown_kept(placed.jobs.run(placed.jobs.plan("delete", path, None, sources)), path)
        )

    # -- rename --------------------------------------------------------------------------------

    def rename(self, old: MemoryPath, new: MemoryPath) -> str:
        if old.is_root:
            raise CommandError("Error: Cannot rename the /memories directory itself")
        if new.is_root:
            raise CommandError(f"Error: The destination {new.quoted} already exists")
        placed = self.placed
        return Renames(placed.files, placed.browser, placed.jobs).rename(old, new)

    # -- everything ----------------------------------------------------------------------------

    def clear_all(self) -> str:
        """Delete every memory file of this user, in batches (pending jobs are finished first)."""
        placed = self.placed
        if placed.upgrade is not None:
            placed.upgrade.ensure()
        placed.jobs.finish_pending()
        placed.files.directories.forget(ROOT)
        listed = [
            listed for page in placed.bucket.pages(placed.layout.memories_prefix) for listed in page.objects
        ]
        placed.files.delete_all([Source(item.key, "") for item in listed])
        return "All memory cleared"


def _store(store: Store | Bucket, key_provider: KeyProvider | None, options: MemoryOptions) -> Store:
    """``store``, or the store over the bucket ``store`` with ``key_provider`` and the store's
    ``options`` (``ValueError`` for a store's setting given beside a ``Store``)."""
    given = {  # the store's options (None: not given)
        name: value
        for name, value in options.items()
        if name in StoreOptions.__optional_keys__ and value is not None
    }
    if isinstance(store, Store):
        if key_provider is not None or given:
            raise ValueError(
                "key_provider, prefix, storage_format, store_id and weak_server are the Store's: "
                "give them to the Store, not to S3Memory"
            )
        return store
    if key_provider is None:
        raise ValueError("key_provider must be a KMSKeyProvider or LocalKeyProvider")
    return Store(store, key_provider, **cast(StoreOptions, given))


def _author(actor: str | None) -> str | None:
    """The validated author of ``actor``'s writes (``ValueError`` naming ``actor``)."""
    if actor is None:
        return None
    try:
        return validate_author(actor)
    except ValueError as error:
        raise ValueError(f"actor: {error}") from None
