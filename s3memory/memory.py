"""The six memory commands on S3, for one user. No ``anthropic`` import: Lambda runs this directly.

Each command returns the contract's answer text or raises ``CommandError`` with the contract's
refusal. Paths are validated before any request; edits are conditional writes retried on races.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .commands import Create, Delete, Insert, StrReplace, View, parse_command
from .crypto import DataKeySource, KeyProvider, ObjectCipher, plaintext_size
from .errors import CommandError, IntegrityError, StorageError
from .listing import Tree, is_hidden, render_listing
from .paths import KeyLayout, MemoryPath, validate_namespace
from .store import DELETE_BATCH, ConditionalConflict, PreconditionFailed, S3Store
from .text import insert_at, render_file, replace_unique

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
EDIT_ATTEMPTS = 32
PARALLEL_REQUESTS = 16
_T = TypeVar("_T")


def _backoff(attempt: int) -> None:
    """Sleep a jittered, growing, bounded time before retrying a lost conditional write."""
    time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))


def _parallel(function: Callable[[_T], None], items: Sequence[_T]) -> None:
    """Run ``function`` over ``items`` with bounded parallelism; the first failure is raised."""
    if len(items) <= 1:
        for item in items:
            function(item)
        return
    with ThreadPoolExecutor(max_workers=min(PARALLEL_REQUESTS, len(items))) as pool:
        for future in [pool.submit(function, item) for item in items]:
            future.result()


def _batches(keys: Sequence[str]) -> list[Sequence[str]]:
    return [keys[start : start + DELETE_BATCH] for start in range(0, len(keys), DELETE_BATCH)]


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
    ) -> None:
        if not isinstance(key_provider, KeyProvider):
            raise ValueError("key_provider must be a KMSKeyProvider or LocalKeyProvider")
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ValueError("max_file_bytes must be a positive integer")
        self.layout = KeyLayout(validate_namespace(user_id, prefix))
        self.store = store
        self.max_file_bytes = max_file_bytes
        self._cipher = ObjectCipher(user_id, DataKeySource(key_provider, user_id, _Vault(store, self.layout)))

    # -- dispatch ---------------------------------------------------------------------------

    def run(self, raw_input: object) -> str:
        """Run one raw ``tool_use`` input and return the answer text."""
        command = parse_command(raw_input)
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
        plaintext = self._cipher.open(path.canonical, stored.body)
        try:
            return plaintext.decode("utf-8"), stored.etag
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

    def _is_directory(self, path: MemoryPath) -> bool:
        return self.store.any_below(self.layout.directory_prefix(path))

    def _keys_below(self, path: MemoryPath) -> list[str]:
        return [
            key
            for page in self.store.pages(self.layout.directory_prefix(path))
            for key, _size in page.objects
        ]

    def view(self, path: MemoryPath, view_range: list[int] | None = None) -> str:
        if not path.is_root:
            found = self._read(path)
            if found is not None:
                return render_file(path.text, found[0], view_range)
        tree = self._tree(path)
        if tree is None:
            raise CommandError(f"The path {path.text} does not exist. Please provide a valid path.")
        return render_listing(path.text, path.canonical, tree)

    def _tree(self, directory: MemoryPath) -> Tree | None:
        """The directory's two visible levels, or None if nothing lies below it.

        One listing page usually holds the whole directory. When it does not, the levels are
        listed with a delimiter, so the cost never grows with what lies below level 2.
        """
        prefix = self.layout.directory_prefix(directory)
        first = next(self.store.pages(prefix))
        if not first.objects:
            return None if not directory.is_root else Tree()
        tree = Tree()
        if not first.truncated:
            for key, size in first.objects:
                found = self.layout.path_of_key(key)
                if found is not None:
                    tree.add_file(found.relative_to(directory), plaintext_size(size))
            return tree
        self._add_level(tree, directory, ())
        for name in [name for name in tree.root.children if tree.root.children[name].is_directory]:
            self._add_level(tree, directory, (name,))
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

    def _check_file_destination(
        self, path: MemoryPath, refusal: Callable[[str], CommandError], occupied: CommandError
    ) -> str:
        """The key for a new file at ``path``; ``occupied`` if a directory is there, refused if an ancestor is a file."""
        if path.is_root or path.text.endswith("/"):
            raise refusal("a file path must name a file below /memories, without a trailing '/'")
        key = self.layout.file_key(path)
        if self._is_directory(path):
            raise occupied
        for ancestor in path.ancestors():
            if self.store.exists(self.layout.file_key(ancestor)):
                raise refusal(f"{ancestor.canonical} is a file, not a directory")
        return key

    def _put_new(self, key: str, body: bytes) -> bool:
        """Write ``body`` at ``key`` only if no object is there; False if one is."""
        for attempt in range(EDIT_ATTEMPTS):
            try:
                self.store.put(key, body, if_none_match=True)
                return True
            except PreconditionFailed:
                return False
            except ConditionalConflict:
                _backoff(attempt)
        raise StorageError(
            "Error: S3 kept reporting conflicting writes at this path; nothing was changed. Try again."
        )

    def create(self, path: MemoryPath, file_text: str) -> str:
        body = self._encode(path, file_text)

        def refusal(reason: str) -> CommandError:
            return CommandError(f"Error: Cannot create {path.text}: {reason}.")

        key = self._check_file_destination(path, refusal, refusal(f"{path.canonical} is a directory"))
        if not self._put_new(key, body):
            raise CommandError(f"Error: File {path.text} already exists")
        return f"File created successfully at: {path.text}"

    def _edit(self, path: MemoryPath, missing: str, change: Callable[[str], tuple[str, str]]) -> str:
        """Read-modify-write with ``IfMatch``, retried with jitter when another writer wins."""
        for attempt in range(EDIT_ATTEMPTS):
            found = None if path.is_root else self._read(path)
            if found is None:
                raise CommandError(missing)
            content, etag = found
            edited, answer = change(content)
            try:
                self.store.put(self.layout.file_key(path), self._encode(path, edited), if_match=etag)
                return answer
            except (PreconditionFailed, ConditionalConflict):
                _backoff(attempt)
        raise StorageError(
            f"Error: {path.text} kept changing under concurrent edits; the edit was not applied. Try again."
        )

    def str_replace(self, path: MemoryPath, old_str: str, new_str: str) -> str:
        return self._edit(
            path,
            f"Error: The path {path.text} does not exist. Please provide a valid path.",
            lambda content: replace_unique(path.text, content, old_str, new_str),
        )

    def insert(self, path: MemoryPath, insert_line: int, insert_text: str) -> str:
        return self._edit(
            path,
            f"Error: The path {path.text} does not exist",
            lambda content: (
                insert_at(path.text, content, insert_line, insert_text),
                f"The file {path.text} has been edited.",
            ),
        )

    def _delete_keys(self, keys: Sequence[str]) -> None:
        _parallel(self.store.delete_batch, _batches(keys))

    def delete(self, path: MemoryPath) -> str:
        if path.is_root:
            raise CommandError("Error: Cannot delete the /memories directory itself")
        key = self.layout.file_key(path)
        if self.store.exists(key):
            self.store.delete(key)
            return f"Successfully deleted {path.text}"
        keys = self._keys_below(path)
        if not keys:
            raise CommandError(f"Error: The path {path.text} does not exist")
        self._delete_keys(keys)
        return f"Successfully deleted {path.text}"

    def rename(self, old: MemoryPath, new: MemoryPath) -> str:
        if old.is_root:
            raise CommandError("Error: Cannot rename the /memories directory itself")
        missing = CommandError(f"Error: The path {old.text} does not exist")
        exists = CommandError(f"Error: The destination {new.text} already exists")
        if new.is_root:
            raise exists
        found = self._read(old)
        if found is not None:
            return self._rename_file(old, new, found[0], exists)
        keys = self._keys_below(old)
        if not keys:
            raise missing
        if new.is_within(old):
            raise CommandError(f"Error: Cannot move {old.text} into itself ({new.text})")
        return self._rename_directory(old, new, keys, exists)

    def _destination_refusal(self, new: MemoryPath) -> Callable[[str], CommandError]:
        def refusal(reason: str) -> CommandError:
            return CommandError(f"Error: Cannot rename to {new.text}: {reason}.")

        return refusal

    def _rename_file(self, old: MemoryPath, new: MemoryPath, content: str, exists: CommandError) -> str:
        if new.segments == old.segments:
            raise exists
        if new.is_within(old):
            raise CommandError(
                f"Error: Cannot rename to {new.text}: {old.canonical} is a file, not a directory."
            )
        body = self._encode(new, content)
        key = self._check_file_destination(new, self._destination_refusal(new), exists)
        if not self._put_new(key, body):
            raise exists
        self.store.delete(self.layout.file_key(old))
        return f"Successfully renamed {old.text} to {new.text}"

    def _rename_directory(
        self, old: MemoryPath, new: MemoryPath, keys: list[str], exists: CommandError
    ) -> str:
        moves: list[tuple[MemoryPath, MemoryPath]] = []
        for key in keys:
            source = self.layout.path_of_key(key)
            if source is None:
                raise StorageError(
                    f"Error: {old.text} holds an object whose key is not a valid memory path; nothing was moved."
                )
            target = new.joined(source.relative_to(old))
            self.layout.file_key(target)
            moves.append((source, target))
        if self.store.exists(self.layout.file_key(new)) or self._is_directory(new):
            raise exists
        refusal = self._destination_refusal(new)
        for ancestor in new.ancestors():
            if self.store.exists(self.layout.file_key(ancestor)):
                raise refusal(f"{ancestor.canonical} is a file, not a directory")

        def copy(move: tuple[MemoryPath, MemoryPath]) -> None:
            source, target = move
            found = self._read(source)
            if found is None:
                raise StorageError(f"Error: {source.text} vanished during the rename; nothing was deleted.")
            if not self._put_new(self.layout.file_key(target), self._encode(target, found[0])):
                raise CommandError(f"Error: The destination {target.text} appeared during the rename.")

        _parallel(copy, moves)
        self._delete_keys(keys)
        return f"Successfully renamed {old.text} to {new.text}"

    def clear_all(self) -> str:
        """Delete every memory file of this user, in batches."""
        keys = [key for page in self.store.pages(self.layout.memories_prefix) for key, _size in page.objects]
        self._delete_keys(keys)
        return "All memory cleared"
