"""Key rotation: seal every object of a user again under the current data key version, and retire the
old versions once nothing needs them. The protocol, its invariants and their tests are in
``docs/rotation.md``.

With KMS, a rotation creates the user's next version (a new wrapped key, ``keys/v<n+1>``); serving
processes switch to it when what they cached lapses (``MAX_KEY_CACHE_SECONDS``), so an old wrapped
key is removed only once that switch is older than ``ROTATION_WAIT_SECONDS`` and a pass that began
after it found nothing sealed with the old version. With a local master key, the new version comes
from the settings (``S3MEMORY_LOCAL_KEY_VERSION``, the old key in ``S3MEMORY_PREVIOUS_LOCAL_KEYS``):
a rotation seals everything again and reports the previous versions nothing needs any more.

On a bucket with S3 versioning, the earlier versions of files (what ``history`` and ``restore``
read) keep the version that sealed them: it is retired only once none is left, or anyway with
``drop_history``, which reports how many became unreadable.

Every run may be cut off anywhere: running it again finishes the work. Every re-encryption is a
conditional replace on the ETag read, by the author the file's version names.

A format-2 store (private names, ``docs/format-v2.md``) rotates the same way: each file is sealed
again with a fresh place record naming the same author. Since a format-2 rename copies the sealed
bytes on the server, it carries their key version to the new path: before an old version is retired
there, a pass must list every file as it reads it, sealed with no old version (``_Sweep``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from s3memory.core.files import LOST, retried
from s3memory.core.job_records import RECORD_MAX_BYTES, RECORD_PATH_PREFIX
from s3memory.core.keyvault import KEYS_PREFIX, KeyVault
from s3memory.core.paths import MemoryPath, check_owner
from s3memory.crypto import (
    MAX_KEY_CACHE_SECONDS,
    MAX_KEY_VERSION,
    OVERHEAD,
    KMSKeyProvider,
    LocalKeyProvider,
    sealed_version,
)
from s3memory.errors import (
    CommandError,
    ConditionalConflict,
    IntegrityError,
    ObjectTooLarge,
    PreconditionFailed,
)
from s3memory.ops.operations import Operations
from s3memory.ops.progress import SILENT, Progress
from s3memory.ops.rotation_report import RotationReport
from s3memory.ops.wrapped_keys import StoredKey, remove_retired, stored_keys
from s3memory.placed import PlacedMemory
from s3memory.storage.bucket import Listed, StoredObject, Version
from s3memory.storage.concurrency import parallel
from s3memory.storage.server_checks import rewrap_record

CLOCK_MARGIN_SECONDS = 120.0
"""How far the operator's clock may run ahead of S3's: the switch is dated by S3's ``LastModified``,
the wait by the operator's clock."""
ROTATION_WAIT_SECONDS = MAX_KEY_CACHE_SECONDS + CLOCK_MARGIN_SECONDS
"""How long after the switch to a new version no serving process can still seal with an old one."""
SWEEPS = 4
"""Format 2: the passes a run makes, at most, to find one that lists every file as it reads it."""


@dataclass
class _Sweep:
    """What the passes of one run learned. ``cleared``: the ETags of objects whose header names no old
    version, read again by no later pass (ETags name bytes: a copy made on the server has its
    source's, so it names the same version; an object that did not open here is never cleared, as
    its bytes may open at another path). ``unsettled``: in this pass, a file was not read as it was
    listed (gone, changed, or sealed again here), so the listing may have missed a copy of it."""

    cleared: set[str] = field(default_factory=set)
    unsettled: bool = False


