"""What a key rotation (``ops.rotation``) did to each memory, as the operator reads it and as
``--json`` prints it: one ``RotationReport`` a memory, and ``Rotations``, the reports of one run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from s3memory.errors import escaped


@dataclass
class RotationReport:
    """What a rotation of one user's keys did (in a dry run: would do), and what is left."""

    user_id: str
    dry_run: bool = False
    current: int | None = None
    """The version the user's objects are sealed with from now on (None: the user has no data key)."""
    created: bool = False
    """This run created ``current`` (a KMS rotation starting)."""
    old: list[int] = field(default_factory=list)
    """The other versions: stored wrapped keys (KMS), or previous master keys (local)."""
    reencrypted: list[str] = field(default_factory=list)
    """Files sealed again under ``current``."""
    left: list[tuple[str, str]] = field(default_factory=list)
    """Objects still sealed with an old version (files by path, records as ``internal/<name>``), with
    why: they hold the old versions back, and the next run tries them again."""
    records: list[str] = field(default_factory=list)
    """Internal records (job records, the access record) sealed again, by their names below
    ``internal/``."""
    retired: list[int] = field(default_factory=list)
    """Old versions nothing needs any more (or, with ``drop_history``, nothing current). With KMS
    their wrapped keys are removed, every S3 version of them; with a local master key, the operator
    may drop them from the settings."""
    kept_for_history: int = 0
    """Earlier S3 versions of files (what ``history`` and ``restore`` read) sealed with an old version
    that is therefore kept: it is retired once they are gone (noncurrent-version expiry), or by a run
    with ``drop_history``."""
    history_dropped: int = 0
    """Earlier S3 versions of files sealed with a version retired by this run with ``drop_history``:
    unreadable once its key is gone (KMS: removed now; local: once dropped from the settings)."""
    switched_at: float | None = None
    """When the user's objects began to be sealed with ``current`` (KMS; seconds since the epoch)."""
    run_again_after: float | None = None
    """When the old versions may be removed, if that time has not come: run again then."""

    @property
    def complete(self) -> bool:
        """Nothing is sealed with an old version any more, and every old version is retired."""
        return not self.left and sorted(self.retired) == self.old

    def counts(self) -> dict[str, int]:
        """The numbers of the report, for an audit line (no path, no key)."""
        return {
            "reencrypted": len(self.reencrypted),
            "left": len(self.left),
            "records": len(self.records),
            "retired": len(self.retired),
            "kept_for_history": self.kept_for_history,
            "history_dropped": self.history_dropped,
        }

    def lines(self, kms: bool) -> list[str]:
        """What the rotation of this memory did, as the operator reads it (``kms``: the data keys are
        wrapped by KMS, so a retired version's wrapped key was removed; else the operator drops it)."""
        user = escaped(self.user_id)
        if self.current is None:
            return [f"{user}: no data key yet, nothing to rotate"]
        verb = "would seal" if self.dry_run else "sealed"
        lines = [
            f"{user}: key version {self.current}" + (" (created)" if self.created else ""),
            f"{user}: {verb} {len(self.reencrypted):,} files and {len(self.records):,} records again",
            *(f"{user}: left {escaped(label)}: {escaped(why)}" for label, why in self.left),
        ]
        for version in self.retired:
            if self.dry_run:
                lines.append(f"{user}: once sealed again, nothing would need key version {version}")
            elif kms:
                lines.append(f"{user}: removed wrapped key v{version}")
            else:
                lines.append(
                    f"{user}: no object needs key version {version}: drop it from S3MEMORY_PREVIOUS_LOCAL_KEYS"
                )
        for version in sorted(set(self.old) - set(self.retired)) if self.kept_for_history else []:
            lines.append(
                f"{user}: key version {version} kept: {self.kept_for_history:,} earlier versions of files need "
                "it (history, restore); it can go once noncurrent-version expiry removes them, or with --drop-history"
            )
        if self.history_dropped:
            lines.append(f"{user}: {self.history_dropped:,} earlier versions of files are now unreadable")
        if self.run_again_after is not None:
            moment = datetime.fromtimestamp(self.run_again_after, UTC).isoformat(timespec="seconds")
            lines.append(
                f"{user}: the old key can go once no process can still use it: run again after {moment}"
            )
        return lines


@dataclass(frozen=True)
class Rotations:
    """The reports of one rotation run, one a memory (``kms``: the data keys are wrapped by KMS)."""

    reports: list[RotationReport]
    kms: bool

    @property
    def complete(self) -> bool:
        return all(report.complete for report in self.reports)

    def counts(self) -> dict[str, int]:
        """The counts of every memory added up, and how many memories."""
        counts: dict[str, int] = {}
        for report in self.reports:
            for name, count in report.counts().items():
                counts[name] = counts.get(name, 0) + count
        return counts | {"users": len(self.reports)}

    def lines(self) -> list[str]:
        return [line for report in self.reports for line in report.lines(self.kms)] or ["(no users)"]

    def document(self) -> dict[str, object]:
        return {"users": [{**asdict(report), "complete": report.complete} for report in self.reports]}
