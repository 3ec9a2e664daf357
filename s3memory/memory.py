"""The six memory commands on S3, for one user. No ``anthropic`` import: Lambda runs this directly.

Each command returns the contract's answer text or raises ``CommandError`` with the contract's
refusal. Paths are validated before any request; edits are conditional writes retried on races.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from .commands import Command, Create, Delete, Insert, StrReplace, View, parse_command
from .crypto import OVERHEAD, DataKeySource, KeyProvider, ObjectCipher, plaintext_size
from .errors import CommandError, IntegrityError, StorageError, Unsettled
from .guard import ContentGuard
from .jobs import JOB_PREFIX, RECORD_PATH_PREFIX, Job
from .listing import Tree, is_hidden, listed_past, render_listing
from .paths import ROOT, KeyLayout, MemoryPath, memory_path, validate_namespace
from .store import DELETE_BATCH, ConditionalConflict, ListingPage, PreconditionFailed, S3Store
from .text import insert_at, render_file, replace_unique

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
ORIGIN_METADATA = "s3memory-origin"
"""Metadata on a renamed file: the keyed fingerprint of the path it was copied from."""
JOB_RECORD_MAX_BYTES = 64 * 1024 * 1024
EDIT_ATTEMPTS = 32
PARALLEL_REQUESTS = 16
_T = TypeVar("_T")
logger = logging.getLogger("s3memory")


def _backoff(attempt: int) -> None:
    """Sleep a jittered, growing, bounded time before retrying a lost conditional write."""
    time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))


def _parallel(function: Callable[[_T], None], items: Sequence[_T]) -> None:
    """Run ``function`` over ``items`` with bounded parallelism; the first failure cancels what has
    not started and is raised."""
    if len(items) <= 1:
        for item in items:
            function(item)
        return
    with ThreadPoolExecutor(max_workers=min(PARALLEL_REQUESTS, len(items))) as pool:
        futures = [pool.submit(function, item) for item in items]
        try:
            for future in futures:
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


_side_pool: ThreadPoolExecutor | None = None
_side_pool_lock = threading.Lock()


def _side(function: Callable[[], _T]) -> Future[_T]:
    """Start ``function`` on a shared worker, to overlap an independent request with the caller's.

    Only leaf work goes here (requests, never a wait on another ``_side`` task), so the workers
    cannot all be blocked waiting on each other.
    """
    global _side_pool
    with _side_pool_lock:
        if _side_pool is None:
            _side_pool = ThreadPoolExecutor(max_workers=PARALLEL_REQUESTS, thread_name_prefix="s3memory")
        return _side_pool.submit(function)


def _quietly(future: Future[_T] | None) -> None:
    """Wait for ``future`` whose answer is no longer needed; a refusal or storage failure is dropped."""
    if future is not None:
        with contextlib.suppress(CommandError):
            future.result()


class _KnownDirectories:
    """Paths this process last saw as directories: a hint that orders a view's requests, never a proof."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._paths: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()

    def __contains__(self, path: MemoryPath) -> bool:
        return path.segments in self._paths

    def add(self, paths: Iterable[MemoryPath]) -> None:
        with self._lock:
            self._paths.update(path.segments for path in paths if not path.is_root)
            if len(self._paths) > self.LIMIT:
                self._paths.clear()

    def forget(self, path: MemoryPath) -> None:
        """Forget ``path`` and every directory below it."""
        depth = len(path.segments)
        with self._lock:
            self._paths = {known for known in self._paths if known[:depth] != path.segments}


class _Vault:
    """The user's wrapped data keys, kept as internal objects outside ``memories/``."""

    def __init__(self, store: S3Store, layout: KeyLayout) -> None:
        self._store = store
        self._layout = layout

    @property
    def identity(self) -> str:
        return f"s3://{self._store.bucket}/{self._layout.namespace}"

    def _key(self, version: int) -> str:
        return self._layout.key_of_internal(f"keys/v{version}")

    def get_wrapped(self, version: int) -> bytes | None:
        stored = self._store.get(self._key(version), max_bytes=64 * 1024)
        return None if stored is None else stored.body

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        try:
            self._store.put(self._key(version), wrapped, if_none_match=True)
        except (PreconditionFailed, ConditionalConflict):
            return False
        return True