def rotate(
    operations: Operations,
    user_id: str,
    *,
    dry_run: bool = False,
    drop_history: bool = False,
    now: float | None = None,
) -> RotationReport:
    """Rotate ``user_id``'s data keys one step: with KMS, create the next version unless a rotation is
    under way; seal every file sealed with an old version again; retire the old versions when nothing
    needs them (KMS: only once the switch is older than ``ROTATION_WAIT_SECONDS``; else
    ``run_again_after`` says when). On a bucket with versioning, earlier versions of files sealed
    with an old version keep it (``kept_for_history``) unless ``drop_history`` (then
    ``history_dropped`` counts them). ``dry_run`` reads everything and changes nothing. ``now``
    (seconds since the epoch) stands for the operator's clock. On a format-2 store without a store
    key (nobody has written to it) the user has no data key, and nothing is written."""
    provider = operations.key_provider
    if not isinstance(provider, LocalKeyProvider | KMSKeyProvider):
        check_owner(user_id, operations.prefix)
        raise ValueError("rotate needs a KMSKeyProvider or a LocalKeyProvider")
    memory = operations.existing_placed(user_id)
    report = RotationReport(user_id, dry_run)
    if memory is None:
        return report
    vault = KeyVault(memory.bucket, memory.layout)
    started = time.time() if now is None else now
    if isinstance(provider, LocalKeyProvider):
        report.current, report.old = provider.version, provider.previous_versions
        waited = True
        if report.old and not dry_run:
            memory.format.rewrap_store_key(
                memory.bucket, operations.prefix, operations.store_identity, provider
            )
            rewrap_record(memory.bucket, operations.prefix, operations.store_identity, provider)
    elif isinstance(provider, KMSKeyProvider):
        if not _start(provider, memory, vault, report):
            return report
        waited = report.switched_at is not None and report.switched_at + ROTATION_WAIT_SECONDS <= started
        if not waited:
            report.run_again_after = (report.switched_at or started) + ROTATION_WAIT_SECONDS
    if not report.old:
        return report
    if not dry_run:
        memory.jobs.finish_pending()
    sweep = _Sweep()
    _seal_again(memory, report, sweep)
    if waited and not report.left and not dry_run and memory.format.settles_after_rotation:
        _settle(memory, report, sweep)
    if waited and not report.left:
        needs = _history_needs(memory, report)
        kept = set() if drop_history else set().union(*needs)
        report.retired = [version for version in report.old if version not in kept]
        if drop_history:
            report.history_dropped = len(needs)
        else:
            report.kept_for_history = len(needs)
        if report.retired and isinstance(provider, KMSKeyProvider) and not dry_run:
            remove_retired(memory.bucket, vault, report.current, report.retired)
    return report


def rotate_waiting(
    operations: Operations,
    user_ids: Sequence[str],
    *,
    drop_history: bool = False,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], object] = time.sleep,
    progress: Progress = SILENT,
) -> list[RotationReport]:
    """The whole rotation of every memory of ``user_ids`` in one call, with one wait: each is sealed
    again under its new version (``rotate``), then, if any old version may not be removed yet, one wait
    until the last of them may (a KMS rotation waits ``ROTATION_WAIT_SECONDS``), then each of those is
    rotated again. The wall time grows with the work and one key-cache wait, not a wait per memory;
    a run cut off anywhere is resumed by running it again. ``progress`` counts the memories of each
    pass."""
    progress.expect(len(user_ids))
    reports: list[RotationReport] = []
    for user_id in user_ids:
        reports.append(rotate(operations, user_id, drop_history=drop_history, now=clock()))
        progress.advance()
    waits = [report.run_again_after for report in reports if report.run_again_after is not None]
    if not waits:
        return reports
    sleep(max(0.0, max(waits) - clock()))
    finished: list[RotationReport] = []
    for report in reports:
        if report.run_again_after is not None:
            again = rotate(operations, report.user_id, drop_history=drop_history, now=clock())
            report = _merged(report, again)
        finished.append(report)
    return finished


def _merged(first: RotationReport, second: RotationReport) -> RotationReport:
    """``second``, counting what ``first`` created and sealed again."""
    second.created = second.created or first.created
    second.reencrypted = sorted(set(first.reencrypted) | set(second.reencrypted))
    second.records = sorted(set(first.records) | set(second.records))
    return second


