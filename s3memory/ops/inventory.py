"""What a store holds, for an operator: its users, its shared memories, a user's files and one file's
text (``s3memory users``, ``shared``, ``ls``), and those listings as text lines and JSON.

On format 2 the users are the namespace tokens that decrypt under the store key, and every path is
found by decrypting its key.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from s3memory.core.paths import (
    SHARED_PRINCIPAL,
    MemoryPath,
    UserId,
    memory_path,
    owner_of,
    validate_namespace,
)
from s3memory.crypto import plaintext_size
from s3memory.errors import CommandError, StorageError, escaped
from s3memory.formats.names import user_of_namespace
from s3memory.ops.context import StoreContext, no_such_memory
from s3memory.placed import PlacedMemory


@dataclass(frozen=True)
class StoredFile:
    """A user's memory file: its path and plaintext size."""

    path: str
    size: int


@dataclass(frozen=True)
class UserListing:
    """``s3memory users``: the user ids in the store."""

    users: list[str]
    complete = True

    def lines(self) -> list[str]:
        return [escaped(user) for user in self.users] or ["(no users)"]

    def document(self) -> dict[str, object]:
        return {"users": self.users}

    def counts(self) -> dict[str, int]:
        return {"users": len(self.users)}


@dataclass(frozen=True)
class SharedListing:
    """``s3memory shared``: each shared memory in the store (``shared/<name>``) and its namespace token."""

    namespaces: dict[str, str]
    complete = True

    def lines(self) -> list[str]:
        found = self.namespaces.items()
        return [f"{escaped(name)}  {escaped(token)}" for name, token in found] or ["(no shared memories)"]

    def document(self) -> dict[str, object]:
        return {"shared": [{"memory": name, "namespace": token} for name, token in self.namespaces.items()]}

    def counts(self) -> dict[str, int]:
        return {"shared": len(self.namespaces)}


@dataclass(frozen=True)
class FileListing:
    """``s3memory ls``: a user's files at or below ``path``, each with its size."""

    path: str
    files: list[StoredFile]
    complete = True

    def lines(self) -> list[str]:
        return [f"{file.size:>10,}  {escaped(file.path)}" for file in self.files] or [
            f"(no files at {escaped(self.path)})"
        ]

    def document(self) -> dict[str, object]:
        return {"files": [{"path": file.path, "size": file.size} for file in self.files]}

    def counts(self) -> dict[str, int]:
        return {"files": len(self.files)}


_PAST_NAMESPACE = "/\U0010ffff"
"""After a namespace's name, a key past every key s3memory writes below it (``internal/``,
``memories/``), in S3's order of UTF-8 bytes and in SeaweedFS's, which lists a folder's entries
before its next sibling's (``ann/`` before ``ann-b/``)."""


