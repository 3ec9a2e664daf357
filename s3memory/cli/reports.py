"""The reports of ``history``, ``restore --as-of``, ``expire``, ``rotate`` and ``migrate`` as the
operator reads them and as ``--json`` prints them. The reports of ``ops.versions``, ``ops.idle_expiry``,
``ops.rotation`` and ``ops.migrate`` do not render themselves yet (those of ``ops.inventory``,
``ops.verify``, ``ops.erase`` and ``ops.transfer`` do: ``console.Report.of``); until they do, this is
where they are rendered, so that ``operator_commands`` only declares the commands."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from s3memory.cli.console import Report, printable

if TYPE_CHECKING:
    from s3memory.ops.idle_expiry import ExpiryReport
    from s3memory.ops.migrate import StoreMigration
    from s3memory.ops.rotation import RotationReport
    from s3memory.ops.versions import FileVersion, Restored


def history_report(path: str, found: list[FileVersion]) -> Report:
    """Every version of the file at ``path``, newest first, each marked where it fails authentication."""
    from s3memory.crypto import shown_author

    rows = [
        f"{v.modified.isoformat(timespec='seconds')}  {v.operation:<7}  {v.size:>9,}  {printable(v.version_id)}"
        + ("  (current)" if v.current else "")
        + (f"  by {printable(shown_author(v.author))}" if v.author else "")
        + (f"  renamed from {printable(v.renamed_from)}" if v.renamed_from else "")
        + ("" if v.authentic else "  FAILED AUTHENTICATION (not written by s3memory for this file)")
        for v in found
    ]
    document = {
        "path": path,
        "versions": [
            {
                "version_id": v.version_id,
                "modified": v.modified.isoformat(),
                "operation": v.operation,
                "size": v.size,
                "current": v.current,
                "renamed_from": v.renamed_from,
                "author": v.author,
                "authentic": v.authentic,
            }
            for v in found
        ],
    }
    return Report(
        document,
        rows or [f"(no versions of {printable(path)})"],
        {"versions": len(found)},
        all(v.authentic for v in found),
    )


def restored_report(restored: Restored) -> Report:
    """What ``restore --as-of`` wrote, deleted, left unchanged, found changed meanwhile, and found
    failing authentication."""
    groups = {
        "written": restored.written,
        "deleted": restored.deleted,
        "unchanged": restored.unchanged,
        "changed_meanwhile": restored.changed_meanwhile,
    }
    lines = [
        f"{name} {printable(path)}"
        for name in ("written", "deleted", "changed_meanwhile")
        for path in groups[name]
    ]
    failed = restored.failed_authentication
    lines += [f"failed authentication {printable(path)}: {printable(why)}" for path, why in failed]
    counts = {name: len(paths) for name, paths in groups.items()} | {"failed_authentication": len(failed)}
    lines.append(", ".join(f"{count} {name.replace('_', ' ')}" for name, count in counts.items()))
    document = {**groups, "failed_authentication": [{"path": path, "reason": why} for path, why in failed]}
    return Report(document, lines, counts, not restored.changed_meanwhile and not failed)


def expiry_report(report: ExpiryReport, dry_run: bool) -> Report:
    """What ``expire`` deleted (or would delete) of each user, what it left and why, and the totals."""
    verb = "would expire" if dry_run else "expired"
    lines = [
        f"{verb} {printable(user.user_id)} {printable(path)}"
        for user in report.users
        for path in user.expired
    ]
    lines += [
        f"left {printable(user.user_id)}: {user.skipped}"
        + (f" ({printable(user.error)})" if user.error else "")
        for user in report.users
        if user.skipped is not None
    ]
    totals = report.counts()
    lines.append(
        f"{totals['expired']:,} files {verb} of {totals['users']:,} users; kept: "
        f"{totals['kept_recent']:,} written since the cutoff, {totals['kept_changed']:,} changed meanwhile, "
        f"{totals['active']:,} users active; {totals['problems']:,} problems"
    )
    document = {**dataclasses.asdict(report), "counts": totals}
    return Report(document, lines, totals, not report.problems and report.finished)


def rotation_report(reports: list[RotationReport], kms: bool) -> Report:
    """What ``rotate`` did to each memory, and the totals (``kms``: the data keys are wrapped by KMS)."""
    counts: dict[str, int] = {}
    for report in reports:
        for name, count in report.counts().items():
            counts[name] = counts.get(name, 0) + count
    counts["users"] = len(reports)
    lines = [line for report in reports for line in _rotation_lines(report, kms)]
    document = {"users": [{**dataclasses.asdict(r), "complete": r.complete} for r in reports]}
    return Report(document, lines or ["(no users)"], counts, all(report.complete for report in reports))


def _rotation_lines(report: RotationReport, kms: bool) -> list[str]:
    """What a rotation of one user did, as the operator reads it."""
    user = printable(report.user_id)
    if report.current is None:
        return [f"{user}: no data key yet, nothing to rotate"]
    verb = "would seal" if report.dry_run else "sealed"
    lines = [
        f"{user}: key version {report.current}" + (" (created)" if report.created else ""),
        f"{user}: {verb} {len(report.reencrypted):,} files and {len(report.records):,} records again",
        *(f"{user}: left {printable(label)}: {printable(why)}" for label, why in report.left),
    ]
    for version in report.retired:
        if report.dry_run:
            lines.append(f"{user}: once sealed again, nothing would need key version {version}")
        elif kms:
            lines.append(f"{user}: removed wrapped key v{version}")
        else:
            lines.append(
                f"{user}: no object needs key version {version}: drop it from S3MEMORY_PREVIOUS_LOCAL_KEYS"
            )
    for version in sorted(set(report.old) - set(report.retired)) if report.kept_for_history else []:
        lines.append(
            f"{user}: key version {version} kept: {report.kept_for_history:,} earlier versions of files need "
            "it (history, restore); it can go once noncurrent-version expiry removes them, or with --drop-history"
        )
    if report.history_dropped:
        lines.append(f"{user}: {report.history_dropped:,} earlier versions of files are now unreadable")
    if report.run_again_after is not None:
        moment = datetime.fromtimestamp(report.run_again_after, UTC).isoformat(timespec="seconds")
        lines.append(f"{user}: the old key can go once no process can still use it: run again after {moment}")
    return lines


def migration_report(report: StoreMigration) -> Report:
    """What ``migrate`` moved of each user, left in format 1 and found wrong, and whether the store is
    marked migrated."""
    moved = report.moved.values()
    problems = sum(len(verified.problems) for verified in report.verified.values())
    counts = {
        "users": len(report.moved),
        "moved": sum(user.moved for user in moved),
        "already": sum(user.already for user in moved),
        "left": sum(len(user.left) for user in moved),
        "problems": problems,
    }
    lines = [
        f"{printable(user)}: left {printable(where)}: {printable(why)}"
        for user, done in report.moved.items()
        for where, why in done.left
    ]
    lines += [
        finding.line(user) for user, verified in report.verified.items() for finding in verified.problems
    ]
    lines.append(
        f"{counts['users']:,} users, {counts['moved']:,} files moved ({counts['already']:,} moved before), "
        f"{counts['left']:,} left in format 1, {problems:,} problems; "
        + ("the store is marked migrated" if report.marked else "run migrate again once they are resolved")
    )
    document = {
        "users": {
            user: {**dataclasses.asdict(done), "problems": len(report.verified[user].problems)}
            for user, done in report.moved.items()
        },
        "marked": report.marked,
    }
    return Report(document, lines, counts, report.complete)
