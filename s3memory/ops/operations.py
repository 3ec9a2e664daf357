"""What an operator does to the memory in a store: list its users, show a user's files, and move a
user's memory to and from a folder in the layout of the SDK's ``BetaLocalFilesystemMemoryTool``.
The ``s3memory`` command is a thin layer over this.

Both storage formats are served (``docs/format-v2.md``). On format 2 ("private names") the users
are the namespace tokens that decrypt under the store key, and every path is found by decrypting
its key; a store with no store key yet holds no memory, and what only reads answers as for an
empty store, writing nothing (not even a store key).

Export and import can be run again after a crash or an interruption: a file already in place with
the same bytes is counted ``unchanged``, so a rerun finishes the work and changes nothing twice.
Import sends every file through the memory tool's own ``create``, so it refuses what the tool would
refuse (bad paths, files over the size limit, secrets per the content guard, a quota) and never
overwrites unless asked.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from s3memory.core.job_records import JOB_PREFIX, QUARANTINE_PREFIX
from s3memory.core.last_used import ACCESS_NAME
from s3memory.core.moves import MARK_PREFIX
from s3memory.core.paths import (
    RESERVED_USER_PREFIX,
    SHARED_PRINCIPAL,
    KeyLayout,
    MemoryPath,
    UserId,
    check_owner,
    check_user_id,
    memory_path,
    owner_of,
    validate_namespace,
)
from s3memory.crypto import KeyProvider, KMSKeyProvider, plaintext_size
from s3memory.errors import CommandError, StorageError, shown, with_fix
from s3memory.formats.keyvault import KEYS_PREFIX, key_version
from s3memory.formats.names import user_of_namespace
from s3memory.formats.strategy import Format, numbered
from s3memory.formats.upgrade import born_in_format_2
from s3memory.memory import MemoryOptions, S3Memory
from s3memory.ops import folders, writes
from s3memory.ops.progress import SILENT, Progress
from s3memory.placed import PlacedMemory
from s3memory.settings import Limits, Settings
from s3memory.storage.bucket import AccessDenied, Bucket, Listed, Version
from s3memory.storage.conditions import (
    FORMAT_NEEDS,
    LOOKED_FOR_IN_SINGLE_WRITER_MODE,
    SINGLE_WRITER,
    Enforced,
)
from s3memory.storage.nesting import check_no_store_at, check_not_nested
from s3memory.storage.server_checks import probe_again
from s3memory.store import Store, StoreOptions, reaching, refuse_unknown

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


@dataclass(frozen=True)
class StoredFile:
    """A user's memory file: its path and plaintext size."""

    path: str
    size: int


@dataclass
class Transfer:
    """What an export or import did, file by file."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Files left alone, with why: they differ (no ``overwrite``), (export) a link, a directory or
    another file is in the way, or (import) an export's temporary file (``folders.TEMPORARY``)."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Files refused, with the message: by the memory tool (import), or (export) stored files that
    cannot be read, failing authentication, and files whose name the local file system refuses."""

    def counts(self) -> dict[str, int]:
        return {
            "written": len(self.written),
            "unchanged": len(self.unchanged),
            "skipped": len(self.skipped),
            "refused": len(self.refused),
        }

    @property
    def complete(self) -> bool:
        return not self.skipped and not self.refused


_PAST_NAMESPACE = "/\U0010ffff"
"""After a namespace's name, a key past every key s3memory writes below it (``internal/``,
``memories/``), in S3's order of UTF-8 bytes and in SeaweedFS's, which lists a folder's entries
before its next sibling's (``ann/`` before ``ann-b/``)."""
STUCK_AFTER_SECONDS = 15 * 60
"""A job record this old was left by a process that died: any command of the user would finish it."""
RESERVED_MEMORY = (
    f"a user id beginning with '{RESERVED_USER_PREFIX}', reserved: no memory tool, function or MCP server "
    "serves it; move this memory to a new id (export it, import it under the new id, erase this one: "
    'docs/operations.md, "Reserved user ids")'
)
"""Why ``verify`` reports a memory whose user id is reserved, and what the operator does."""


@dataclass(frozen=True)
class Finding:
    """One object ``verify`` has something to say about: its kind, the object's key and why."""

    kind: str
    key: str
    detail: str
    problem: bool = True


