"""The operator commands of ``s3memory``: settings from ``S3MEMORY_*`` with flags over them, one call
into ``operations``, the answer as text or ``--json``, and one audit line per command.

The audit line is JSON on stderr: who ran the command (the local user),
which command, which user's memory, and counts; never content or paths. Long commands draw a
progress bar on stderr when it is a terminal (tqdm). Exit status: 0 done, 1 a refusal or an
incomplete transfer, 2 bad usage or settings.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import getpass
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from .authors import OPERATOR, validate_author
from .errors import CommandError, StorageError
from .progress import Progress

if TYPE_CHECKING:
    from .operations import Operations, Transfer
    from .rotation import RotationReport
    from .settings import Settings
    from .versions import MemoryVersions

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2

FLAG_VARIABLES = {
    "bucket": "S3MEMORY_BUCKET",
    "prefix": "S3MEMORY_PREFIX",
    "storage_format": "S3MEMORY_STORAGE_FORMAT",
    "store_id": "S3MEMORY_STORE_ID",
    "kms_key_id": "S3MEMORY_KMS_KEY_ID",
    "endpoint_url": "S3MEMORY_ENDPOINT_URL",
}
"""The flags that override a setting, with the variable (``s3memory.settings``) each overrides."""


def settings_from(arguments: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    """``S3MEMORY_*`` of ``environ``, with the flags given over them."""
    from .settings import LOCAL_KEY_VARIABLES, Settings

    merged = dict(environ)
    for flag, variable in FLAG_VARIABLES.items():
        value = getattr(arguments, flag, None)
        if value is not None:
            merged[variable] = value
            if flag == "kms_key_id":
                for local in LOCAL_KEY_VARIABLES:
                    merged.pop(local, None)
    return Settings.from_env(merged)


class Console:
    """One operator command: its settings, its output streams and its confirmation prompt."""

    def __init__(
        self,
        arguments: argparse.Namespace,
        *,
        environ: Mapping[str, str] | None = None,
        out: TextIO | None = None,
        err: TextIO | None = None,
        confirm: Callable[[str], bool] | None = None,
        operations: Operations | None = None,
    ) -> None:
        self.arguments = arguments
        self.environ = os.environ if environ is None else environ
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.confirm = confirm or _ask
        self._operations = operations

    def run(self) -> int:
        from .operations import Operations
        from .settings import SettingsError

        command = self.arguments.command
        started = time.monotonic()
        counts: dict[str, int] = {}
        try:
            operations = self._operations or Operations.from_settings(
                settings_from(self.arguments, self.environ), actor=operator_actor()
            )
            handlers: dict[str, Callable[[Operations, dict[str, int]], int]] = {
                "users": self._users,
                "ls": self._ls,
                "cat": self._cat,
                "export": self._export,
                "import": self._import,
                "verify": self._verify,
                "erase": self._erase,
                "history": self._history,
                "restore": self._restore,
                "redact": self._redact,
                "rotate": self._rotate,
                "expire": self._expire,
                "migrate": self._migrate,
            }
            status = handlers[command](operations, counts)
        except SettingsError as error:
            self.err.write(f"s3memory {command}: {error}\n")
            status = EXIT_USAGE
        except (CommandError, StorageError) as error:
            self.err.write(f"s3memory {command}: {error.message}\n")
            status = EXIT_INCOMPLETE
        except (ValueError, OSError) as error:
            self.err.write(f"s3memory {command}: {error}\n")
            status = EXIT_INCOMPLETE
        self._audit(command, status, counts, time.monotonic() - started)
        return status

    def _audit(self, command: str, status: int, counts: dict[str, int], seconds: float) -> None:
        record = {
            "event": "s3memory.operator",
            "operator": _operator(),
            "command": command,
            "user_id": getattr(self.arguments, "user", None),
            "status": status,
            "seconds": round(seconds, 3),
            **counts,
        }
        self.err.write(json.dumps(record, sort_keys=True) + "\n")

    def _confirmed(self, question: str) -> bool:
        """``--yes``, or the operator's answer; a refusal says that nothing was changed."""
        if self.arguments.yes or self.confirm(question):
            return True
        self.err.write(f"s3memory {self.arguments.command}: not confirmed; nothing was changed\n")
        return False

    @contextlib.contextmanager
    def _progress(self, unit: str) -> Iterator[Progress]:
        """A progress bar on stderr while the block runs: only on a terminal, never with --json."""
        from tqdm import tqdm

        shown = not self.arguments.json and self.err.isatty()
        with tqdm(
            desc=self.arguments.command, unit=unit, file=self.err, disable=not shown, leave=False
        ) as bar:
            yield _Bar(bar)

    def _chosen_users(self, operations: Operations) -> list[str]:
        """The users of ``--all`` (every user in the store) or ``--user U``."""
        return list(operations.users()) if self.arguments.all else [self.arguments.user]

    def _whom(self) -> str:
        """``--all`` or ``--user U``, as a confirmation question names them."""
        return "every user" if self.arguments.all else f"user {self.arguments.user}"

    def _emit(self, document: object, text: str) -> None:
        self.out.write((json.dumps(document, indent=2) if self.arguments.json else text) + "\n")

    def _users(self, operations: Operations, counts: dict[str, int]) -> int:
        users = list(operations.users())
        counts["users"] = len(users)
        self._emit({"users": users}, "\n".join(users) if users else "(no users)")
        return EXIT_OK

    def _ls(self, operations: Operations, counts: dict[str, int]) -> int:
        files = operations.files(self.arguments.user, self.arguments.path)
        counts["files"] = len(files)
        rows = [f"{file.size:>10,}  {file.path}" for file in files]
        self._emit(
            {"files": [{"path": file.path, "size": file.size} for file in files]},
            "\n".join(rows) if rows else f"(no files at {self.arguments.path})",
        )
        return EXIT_OK

    def _cat(self, operations: Operations, counts: dict[str, int]) -> int:
        text = operations.read(self.arguments.user, self.arguments.path)
        counts["bytes"] = len(text.encode("utf-8"))
        if self.arguments.json:
            self._emit({"path": self.arguments.path, "text": text}, "")
        else:
            self.out.write(text)
        return EXIT_OK

    def _export(self, operations: Operations, counts: dict[str, int]) -> int:
        with self._progress("file") as progress:
            transfer = operations.export(
                self.arguments.user,
                self.arguments.directory,
                overwrite=self.arguments.overwrite,
                progress=progress,
            )
        return self._report(transfer, counts)

    def _import(self, operations: Operations, counts: dict[str, int]) -> int:
        arguments = self.arguments
        if (
            arguments.overwrite
            and not arguments.dry_run
            and not self._confirmed(
                f"Replace {arguments.user}'s stored files that differ from {arguments.directory}?"
            )
        ):
            return EXIT_INCOMPLETE
        with self._progress("file") as progress:
            transfer = operations.import_folder(
                arguments.user,
                arguments.directory,
                overwrite=arguments.overwrite,
                dry_run=arguments.dry_run,
                progress=progress,
            )
        return self._report(transfer, counts)

    def _verify(self, operations: Operations, counts: dict[str, int]) -> int:
        server = operations.check_server()
        users = self._chosen_users(operations)
        with self._progress("object") as progress:
            reports = [operations.verify(user, progress=progress) for user in users]
        answers = {} if server.enforced is None else server.enforced.answers
        server_problems = [
            f"server: does not enforce {condition} (it answered: {answers.get(condition, '')}), "
            f"which storage format {operations.storage_format} needs"
            for condition in server.missing
        ]
        if server.changed:
            server_problems.append(
                "server: enforces other conditions than the store's record said; the record now says what it "
                "enforces (restart the processes that serve the store, so that they learn it)"
            )
        problems = sum(len(report.problems) for report in reports) + len(server_problems)
        counts.update(
            users=len(reports), checked=sum(report.checked for report in reports), problems=problems
        )
        unchecked = ["server: not checked (this role may not write the probe's objects)"]
        lines = (
            (unchecked if server.enforced is None else [])
            + server_problems
            + [
                f"{report.user_id}: {finding.kind} {finding.key}: {finding.detail}"
                for report in reports
                for finding in report.findings
            ]
        )
        lines.append(
            f"{counts['checked']:,} objects of {len(reports):,} users checked: "
            + (f"{problems:,} problems" if problems else "no problem")
        )
        document = {
            "users": [
                {
                    "user_id": report.user_id,
                    "checked": report.checked,
                    "findings": [
                        {"kind": f.kind, "key": f.key, "detail": f.detail, "problem": f.problem}
                        for f in report.findings
                    ],
                }
                for report in reports
            ],
            "server": {
                "enforced": None if server.enforced is None else sorted(server.enforced.held),
                "missing": server.missing,
                "changed": server.changed,
            },
            "problems": problems,
        }
        self._emit(document, "\n".join(lines))
        return EXIT_INCOMPLETE if problems else EXIT_OK

    def _versions(self, operations: Operations) -> MemoryVersions:
        from .versions import MemoryVersions

        return MemoryVersions(operations.memory(self.arguments.user))

    def _history(self, operations: Operations, counts: dict[str, int]) -> int:
        history = self._versions(operations).history(self.arguments.path)
        counts["versions"] = len(history)
        rows = [
            f"{v.modified.isoformat(timespec='seconds')}  {v.operation:<7}  {v.size:>9,}  {v.version_id}"
            + ("  (current)" if v.current else "")
            + (f"  by {v.author}" if v.author else "")
            + (f"  renamed from {v.renamed_from}" if v.renamed_from else "")
            + ("" if v.authentic else "  FAILED AUTHENTICATION (not written by s3memory for this file)")
            for v in history
        ]
        document = {
            "path": self.arguments.path,
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
                for v in history
            ],
        }
        self._emit(document, "\n".join(rows) if rows else f"(no versions of {self.arguments.path})")
        return EXIT_OK if all(v.authentic for v in history) else EXIT_INCOMPLETE

    def _restore(self, operations: Operations, counts: dict[str, int]) -> int:
        from .versions import when

        arguments = self.arguments
        if arguments.version is not None and arguments.path is None:
            raise CommandError("Error: restore --version needs the file's path.")
        what = arguments.path if arguments.version is not None else f"all of {arguments.user}'s memory"
        if not self._confirmed(f"Restore {what}?"):
            return EXIT_INCOMPLETE
        versions = self._versions(operations)
        if arguments.version is not None:
            outcome = versions.restore(arguments.path, arguments.version)
            counts[outcome] = 1
            self._emit({"path": arguments.path, "outcome": outcome}, f"{outcome} {arguments.path}")
            return EXIT_OK
        try:
            moment = when(arguments.as_of)
        except ValueError:
            raise CommandError(f"Error: --as-of must be an ISO 8601 time, got {arguments.as_of!r}.") from None
        with self._progress("file") as progress:
            restored = versions.restore_as_of(moment, progress)
        groups = {
            "written": restored.written,
            "deleted": restored.deleted,
            "unchanged": restored.unchanged,
            "changed_meanwhile": restored.changed_meanwhile,
        }
        counts.update({name: len(paths) for name, paths in groups.items()})
        lines = [
            f"{name} {path}" for name in ("written", "deleted", "changed_meanwhile") for path in groups[name]
        ]
        lines.append(", ".join(f"{len(paths)} {name.replace('_', ' ')}" for name, paths in groups.items()))
        self._emit(groups, "\n".join(lines))
        return EXIT_INCOMPLETE if restored.changed_meanwhile else EXIT_OK

    def _redact(self, operations: Operations, counts: dict[str, int]) -> int:
        arguments = self.arguments
        if not self._confirmed(f"Remove version {arguments.version} of {arguments.path} for good?"):
            return EXIT_INCOMPLETE
        self._versions(operations).redact(arguments.path, arguments.version)
        counts["removed"] = 1
        self._emit({"path": arguments.path, "removed": arguments.version}, f"removed {arguments.version}")
        return EXIT_OK

    def _erase(self, operations: Operations, counts: dict[str, int]) -> int:
        arguments = self.arguments
        if not arguments.dry_run and not self._confirmed(
            f"Erase every object and version of user {arguments.user}, for good?"
        ):
            return EXIT_INCOMPLETE
        with self._progress("version") as progress:
            erasure = operations.erase(arguments.user, dry_run=arguments.dry_run, progress=progress)
        counts.update(
            key_versions=erasure.key_versions, other_versions=erasure.other_versions, left=erasure.left
        )
        verb = "would remove" if arguments.dry_run else "removed"
        shredding = (
            "copies kept elsewhere can no longer be decrypted: every version of the wrapped data keys is gone"
            if erasure.shredded
            else "with a local master key, copies kept elsewhere stay readable with that key"
        )
        if erasure.shredded and operations.storage_format != 1:
            shredding += (
                "; their private names (user id, paths) still decrypt with the store key, which stays"
            )
        lines = [
            f"{verb} {erasure.key_versions:,} wrapped key versions and {erasure.other_versions:,} other object versions",
            *([] if arguments.dry_run else [f"left: {erasure.left:,} object versions", shredding]),
        ]
        document = {
            "user_id": erasure.user_id,
            "dry_run": arguments.dry_run,
            "key_versions": erasure.key_versions,
            "other_versions": erasure.other_versions,
            "left": erasure.left,
            "shredded": erasure.shredded and not arguments.dry_run,
        }
        self._emit(document, "\n".join(lines))
        return EXIT_INCOMPLETE if erasure.left else EXIT_OK

    def _expire(self, operations: Operations, counts: dict[str, int]) -> int:
        from .expiry import expire

        arguments = self.arguments
        whom = self._whom()
        if not arguments.dry_run and not self._confirmed(
            f"Delete the files of {whom} if idle for {arguments.idle_days} days?"
        ):
            return EXIT_INCOMPLETE
        users = self._chosen_users(operations)
        with self._progress("user") as progress:
            report = expire(
                operations, arguments.idle_days, users, dry_run=arguments.dry_run, progress=progress
            )
        counts.update(report.counts())
        verb = "would expire" if arguments.dry_run else "expired"
        lines = [f"{verb} {user.user_id} {path}" for user in report.users for path in user.expired]
        lines += [
            f"left {user.user_id}: {user.skipped}" + (f" ({user.error})" if user.error else "")
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
        self._emit(document, "\n".join(lines))
        return EXIT_INCOMPLETE if report.problems or not report.finished else EXIT_OK

    def _rotate(self, operations: Operations, counts: dict[str, int]) -> int:
        from .rotation import refuse_unsupported, rotate, rotate_waiting

        refuse_unsupported(operations)  # before asking, and before any request
        arguments = self.arguments
        whom = self._whom()
        dropping = (
            " and remove old keys that earlier versions of files still need, making that history unreadable"
            if arguments.drop_history
            else ""
        )
        if not arguments.dry_run and not self._confirmed(
            f"Seal every file of {whom} again under a new data key version{dropping}?"
        ):
            return EXIT_INCOMPLETE
        users = self._chosen_users(operations)
        reports = []
        with self._progress("user") as progress:
            progress.expect(len(users))
            for user in users:
                if arguments.wait and not arguments.dry_run:
                    reports.append(rotate_waiting(operations, user, drop_history=arguments.drop_history))
                else:
                    reports.append(
                        rotate(
                            operations, user, dry_run=arguments.dry_run, drop_history=arguments.drop_history
                        )
                    )
                progress.advance()
        for report in reports:
            for name, count in report.counts().items():
                counts[name] = counts.get(name, 0) + count
        counts["users"] = len(reports)
        lines = [line for report in reports for line in _rotation_lines(report, operations)]
        document = {"users": [{**dataclasses.asdict(r), "complete": r.complete} for r in reports]}
        self._emit(document, "\n".join(lines) if lines else "(no users)")
        return EXIT_OK if all(report.complete for report in reports) else EXIT_INCOMPLETE

    def _migrate(self, operations: Operations, counts: dict[str, int]) -> int:
        from .store_migration import migrate_store

        if not self._confirmed(
            "Move every user of the store from storage format 1 to format 2 (private names)? Serve the "
            "store in format 2 first (S3MEMORY_STORAGE_FORMAT=2): format-1 readers will find nothing."
        ):
            return EXIT_INCOMPLETE
        with self._progress("user") as progress:
            report = migrate_store(operations, progress)
        moved = report.moved.values()
        problems = sum(len(verified.problems) for verified in report.verified.values())
        counts.update(
            users=len(report.moved),
            moved=sum(user.moved for user in moved),
            already=sum(user.already for user in moved),
            left=sum(len(user.left) for user in moved),
            problems=problems,
        )
        lines = [
            f"{user}: left {where}: {why}" for user, done in report.moved.items() for where, why in done.left
        ]
        lines += [
            f"{user}: {finding.kind} {finding.key}: {finding.detail}"
            for user, verified in report.verified.items()
            for finding in verified.problems
        ]
        lines.append(
            f"{counts['users']:,} users, {counts['moved']:,} files moved ({counts['already']:,} moved before), "
            f"{counts['left']:,} left in format 1, {problems:,} problems; "
            + (
                "the store is marked migrated"
                if report.marked
                else "run migrate again once they are resolved"
            )
        )
        document = {
            "users": {
                user: {**dataclasses.asdict(done), "problems": len(report.verified[user].problems)}
                for user, done in report.moved.items()
            },
            "marked": report.marked,
        }
        self._emit(document, "\n".join(lines))
        return EXIT_OK if report.complete else EXIT_INCOMPLETE

    def _report(self, transfer: Transfer, counts: dict[str, int]) -> int:
        counts.update(transfer.counts())
        verb = "would write" if getattr(self.arguments, "dry_run", False) else "written"
        lines = [f"{verb} {path}" for path in transfer.written]
        lines += [f"skipped {path}: {why}" for path, why in transfer.skipped]
        lines += [f"refused {path}: {why}" for path, why in transfer.refused]
        summary = ", ".join(f"{count} {name}" for name, count in transfer.counts().items())
        self._emit(
            {
                **transfer.counts(),
                "written_paths": transfer.written,
                "unchanged_paths": transfer.unchanged,
                "skipped_paths": [{"path": path, "reason": why} for path, why in transfer.skipped],
                "refused_paths": [{"path": path, "reason": why} for path, why in transfer.refused],
            },
            "\n".join([*lines, summary]),
        )
        return EXIT_OK if transfer.complete else EXIT_INCOMPLETE


def _rotation_lines(report: RotationReport, operations: Operations) -> list[str]:
    """What a rotation of one user did, as the operator reads it."""
    from .crypto import KMSKeyProvider

    user = report.user_id
    if report.current is None:
        return [f"{user}: no data key yet, nothing to rotate"]
    verb = "would seal" if report.dry_run else "sealed"
    lines = [
        f"{user}: key version {report.current}" + (" (created)" if report.created else ""),
        f"{user}: {verb} {len(report.reencrypted):,} files and {len(report.records):,} records again",
        *(f"{user}: left {label}: {why}" for label, why in report.left),
    ]
    kms = isinstance(operations.key_provider, KMSKeyProvider)
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


class _Bar:
    """``Progress`` drawn by a tqdm bar."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def expect(self, total: int) -> None:
        self._bar.total = total
        self._bar.refresh()

    def advance(self, count: int = 1) -> None:
        self._bar.update(count)


def operator_actor() -> str:
    """The author named on what an operator command writes: ``operator:<local user>``."""
    try:
        return validate_author(f"{OPERATOR}:{_operator()}")
    except ValueError:
        return OPERATOR


def _operator() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
