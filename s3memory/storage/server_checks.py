"""What the S3 server of a store enforces: probed once per store, recorded sealed, learned once per
process. The conditions and what each format needs are in ``conditions.py``; the protocol and its
invariants are ``docs/servers.md``.

The probe writes a few objects named ``<prefix>s3memory.probe-<16 hex>-<a|b|c>`` (beside the store
key, outside every user's namespace), each of the size of a sealed memory file and marked as the
probe's by its metadata, sends each condition once where it must be refused and once where it must
pass, and removes them. What it found is kept at ``<prefix>s3memory.server``, sealed with a
key wrapped for this store (by KMS or the local master key, ``SERVER_RECORD_PURPOSE``), so a bucket
writer can neither forge it into a weaker or stronger answer nor move it from another store. A
record that does not open is not trusted: the server is probed again and the record replaced.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import secrets
import struct
import threading
from collections.abc import Callable
from datetime import datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from s3memory.crypto import (
    NONCE_BYTES,
    OVERHEAD,
    SERVER_RECORD_PURPOSE,
    STORE_KEY_MAGIC,
    KeyProvider,
    LocalKeyProvider,
)
from s3memory.errors import (
    ConditionalConflict,
    IntegrityError,
    ObjectTooLarge,
    PreconditionFailed,
    RequestFailed,
    StorageError,
)
from s3memory.storage.bucket import Bucket
from s3memory.storage.conditions import (
    BATCH_DELETE_ETAGS,
    CONDITIONS,
    COPY_IF_NONE_MATCH,
    COPY_REPLACES_METADATA,
    COPY_SOURCE_IF_MATCH,
    DELETE_IF_MATCH,
    PUT_IF_MATCH,
    PUT_IF_NONE_MATCH,
    Enforced,
)
from s3memory.storage.nesting import check_not_nested

SERVER_RECORD_NAME = "s3memory.server"
"""Where, below the store's prefix, the sealed record of what the server enforces lies."""
PROBE_NAME = "s3memory.probe-"
"""The start of the names, below the store's prefix, of the probe's own objects."""
_PROBE_ID_BYTES = 8
_PROBE_OBJECT = re.compile(rf"{re.escape(PROBE_NAME)}(?P<probe>[0-9a-f]{{{2 * _PROBE_ID_BYTES}}})-[abc]")
"""The whole name, below the store's prefix, of a probe object: the probe's id and the object's letter."""
PROBE_BODY_BYTES = OVERHEAD + 256
"""The size of each body the probe writes: a sealed memory file's of 256 bytes, random, so that a
server whose enforcement depends on an object's size or content meets one shaped like a real one."""
RECORD_MAX_BYTES = 8192
RECORD_MAGIC = b"S3MC\x01"
_RECORD_FORMAT = 1
_UNSUPPORTED = frozenset({"NotImplemented", "InvalidArgument", "InvalidRequest", "NotSupported", "501"})
"""Error codes with which a server says it does not take a condition at all: it does not hold."""
_PROBE_METADATA = "s3memory-probe"
"""Metadata of every probe object: the probe's id (the 16 hex digits of its name)."""
_PROBE_COPY_METADATA = "s3memory-probe-copy"
"""Metadata the probe's copies are given in place of their source's (which has none of this name)."""
STALE_PROBE_SECONDS = 2 * 3600
"""A probe object older than this was left by a probe cut short (a probe takes a second; an hour
is added for clocks that disagree): ``verify`` removes it."""
STALE_PROBE_LOOK = 24
"""The stale keys named as a probe's that ``verify``'s clean-up HEADs at most (what eight probes cut
short leave), drawn at random from its one listing page, so that objects named so but never marked
as a probe's cannot keep the same ones from it for ever; the rest goes at a later ``verify``."""

logger = logging.getLogger("s3memory")
_known: dict[tuple[str, str, str], Enforced] = {}
"""What this process learned, by the bucket and endpoint (``Bucket.where``), prefix and identity."""
_lock = threading.Lock()


