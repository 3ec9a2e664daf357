"""A store: a key prefix in a bucket, served in one storage format, resolved once and lazily.

A ``Store`` is what the tool, the Lambda runtime and the operator's commands serve memory from: the
bucket (``storage.bucket.Bucket``), the key prefix, the store's identity (``store_keys.store_identity``), the
key provider, and the storage format and weak-server settings. Building one sends no request. The
first command that needs it resolves it, once for the ``Store`` and thread-safely: the format the
store is served in (``formats.choice``), in format 2 its store key (``store_keys``) and whether it is
marked as holding no format-1 files (``formats.upgrade``), and the ``conditions.Gate`` that from then on
decides which conditions go to the server (learned from ``server_checks`` on the first conditional
request). A failure there is the first command's failure; a request that could not be sent names
the bucket and the endpoint.

What a process learns of a store lasts the process and is shared by every ``Store`` of the same
bucket, endpoint, prefix and identity (a tool per user, an operator's memories): the format
``auto`` found (when sure), the mark, and the users known to have no format-1 files. What the
server enforces is kept by ``server_checks`` and the store key by ``store_keys``, per key provider.
``forget_stores`` forgets all of it: a new process's view (tests, whose buckets are new).

A store is not its bucket: ``storage.bucket.Bucket`` sends the requests and knows nothing of
prefixes, formats or keys. Throughout the package, what holds a ``Bucket`` is named ``bucket`` and
what holds a ``Store`` is named ``store``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict, TypeVar, Unpack

from s3memory.core.paths import DEFAULT_PREFIX, KeyLayout
from s3memory.crypto import KeyOwner, KeyProvider
from s3memory.errors import RequestFailed
from s3memory.formats.choice import AUTO_FORMAT, StorageFormat, checked_format, look
from s3memory.formats.store_keys import NONE_MISSING, Missing, store_identity, store_key, stored_store_key
from s3memory.formats.strategy import Format, numbered
from s3memory.formats.upgrade import SettledUsers, fetch_mark, mark_migrated, migrated
from s3memory.storage import server_checks
from s3memory.storage.bucket import Bucket
from s3memory.storage.concurrency import quietly, side
from s3memory.storage.conditions import REFUSE, Enforced, Gate, WeakServer, checked_weak_server

__all__ = ["DEFAULT_PREFIX", "Resolution", "Store", "StoreOptions", "forget_stores", "reaching"]


class StoreOptions(TypedDict, total=False):
    """The options of a store, each declared here once: ``Store(bucket, key_provider, **options)``,
    and (``memory.MemoryOptions``, which holds them) of ``S3Memory`` over a bucket and the SDK
    adapters. Their defaults are ``Store``'s."""

    prefix: str
    """The key prefix of the user namespaces (default ``DEFAULT_PREFIX``)."""
    storage_format: StorageFormat
    """1, 2 or ``auto`` (default: found in the store, ``formats/choice.py``)."""
    store_id: str | None
    """Format 2: the store's id, bound into every object (default None: the bucket's name)."""
    weak_server: WeakServer
    """On a server that ignores PutObject or DeleteObject conditions: ``refuse`` (default) or
    ``single-writer`` (``storage/conditions.py``)."""


def refuse_unknown(options: Mapping[str, object], known: frozenset[str], taker: str) -> None:
    """The ``TypeError`` Python raises for a keyword a function does not take, for one that takes
    ``**options`` of a ``TypedDict`` (whose keys ``known`` are; Python does not check them)."""
    for name in options:
        if name not in known:
            raise TypeError(f"{taker}() got an unexpected keyword argument {name!r}")


@dataclass(frozen=True)
class Resolution:
    """What a store was resolved to: the format it is served in (its strategy, ``formats.strategy``) and,
    in format 2, its store key (format 1: None)."""

    format: Format
    key: bytes | None = None

    @property
    def storage_format(self) -> int:
        """The number of the format the store is served in."""
        return self.format.storage_format