class InventoryTask(StoreContext):
    """What the store holds: users, shared memories, a user's files, one file's text."""

    def users(self) -> Iterator[str]:
        """The user ids that have objects in the store (``_namespaces_in_use``: a folder with nothing
        in it is no user), in the order of their UTF-8 bytes (format 1: the server's key order, which
        is S3's; format 2: every namespace decrypted first, then sorted). Names that are no user
        id a memory could have, and format-2 namespaces that do not decrypt under the store key
        (planted by a bucket writer), are left out; a reserved id (``paths.RESERVED_USER_PREFIX``,
        a memory made before it was reserved) is listed, to be moved. A name where another store lies
        is listed (format 1: telling would cost a request per user), and every command on it refuses."""
        self.check_nesting()
        if not self.format.names_by_store_key:
            yield from self._plain_users()
            return
        yield from sorted(name for name in self._namespaces() if usable_user_id(name, self.prefix))

    def shared_memories(self) -> Iterator[str]:
        """The shared memories that have objects in the store, each as ``shared/<name>`` (what the
        operator commands take), in byte order; none on format 1."""
        yield from self.shared_namespaces()

    def shared_namespaces(self) -> dict[str, str]:
        """Each shared memory that has objects in the store (``shared/<name>``, in byte order) and the
        token of its namespace: what its keys and its data keys' KMS encryption context
        (``s3memory:user``, in CloudTrail) name it by. None on format 1."""
        if not self.format.serves_shared_memories:
            return {}
        self.check_nesting()
        found = self._namespaces()
        shared = [name for name in found if name.startswith(SHARED_PRINCIPAL) and _usable_shared(name)]
        return {name: found[name] for name in sorted(shared)}

    def _namespaces(self) -> dict[str, str]:
        """Format 2: what every namespace of the store decrypts to under the store key, and its
        token (none without a store key; namespaces that do not decrypt left out)."""
        key = self.store_key()
        if key is None:
            return {}
        found: dict[str, str] = {}
        for token in self._namespaces_in_use():
            name = user_of_namespace(key, token)
            if name is not None:
                found[name] = token
        return found

    def _plain_users(self) -> Iterator[str]:
        for user_id in self._namespaces_in_use():
            if usable_user_id(user_id, self.prefix):
                yield user_id

    def _namespaces_in_use(self) -> Iterator[str]:
        """The name of each namespace at the prefix that holds an object, in the server's key order.
        Listed without delimiter, a page of 1,000 keys at a time, each page starting past the
        namespace of the last key before it (``_PAST_NAMESPACE``), or past that key itself where a
        bucket writer planted keys beyond the mark: at most one request per namespace named and one
        per 1,000 objects. A delimited listing would cost one per 1,000 namespaces, but names a
        folder with nothing in it, which SeaweedFS lists once its objects are deleted (an erased
        user). A server that answers the same page again (it ignores ``StartAfter``) is refused."""
        start: str | None = None
        previous: str | None = None
        while True:
            page = next(self.bucket.pages(self.prefix, start_after=start))
            for listed in page.objects:
                name, slash, _ = listed.key[len(self.prefix) :].partition("/")
                if slash and name != previous:
                    yield name
                    previous = name
            if not page.truncated or not page.objects:
                return
            last = page.objects[-1].key
            name, slash, _ = last[len(self.prefix) :].partition("/")
            after = max(self.prefix + name + (_PAST_NAMESPACE if slash else ""), last)
            if start is not None and after <= start:
                raise StorageError(
                    f"Error: The S3 server of {self.bucket.where} listed the same keys again from a later "
                    "start (it ignores ListObjectsV2's StartAfter), so the users cannot be listed to the "
                    "end. Use an S3 server that honours it (docs/servers.md); nothing was changed."
                )
            start = after

    def files(self, user_id: str, path: str = "/memories") -> list[StoredFile]:
        """The user's files at or below ``path``, in path order (format 1: key order);
        ``CommandError`` if none is there and the user does not exist (``check_exists``)."""
        memory = self.existing_placed(user_id)
        below = memory_path(path)
        if memory is None:
            raise CommandError(no_such_memory(user_id))
        layout = memory.layout
        found: list[StoredFile] = []
        for page in self.bucket.pages(layout.directory_prefix(below)):
            for listed in page.objects:
                file = layout.path_of_key(listed.key)
                if file is not None:
                    found.append(StoredFile(file.text, plaintext_size(listed.size)))
        if not found and not below.is_root:
            exact = memory.files.read(below)
            if exact is not None:
                found.append(StoredFile(below.text, len(exact.text.encode("utf-8"))))
        if not found:
            self.check_exists(user_id, memory)
        return sorted(found, key=lambda file: file.path)

    def read(self, user_id: str, path: str) -> str:
        """The text of one file; ``CommandError`` when there is none, saying so of the user when the
        user does not exist (``check_exists``)."""
        target = memory_path(path)
        memory = self.existing_placed(user_id)
        found = None if memory is None or target.is_root else memory.files.read(target)
        if found is not None:
            return found.text
        if memory is None or target.is_root or not self._holds_files_below(memory, target):
            self.check_exists(user_id, memory)
            if not target.is_root:
                raise CommandError(f"Error: The file {path} does not exist.")
        raise CommandError(f"Error: {path} is a directory, not a file: `s3memory ls` lists what it holds.")

    def _holds_files_below(self, memory: PlacedMemory, directory: MemoryPath) -> bool:
        """True if any file lies below ``directory`` (one listing of one key)."""
        prefix = memory.layout.directory_prefix(directory)
        page = next(self.bucket.pages(prefix, max_keys=1), None)
        return page is not None and bool(page.objects)


def _usable_shared(principal: str) -> bool:
    try:
        owner_of(principal)
    except ValueError:
        return False
    return True


def usable_user_id(user_id: str, prefix: str) -> bool:
    """True if ``user_id`` is an id a memory could have (``validate_namespace``), a reserved one too:
    a memory made under it before it was reserved is listed, so that the operator can move it."""
    try:
        validate_namespace(UserId.named_by_operator(user_id), prefix)
    except ValueError:
        return False
    return True