def known(bucket: Bucket, prefix: str, identity: str, provider: KeyProvider) -> Enforced:
    """What the server of ``bucket`` enforces, for the store ``identity`` at ``prefix``: learned once
    per process, from the store's record (a GetObject and the record key's unwrapping) or, where
    there is none or it does not open, from a probe, then recorded. Before the probe of a store's
    first use, ``NestedStore`` if its prefix lies inside another store's (``nesting``)."""
    found, etag = _recorded(bucket, prefix, identity, provider)
    if found is None:
        check_not_nested(bucket, prefix)  # a store's first use: it must not lie inside another
        found = probe(bucket, prefix)
        _keep(bucket, prefix, identity, provider, found, etag)
        _learn(bucket, prefix, identity, found)
    return found


def probe_again(
    bucket: Bucket, prefix: str, identity: str, provider: KeyProvider, now: float
) -> tuple[Enforced, Enforced | None]:
    """What the server enforces now (a new probe), and what the record said before (None where
    there was none that opened); a record that differs is replaced by what the probe found (the
    server changed: processes that start from now on learn it). Objects that probes cut short
    left (a process that died, a request that failed) are removed once older than
    ``STALE_PROBE_SECONDS`` by ``now``. For ``verify``."""
    _remove_stale_probes(bucket, prefix, now)
    before, etag = _recorded(bucket, prefix, identity, provider, cached=False)
    found = probe(bucket, prefix)
    if before != found:
        _keep(bucket, prefix, identity, provider, found, etag)
    _learn(bucket, prefix, identity, found)
    return found, before


def recorded(bucket: Bucket, prefix: str, identity: str, provider: KeyProvider) -> Enforced | None:
    """What the store's record says the server enforces (learned once per process), or None where
    there is no record that opens: never probes, so what only reads writes nothing."""
    return _recorded(bucket, prefix, identity, provider)[0]


def _recorded(
    bucket: Bucket, prefix: str, identity: str, provider: KeyProvider, *, cached: bool = True
) -> tuple[Enforced | None, str | None]:
    """What this process learned (unless not ``cached``), or what the record says, or None; and the
    stored record's ETag (None where there is none, or nothing was read)."""
    with _lock:
        found = _known.get((bucket.where, prefix, identity)) if cached else None
    if found is not None:
        return found, None
    key = prefix + SERVER_RECORD_NAME
    try:
        stored = bucket.get(key, max_bytes=RECORD_MAX_BYTES)
    except ObjectTooLarge:  # no record s3memory seals is that large: planted
        head = bucket.head(key)
        return _distrusted(None if head is None else head.etag)
    if stored is None:
        return None, None
    try:
        found = open_record(stored.body, identity, provider)
    except (IntegrityError, StorageError):  # forged, or a key service refusing what it cannot unwrap
        return _distrusted(stored.etag)
    _learn(bucket, prefix, identity, found)
    return found, stored.etag


def _distrusted(etag: str | None) -> tuple[None, str | None]:
    """A record that does not open (forged, another store's, altered): not believed; its ETag, so
    that what a new probe finds replaces it."""
    logger.warning("s3memory: the record of what the S3 server enforces did not open; probing again")
    return None, etag


def _learn(bucket: Bucket, prefix: str, identity: str, found: Enforced) -> None:
    with _lock:
        _known[(bucket.where, prefix, identity)] = found


def _keep(
    bucket: Bucket, prefix: str, identity: str, provider: KeyProvider, found: Enforced, replacing: str | None
) -> None:
    """Store the record of ``found``: where there was none, only if none has appeared since; in place
    of one that did not open (its ETag ``replacing``), only if it is still that one; each condition
    sent only where the probe found the server enforces it (else the write is plain: two processes
    recording the same server write the same findings)."""
    raw = Bucket(bucket.client, bucket.bucket)  # not gated: this runs while the gate learns
    body = seal_record(found, identity, provider)
    if_match = replacing if PUT_IF_MATCH in found.held else None
    if_none_match = replacing is None and PUT_IF_NONE_MATCH in found.held
    with contextlib.suppress(PreconditionFailed, ConditionalConflict):  # another process recorded it
        raw.put(prefix + SERVER_RECORD_NAME, body, if_match=if_match, if_none_match=if_none_match)