@dataclass
class _Facts:
    """What this process learned of one store, shared by every ``Store`` of it."""

    served: int | None = None
    """The format ``auto`` found, once it was sure (None: not looked, or not sure)."""
    marked: bool | None = None
    """Whether the store is marked as holding no format-1 files (None: not asked yet)."""
    settled: SettledUsers = field(default_factory=SettledUsers)
    """Users known to have no format-1 files (``formats.upgrade.Upgrade``)."""


_facts: dict[tuple[str, str, str], _Facts] = {}
_lock = threading.Lock()


def _facts_of(bucket: Bucket, prefix: str, identity: str) -> _Facts:
    with _lock:
        return _facts.setdefault((bucket.where, prefix, identity), _Facts())


def forget_stores() -> None:
    """Forget what this process learned of every store and its server: ``Store`` objects built
    from now on resolve as in a new process (those built before keep what they resolved)."""
    with _lock:
        _facts.clear()
    server_checks.forget()


class Store:
    """Memory's store: a key ``prefix`` in ``bucket``, named ``store_id`` (by default the bucket's
    name), its keys from ``key_provider``, served in ``storage_format`` (``auto``: found in the
    store), on a server that ignores conditions as ``weak_server`` says. Built without a request;
    ``resolve`` finds the rest on first need."""

    def __init__(
        self,
        bucket: Bucket,
        key_provider: KeyProvider,
        **options: Unpack[StoreOptions],
    ) -> None:
        refuse_unknown(options, StoreOptions.__optional_keys__, "Store")
        if not isinstance(bucket, Bucket):
            raise ValueError("bucket must be a Bucket (s3memory.Bucket)")
        if not isinstance(key_provider, KeyProvider):
            raise ValueError("key_provider must be a KMSKeyProvider or LocalKeyProvider")
        self.bucket = bucket
        self.key_provider = key_provider
        self.prefix = prefix = options.get("prefix", DEFAULT_PREFIX)
        self.setting = checked_format(options.get("storage_format", AUTO_FORMAT))
        """The storage format setting: 1, 2 or ``auto``."""
        self.store_id = store_id = options.get("store_id")
        """The store's id (None: the bucket's name), bound into every format-2 object."""
        self.identity = store_identity(store_id or bucket.bucket, prefix)
        self.weak_server = checked_weak_server(options.get("weak_server", REFUSE))
        self._facts = _facts_of(bucket, prefix, self.identity)
        self._lock = threading.Lock()
        self._resolution: Resolution | None = None
        self._found: int | None = None

    @property
    def options(self) -> StoreOptions:
        """What the store was built with, every option given: ``Store(bucket, key_provider,
        **store.options)`` is a store of the same place, identity, format setting and mode."""
        return {
            "prefix": self.prefix,
            "storage_format": self.setting,
            "store_id": self.store_id,
            "weak_server": self.weak_server,
        }

    @property
    def settled(self) -> SettledUsers:
        """The users this process knows to have no format-1 files in the store."""
        return self._facts.settled

    @property
    def marked(self) -> bool:
        """Whether the store is marked as holding no format-1 files, as this process knows it now
        (resolved first): found once on resolving, and set by ``mark_migrated``, for every memory
        of the store in the process, those built before included."""
        self.resolve()
        return bool(self._facts.marked)

    def mark_migrated(self) -> None:
        """Format 2: mark the store as holding no format-1 files left (``s3memory migrate``, once
        every user moved), so no memory of it in this process looks for a user's format-1 files again."""
        key = self.resolve().key
        if key is None:
            raise ValueError("a store served in format 1 is never marked migrated")
        mark_migrated(self.bucket, self.prefix, self.identity, key)
        self._facts.marked = True

    def resolve(self) -> Resolution:
        """The store resolved (on the first call; later calls send nothing): the format it is
        served in (``auto``: found in the store, probing a new store's server), and in format 2
        its store key, made on the store's first use, and its mark. A request that could not be
        sent raises ``RequestFailed`` naming the bucket and the endpoint."""
        with self._lock:
            if self._resolution is None:
                self._resolution = reaching(self.bucket, self._resolved)
            return self._resolution

    def found_format(self) -> int:
        """The format the store is served in, for what only reads (found on the first call): never
        probes the server or writes. Where a new store's server was never probed, format 2 for now
        (``resolve`` then decides, probing it)."""
        with self._lock:
            if self._resolution is not None:
                return self._resolution.storage_format
            if self._found is None:
                self._found = reaching(self.bucket, lambda: self._served(self._recorded)[0])
            return self._found

    def placement(self, user_id: str) -> tuple[KeyLayout, KeyOwner]:
        """Where ``user_id``'s objects live and whose data keys seal them, as the format the store
        is served in places them (resolved first; ``Format.placement``)."""
        resolution = self.resolve()
        return resolution.format.placement(self.prefix, self.identity, resolution.key, user_id)

    def stored_key(self) -> bytes | None:
        """Format 2: the store key if one is stored, else None (never made here)."""
        if self._resolution is not None and self._resolution.key is not None:
            return self._resolution.key
        return stored_store_key(self.bucket, self.prefix, self.identity, self.key_provider)

    def _resolved(self) -> Resolution:
        served, missing = self._served(self._enforced)
        served_format = numbered(served)
        if not served_format.has_store_identity:
            return Resolution(served_format)
        # the mark's key needs no store key: its GET goes alongside the store key's
        mark = None
        if self._facts.marked is None and not missing.mark:
            mark = side(lambda: fetch_mark(self.bucket, self.prefix))
        try:
            key, missing = store_key(
                self.bucket,
                self.prefix,
                self.identity,
                self.key_provider,
                missing,
                None if mark is None else lambda: mark.result() is not None,
            )
        except BaseException:
            quietly(mark)
            raise
        if self._facts.marked is None:
            stored_mark = None if mark is None else mark.result
            self._facts.marked = migrated(self.bucket, self.prefix, self.identity, key, missing, stored_mark)
        else:  # another memory of the store found it meanwhile: no read is left in flight
            quietly(mark)
        return Resolution(served_format, key)

    def _served(self, checks: Callable[[], Enforced | None]) -> tuple[int, Missing]:
        """The format the store is served in, and what finding it found missing; the bucket's gate
        set for it. Under ``auto``, found once per process where it is sure."""
        served: int
        if self.setting != AUTO_FORMAT:
            served, missing = self.setting, NONE_MISSING
        elif self._facts.served is not None:
            served, missing = self._facts.served, NONE_MISSING
        else:
            served, missing, sure = look(self.bucket, self.prefix, self.identity, self.key_provider, checks)
            if sure:
                self._facts.served = served
        strategy = numbered(served)
        self.bucket.gate = Gate(
            self._enforced, strategy.server_needs, strategy.name, self.bucket.where, self.weak_server
        )
        return served, missing

    def _enforced(self) -> Enforced:
        return server_checks.known(self.bucket, self.prefix, self.identity, self.key_provider)

    def _recorded(self) -> Enforced | None:
        return server_checks.recorded(self.bucket, self.prefix, self.identity, self.key_provider)


_T = TypeVar("_T")


def reaching(bucket: Bucket, first: Callable[[], _T]) -> _T:
    """``first()``, the first requests to a store: a request that failed (``RequestFailed``: the
    endpoint down, the bucket missing, access denied) names the bucket and the endpoint."""
    try:
        return first()
    except RequestFailed as failure:
        if failure.explained:  # it names the bucket, the endpoint and the fix already
            raise
        detail = failure.message.removeprefix("Error: ")
        if failure.code in _UNREACHED:
            message = f"Error: Could not reach the S3 server of {bucket.where}: {detail}"
        else:
            message = f"Error: The store in {bucket.where} could not be opened: {detail}"
        raise type(failure)(message, failure.code, where=failure.where) from None


_UNREACHED = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
        "ProxyConnectionError",
        "SSLError",
    }
)
"""botocore's failures to reach the server (its exceptions' class names, ``errors.aws_error_code``)."""