def _start(provider: KMSKeyProvider, memory: PlacedMemory, vault: KeyVault, report: RotationReport) -> bool:
    """Find the user's stored versions and, unless a rotation is under way, create the next one (in a
    dry run: say so); fill ``current``, ``old`` and ``switched_at``. False: the user has no data key."""
    stored = stored_keys(memory.bucket, vault)
    if not stored:
        return False
    live = [version for version, key in stored.items() if key.written is not None]
    current = max(live, default=0)
    if current < max(stored):
        raise CommandError(
            f"Error: The newest wrapped data key of this user (version {max(stored)}) was deleted; only "
            "earlier S3 versions of it remain. Put its latest version back before rotating; nothing was "
            "changed."
        )
    try:
        provider.data_key(memory.key_owner, current, vault)
    except CommandError as error:
        raise CommandError(
            f"Error: Rotation needs this user's newest data key (version {current}), which cannot be "
            f"had ({error.message}); nothing was changed."
        ) from None
    report.current = current
    report.old = sorted(version for version in stored if version != current)
    written = stored[current].written
    if not report.old:
        if current >= MAX_KEY_VERSION:
            raise CommandError(
                f"Error: This user's keys are at version {current}, the last; nothing was changed."
            )
        report.current, report.old, report.created = current + 1, [current], True
        written = None
        if not report.dry_run:
            provider.create(memory.key_owner, current + 1, vault)  # False: a concurrent rotation made it
            written = stored_keys(memory.bucket, vault).get(current + 1, StoredKey()).written
    provider.forget(memory.key_owner, vault)
    report.switched_at = None if written is None else written.timestamp()
    return True


def _seal_again(memory: PlacedMemory, report: RotationReport, sweep: _Sweep) -> None:
    """One pass over the user's namespace, a page at a time (its objects in parallel): seal again every
    memory file and every internal record sealed with an old version. Objects listed with an ETag
    ``sweep`` has cleared are not read again."""
    layout = memory.layout
    keys = layout.key_of_internal(KEYS_PREFIX)  # wrapped keys, not sealed records
    old = set(report.old)
    sweep.unsettled = False
    for page in memory.bucket.pages(layout.namespace):
        tasks: list[tuple[str, Callable[[], bool]]] = []
        for listed in page.objects:
            if _bare(listed.etag) in sweep.cleared:
                continue
            if (path := layout.path_of_key(listed.key)) is not None:
                once = functools.partial(_file_once, memory, path, listed, old, report, sweep)
                tasks.append((path.text, once))
            elif listed.key.startswith(layout.internal_prefix) and not listed.key.startswith(keys):
                name = listed.key[len(layout.internal_prefix) :]
                once = functools.partial(_record_once, memory, name, old, report, sweep)
                tasks.append((f"internal/{name}", once))
        parallel(lambda task: _until_settled(*task, report), tasks)
    report.reencrypted = sorted(set(report.reencrypted))
    report.records = sorted(set(report.records))
    report.left.sort()


def _settle(memory: PlacedMemory, report: RotationReport, sweep: _Sweep) -> None:
    """Format 2, before an old version is retired: pass again until a pass has read every file as it
    was listed (at most ``SWEEPS`` passes; the files cleared before are not read again). A rename
    copies a file's sealed bytes, old version and all, so a copy made while a pass ran may sit where
    the pass had listed already; once one listing shows only files that need no old version, none
    can appear after it, since nothing seals with an old version any more."""
    for _sweep in range(1, SWEEPS):
        if not sweep.unsettled or report.left:
            return
        _seal_again(memory, report, sweep)
    if sweep.unsettled:
        report.left.append(
            (
                "/memories",
                f"files kept changing or moving while each of {SWEEPS} passes read them; run it again",
            )
        )


def _until_settled(label: str, once: Callable[[], bool], report: RotationReport) -> None:
    """``once()`` until it has settled the object named ``label`` (True), backing off after each
    write it lost to another writer."""
    try:
        retried(lambda _number: None if once() else LOST, _KeptChanging)
    except _KeptChanging:
        report.left.append((label, "it kept changing while it was sealed again"))


class _KeptChanging(Exception):
    """Every write sealing an object again lost to another writer."""


def _file_once(
    memory: PlacedMemory,
    path: MemoryPath,
    listed: Listed,
    old: set[int],
    report: RotationReport,
    sweep: _Sweep,
) -> bool:
    """Seal the file at ``path`` again, by the author its version names, if an ``old`` version
    sealed it; False if it changed meanwhile. ``sweep`` learns whether it was read as ``listed``."""
    files = memory.files
    try:
        stored = memory.bucket.get(listed.key, max_bytes=files.max_file_bytes + OVERHEAD)
    except ObjectTooLarge:
        report.left.append((path.text, "larger than the file size limit: it could not be read"))
        return True
    if stored is None or _bare(stored.etag) != _bare(listed.etag):
        sweep.unsettled = True
    if stored is None:
        return True
    if sealed_version(stored.body) not in old:
        sweep.cleared.add(_bare(stored.etag))
        return True
    try:
        text, author = files.decode(path, stored.body, stored.metadata)
    except IntegrityError as refused:
        _refused(memory, path.text, stored, refused, report)  # not cleared: its bytes may open elsewhere
        return True
    sweep.unsettled = True
    if not report.dry_run:
        writer = files.by(author)
        # where the format keeps origins, kept as it is (a hint, with its key version)
        origin = memory.format.kept_origin(stored.metadata)
        if not writer.replace(path, writer.encode(path, text), stored.etag, origin):
            return False
    report.reencrypted.append(path.text)
    return True