def seal_record(enforced: Enforced, identity: str, provider: KeyProvider) -> bytes:
    """The record of ``enforced`` for the store ``identity``: a fresh key wrapped for this store and
    purpose, then the findings sealed under it (AES-256-GCM, the head and identity authenticated)."""
    key, wrapped = provider.new_store_key(identity, SERVER_RECORD_PURPOSE)
    body = json.dumps(
        {
            "format": _RECORD_FORMAT,
            "held": sorted(enforced.held),
            "answers": dict(sorted(enforced.answers.items())),
        },
        separators=(",", ":"),
    ).encode("utf-8")
    nonce = os.urandom(NONCE_BYTES)
    head = RECORD_MAGIC + struct.pack(">H", len(wrapped)) + wrapped + nonce
    return head + AESGCM(key).encrypt(nonce, body, head + identity.encode("utf-8"))


def open_record(blob: bytes, identity: str, provider: KeyProvider) -> Enforced:
    """What a record sealed for the store ``identity`` says; ``IntegrityError`` for anything that
    is not such a record (forged, of another store, truncated, or in another format)."""
    refused = IntegrityError("Error: The record of what the S3 server enforces is not one s3memory sealed.")
    start = len(RECORD_MAGIC) + 2
    if not blob.startswith(RECORD_MAGIC) or len(blob) < start:
        raise refused
    (length,) = struct.unpack(">H", blob[len(RECORD_MAGIC) : start])
    wrapped = blob[start : start + length]
    head = blob[: start + length + NONCE_BYTES]
    if len(head) != start + length + NONCE_BYTES:
        raise refused
    key = provider.open_store_key(identity, wrapped, SERVER_RECORD_PURPOSE)
    try:
        body = AESGCM(key).decrypt(head[-NONCE_BYTES:], blob[len(head) :], head + identity.encode("utf-8"))
        fields = json.loads(body.decode("utf-8"))
        held, answers = fields["held"], fields["answers"]
        valid = (
            fields["format"] == _RECORD_FORMAT
            and isinstance(held, list)
            and isinstance(answers, dict)
            and all(condition in CONDITIONS for condition in [*held, *answers])
            and all(isinstance(answer, str) for answer in answers.values())
        )
    except (InvalidTag, UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise refused from None
    if not valid:
        raise refused
    return Enforced(frozenset(held), dict(answers))


def rewrap_record(bucket: Bucket, prefix: str, identity: str, provider: LocalKeyProvider) -> None:
    """A local master key's rotation: seal the store's record again under the current master key if
    a previous one wraps its key, so that dropping the previous key from the settings costs no
    probe. One conditional write; a record that does not open is left to the next first use."""
    stored = bucket.get(prefix + SERVER_RECORD_NAME, max_bytes=RECORD_MAX_BYTES)
    current = STORE_KEY_MAGIC + b"L" + struct.pack(">I", provider.version)
    if stored is None or stored.body[len(RECORD_MAGIC) + 2 :].startswith(current):
        return
    try:
        found = open_record(stored.body, identity, provider)
    except IntegrityError:
        return
    _keep(bucket, prefix, identity, provider, found, stored.etag)


def forget() -> None:
    """Forget what this process learned of every server (a new bucket under an old name, in tests)."""
    with _lock:
        _known.clear()


class _Probe:
    """One probe's objects and findings."""

    def __init__(self, bucket: Bucket, prefix: str) -> None:
        self.bucket = bucket
        self.id = secrets.token_hex(_PROBE_ID_BYTES)
        self.names = f"{prefix}{PROBE_NAME}{self.id}-"
        self.held: set[str] = set()
        self.answers: dict[str, str] = {}

    def key(self, name: str) -> str:
        return self.names + name

    def put(self, key: str, *, if_match: str | None = None, if_none_match: bool = False) -> str:
        """Write a new random body of ``PROBE_BODY_BYTES`` at ``key``, marked as this probe's; its ETag."""
        body = os.urandom(PROBE_BODY_BYTES)
        metadata = {_PROBE_METADATA: self.id}
        return self.bucket.put(key, body, if_match=if_match, if_none_match=if_none_match, metadata=metadata)

    def refused(self, condition: str, request: Callable[[], object], done: str) -> None:
        """Send ``request``, which the server must refuse for ``condition`` (412, or 409); if it
        does not, the condition does not hold, and the server did ``done``."""
        try:
            request()
        except PreconditionFailed as refusal:
            _certain(refusal)
            self.held.add(condition)
            return
        except ConditionalConflict:
            self.held.add(condition)
            return
        except RequestFailed as failure:
            if failure.code not in _UNSUPPORTED:
                raise
            self.answers[condition] = f"{failure.code}: it does not take the condition"
            return
        self.answers[condition] = done

    def passed(self, condition: str, request: Callable[[], str | None]) -> str | None:
        """Send ``request``, which carries ``condition`` met: what it answered (an ETag), or None
        (and the condition does not hold) if the server refuses it anyway."""
        try:
            return request()
        except PreconditionFailed as refusal:
            _certain(refusal)
            self.answers[condition] = "412 where the condition was met"
        except ConditionalConflict:
            raise _cut_short() from None  # another request raced one of the probe's own: no answer
        except RequestFailed as failure:
            if failure.code not in _UNSUPPORTED:
                raise
            self.answers[condition] = f"{failure.code}: it does not take the condition"
        return None


def _cut_short() -> StorageError:
    return StorageError(
        "Error: A request of the check of what the S3 server enforces had no certain answer (botocore "
        "retried it, or it raced); nothing was recorded and nothing else was written. Try again."
    )


def _certain(refusal: PreconditionFailed) -> None:
    """Raise ``_cut_short`` for a refusal that came after botocore retried the request: the first
    try may have landed, and the retry been refused for it, so the refusal tells nothing."""
    if refusal.after_retry:
        raise _cut_short() from None


def probe(bucket: Bucket, prefix: str) -> Enforced:
    """Send each condition of ``CONDITIONS`` to the server where it must be refused (and, for most,
    where it must pass), on objects of the probe's own, and remove them; what held. Twelve requests
    where the server enforces every condition but those of ``PutObject``: 5 PutObject, 3 CopyObject,
    a HeadObject, a DeleteObject and 2 DeleteObjects (one more PutObject where ``DeleteObject``'s
    condition is ignored, one more HeadObject where ``PutObject``'s are)."""
    raw = Bucket(bucket.client, bucket.bucket)  # conditions sent as they are: that is the question
    run = _Probe(raw, prefix)
    a, b, c = run.key("a"), run.key("b"), run.key("c")
    try:
        stale = run.put(a)
        current: str | None = run.put(a)
        replaced = "200, and replaced the object"
        current = run.passed(PUT_IF_MATCH, lambda: run.put(a, if_match=current)) or current
        if PUT_IF_MATCH not in run.answers:
            run.refused(PUT_IF_MATCH, lambda: run.put(a, if_match=stale), replaced)
        run.refused(PUT_IF_NONE_MATCH, lambda: run.put(a, if_none_match=True), replaced)
        if PUT_IF_MATCH in run.answers or PUT_IF_NONE_MATCH in run.answers:
            current = _etag(raw, a)  # a request that should have been refused replaced the object
        _probe_copies(raw, run, a, b, c, str(current), stale=stale)
        run.refused(DELETE_IF_MATCH, lambda: raw.delete(a, if_match=stale), "204, and deleted the object")
        if DELETE_IF_MATCH not in run.held:
            run.put(a)
        if a in raw.delete_batch([(a, stale)]).changed:
            run.held.add(BATCH_DELETE_ETAGS)
        else:
            run.answers[BATCH_DELETE_ETAGS] = "200, and deleted the key"
    finally:
        _remove(raw, [a, b, c])
    return Enforced(frozenset(run.held), run.answers)


def _remove_stale_probes(bucket: Bucket, prefix: str, now: float) -> None:
    """Delete the probe objects directly at ``prefix`` last written more than ``STALE_PROBE_SECONDS``
    before ``now``, each left by a probe cut short. Only objects that are exactly a probe's go: named
    as one in whole (``_PROBE_OBJECT``, listed with a delimiter: nothing below a further '/', where
    a user's objects lie) and marked as that probe's (a HeadObject each, for at most
    ``STALE_PROBE_LOOK`` drawn at random from the stale ones named so on one listing page). A
    younger one may be a running probe's: deleting it would make that probe find less than the
    server enforces."""
    page = next(bucket.pages(prefix + PROBE_NAME, delimiter=True))
    raw = Bucket(bucket.client, bucket.bucket)
    named = [
        (listed.key, probe_id)
        for listed in page.objects
        if (probe_id := _probe_of(prefix, listed.key)) is not None
        and _written_before(listed.modified, now - STALE_PROBE_SECONDS)
    ]
    looked = random.sample(named, min(len(named), STALE_PROBE_LOOK))
    probes = [key for key, probe_id in looked if _marked_as(raw, key, probe_id)]
    if probes:
        _remove(raw, probes)


def _probe_of(prefix: str, key: str) -> str | None:
    """The id of the probe whose object ``key`` is named as, or None for any other key."""
    found = _PROBE_OBJECT.fullmatch(key[len(prefix) :]) if key.startswith(prefix) else None
    return None if found is None else found["probe"]


def _marked_as(raw: Bucket, key: str, probe_id: str) -> bool:
    """True if the object at ``key`` carries the metadata of the probe ``probe_id`` (one HeadObject)."""
    head = raw.head(key)
    return head is not None and head.metadata.get(_PROBE_METADATA) == probe_id


def _written_before(modified: str, moment: float) -> bool:
    """True if a listing's ``LastModified`` (ISO 8601, as S3 sends it) is before ``moment``."""
    try:
        return datetime.fromisoformat(modified).timestamp() < moment
    except ValueError:
        return False


def _remove(raw: Bucket, keys: list[str]) -> None:
    """Delete the probe's objects: in one batch, or, where the server fails it (s3rver answers 500
    to a batch it carried out), one by one."""
    try:
        raw.delete_batch([(key, None) for key in keys])
    except StorageError:
        for key in keys:
            raw.delete(key)


def _probe_copies(raw: Bucket, run: _Probe, a: str, b: str, c: str, current: str, *, stale: str) -> None:
    """The copy conditions: a copy that must pass (to ``b``, with new metadata), then one onto an
    object (``b`` again) and one of a stale source version (to ``c``), which must be refused."""
    metadata = {_PROBE_METADATA: run.id, _PROBE_COPY_METADATA: "1"}  # not the source's
    if not run.passed(
        COPY_SOURCE_IF_MATCH, lambda: raw.copy_new(a, b, source_etag=current, metadata=metadata)
    ):
        run.answers[COPY_IF_NONE_MATCH] = run.answers[COPY_SOURCE_IF_MATCH]
        run.answers[COPY_REPLACES_METADATA] = "not checked: the copy was refused"
        return
    if raw.metadata(b) == metadata:
        run.held.add(COPY_REPLACES_METADATA)
    else:
        run.answers[COPY_REPLACES_METADATA] = "200, and kept the source's metadata"
    run.refused(
        COPY_IF_NONE_MATCH,
        lambda: raw.copy_new(a, b, source_etag=current, metadata=metadata),
        "200, and replaced the object at the destination",
    )
    run.refused(
        COPY_SOURCE_IF_MATCH,
        lambda: raw.copy_new(a, c, source_etag=stale, metadata=metadata),
        "200, and copied a source that had changed",
    )


def _etag(bucket: Bucket, key: str) -> str:
    head = bucket.head(key)
    return "" if head is None else head.etag