@dataclass(frozen=True)
class Quota:
    """Per-user limits on the memory's total plaintext bytes and file count (None: no limit).

    Usage is listed once and then tracked in process, re-listed every ``refresh_seconds``: a soft
    limit that concurrent writers in other processes can pass by what they write in that time.
    """

    max_bytes: int | None = None
    max_files: int | None = None
    refresh_seconds: float = 60.0

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_files"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"Quota {name} must be a non-negative integer or None")


class _Survey:
    """The checks of a new object's place, sent at once as leaf requests: a HEAD per ancestor
    (is it a file?), a one-key listing below the path (is a directory there?) and, when asked for,
    a HEAD of the path itself (is a file there?)."""

    def __init__(self, store: S3Store, layout: KeyLayout, path: MemoryPath, *, file_occupies: bool) -> None:
        self._store = store
        self._key = layout.file_key(path)
        self._ancestors = [
            (ancestor, _side(partial(store.exists, layout.file_key(ancestor))))
            for ancestor in path.ancestors()
        ]
        self._below = _side(partial(store.any_below, self._key + "/"))
        self._at_path: Future[bool] | None = None
        if file_occupies:
            self.count_a_file_as_occupying()

    def count_a_file_as_occupying(self) -> None:
        """Also refuse the place when a file is at the path (a directory's destination)."""
        if self._at_path is None:
            self._at_path = _side(partial(self._store.exists, self._key))

    def _futures(self) -> list[Future[bool]]:
        found = [self._below, *(is_file for _ancestor, is_file in self._ancestors)]
        return found if self._at_path is None else [*found, self._at_path]

    def obstacle(self, refusal: Callable[[str], CommandError], occupied: CommandError) -> CommandError | None:
        """``occupied`` for a directory (or a counted file) at the path, ``refusal`` for an ancestor
        that is a file (the outermost), else None. Waits for every check; a failed one is raised."""
        wait(self._futures())
        if self._below.result() or (self._at_path is not None and self._at_path.result()):
            return occupied
        for ancestor, is_file in self._ancestors:
            if is_file.result():
                return refusal(f"{ancestor.canonical} is a file, not a directory")
        return None

    def abandon(self) -> None:
        """Wait for the checks whose answers are no longer needed."""
        for future in self._futures():
            _quietly(future)


DEFAULT_GUARD = ContentGuard()