@dataclass
class Verification:
    """What ``verify`` found for one user: every object checked, and the findings."""

    user_id: str
    checked: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.problem]


@dataclass(frozen=True)
class ServerCheck:
    """What ``verify`` found of the server: what it enforces now (None: not checked, this role may
    not write the probe's objects), what the store's record said before (None: no record), and
    what the store's format needs that it does not enforce."""

    enforced: Enforced | None
    recorded: Enforced | None
    missing: list[str]

    @property
    def changed(self) -> bool:
        """True if the server no longer enforces what the record said (a record written since)."""
        return None not in (self.recorded, self.enforced) and self.recorded != self.enforced


@dataclass
class Erasure:
    """What ``erase`` removed (or, in a dry run, would remove), and what is left after it."""

    user_id: str
    key_versions: int = 0
    other_versions: int = 0
    left: int = 0
    shredded: bool = False
    """Copies of the user's objects kept elsewhere can no longer be decrypted (the data keys existed
    only wrapped, and every version of them is gone); False with a local master key."""


class Operations:
    """The memory of every user in one store (bucket and prefix, in its storage format), for an
    operator."""

    def __init__(
        self,
        bucket: Bucket,
        key_provider: KeyProvider,
        *,
        limits: Limits | None = None,
        actor: str | None = None,
        **options: Unpack[StoreOptions],
    ) -> None:
        refuse_unknown(options, StoreOptions.__optional_keys__, "Operations")
        store = Store(bucket, key_provider, **options)
        self._serve(store, limits, actor)

    @classmethod
    def over(cls, store: Store, *, limits: Limits | None = None, actor: str | None = None) -> Operations:
        """The operations of the store ``store`` (one ``Settings.make_store`` built)."""
        operations = cls.__new__(cls)
        operations._serve(store, limits, actor)
        return operations

    def _serve(self, store: Store, limits: Limits | None, actor: str | None) -> None:
        self.store = store
        """The store (``store.Store``): built without a request, resolved on first need."""
        self.bucket = store.bucket
        """The store's bucket (``Bucket``)."""
        self.key_provider = store.key_provider
        self.prefix = store.prefix
        self.limits = limits or Limits()
        self.actor = actor
        """Named as the author of what restore and import write."""
        self.weak_server = store.weak_server
        self.store_id = store.store_id
        """Format 2: the store's id (None: the bucket's name), bound into every object."""
        self.store_identity = store.identity
        """The store's identity (``store_keys.store_identity``), whatever its format."""
        self._outside_other_stores = False

    @property
    def storage_format(self) -> int:
        """The format the store is served in (``auto``: found in the store, ``formats/choice.py``, on
        first need; for a new store whose server was never probed, format 2 until a write finds
        out). Never probes the server or writes."""
        return self.store.found_format()

    @property
    def format(self) -> Format:
        """The strategy of the format the store is served in (``formats.strategy``), found as
        ``storage_format`` is."""
        return numbered(self.storage_format)

    @property
    def _identity(self) -> str | None:
        """The store's identity where its format binds it into objects (format 2); else None."""
        return self.store_identity if self.format.has_store_identity else None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, actor: str | None = None) -> Operations:
        """Built from the ``S3MEMORY_*`` settings of ``environ`` (this process's when not given), as
        the command line builds them."""
        return cls.from_settings(Settings.from_env(environ), actor=actor)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        s3_client: S3Client | None = None,
        *,
        key_provider: KeyProvider | None = None,
        actor: str | None = None,
    ) -> Operations:
        """Built from the same settings as the Lambda handlers (``S3MEMORY_*``): the store
        (``Settings.make_store``) and the limits (``key_provider``: one already built from them,
        to share its cache)."""
        return cls.over(settings.make_store(s3_client, key_provider), limits=settings.limits, actor=actor)

    def check_server(self) -> ServerCheck:
        """Probe the server again (``verify``: a dozen requests on objects of the probe's own, which
        it removes, and of those earlier probes cut short left) and compare with the store's record,
        which is replaced where they differ. A role that may not write (an auditor's) checks nothing."""
        try:
            found, before = probe_again(
                self.bucket, self.prefix, self.store_identity, self.key_provider, time.time()
            )
        except AccessDenied:
            return ServerCheck(None, None, [])
        missing = found.missing(FORMAT_NEEDS[self.storage_format])
        if self.weak_server == SINGLE_WRITER:
            missing = [
                condition for condition in missing if condition not in LOOKED_FOR_IN_SINGLE_WRITER_MODE
            ]
        return ServerCheck(found, before, missing)

    def memory_options(self) -> MemoryOptions:
        """The options of an ``S3Memory`` of this store over its bucket: where the memory lives, in
        which format (the store's options, the format's setting among them: a memory serves ``auto``
        as found here, but decides a new store's format itself, probing its server, where this found
        it only for now), and the limits (as ``Settings.memory_options`` gives them)."""
        return {**self.store.options, **self.limits.memory_options()}

    def check_nesting(self) -> None:
        """Refuse (``nesting.NestedStore``) a store whose prefix lies inside another store's; looked
        at once (one listing per level of the prefix) before the first command that acts on users."""
        if not self._outside_other_stores:
            reaching(self.bucket, lambda: check_not_nested(self.bucket, self.prefix))
            self._outside_other_stores = True

    def users(self) -> Iterator[str]:
        """The user ids that have objects in the store (``_namespaces_in_use``: a folder with nothing
        in it is no user), in the order of their UTF-8 bytes (format 1: the server's key order, which
        is S3's; format 2: every namespace decrypted first, then sorted). Names that are no user
        id a memory could have, and format-2 namespaces that do not decrypt under the store key
        (planted by a bucket writer), are left out; a reserved id (``paths.RESERVED_USER_PREFIX``,
        a memory made before it was reserved) is listed, to be moved. A name where another store lies
        is listed (format 1: telling would cost a request per user), and every command on it refuses."""
        self.check_nesting()
        if self._identity is None:
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
        if self._identity is None:
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

    def store_key(self) -> bytes | None:
        """Format 2: the store key, or None while the store has none (never made here)."""
        return self.store.stored_key()

    def memory(self, user_id: str) -> S3Memory:
        """The user's memory, with the store's format and limits (``ValueError`` for an unusable
        user id; ``NestedStore`` where this store lies inside another's, or another store lies at
        the user's namespace). On a format-2 store without a store key, this makes one (see
        ``existing_memory``)."""
        self.check_nesting()
        options: MemoryOptions = {**self.limits.memory_options(), "actor": self.actor}
        memory = S3Memory(self.store, owner_of(user_id), **options)
        check_no_store_at(self.bucket, memory.placed.layout.namespace)
        return memory

    def existing_memory(self, user_id: str) -> S3Memory | None:
        """The user's memory, or None on a format-2 store that has no store key yet, where no user
        has any object: what only reads or deletes takes None for an empty memory and writes
        nothing. ``ValueError`` for an unusable user id, either way."""
        check_owner(user_id, self.prefix)
        self.check_nesting()
        if self._identity is not None and self.store_key() is None:
            return None
        return self.memory(user_id)

    def check_exists(
        self, user_id: str, memory: S3Memory | None = None, *, through_time: bool = False
    ) -> None:
        """Refuse (``CommandError``, naming ``s3memory users`` or ``s3memory shared``) a user or shared
        memory that does not exist: no object lies below its namespace (``through_time``, for
        history and restore: no version and no delete marker either), as ``users`` and ``shared``
        tell. One listing of one key, never a write; a folder with nothing in it (SeaweedFS lists
        one once its objects are deleted) is nothing. ``memory``: the user's, if built already (else
        ``existing_memory``: on a format-2 store without a store key, no memory exists)."""
        if memory is None:
            memory = self.existing_memory(user_id)
        if memory is not None:
            namespace = memory.placed.layout.namespace
            if through_time and any(next(self.bucket.versions(namespace, max_keys=1))):
                return
            if not through_time and self.bucket.any_below(namespace):
                return
        raise CommandError(no_such_memory(user_id))

    def files(self, user_id: str, path: str = "/memories") -> list[StoredFile]:
        """The user's files at or below ``path``, in path order (format 1: key order);
        ``CommandError`` if none is there and the user does not exist (``check_exists``)."""
        memory = self.existing_memory(user_id)
        below = memory_path(path)
        if memory is None:
            raise CommandError(no_such_memory(user_id))
        layout = memory.placed.layout
        found: list[StoredFile] = []
        for page in self.bucket.pages(layout.directory_prefix(below)):
            for listed in page.objects:
                file = layout.path_of_key(listed.key)
                if file is not None:
                    found.append(StoredFile(file.text, plaintext_size(listed.size)))
        if not found and not below.is_root:
            exact = memory.placed.files.read(below)
            if exact is not None:
                found.append(StoredFile(below.text, len(exact.text.encode("utf-8"))))
        if not found:
            self.check_exists(user_id, memory)
        return sorted(found, key=lambda file: file.path)

    def read(self, user_id: str, path: str) -> str:
        """The text of one file; ``CommandError`` when there is none, saying so of the user when the
        user does not exist (``check_exists``)."""
        target = memory_path(path)
        memory = self.existing_memory(user_id)
        found = None if memory is None or target.is_root else memory.placed.files.read(target)
        if found is not None:
            return found.text
        if memory is None or target.is_root or not self._holds_files_below(memory.placed, target):
            self.check_exists(user_id, memory)
            if not target.is_root:
                raise CommandError(f"Error: The file {path} does not exist.")
        raise CommandError(f"Error: {path} is a directory, not a file: `s3memory ls` lists what it holds.")

    def _holds_files_below(self, memory: PlacedMemory, directory: MemoryPath) -> bool:
        """True if any file lies below ``directory`` (one listing of one key)."""
        prefix = memory.layout.directory_prefix(directory)
        page = next(self.bucket.pages(prefix, max_keys=1), None)
        return page is not None and bool(page.objects)

    def verify(self, user_id: str, *, now: float | None = None, progress: Progress = SILENT) -> Verification:
        """Read and authenticate every object of the user's namespace, changing nothing.

        Problems: a memory file that fails authentication (tampered, truncated, copied from another
        user or path, wrongly keyed), a key that maps to no memory path, a job record that can never
        run or is stuck (older than ``STUCK_AFTER_SECONDS``), a record set aside in quarantine, a
        wrapped data key that cannot be unwrapped, and any other object in the namespace. A job in
        progress and a wrapped key older than the current one (a rotation not yet finished) are
        reported, not counted as problems.

        Format 2: a key whose tokens do not decrypt to a path is one that maps to no memory path,
        and a file whose place record fails (placed for another path, user or store, or altered)
        fails authentication like a tampered body.
        """
        memory = self.existing_memory(user_id)
        report = Verification(user_id)
        if memory is None:
            return report
        layout = memory.placed.layout
        clock = time.time() if now is None else now
        owner = owner_of(user_id)
        key_versions: dict[int, str] = {}
        for page in self.bucket.pages(layout.namespace):
            for listed in page.objects:
                report.checked += 1
                progress.advance()
                finding = self._check(memory.placed, listed, clock)
                if finding is not None:
                    report.findings.append(finding)
                version = key_version(listed.key.removeprefix(layout.internal_prefix))
                if version is not None and listed.key.startswith(layout.internal_prefix):
                    key_versions[version] = listed.key
        report.findings += [
            Finding(
                "old key",
                key,
                "an earlier data key version, kept while objects or their earlier versions need it "
                "(`s3memory rotate` retires it once nothing does)",
                problem=False,
            )
            for version, key in sorted(key_versions.items())
            if version < max(key_versions)
        ]
        if report.checked and isinstance(owner, UserId) and owner.reserved:
            report.findings.append(Finding("reserved id", layout.namespace, RESERVED_MEMORY))
        return report

    def _check(self, memory: PlacedMemory, listed: Listed, now: float) -> Finding | None:
        layout, key = memory.layout, listed.key
        if key.startswith(layout.memories_prefix):
            path = layout.path_of_key(key)
            if path is None:
                return Finding("foreign", key, "a key that maps to no memory path")
            try:
                memory.files.read(path)
            except CommandError as error:
                return Finding("unreadable", key, error.message)
            return None
        name = key[len(layout.internal_prefix) :] if key.startswith(layout.internal_prefix) else None
        if name is None:
            return Finding("foreign", key, "an object outside memories/ and internal/")
        if name.startswith(JOB_PREFIX):
            judged = memory.jobs.judge(listed)
            if judged.problem is not None:
                return Finding("bad job record", key, f"a job record that can never run: {judged.problem}")
            if judged.job is None:
                return None  # finished while listed
            age = now - judged.job.created / 1000
            if age > STUCK_AFTER_SECONDS:
                return Finding("stuck job", key, f"a {judged.job.kind} left {age / 60:,.0f} minutes ago")
            return Finding("pending job", key, f"a {judged.job.kind} in progress", problem=False)
        if name.startswith(QUARANTINE_PREFIX):
            return Finding("quarantined", key, "a job record set aside: planted, tampered or replayed")
        if name.startswith(MARK_PREFIX):
            return None  # a relied-on mark (docs/jobs.md): removed once it can no longer matter
        if name == ACCESS_NAME:
            try:
                memory.access.read()
            except CommandError as error:
                return Finding("unreadable access record", key, error.message)
            return None
        version = key_version(name)
        if version is None:
            return Finding("foreign", key, "an internal object s3memory does not write")
        try:
            memory.files.cipher.check_key(version)
        except CommandError as error:
            return Finding("unreadable key", key, error.message)
        return None

    def erase(self, user_id: str, *, dry_run: bool = False, progress: Progress = SILENT) -> Erasure:
        """Remove every object and every version of the user's folders (``internal/`` and
        ``memories/`` of the user's namespace: all s3memory writes there), wrapped data keys first:
        from the first batch on, what is left (here, in a backup or a replica) cannot be decrypted
        without a key that is gone. Run it again to finish an erase that was interrupted; the user
        must not be served meanwhile (a write is refused while files remain without a key, and
        starts a new key once none remains). ``left`` counts what a last listing still found.
        Anything else in the namespace (another store's prefix may lie below it) is not the user's
        and stays.

        Format 2: the namespace is the user's token prefix, and the data keys are wrapped under the
        store identity and that token, so the content of copies kept elsewhere is shredded as in
        format 1; their names (the user's token and the paths' tokens) still decrypt with the store
        key, which every user shares and which stays. What format 1 left of the user (files not moved
        yet, its wrapped keys, earlier versions) goes too, unless the store's mark authenticates as
        born in format 2."""
        memory = self.existing_memory(user_id)
        erasure = Erasure(user_id, shredded=isinstance(self.key_provider, KMSKeyProvider))
        layouts: list[KeyLayout] = [] if memory is None else [memory.placed.layout]
        owner = owner_of(user_id)
        if (
            self._identity is not None
            and not born_in_format_2(self.bucket, self.prefix, self._identity, self.store_key())
            and isinstance(owner, UserId)
        ):  # and what format 1 left of a user: files not moved
            # yet, keys, history (its listing names the user)
            layouts.append(KeyLayout(validate_namespace(owner, self.prefix)))
        for layout in layouts:
            prefixes = (layout.internal_prefix, layout.memories_prefix)
            keys = layout.key_of_internal(KEYS_PREFIX)
            for prefix in (keys, *prefixes):
                pages = self.bucket.versions(prefix) if dry_run else self._first_pages(prefix)
                for page in pages:
                    if dry_run and prefix != keys:
                        page = [version for version in page if not version.key.startswith(keys)]
                    if not dry_run:
                        self.bucket.delete_versions(page)  # a page holds at most 1,000: one request
                    progress.advance(len(page))
                    erasure.key_versions += sum(version.key.startswith(keys) for version in page)
                    erasure.other_versions += sum(not version.key.startswith(keys) for version in page)
            if not dry_run:
                erasure.left += sum(len(page) for prefix in prefixes for page in self.bucket.versions(prefix))
        return erasure

    def _first_pages(self, prefix: str) -> Iterator[list[Version]]:
        """The first page of versions below ``prefix``, listed again after each is removed, until
        none is left (a marker of versions just removed is not a safe place to go on from) or the
        same page comes back (its removal did not take; ``left`` will say so)."""
        previous: list[Version] | None = None
        while True:
            page = next(self.bucket.versions(prefix))
            if not page or page == previous:
                return
            yield page
            previous = page

    def export(
        self, user_id: str, base: Path, *, overwrite: bool = False, progress: Progress = SILENT
    ) -> Transfer:
        """Write the user's memory below ``base/memories``, byte for byte, and nowhere else
        (``folders.Target``: no link below ``base`` is followed); what is in the way is left alone
        and reported, and a different local file is left alone unless ``overwrite``. A stored file
        that cannot be read (one failing authentication), and one whose name the local file system
        refuses (too long, not in its encoding), is refused and reported with its fix, and the
        export goes on; a failure of the store ends it. A user who does not exist is refused
        (``check_exists``), an empty memory exports nothing."""
        memory = self.existing_memory(user_id)
        transfer = Transfer()
        if memory is None:
            raise CommandError(no_such_memory(user_id))
        stored_files = self.files(user_id)
        progress.expect(len(stored_files))
        if not stored_files:
            return transfer
        with folders.Target(base) as target:
            for stored in stored_files:
                progress.advance()
                try:
                    found = memory.placed.files.read(memory_path(stored.path))
                    if found is None:
                        continue  # deleted since it was listed
                    written = target.put(stored.path, found.text.encode("utf-8"), overwrite=overwrite)
                except folders.LeftAlone as left:
                    transfer.skipped.append((stored.path, left.reason))
                    continue
                except folders.NameRefused as refused:  # this file's name, not the folder's state
                    transfer.refused.append((stored.path, refused.reason))
                    continue
                except StorageError:
                    raise  # the store's failure, not the file's: every file would meet it
                except CommandError as error:  # this file's: failing authentication, not UTF-8
                    transfer.refused.append((stored.path, with_fix(error)))
                    continue
                (transfer.written if written else transfer.unchanged).append(stored.path)
        return transfer

    def import_folder(
        self,
        user_id: str,
        base: Path,
        *,
        overwrite: bool = False,
        dry_run: bool = False,
        progress: Progress = SILENT,
    ) -> Transfer:
        """Create each file of ``base/memories`` in the user's memory through the tool's ``create``.
        A stored file with other text is left alone unless ``overwrite`` (then replaced in one
        request conditional on what was read, once the text is known to pass every check of
        ``create``: a refused file keeps what was stored, and no moment has it gone). ``dry_run`` checks everything and changes nothing.
        A reserved user id (``paths.RESERVED_USER_PREFIX``) is refused (``ValueError``): import makes
        memories, and none is made under such an id."""
        if isinstance(owner_of(user_id), UserId):
            check_user_id(user_id)
        memory = self.memory(user_id)
        transfer = Transfer()
        planned = (0, 0)
        """What the dry run's earlier files would add to the quota's usage: (bytes, files)."""
        for local in folders.walk(base, memory.placed.files.max_file_bytes):  # one file in memory at a time
            progress.advance()
            if local.problem == folders.TEMPORARY:
                transfer.skipped.append((local.path, local.problem))
                continue
            try:
                target = memory_path(local.path)
                memory.placed.files.check_size(target, local.size)
                text = _text(local)
                found = memory.placed.files.read(target)
                if found is not None and found.text == text:
                    transfer.unchanged.append(local.path)
                    continue
                if found is not None and not overwrite:
                    transfer.skipped.append((local.path, "a file with other text is stored there"))
                    continue
                if dry_run or found is not None:  # what create would refuse, before anything is deleted
                    writes.check_create(memory.placed, target, text, planned, replacing=found is not None)
                if dry_run:
                    planned = (planned[0] + local.size, planned[1] + (found is None))
                    transfer.written.append(local.path)
                    continue
                if found is None:
                    memory.run({"command": "create", "path": local.path, "file_text": text})
                else:  # one conditional write: the stored file is never gone meanwhile
                    memory.answering(functools.partial(writes.overwrite, memory.placed, target, found, text))
                transfer.written.append(local.path)
            except CommandError as error:
                transfer.refused.append((local.path, error.message))
        return transfer


def no_such_memory(user_id: str) -> str:
    """Why a command on ``user_id`` (a user id, or ``shared/<name>``) found no memory, and where the
    operator finds the names there are."""
    if user_id.startswith(SHARED_PRINCIPAL):
        what, listing = f"The shared memory {shown(user_id)}", "`s3memory shared` lists its shared memories"
    else:
        what, listing = f"The user {shown(user_id)}", "`s3memory users` lists its users"
    return f"Error: {what} does not exist in this store: {listing} (--bucket and --prefix choose the store)."


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


def _text(local: folders.LocalFile) -> str:
    """The file's text; ``CommandError`` naming why it has none."""
    if local.data is None:
        raise CommandError(f"Error: {local.path} is {local.problem}; it was not imported.")
    try:
        return local.data.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(
            f"Error: {local.path} is not a valid UTF-8 text file; it was not imported."
        ) from None