def _record_once(
    memory: PlacedMemory, name: str, old: set[int], report: RotationReport, sweep: _Sweep
) -> bool:
    """Seal the internal record ``name`` again (under its associated-data path, ``internal:`` and the
    name) if an ``old`` version sealed it; False if it changed meanwhile."""
    key = memory.layout.key_of_internal(name)
    try:
        stored = memory.bucket.get(key, max_bytes=RECORD_MAX_BYTES)
    except ObjectTooLarge:
        return True  # no record s3memory writes is this large
    if stored is None:
        return True
    if sealed_version(stored.body) not in old:
        sweep.cleared.add(_bare(stored.etag))
        return True
    cipher = memory.files.cipher
    try:
        body = cipher.open(RECORD_PATH_PREFIX + name, stored.body)
    except IntegrityError as refused:
        _refused(memory, f"internal/{name}", stored, refused, report)
        return True
    if not report.dry_run:
        try:
            memory.bucket.put(
                key,
                cipher.seal(RECORD_PATH_PREFIX + name, body),
                if_match=stored.etag,
                metadata=stored.metadata,
            )
        except (PreconditionFailed, ConditionalConflict):
            return False
    report.records.append(name)
    return True


def _bare(etag: str) -> str:
    """An ETag without its quotes (a listing and a GET may differ in them)."""
    return etag.strip('"')


def _refused(
    memory: PlacedMemory, label: str, stored: StoredObject, refused: CommandError, report: RotationReport
) -> None:
    """An object that names an old version and did not open: left (blocking the removal) when that
    version's key cannot be had, else not sealed by s3memory here (``verify`` reports it)."""
    version = sealed_version(stored.body)
    if version is not None and _key_missing(memory, version):
        report.left.append((label, refused.message))


def _key_missing(memory: PlacedMemory, version: int) -> bool:
    """True if the user's data key of ``version`` cannot be had (a KMS failure is raised)."""
    try:
        memory.files.cipher.check_key(version)
    except IntegrityError:
        return True
    return False


def _history_needs(memory: PlacedMemory, report: RotationReport) -> list[set[int]]:
    """For each earlier S3 version of the user's files (noncurrent, or behind a delete marker) that
    needs an ``old`` version to be read, the versions it needs; none on a bucket that never had
    versioning. One listing of versions and a GET of each earlier version. A dry run also counts each
    file it would seal again, as the earlier version sealing it would leave."""
    if memory.bucket.versioning() is None:
        return []
    layout, old = memory.layout, set(report.old)
    needs: list[set[int]] = [old for _ in report.reencrypted] if report.dry_run else []
    for page in memory.bucket.versions(layout.memories_prefix):
        earlier = [
            (version, path)
            for version in page
            if not version.latest
            and not version.delete_marker
            and (path := layout.path_of_key(version.key)) is not None
        ]
        parallel(lambda item: needs.append(_earlier_needs(memory, *item, old)), earlier)
    return [need for need in needs if need]


def _earlier_needs(memory: PlacedMemory, version: Version, path: MemoryPath, old: set[int]) -> set[int]:
    """The ``old`` versions the earlier S3 version ``version`` of the file at ``path`` needs: the one
    its header names if it opens with it, or if that key cannot be had (so it cannot be told); every
    one if it is too large to tell; none if it names none or is not ours."""
    try:
        stored = memory.bucket.get(
            version.key, max_bytes=memory.files.max_file_bytes + OVERHEAD, version_id=version.version_id
        )
    except ObjectTooLarge:
        return old
    named = None if stored is None else sealed_version(stored.body)
    if stored is None or named is None or named not in old:
        return set()
    try:
        memory.files.format.open_file(memory.files.cipher, path.canonical, stored.body, stored.metadata)
    except IntegrityError:
        if not _key_missing(memory, named):
            return set()
    return {named}