class S3Memory:
    """One user's memory directory in an S3 bucket, encrypted on the client."""

    def __init__(
        self,
        store: S3Store,
        user_id: str,
        key_provider: KeyProvider,
        *,
        prefix: str = "users/",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        content_guard: ContentGuard | None = DEFAULT_GUARD,
        quota: Quota | None = None,
    ) -> None:
        if not isinstance(key_provider, KeyProvider):
            raise ValueError("key_provider must be a KMSKeyProvider or LocalKeyProvider")
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ValueError("max_file_bytes must be a positive integer")
        if content_guard is not None and not isinstance(content_guard, ContentGuard):
            raise ValueError("content_guard must be a ContentGuard or None")
        if quota is not None and not isinstance(quota, Quota):
            raise ValueError("quota must be a Quota or None")
        self.layout = KeyLayout(validate_namespace(user_id, prefix))
        self.store = store
        self.max_file_bytes = max_file_bytes
        self.content_guard = content_guard
        self.quota = quota
        self._usage: tuple[float, int, int] | None = None
        self._directories = _KnownDirectories()
        self._cipher = ObjectCipher(user_id, DataKeySource(key_provider, user_id, _Vault(store, self.layout)))

    # -- dispatch ---------------------------------------------------------------------------

    def run(self, raw_input: object) -> str:
        """Run one raw ``tool_use`` input and return the answer text.

        A refusal that an unfinished job could explain is retried once after pending jobs finish.
        """
        command = parse_command(raw_input)
        try:
            return self._dispatch(command)
        except Unsettled:
            if not self.finish_pending_jobs():
                raise
        return self._dispatch(command)

    def _dispatch(self, command: Command) -> str:
        if isinstance(command, View):
            return self.view(command.path, command.view_range)
        if isinstance(command, Create):
            return self.create(command.path, command.file_text)
        if isinstance(command, StrReplace):
            return self.str_replace(command.path, command.old_str, command.new_str)
        if isinstance(command, Insert):
            return self.insert(command.path, command.insert_line, command.insert_text)
        if isinstance(command, Delete):
            return self.delete(command.path)
        return self.rename(command.old_path, command.new_path)

    # -- reading ----------------------------------------------------------------------------

    def _read(self, path: MemoryPath) -> tuple[str, str] | None:
        """The file's text and ETag, or None if no file is at ``path``."""
        stored = self.store.get(self.layout.file_key(path), max_bytes=self.max_file_bytes + 4096)
        if stored is None:
            return None
        return self._decode(path, stored.body), stored.etag

    def _decode(self, path: MemoryPath, body: bytes) -> str:
        try:
            return self._cipher.open(path.canonical, body).decode("utf-8")
        except UnicodeDecodeError:
            raise IntegrityError(f"Error: The file {path.text} does not hold valid UTF-8 text.") from None

    def _encode(self, path: MemoryPath, text: str) -> bytes:
        data = text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise CommandError(
                f"Error: The file {path.text} would be {len(data):,} bytes; the limit is "
                f"{self.max_file_bytes:,} bytes. Nothing was changed."
            )
        return self._cipher.seal(path.canonical, data)

    def _keys_below(self, path: MemoryPath) -> list[str]:
        return [
            key
            for page in self.store.pages(self.layout.directory_prefix(path))
            for key, _size in page.objects
        ]

    def view(self, path: MemoryPath, view_range: list[int] | None = None) -> str:
        if path.is_root:
            tree: Tree | None = self._root_tree()
        else:
            found, tree = self._file_or_tree(path)
            if found is not None:
                self._directories.forget(path)
                return render_file(path.text, found[0], view_range)
        if tree is None:
            raise Unsettled(f"The path {path.text} does not exist. Please provide a valid path.")
        return render_listing(path.text, path.canonical, tree)

    def _file_or_tree(self, path: MemoryPath) -> tuple[tuple[str, str] | None, Tree | None]:
        """The file at ``path`` (text and ETag), else the directory's tree, else neither.

        A path last seen as a directory is listed with its own key as the prefix: a file there sorts
        first (and is read: a file wins), then the directory's objects, so one request usually
        shows it all. Any other path is read first.
        """
        if path not in self._directories:
            found = self._read(path)
            return (found, None) if found is not None else (None, self._tree(path))
        key = self.layout.file_key(path)
        page = next(self.store.pages(key))
        if page.objects and page.objects[0][0] == key:
            found = self._read(path)
            if found is not None:
                return found, None
        below = self.layout.directory_prefix(path)
        if page.truncated and not (page.objects and listed_past(page.objects[-1][0], below)):
            return None, self._tree(path)  # the page stopped inside the directory, or before it
        objects = [(listed, size) for listed, size in page.objects if listed.startswith(below)]
        return None, self._tree(path, ListingPage(objects, [], False))

    def _root_tree(self) -> Tree:
        """``/memories`` after pending jobs finish, usually from one listing of the user's namespace:
        its internal objects (job records among them) sort before ``memories/``."""
        page = next(self.store.pages(self.layout.namespace))
        jobs_prefix = self.layout.key_of_internal(JOB_PREFIX)
        keys = [key for key, _size in page.objects]
        if page.truncated and not (keys and listed_past(keys[-1], jobs_prefix)):
            jobs = self._pending_jobs()
        else:
            jobs = self._load_jobs([key for key in keys if key.startswith(jobs_prefix)])
        if jobs:
            self._finish_jobs(jobs, None)
            return self._tree(ROOT) or Tree()
        prefix = self.layout.memories_prefix
        memories = [(key, size) for key, size in page.objects if key.startswith(prefix)]
        return self._tree(ROOT, ListingPage(memories, [], page.truncated)) or Tree()

    def _tree(self, directory: MemoryPath, first: ListingPage | None = None) -> Tree | None:
        """The directory's two visible levels, or None if nothing lies below it.

        One listing page (``first``, when the caller has it) usually holds the whole directory.
        When it does not, the levels are listed with a delimiter, so the cost never grows with
        what lies below level 2.
        """
        if first is None:
            first = next(self.store.pages(self.layout.directory_prefix(directory)))
        tree = Tree()
        if first.truncated:
            self._add_level(tree, directory, ())
            for name in [name for name in tree.root.children if tree.root.children[name].is_directory]:
                self._add_level(tree, directory, (name,))
        elif not first.objects:
            return Tree() if directory.is_root else None
        else:
            for key, size in first.objects:
                found = self.layout.path_of_key(key)
                if found is not None:
                    tree.add_file(found.relative_to(directory), plaintext_size(size))
        self._directories.add([directory, *(directory.joined(relative) for relative in tree.directories())])
        return tree

    def _add_level(self, tree: Tree, directory: MemoryPath, relative: tuple[str, ...]) -> None:
        if any(is_hidden(name) for name in relative):
            return
        level = directory.joined(relative)
        for page in self.store.pages(self.layout.directory_prefix(level), delimiter=True):
            for key, size in page.objects:
                found = self.layout.path_of_key(key)
                if found is not None:
                    tree.add_file(found.relative_to(directory), plaintext_size(size))
            for common in page.prefixes:
                found = self.layout.path_of_key(common.rstrip("/"))
                if found is not None:
                    tree.add_directory(found.relative_to(directory))

    # -- writing ----------------------------------------------------------------------------

    @staticmethod
    def _require_file_path(path: MemoryPath, refusal: Callable[[str], CommandError]) -> None:
        if path.is_root or path.text.endswith("/"):
            raise refusal("a file path must name a file below /memories, without a trailing '/'")

    def _write_new_file(
        self,
        path: MemoryPath,
        body: bytes,
        refusal: Callable[[str], CommandError],
        occupied: CommandError,
        origin: MemoryPath | None = None,
        survey: _Survey | None = None,
    ) -> bool:
        """Write ``body`` as a new file at ``path``, which the caller has passed through
        ``_require_file_path``; False if a file is there already.

        With ``survey`` (the checks of the path's place, already under way) the checks come first.
        Without, the conditional write and the checks go out at once, so a create costs one round
        trip; a write that the checks then refuse (a directory at the path, an ancestor that is a
        file) or cannot confirm is removed again before the refusal is raised.
        """
        key = self.layout.file_key(path)
        if survey is not None:
            obstacle = survey.obstacle(refusal, occupied)
            if obstacle is not None:
                raise obstacle
            return self._put_new(key, body, origin) is not None
        checks = _Survey(self.store, self.layout, path, file_occupies=False)
        written = _side(partial(self._put_new, key, body, origin))
        unchecked: StorageError | None = None
        try:
            obstacle = checks.obstacle(refusal, occupied)
        except StorageError as failure:
            obstacle, unchecked = None, failure
        try:
            etag = written.result()
        except StorageError:
            if obstacle is not None:
                raise obstacle from None  # nothing was written; the refusal is the answer
            raise
        if etag is None:
            if obstacle is not None:
                raise obstacle  # some S3 servers answer 412 for a key that is a directory
            return False
        problem = obstacle or unchecked
        if problem is not None:
            raise self._withdrawn(path, key, etag, problem)
        return True

    def _withdrawn(self, path: MemoryPath, key: str, etag: str, obstacle: CommandError) -> CommandError:
        """Remove the object this command wrote at ``key``; the error to raise for ``obstacle``."""
        try:
            self.store.delete(key, if_match=etag)
        except PreconditionFailed:
            pass  # another writer has changed it since: it is theirs now
        except StorageError:
            return StorageError(
                f"{obstacle.message} The file written while this was checked could not be removed "
                f"again; delete {path.text}."
            )
        return obstacle

    def _put_new(self, key: str, body: bytes, origin: MemoryPath | None = None) -> str | None:
        """Write ``body`` at ``key`` only if no object is there; its ETag, or None if one is.

        With ``origin``, the object's metadata carries that path's fingerprint (see ``_holds``).
        """
        metadata = None if origin is None else {ORIGIN_METADATA: self._cipher.fingerprint(origin.canonical)}
        for attempt in range(EDIT_ATTEMPTS):
            try:
                return self.store.put(key, body, if_none_match=True, metadata=metadata)
            except PreconditionFailed as lost:
                return self._landed(key, body) if lost.after_retry else None
            except ConditionalConflict:
                _backoff(attempt)
        raise StorageError(
            "Error: S3 kept reporting conflicting writes at this path; nothing was changed. Try again."
        )

    def _landed(self, key: str, body: bytes) -> str | None:
        """The ETag of the object at ``key`` if it is exactly ``body``: our own write, whose answer was
        lost and whose retry then lost to it. Every sealed body is unique (fresh salt and nonce), so
        equal bytes prove it."""
        stored = self.store.get(key, max_bytes=len(body))
        return stored.etag if stored is not None and stored.body == body else None

    def _screen(self, path: MemoryPath, text: str) -> str:
        return text if self.content_guard is None else self.content_guard.screen(path.text, text)

    def _current_usage(self) -> tuple[int, int]:
        if self._usage is None or self._usage[0] <= time.monotonic():
            sizes = [
                size for page in self.store.pages(self.layout.memories_prefix) for _key, size in page.objects
            ]
            total = sum(plaintext_size(size) for size in sizes)
            expires = time.monotonic() + (self.quota.refresh_seconds if self.quota else 0.0)
            self._usage = (expires, total, len(sizes))
        return self._usage[1], self._usage[2]

    def _within_quota(self, path: MemoryPath, added_bytes: int, added_files: int) -> None:
        """Refuse a write that would pass the user's quota; nothing is changed."""
        if self.quota is None:
            return
        used_bytes, used_files = self._current_usage()
        limit = self.quota
        if limit.max_files is not None and added_files and used_files + added_files > limit.max_files:
            raise CommandError(
                f"Error: Cannot write {path.text}: the memory quota allows {limit.max_files:,} files and "
                f"{used_files:,} exist. Delete or merge files first; nothing was changed."
            )
        if limit.max_bytes is not None and added_bytes > 0 and used_bytes + added_bytes > limit.max_bytes:
            raise CommandError(
                f"Error: Cannot write {path.text}: the memory quota allows {limit.max_bytes:,} bytes, "
                f"{used_bytes:,} are used and this write adds {added_bytes:,}. Nothing was changed."
            )

    def _used(self, added_bytes: int, added_files: int) -> None:
        if self._usage is not None:
            expires, used_bytes, used_files = self._usage
            self._usage = (expires, used_bytes + added_bytes, used_files + added_files)

    def create(self, path: MemoryPath, file_text: str) -> str:
        file_text = self._screen(path, file_text)
        body = self._encode(path, file_text)

        def refusal(reason: str) -> CommandError:
            return Unsettled(f"Error: Cannot create {path.text}: {reason}.")

        self._require_file_path(path, refusal)
        self._within_quota(path, len(body) - OVERHEAD, 1)
        if not self._write_new_file(path, body, refusal, refusal(f"{path.canonical} is a directory")):
            raise Unsettled(f"Error: File {path.text} already exists")
        self._used(len(body) - OVERHEAD, 1)
        self._directories.add(path.ancestors())
        return f"File created successfully at: {path.text}"

    def _holds(self, path: MemoryPath, text: str, origin: MemoryPath) -> bool:
        """True if the file at ``path`` is ``text`` copied from ``origin``: a retried copy that landed."""
        stored = self.store.get(self.layout.file_key(path), max_bytes=self.max_file_bytes + 4096)
        if stored is None or stored.metadata.get(ORIGIN_METADATA) != self._cipher.fingerprint(
            origin.canonical
        ):
            return False
        return self._decode(path, stored.body) == text

    def _edit(self, path: MemoryPath, missing: str, change: Callable[[str], tuple[str, str]]) -> str:
        """Read-modify-write with ``IfMatch``, retried with jitter when another writer wins."""
        for attempt in range(EDIT_ATTEMPTS):
            found = None if path.is_root else self._read(path)
            if found is None:
                raise Unsettled(missing)
            content, etag = found
            edited, answer = change(content)
            body = self._encode(path, edited)
            growth = len(body) - OVERHEAD - len(content.encode("utf-8"))
            self._within_quota(path, growth, 0)
            try:
                self.store.put(self.layout.file_key(path), body, if_match=etag)
            except PreconditionFailed as lost:
                if not (lost.after_retry and self._landed(self.layout.file_key(path), body)):
                    _backoff(attempt)
                    continue
            except ConditionalConflict:
                _backoff(attempt)
                continue
            self._used(growth, 0)
            return answer
        raise StorageError(
            f"Error: {path.text} kept changing under concurrent edits; the edit was not applied. Try again."
        )

    def str_replace(self, path: MemoryPath, old_str: str, new_str: str) -> str:
        screened = self._screen(path, new_str)
        return self._edit(
            path,
            f"Error: The path {path.text} does not exist. Please provide a valid path.",
            lambda content: replace_unique(path.text, content, old_str, screened),
        )

    def insert(self, path: MemoryPath, insert_line: int, insert_text: str) -> str:
        insert_text = self._screen(path, insert_text)
        return self._edit(
            path,
            f"Error: The path {path.text} does not exist",
            lambda content: (
                insert_at(path.text, content, insert_line, insert_text),
                f"The file {path.text} has been edited.",
            ),
        )

    def _delete_objects(self, items: Sequence[tuple[str, str | None]]) -> list[str]:
        """Delete in parallel batches of 1,000 (each key only if its ETag, when given, still matches).

        Returns the keys kept because they changed after being read.
        """
        self._usage = None
        kept: list[str] = []
        batches = [items[start : start + DELETE_BATCH] for start in range(0, len(items), DELETE_BATCH)]
        _parallel(lambda batch: kept.extend(self.store.delete_batch(batch)), batches)
        return kept

    def _file_or_keys(self, path: MemoryPath, probe: Callable[[], _T | None]) -> tuple[_T | None, list[str]]:
        """What is at ``path``: ``probe``'s answer for a file, else the keys below it (both empty: nothing).

        A path last seen as a directory is listed first (objects below it prove it is no file);
        any other is probed first.
        """
        if path in self._directories:
            keys = self._keys_below(path)
            return (None, keys) if keys else (probe(), [])
        found = probe()
        return (found, []) if found is not None else (None, self._keys_below(path))

    def delete(self, path: MemoryPath) -> str:
        if path.is_root:
            raise CommandError("Error: Cannot delete the /memories directory itself")
        done = f"Successfully deleted {path.text}"
        key = self.layout.file_key(path)

        def probe() -> bool | None:
            return self.store.exists(key) or None

        pending = _side(self._pending_jobs)
        is_file, keys = self._file_or_keys(path, probe)
        if self._finish_jobs(pending.result(), Job("delete", path.canonical, None, ())) is not None:
            return done
        if pending.result():
            is_file, keys = self._file_or_keys(path, probe)
        if is_file:
            self.store.delete(key)
            self._usage = None
            return done
        if not keys:
            raise CommandError(f"Error: The path {path.text} does not exist")
        self._directories.forget(path)
        self._run_job(Job("delete", path.canonical, None, tuple(keys)))
        return done

    def rename(self, old: MemoryPath, new: MemoryPath) -> str:
        if old.is_root:
            raise CommandError("Error: Cannot rename the /memories directory itself")
        exists = CommandError(f"Error: The destination {new.text} already exists")
        if new.is_root:
            raise exists
        done = f"Successfully renamed {old.text} to {new.text}"
        pending = _side(self._pending_jobs)
        survey = self._destination_survey(old, new)
        found, keys = self._file_or_keys(old, partial(self._read, old))
        kept = self._finish_jobs(pending.result(), Job("rename", old.canonical, new.canonical, ()))
        if kept is not None or pending.result():
            if survey is not None:
                survey.abandon()
            if kept is not None:
                return self._renamed(done, kept)
            # finished jobs may have moved either path: look again
            survey = self._destination_survey(old, new)
            found, keys = self._file_or_keys(old, partial(self._read, old))
        if found is not None:
            return self._rename_file(old, new, found, exists, survey)
        if not keys or survey is None:
            if survey is not None:
                survey.abandon()
            if not keys:
                raise CommandError(f"Error: The path {old.text} does not exist")
            raise CommandError(f"Error: Cannot move {old.text} into itself ({new.text})")
        survey.count_a_file_as_occupying()
        return self._rename_directory(old, new, keys, exists, survey)

    def _destination_survey(self, old: MemoryPath, new: MemoryPath) -> _Survey | None:
        """The checks of a rename's destination, started before the source is known to be a file or
        a directory (None when ``new`` lies within ``old``: refused either way). A file already at
        ``new`` is asked for only when ``old`` was last seen as a directory; for a file, the
        conditional write answers that."""
        if new.is_within(old):
            return None
        return _Survey(self.store, self.layout, new, file_occupies=old in self._directories)

    @staticmethod
    def _renamed(done: str, kept: list[str]) -> str:
        if not kept:
            return done
        raise CommandError(
            f"Error: {done.replace('Successfully renamed', 'Renamed')}, except {len(kept)} file(s) that "
            f"changed during the rename and were left at their old paths: {', '.join(sorted(kept))}"
        )

    def _destination_refusal(self, new: MemoryPath) -> Callable[[str], CommandError]:
        def refusal(reason: str) -> CommandError:
            return CommandError(f"Error: Cannot rename to {new.text}: {reason}.")

        return refusal

    def _rename_file(
        self,
        old: MemoryPath,
        new: MemoryPath,
        found: tuple[str, str],
        exists: CommandError,
        survey: _Survey | None,
    ) -> str:
        if new.segments == old.segments:
            raise exists
        if new.is_within(old):
            raise CommandError(
                f"Error: Cannot rename to {new.text}: {old.canonical} is a file, not a directory."
            )
        content, etag = found
        body = self._encode(new, content)
        refusal = self._destination_refusal(new)
        self._require_file_path(new, refusal)
        if not self._write_new_file(
            new, body, refusal, exists, origin=old, survey=survey
        ) and not self._holds(new, content, old):
            raise exists
        self._directories.add(new.ancestors())
        try:
            self.store.delete(self.layout.file_key(old), if_match=etag)
        except PreconditionFailed:
            return self._renamed(f"Successfully renamed {old.text} to {new.text}", [old.canonical])
        return f"Successfully renamed {old.text} to {new.text}"

    def _rename_directory(
        self,
        old: MemoryPath,
        new: MemoryPath,
        keys: list[str],
        exists: CommandError,
        survey: _Survey,
    ) -> str:
        try:
            for key in keys:
                source = self.layout.path_of_key(key)
                if source is None:
                    raise StorageError(
                        f"Error: {old.text} holds an object whose key is not a valid memory path; nothing was moved."
                    )
                self.layout.file_key(new.joined(source.relative_to(old)))
        except CommandError:
            survey.abandon()
            raise
        obstacle = survey.obstacle(self._destination_refusal(new), exists)
        if obstacle is not None:
            raise obstacle
        self._directories.forget(old)
        kept = self._run_job(Job("rename", old.canonical, new.canonical, tuple(keys)))
        self._directories.add([new, *new.ancestors()])
        return self._renamed(f"Successfully renamed {old.text} to {new.text}", kept)

    # -- jobs -------------------------------------------------------------------------------

    def _run_job(self, job: Job) -> list[str]:
        """Record ``job``, then run it to the end; returns the paths kept because they changed meanwhile.

        A rename reads its sources while the record is written; nothing changes before it is stored.
        """
        recorded = _side(partial(self._record, job))
        try:
            return self._finish(job, recorded.result)
        except BaseException:
            _quietly(recorded)
            raise

    def _record(self, job: Job) -> None:
        record = self._cipher.seal(job.record_path, job.encode())
        if self._put_new(self.layout.key_of_internal(job.name), record) is None:
            logger.info("s3memory: job %s is already recorded; finishing it here too", job.name)

    def _pending_jobs(self) -> list[Job]:
        """The jobs recorded for this user and not yet finished."""
        prefix = self.layout.key_of_internal(JOB_PREFIX)
        return self._load_jobs([key for page in self.store.pages(prefix) for key, _size in page.objects])

    def _load_jobs(self, keys: list[str]) -> list[Job]:
        """The jobs recorded at ``keys`` (job record keys); records gone or failing authentication are skipped."""
        jobs: list[Job] = []
        for key in keys:
            name = key[len(self.layout.internal_prefix) :]
            stored = self.store.get(key, max_bytes=JOB_RECORD_MAX_BYTES)
            if stored is None:
                continue
            try:
                job = Job.decode(self._cipher.open(RECORD_PATH_PREFIX + name, stored.body))
            except IntegrityError:
                logger.warning("s3memory: ignoring a job record that failed authentication")
                continue
            if job.name == name:
                jobs.append(job)
        return jobs

    def finish_pending_jobs(self) -> bool:
        """Finish every unfinished job of this user (roll forward); True if there were any."""
        jobs = self._pending_jobs()
        self._finish_jobs(jobs, None)
        return bool(jobs)

    def _finish_jobs(self, jobs: list[Job], command: Job | None) -> list[str] | None:
        """Finish ``jobs``; if one was ``command`` itself (a retry), the paths it kept, else None."""
        result: list[str] | None = None
        for job in jobs:
            kept = self._finish(job)
            if command is not None and job.name == command.name:
                result = kept
        return result

    def _job_sources(self, job: Job) -> list[MemoryPath]:
        old = memory_path(job.old)
        sources = [self.layout.path_of_key(key) for key in job.keys]
        if any(source is None or not source.is_within(old) or source == old for source in sources):
            raise IntegrityError("Error: A job record names objects outside its directory; it was not run.")
        return [source for source in sources if source is not None]

    def _finish(self, job: Job, before_changes: Callable[[], object] = lambda: None) -> list[str]:
        """Run a recorded job to the end, idempotently; returns the paths kept because they changed.

        ``before_changes`` is called (from any thread) before each first change: it returns once
        the job's record is stored, or raises.
        """
        sources = self._job_sources(job)
        if job.kind == "delete":
            before_changes()
            kept = self._delete_objects([(key, None) for key in job.keys])
        else:
            kept = self._move(sources, memory_path(job.old), memory_path(job.new or ""), before_changes)
        before_changes()
        self.store.delete(self.layout.key_of_internal(job.name))
        return [found.canonical for key in kept if (found := self.layout.path_of_key(key)) is not None]

    def _move(
        self,
        sources: list[MemoryPath],
        old: MemoryPath,
        new: MemoryPath,
        before_changes: Callable[[], object],
    ) -> list[str]:
        """Copy every source below ``new``, then delete the sources whose copy is written."""
        copied: dict[str, str] = {}
        conflicts: list[str] = []

        def copy(source: MemoryPath) -> None:
            found = self._read(source)
            if found is None:
                return
            content, etag = found
            target = new.joined(source.relative_to(old))
            before_changes()
            if self._put_new(
                self.layout.file_key(target), self._encode(target, content), origin=source
            ) is not None or self._holds(target, content, source):
                copied[self.layout.file_key(source)] = etag
            else:
                conflicts.append(self.layout.file_key(source))

        _parallel(copy, sources)
        return conflicts + self._delete_objects(list(copied.items()))

    def clear_all(self) -> str:
        """Delete every memory file of this user, in batches (pending jobs are finished first)."""
        self.finish_pending_jobs()
        self._directories.forget(ROOT)
        keys = [key for page in self.store.pages(self.layout.memories_prefix) for key, _size in page.objects]
        self._delete_objects([(key, None) for key in keys])
        return "All memory cleared"
