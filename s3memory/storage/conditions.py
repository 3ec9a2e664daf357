"""The request conditions s3memory relies on, and the gate that lets a ``Bucket`` send a condition
only where the server enforces it. Pure, no I/O.

What a server enforces is found by ``server_checks`` (a probe, once per store, recorded sealed).
A format is served only where every condition it needs holds (each format names them:
``Format.server_needs``, ``formats/strategy.py``). Where a fast request lacks its
condition but a slower one has it, the store takes the slower plan with the same guarantee: a
``DeleteObjects`` whose per-key ETags the server ignores becomes one conditional ``DeleteObject``
per key. Where ``PutObject`` or ``DeleteObject`` conditions are missing, nothing is served unless
the operator opts into the single-writer mode (``S3MEMORY_WEAK_SERVER=single-writer``): the store
then looks before each conditional write, which is right for one writer at a time and racy for
more. The protocol and its invariants are ``docs/servers.md``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from s3memory.errors import StorageError

PUT_IF_NONE_MATCH = "PutObject If-None-Match"
PUT_IF_MATCH = "PutObject If-Match"
COPY_IF_NONE_MATCH = "CopyObject If-None-Match"
COPY_SOURCE_IF_MATCH = "CopyObject x-amz-copy-source-if-match"
COPY_REPLACES_METADATA = "CopyObject MetadataDirective REPLACE"
DELETE_IF_MATCH = "DeleteObject If-Match"
BATCH_DELETE_ETAGS = "DeleteObjects per-key ETag"

CONDITIONS = (
    PUT_IF_NONE_MATCH,
    PUT_IF_MATCH,
    COPY_IF_NONE_MATCH,
    COPY_SOURCE_IF_MATCH,
    COPY_REPLACES_METADATA,
    DELETE_IF_MATCH,
    BATCH_DELETE_ETAGS,
)
"""Every condition the probe checks, in the order it checks them."""

LOOKED_FOR_IN_SINGLE_WRITER_MODE = frozenset({PUT_IF_NONE_MATCH, PUT_IF_MATCH, DELETE_IF_MATCH})
"""Conditions the single-writer mode replaces by a look (a ``HeadObject``) before the request."""

REFUSE: Literal["refuse"] = "refuse"
SINGLE_WRITER: Literal["single-writer"] = "single-writer"
WeakServer: TypeAlias = Literal["refuse", "single-writer"]
"""What to do on a server that ignores PutObject or DeleteObject conditions: refuse to serve (the
default), or serve one writer at a time, looking before each conditional write."""


def checked_weak_server(value: object) -> WeakServer:
    """``value`` as a weak-server setting; ``ValueError`` for anything but the two it may be."""
    if value == REFUSE:
        return REFUSE
    if value == SINGLE_WRITER:
        return SINGLE_WRITER
    raise ValueError(f'weak_server must be "{REFUSE}" or "{SINGLE_WRITER}"')


@dataclass(frozen=True)
class Enforced:
    """What a server was found to enforce: the conditions that ``held``, and for each that did not,
    what the server answered instead (an HTTP status and what it did)."""

    held: frozenset[str]
    answers: Mapping[str, str] = field(default_factory=dict)

    def missing(self, needed: frozenset[str]) -> list[str]:
        """The conditions of ``needed`` that do not hold, in the probe's order."""
        return [condition for condition in CONDITIONS if condition in needed and condition not in self.held]


class ServerRefused(StorageError):
    """The S3 server does not enforce a condition the store's format needs; nothing was written."""


def refusal(enforced: Enforced, needed_by: str, missing: list[str], where: str) -> ServerRefused:
    """The refusal to serve what needs ``missing`` (``needed_by``: a storage format, by name) at
    ``where`` (the bucket and endpoint): names each condition, what the server answered, and the
    fixes."""
    found = "; ".join(
        f"{condition} (it answered: {enforced.answers.get(condition, 'not checked')})"
        for condition in missing
    )
    if any(condition not in LOOKED_FOR_IN_SINGLE_WRITER_MODE for condition in missing):
        fix = (
            "Use an S3 server that enforces these conditions (AWS S3 does), or set "
            "S3MEMORY_STORAGE_FORMAT=auto (or 1) for a new store, which serves storage format 1 where "
            "copies are not conditional."
        )
    else:
        fix = (
            "Use an S3 server that enforces conditional writes (AWS S3 does); or, only if one process at a "
            "time writes to this store, set S3MEMORY_WEAK_SERVER=single-writer, which looks before each "
            "write instead (docs/servers.md)."
        )
    return ServerRefused(
        f"Error: The S3 server of {where} does not enforce {found}, which {needed_by} needs to keep every "
        f"write it acknowledges. Nothing was written. {fix}"
    )


class Gate:
    """What one store may send: learns once, on its first conditional request, what the server
    enforces (``learn``), refuses there and then if a condition the format it serves needs
    (``needed``, by ``needed_by``: the format's name) does not hold, and afterwards answers for each
    condition whether to send it or take the slower plan."""

    def __init__(
        self,
        learn: Callable[[], Enforced],
        needed: frozenset[str],
        needed_by: str,
        where: str,
        weak_server: WeakServer = REFUSE,
    ) -> None:
        self._learn = learn
        self._needed = needed
        self._needed_by = needed_by
        self._where = where
        self._weak = weak_server
        self._enforced: Enforced | None = None
        self._lock = threading.Lock()

    def enforced(self) -> Enforced:
        """What the server enforces (learned on the first call); ``ServerRefused`` if the format
        cannot be served there."""
        with self._lock:
            if self._enforced is None:
                enforced = self._learn()
                missing = enforced.missing(self._needed)
                if self._weak == SINGLE_WRITER:
                    missing = [c for c in missing if c not in LOOKED_FOR_IN_SINGLE_WRITER_MODE]
                if missing:
                    raise refusal(enforced, self._needed_by, missing, self._where)
                self._enforced = enforced
            return self._enforced

    def sends(self, condition: str) -> bool:
        """True if ``condition`` goes to the server as is; False where the store takes the slower
        plan (a look before the request, or a conditional request per key)."""
        return condition in self.enforced().held
