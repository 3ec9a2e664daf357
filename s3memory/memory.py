"""The six memory commands on S3, for one user. No ``anthropic`` import: Lambda runs this directly.

Each command returns the contract's answer text or raises ``CommandError`` with the contract's
refusal. Paths are validated before any request; building a memory sends none (the first command
resolves its store, ``store.Store``, and places the user's memory in it). What the commands
stand on lives beside this module: ``files`` (one user's encrypted objects), ``placement`` (where a new file may go),
``browse`` (what is at a path), ``quota``, ``job_runner`` (directory renames and deletes) and
``concurrency`` (overlapping independent requests).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Unpack, assert_never, cast

from s3memory.core.browse import Browser
from s3memory.core.commands import Command, Create, Delete, Insert, Rename, StrReplace, View, parse_command
from s3memory.core.files import LOST, Found, Lost, MemoryFiles, retried
from s3memory.core.guard import ContentGuard
from s3memory.core.job_records import Source
from s3memory.core.job_runner import Intent, JobRunner, Unsettled
from s3memory.core.keyvault import KeyVault
from s3memory.core.last_used import AccessRecord
from s3memory.core.listing import Tree, render_listing
from s3memory.core.moves import Origin
from s3memory.core.paths import (
    ROOT,
    KeyLayout,
    MemoryPath,
    SharedName,
    UserId,
    check_new_name,
    shown_path,
    validate_namespace,
)
from s3memory.core.placement import Refusal, Survey, require_depth, require_file_path, write_new_file
from s3memory.core.quota import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_LIMIT, Quota, Usage
from s3memory.core.text import Edit, edit_snippet, insert_at, render_file, replace_unique
from s3memory.crypto import (
    OVERHEAD,
    DataKeySource,
    KeyOwner,
    KeyProvider,
    ObjectCipher,
    user_author,
    validate_author,
)
from s3memory.errors import (
    CommandError,
    PreconditionFailed,
    SourceChanged,
    StorageRefusal,
    StoreMisconfigured,
)
from s3memory.formats.strategy import Format
from s3memory.formats.upgrade import Upgrade
from s3memory.storage.bucket import Bucket, ListingPage
from s3memory.storage.concurrency import side
from s3memory.store import Store, StoreOptions, refuse_unknown

DEFAULT_GUARD = ContentGuard()
KEPT_SHOWN = 20
"""A partly done rename or delete names at most this many of the files it left in place."""

__all__ = ["DEFAULT_GUARD", "DEFAULT_MAX_FILE_BYTES", "MemoryOptions", "Quota", "S3Memory", "Store"]


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
        # The store's options (None: not given), for the store built over a bucket.
        given = {
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
            self.store = store
        else:
            if key_provider is None:
                raise ValueError("key_provider must be a KMSKeyProvider or LocalKeyProvider")
            self.store = Store(
                store,
                key_provider,
                **cast(StoreOptions, given),
            )
        """The store the memory lives in (``store.Store``), resolved by the first command."""
        max_file_bytes = options.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
        content_guard = options.get("content_guard", DEFAULT_GUARD)
        quota = options.get("quota")
        clock = options.get("clock", time.time)
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ValueError("max_file_bytes must be a positive integer")
        if content_guard is not None and not isinstance(content_guard, ContentGuard):
            raise ValueError("content_guard must be a ContentGuard or None")
        if quota is not None and not isinstance(quota, Quota):
            raise ValueError("quota must be a Quota or None")
        if not callable(clock):
            raise ValueError("clock must be a function that returns seconds since the epoch")
        self.bucket = self.store.bucket
        """The store's bucket (``Bucket``)."""
        self.key_provider = self.store.key_provider
        self.content_guard = content_guard
        self._owner: UserId | SharedName
        if isinstance(user_id, SharedName):
            self._owner = user_id
        else:
            self._owner = UserId(user_id)
            validate_namespace(self._owner, self.store.prefix)
        self._limits = (max_file_bytes, quota, clock)
        self._author = _author(options.get("actor"))
        self._base: S3Memory | None = None
        self._placed: _Placed | None = None
        self._lock = threading.Lock()

    def _place(self) -> _Placed:
        """The user's memory in the store, placed on first need (the store resolved first)."""
        placed = self._placed
        if placed is not None:
            return placed
        with self._lock:
            if self._placed is None:
                if self._base is not None:
                    self._placed = self._base._place().by(self._author)
                else:
                    self._placed = _placed(self.store, self._owner, self._limits, self._author)
            return self._placed

    def resolve(self) -> None:
        """Resolve the store and place the user's memory in it now, not on the first command
        (``StorageError`` or ``IntegrityError`` if the store cannot be reached or served)."""
        self._place()

    @property
    def format(self) -> Format:
        """The storage format's strategy the store is served in (resolved first)."""
        return self._place().format

    @property
    def storage_format(self) -> int:
        """The format the store is served in (``auto``: found in the store, ``formats/choice.py``)."""
        return self._place().format.storage_format

    @property
    def layout(self) -> KeyLayout:
        """Where the user's objects live."""
        return self._place().layout

    @property
    def key_owner(self) -> KeyOwner:
        """Whose data keys the user's objects are sealed with."""
        return self._place().key_owner

    @property
    def usage(self) -> Usage:
        return self._place().usage

    @property
    def files(self) -> MemoryFiles:
        return self._place().files

    @property
    def browser(self) -> Browser:
        return self._place().browser

    @property
    def jobs(self) -> JobRunner:
        return self._place().jobs

    @property
    def access(self) -> AccessRecord:
        """When the user last used the memory: each command answered notes it (``core/last_used.py``)."""
        return self._place().access

    @property
    def upgrade(self) -> Upgrade | None:
        """Format 2: the user's format-1 files, moved before the first command unless the store is
        marked as holding none (``formats/upgrade.py``)."""
        return self._place().upgrade

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
        given; else one with this memory's file size limit, guard, clock and quota, its usage counted on
        its own). When it
        ``writes``, its writes are recorded as this user's (``crypto.user_author``: ``<user>/<actor>``
        when an actor writes; ``ValueError`` for a user id too long for an author: such a user mounts
        it read-only)."""
        if isinstance(self._owner, SharedName):
            raise ValueError("a shared memory is mounted into a user's memory, not into another")
        max_file_bytes, quota, clock = self._limits
        author = None
        if writes:
            try:
                author = user_author(self._owner, self._author)
            except ValueError as error:
                raise ValueError(
                    f"this user cannot write into a shared memory ({error}); mount it read-only"
                ) from None
        if base is None:
            base = S3Memory(
                self.store,
                SharedName(name),
                max_file_bytes=max_file_bytes,
                content_guard=self.content_guard,
                quota=quota,
                clock=clock,
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
        if self.upgrade is not None:
            self.upgrade.ensure()
        answer = self.jobs.retried(command)
        self.access.touch()
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
        if path.is_root:
            tree: Tree | None = self.root_tree()
        else:
            found, tree = self.browser.file_or_tree(path)
            if found is not None:
                self.files.directories.forget(path)
                return render_file(path.quoted, found.text, view_range)
        if tree is None:
            raise Unsettled(f"The path {path.quoted} does not exist. Please provide a valid path.", path)
        return render_listing(path.quoted, path.shown, tree, last)

    def root_tree(self) -> Tree | None:
        """``/memories`` after pending jobs finish, usually from one listing of the user's namespace:
        its internal objects (job records among them) sort before ``memories/``."""
        page = next(self.bucket.pages(self.layout.namespace))
        if self.jobs.settle_listed(page):
            return self.browser.tree(ROOT)
        memories = [listed for listed in page.objects if listed.key.startswith(self.layout.memories_prefix)]
        reached = page.objects[-1].key if page.objects else None
        return self.browser.tree(ROOT, ListingPage(memories, [], page.truncated), listed_to=reached)

    # -- create --------------------------------------------------------------------------------

    def create(self, path: MemoryPath, file_text: str) -> str:
        def refusal(reason: str) -> CommandError:
            return Unsettled(f"Error: Cannot create {path.quoted}: {reason}.", path)

        require_file_path(path, refusal)
        self.files.check_size(path, len(file_text.encode("utf-8")))
        sealed = self.files.encode(path, self._screen(path, file_text))
        self.usage.check(path, len(sealed.body) - OVERHEAD, 1)
        if write_new_file(self.files, path, sealed, refusal, refusal(f"{path.shown} is a directory")) is None:
            raise Unsettled(f"Error: File {path.quoted} already exists", path)
        self.usage.add(len(sealed.body) - OVERHEAD, 1)
        self.files.directories.add(path.ancestors())
        return f"File created successfully at: {path.quoted}"

    def check_create(
        self, path: MemoryPath, file_text: str, planned: tuple[int, int] = (0, 0), *, replacing: bool = False
    ) -> None:
        """Raise what ``create`` would refuse, changing nothing: a name it may not make (unless
        ``replacing`` the file stored under it), a path that cannot hold a new file,
        the size limit, the content guard (``redact`` is no refusal), the quota counted with the
        ``planned`` (bytes, files) of other writes not yet made, and the place (a directory at
        the path, an ancestor that is a file, a file already there unless ``replacing`` it)."""

        def refusal(reason: str) -> CommandError:
            return CommandError(f"Error: Cannot create {path.quoted}: {reason}.")

        if not replacing:
            check_new_name(path)
        require_file_path(path, refusal)
        size = len(file_text.encode("utf-8"))
        self.files.check_size(path, size)
        self._screen(path, file_text)
        self.usage.check(path, size, 0 if replacing else 1, planned)
        obstacle = Survey(self.files, path, file_occupies=not replacing).obstacle(
            refusal, refusal(f"{path.shown} is a directory or a file already")
        )
        if obstacle is not None:
            raise obstacle

    def overwrite(self, path: MemoryPath, found: Found, file_text: str) -> str:
        """Write ``file_text`` over the file at ``path`` in one request, conditional on the object
        ``found`` was read from (an operator's import replacing a file): the checks of ``create``, the
        quota counted by the growth. Refused, writing nothing, if the file changed since."""
        self.files.check_size(path, len(file_text.encode("utf-8")))
        sealed = self.files.encode(path, self._screen(path, file_text))
        growth = len(sealed.body) - OVERHEAD - len(found.text.encode("utf-8"))
        self.usage.check(path, growth, 0)
        if not self.files.replace(path, sealed, found.etag):
            raise CommandError(
                f"Error: {path.quoted} changed while it was being replaced; nothing was written. Try again."
            )
        self.usage.add(growth, 0)
        return f"File {path.quoted} replaced"

    def _screen(self, path: MemoryPath, text: str) -> str:
        return text if self.content_guard is None else self.content_guard.screen(path.quoted, text)

    # -- str_replace and insert ----------------------------------------------------------------

    def str_replace(self, path: MemoryPath, old_str: str, new_str: str) -> str:
        self.files.check_size(path, len(new_str.encode("utf-8")))

        def change(content: str) -> tuple[Edit, str]:
            edit = self._screened(path, replace_unique(path.quoted, content, old_str, new_str))
            return edit, edit_snippet(edit)

        return self._edit(
            path, f"Error: The path {path.quoted} does not exist. Please provide a valid path.", change
        )

    def insert(self, path: MemoryPath, insert_line: int, insert_text: str) -> str:
        self.files.check_size(path, len(insert_text.encode("utf-8")))
        return self._edit(
            path,
            f"Error: The path {path.quoted} does not exist",
            lambda content: (
                self._screened(path, insert_at(path.quoted, content, insert_line, insert_text)),
                f"The file {path.quoted} has been edited.",
            ),
        )

    def _screened(self, path: MemoryPath, edit: Edit) -> Edit:
        """``edit`` once the guard has screened the stored text around what it wrote."""
        return edit if self.content_guard is None else self.content_guard.screen_edit(path.quoted, edit)

    def _edit(self, path: MemoryPath, missing: str, change: Callable[[str], tuple[Edit, str]]) -> str:
        """Read-modify-write with ``IfMatch``, retried with jitter when another writer wins."""

        def attempt(_number: int) -> str | Lost:
            found = None if path.is_root else self.files.read(path)
            if found is None:
                raise Unsettled(missing, path)
            edit, answer = change(found.text)
            sealed = self.files.encode(path, edit.text)
            growth = len(sealed.body) - OVERHEAD - len(found.text.encode("utf-8"))
            self.usage.check(path, growth, 0)
            if self.files.replace(path, sealed, found.etag):
                self.usage.add(growth, 0)
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
        key = self.layout.file_key(path)

        def probe() -> bool | None:
            return self.bucket.exists(key) or None

        pending = side(lambda: self.jobs.pending().touching(path))
        is_file, sources = self.browser.file_or_sources(path, probe)
        kept = self.jobs.settle(pending.result(), Intent("delete", path, None, None if is_file else sources))
        if kept is not None:
            return _deleted(path, _shown(kept, path))
        if pending.result().moved_on:  # jobs that ran or ended may have changed the path: look again
            is_file, sources = self.browser.file_or_sources(path, probe)
        if is_file:
            self.files.delete(key)
            return _deleted(path, [])
        if not sources:
            raise CommandError(f"Error: The path {path.quoted} does not exist")
        self.files.directories.forget(path)
        return _deleted(path, _shown(self.jobs.run(self.jobs.plan("delete", path, None, sources)), path))

    # -- rename --------------------------------------------------------------------------------

    def rename(self, old: MemoryPath, new: MemoryPath) -> str:
        if old.is_root:
            raise CommandError("Error: Cannot rename the /memories directory itself")
        exists = CommandError(f"Error: The destination {new.quoted} already exists")
        if new.is_root:
            raise exists
        pending = side(lambda: self.jobs.pending().touching(old, new))
        survey = self._destination_survey(old, new)
        found, sources = self.browser.file_or_sources(old, lambda: self.jobs.mover.locate(old))
        intent = Intent("rename", old, new, None if found is not None else sources)
        kept = self.jobs.settle(pending.result(), intent)
        if kept is not None or pending.result().moved_on:
            if survey is not None:
                survey.abandon()
            if kept is not None:
                return _renamed(old, new, _shown(kept, old))
            # jobs that ran or ended may have moved either path: look again
            survey = self._destination_survey(old, new)
            found, sources = self.browser.file_or_sources(old, lambda: self.jobs.mover.locate(old))
        if found is not None:
            return self._rename_file(old, new, found, exists, survey)
        if not sources or survey is None:
            if survey is not None:
                survey.abandon()
            if not sources:
                raise CommandError(f"Error: The path {old.quoted} does not exist")
            if new.canonical == old.canonical:
                raise CommandError(f"Error: The destination {new.quoted} already exists")
            raise CommandError(f"Error: Cannot move {old.quoted} into itself ({new.quoted})")
        survey.count_a_file_as_occupying()
        return self._rename_directory(old, new, sources, exists, survey)

    def _destination_survey(self, old: MemoryPath, new: MemoryPath) -> Survey | None:
        """The checks of a rename's destination, started before the source is known to be a file or
        a directory (None when ``new`` lies within ``old``: refused either way). A file already at
        ``new`` is asked for only when ``old`` was last seen as a directory; for a file, the
        conditional write answers that."""
        if new.is_within(old):
            return None
        return Survey(self.files, new, file_occupies=old in self.files.directories)

    def _rename_file(
        self, old: MemoryPath, new: MemoryPath, origin: Origin, exists: CommandError, survey: Survey | None
    ) -> str:
        """Copy the file to ``new`` (or rely on a copy an earlier try left there), then delete it at
        ``old`` if it has not changed. A copy this try created is withdrawn when the source turns
        out changed or gone (a late copy, or one that would shadow an edit)."""
        if new.segments == old.segments:
            raise exists
        if survey is None:  # new lies within old
            raise CommandError(
                f"Error: Cannot rename to {new.quoted}: {old.shown} is a file, not a directory."
            )
        refusal = _destination_refusal(new)
        require_file_path(new, refusal)
        obstacle = survey.obstacle(refusal, exists)
        if obstacle is not None:
            raise obstacle
        source = self.layout.file_key(old)
        try:
            created = self.jobs.mover.place(origin, new)
        except SourceChanged:
            raise self._moved_away(old, source) from None
        if created is None and not self.jobs.mover.accept(origin, new):
            raise exists
        self.files.directories.add(new.ancestors())
        try:
            self.files.delete(source, if_match=origin.etag)
        except PreconditionFailed as failed:
            gone = not self.bucket.exists(source)
            if gone and (failed.after_retry or created is None):
                return _renamed(old, new, [])  # our own delete's answer was lost, or a twin finished it
            if created is None:
                return _renamed(old, new, [old.shown])
            self.jobs.mover.withdraw(created)
            raise self._moved_away(old, source) from None
        return _renamed(old, new, [])

    def _moved_away(self, old: MemoryPath, source: str) -> CommandError:
        """The refusal of a file rename whose source changed or went while it was being renamed."""
        if not self.bucket.exists(source):
            return CommandError(f"Error: The path {old.quoted} does not exist")
        return CommandError(
            f"Error: {old.quoted} changed while it was being renamed; it was left where it is and "
            "nothing was renamed."
        )

    def _rename_directory(
        self, old: MemoryPath, new: MemoryPath, sources: list[Source], exists: CommandError, survey: Survey
    ) -> str:
        refusal = _destination_refusal(new)
        paths = [path for source in sources if (path := self.layout.path_of_key(source.key)) is not None]
        try:
            require_depth(
                len(new.mount) + len(new.segments) + max(len(path.relative_to(old)) for path in paths),
                refusal,
            )
            for path in paths:
                self.layout.file_key(new.joined(path.relative_to(old)))
        except CommandError:
            survey.abandon()
            raise
        obstacle = survey.obstacle(refusal, exists)
        if obstacle is not None:
            raise obstacle
        self.files.directories.forget(old)
        kept = self.jobs.run(self.jobs.plan("rename", old, new, sources))
        self.files.directories.add([new, *new.ancestors()])
        return _renamed(old, new, _shown(kept, old))

    # -- everything ----------------------------------------------------------------------------

    def clear_all(self) -> str:
        """Delete every memory file of this user, in batches (pending jobs are finished first)."""
        if self.upgrade is not None:
            self.upgrade.ensure()
        self.jobs.finish_pending()
        self.files.directories.forget(ROOT)
        listed = [
            listed for page in self.bucket.pages(self.layout.memories_prefix) for listed in page.objects
        ]
        self.files.delete_all([Source(item.key, "") for item in listed])
        return "All memory cleared"


@dataclass(frozen=True)
class _Placed:
    """One user's memory placed in a resolved store: what its commands stand on."""

    format: Format
    layout: KeyLayout
    key_owner: KeyOwner
    usage: Usage
    files: MemoryFiles
    browser: Browser
    jobs: JobRunner
    access: AccessRecord
    upgrade: Upgrade | None

    def by(self, author: str | None) -> _Placed:
        """The same memory, its writes recorded as ``author``'s (hints and usage shared)."""
        files = self.files.by(author)
        return replace(self, files=files, browser=Browser(files), jobs=self.jobs.over(files))


def _placed(
    store: Store,
    owner: UserId | SharedName,
    limits: tuple[int, Quota | None, Callable[[], float]],
    author: str | None,
) -> _Placed:
    """``owner``'s memory in ``store`` (resolved now if it was not), placed where the store's
    format puts it (``Store.placement``), with a user's files of an older format it moves
    (``Format.upgrade``; a shared memory has none)."""
    resolution = store.resolve()
    shared = isinstance(owner, SharedName)
    if shared and not resolution.format.serves_shared_memories:
        raise StoreMisconfigured(
            f"Error: A shared memory cannot be opened in this store: shared memories need storage format 2 "
            f"and the store is served in format {resolution.format.storage_format} (`s3memory migrate` moves "
            "a store to format 2). Nothing was read or changed."
        )
    layout, key_owner = store.placement(owner.principal if isinstance(owner, SharedName) else owner)
    max_file_bytes, quota, clock = limits
    bucket, prefix = store.bucket, store.prefix
    keys = DataKeySource(store.key_provider, key_owner, KeyVault(bucket, layout))
    cipher = ObjectCipher(keys, resolution.format.object_format)
    usage = Usage(quota, lambda: files.measure())
    files = MemoryFiles(bucket, layout, cipher, resolution.format, max_file_bytes, usage, author)
    upgrade = (
        None
        if shared
        else resolution.format.upgrade(
            bucket,
            owner,
            prefix,
            store.key_provider,
            lambda: store.marked,
            files,
            clock,
            store.settled,
            MAX_FILE_BYTES_LIMIT,
        )
    )
    return _Placed(
        resolution.format,
        layout,
        key_owner,
        usage,
        files,
        Browser(files),
        JobRunner(files, resolution.format.mover, clock),
        AccessRecord(files, clock),
        upgrade,
    )


def _author(actor: str | None) -> str | None:
    """The validated author of ``actor``'s writes (``ValueError`` naming ``actor``)."""
    if actor is None:
        return None
    try:
        return validate_author(actor)
    except ValueError as error:
        raise ValueError(f"actor: {error}") from None


def _destination_refusal(new: MemoryPath) -> Refusal:
    def refusal(reason: str) -> CommandError:
        return CommandError(f"Error: Cannot rename to {new.quoted}: {reason}.")

    return refusal


def _shown(kept: list[str], path: MemoryPath) -> list[str]:
    """The paths a job left in place (in ``path``'s memory), as the user sees them."""
    return [shown_path(canonical, path.mount, lookalike=path.lookalike) for canonical in kept]


def _left_in_place(kept: list[str]) -> str:
    names = ", ".join(kept[:KEPT_SHOWN])
    return names if len(kept) <= KEPT_SHOWN else f"{names} and {len(kept) - KEPT_SHOWN:,} more"


def _renamed(old: MemoryPath, new: MemoryPath, kept: list[str]) -> str:
    if not kept:
        return f"Successfully renamed {old.quoted} to {new.quoted}"
    raise CommandError(
        f"Error: Renamed {old.quoted} to {new.quoted}, except {len(kept)} file(s) that changed during the "
        f"rename and were left at their old paths: {_left_in_place(kept)}"
    )


def _deleted(path: MemoryPath, kept: list[str]) -> str:
    if not kept:
        return f"Successfully deleted {path.quoted}"
    raise CommandError(
        f"Error: Deleted {path.quoted}, except {len(kept)} file(s) that changed during the delete and were "
        f"left in place: {_left_in_place(kept)}"
    )
