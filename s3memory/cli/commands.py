"""The operator commands of ``s3memory``, each declared once: its name, help, arguments, whether it
asks first, and a handler that makes one call into ``operations`` (or ``versions``, ``rotation``,
``expiry``, ``ops.migrate``) and returns a ``Report``. ``console`` runs them."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3memory.cli.console import (
    Argument,
    Console,
    Handler,
    OneOf,
    OperatorCommand,
    Report,
    printable,
)
from s3memory.core.paths import UserId, check_user_id, memory_path, owner_of
from s3memory.errors import CommandError, shown

if TYPE_CHECKING:
    from s3memory.ops.operations import Finding, Operations, Transfer
    from s3memory.ops.rotation import RotationReport
    from s3memory.ops.versions import MemoryVersions

NO_QUESTION = "do not ask for confirmation"
"""The help of ``--yes`` for most commands that ask first."""


def _argument(check: Callable[[str], object], text: str) -> str:
    """``text``, refused (a usage error, exit 2) with the message ``check`` raises of it."""
    try:
        check(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    except CommandError as error:
        raise argparse.ArgumentTypeError(error.message.removeprefix("Error: ")) from None
    return text


def memory_name(text: str) -> str:
    """``--user``: a user id (a reserved one too: its memory is listed to be moved) or
    ``shared/NAME``; refused naming why it can name no memory."""
    return _argument(owner_of, text)


def new_memory_name(text: str) -> str:
    """``import --user``: ``memory_name``, but no reserved user id (import makes memories, and none is
    made under such an id)."""
    return _argument(lambda name: isinstance(owner_of(name), UserId) and check_user_id(name), text)


def path_argument(text: str) -> str:
    """A memory path argument, refused where the memory tool would refuse it."""
    return _argument(memory_path, text)


MEMORY_NAME_HELP = "the user id, or shared/NAME for a shared memory"
USER = Argument("--user", required=True, type=memory_name, help=MEMORY_NAME_HELP)
USER_OR_ALL = OneOf(
    Argument("--user", type=memory_name, help=MEMORY_NAME_HELP),
    Argument(
        "--all", action="store_true", help="every user in the store (rotate, verify: and every shared memory)"
    ),
    required=True,
)
"""``--user U`` or ``--all``, exactly one."""


def chosen_users(arguments: argparse.Namespace, operations: Operations, *, shared: bool = False) -> list[str]:
    """The memories of ``--all`` (every user in the store, and with ``shared`` every shared memory
    too) or ``--user U``."""
    if not arguments.all:
        return [arguments.user]
    return [*operations.users(), *(operations.shared_memories() if shared else ())]


def idle_days(text: str) -> int:
    """``--idle-days``: a whole number from 1 to ``expiry.MAX_IDLE_DAYS``; refused (exit 2) otherwise."""
    from s3memory.ops.idle_expiry import MAX_IDLE_DAYS

    try:
        days = int(text)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_IDLE_DAYS:
        raise argparse.ArgumentTypeError(
            f"a whole number of days from 1 to {MAX_IDLE_DAYS:,}, not {shown(text)!r}"
        )
    return days


def whom(arguments: argparse.Namespace) -> str:
    """``--all`` or ``--user U``, as a confirmation question names them."""
    return "every user" if arguments.all else f"user {arguments.user}"


COMMANDS: list[OperatorCommand] = []
"""Every operator command, in the order ``s3memory --help`` lists them."""


def command(
    name: str,
    help: str,
    *arguments: Argument | OneOf,
    examples: tuple[str, ...],
    confirms: str | None = None,
    misuse: Callable[[argparse.Namespace], str | None] = lambda _: None,
) -> Callable[[Handler], Handler]:
    """Declare ``name`` with its handler (the function decorated), the examples its help shows, and
    what it refuses of its arguments together (``OperatorCommand.misuse``)."""

    def declare(handler: Handler) -> Handler:
        COMMANDS.append(OperatorCommand(name, help, arguments, handler, confirms, examples, misuse))
        return handler

    return declare


GLOBAL_OPTIONS = (
    Argument("--bucket", help="the bucket (S3MEMORY_BUCKET)"),
    Argument("--prefix", help="the users' key prefix (S3MEMORY_PREFIX, default users/)"),
    Argument(
        "--storage-format",
        choices=("auto", "1", "2"),
        help="the store's storage format: 1 plain names, 2 private names, auto 2 unless the store "
        "holds format 1 (S3MEMORY_STORAGE_FORMAT, default auto)",
    ),
    Argument("--store-id", help="format 2: the store's id (S3MEMORY_STORE_ID, default the bucket)"),
    Argument("--kms-key-id", help="the KMS key (S3MEMORY_KMS_KEY_ID)"),
    Argument("--endpoint-url", help="an S3 endpoint (S3MEMORY_ENDPOINT_URL)"),
    Argument("--profile", help="the AWS profile whose credentials and region to use (default: AWS_PROFILE)"),
    Argument("--region", help="the AWS region (default: AWS_DEFAULT_REGION, or the profile's)"),
    Argument("--json", action="store_true", help="machine-readable output"),
    Argument("--quiet", "-q", action="store_true", help="no audit line and no progress bar on stderr"),
    Argument(
        "--audit-log",
        metavar="FILE",
        help="append the audit line to FILE (stderr has it only when it is no terminal)",
    ),
)
"""The options of every operator command, taken before the command or after it (as the aws CLI,
rclone and restic take theirs)."""


def add_global_options(parser: argparse.ArgumentParser, *, after_command: bool) -> None:
    """``GLOBAL_OPTIONS`` on ``parser``: the top-level parser's set the defaults; a command's own
    (``after_command``) set only what is given after the command, over what was given before it."""
    for option in GLOBAL_OPTIONS:
        options = dict(option.options)
        if after_command:
            options["default"] = argparse.SUPPRESS
        elif options.get("action") == "store_true":
            options["default"] = False
        parser.add_argument(*option.names, **options)


def add_commands(commands: Any) -> None:
    """The operator subcommands, on the ``s3memory`` parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    add_global_options(common, after_command=True)
    for declared in COMMANDS:
        declared.add_to(commands, common)


@command("users", "list the user ids in the store", examples=("s3memory users --bucket agent-memory",))
def users(console: Console, operations: Operations) -> Report:
    found = list(operations.users())
    return Report(
        {"users": found}, [printable(user) for user in found] or ["(no users)"], {"users": len(found)}
    )


@command(
    "shared",
    "list the shared memories in the store, each with its namespace token (CloudTrail)",
    examples=("s3memory shared --json",),
)
def shared(console: Console, operations: Operations) -> Report:
    found = operations.shared_namespaces()
    return Report(
        {"shared": [{"memory": name, "namespace": token} for name, token in found.items()]},
        [f"{printable(name)}  {printable(token)}" for name, token in found.items()]
        or ["(no shared memories)"],
        {"shared": len(found)},
    )


@command(
    "ls",
    "a user's files and their sizes",
    USER,
    Argument("path", nargs="?", default="/memories", type=path_argument),
    examples=("s3memory ls --user alice /memories/projects",),
)
def ls(console: Console, operations: Operations) -> Report:
    path = console.arguments.path
    files = operations.files(console.arguments.user, path)
    return Report(
        {"files": [{"path": file.path, "size": file.size} for file in files]},
        [f"{file.size:>10,}  {printable(file.path)}" for file in files]
        or [f"(no files at {printable(path)})"],
        {"files": len(files)},
    )


@command(
    "cat",
    "a user's file, decrypted",
    USER,
    Argument("path", type=path_argument),
    examples=("s3memory cat --user alice /memories/preferences.md",),
)
def cat(console: Console, operations: Operations) -> Report:
    path = console.arguments.path
    text = operations.read(console.arguments.user, path)
    return Report({"path": path, "text": text}, [text], {"bytes": len(text.encode("utf-8"))}, end="")


def _transfer_arguments(user: Argument, overwrites: str) -> tuple[Argument, ...]:
    """The arguments of a transfer between a user's memory and DIR/memories/... (export, import):
    the ``user``, the folder, and ``--overwrite``, which replaces ``overwrites``."""
    return (
        user,
        Argument("directory", type=Path),
        Argument("--overwrite", action="store_true", help=f"replace {overwrites}"),
    )


@command(
    "export",
    "write a user's memory as DIR/memories/... (the SDK's local layout)",
    *_transfer_arguments(USER, "local files that differ"),
    examples=("s3memory export --user alice ./backup",),
)
def export(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    with console.progress("file") as progress:
        transfer = operations.export(
            arguments.user, arguments.directory, overwrite=arguments.overwrite, progress=progress
        )
    return _transfer_report(transfer, "written")


@command(
    "import",
    "load DIR/memories/... (what the SDK's local tool wrote)",
    *_transfer_arguments(
        Argument("--user", required=True, type=new_memory_name, help=MEMORY_NAME_HELP),
        "stored files whose text differs",
    ),
    Argument("--dry-run", action="store_true", help="check every file, change nothing"),
    confirms="do not ask before overwriting",
    examples=("s3memory import --user shared/team-acme ./runbooks --dry-run",),
)
def import_folder(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    if arguments.overwrite:
        console.confirm(f"Replace {arguments.user}'s stored files that differ from {arguments.directory}?")
    with console.progress("file") as progress:
        transfer = operations.import_folder(
            arguments.user,
            arguments.directory,
            overwrite=arguments.overwrite,
            dry_run=arguments.dry_run,
            progress=progress,
        )
    if arguments.dry_run:
        return _transfer_report(transfer, "would write", "would be written")
    return _transfer_report(transfer, "written")


def _transfer_report(transfer: Transfer, verb: str, written: str = "written") -> Report:
    """What an export or an import wrote (each line ``verb`` and the path; the total ``written``),
    skipped and refused, and its counts."""
    lines = [f"{verb} {printable(path)}" for path in transfer.written]
    lines += [f"skipped {printable(path)}: {printable(why)}" for path, why in transfer.skipped]
    lines += [f"refused {printable(path)}: {printable(why)}" for path, why in transfer.refused]
    counts = transfer.counts()
    named = {"written": written}
    lines.append(", ".join(f"{count} {named.get(name, name)}" for name, count in counts.items()))
    document = {
        **counts,
        "written_paths": transfer.written,
        "unchanged_paths": transfer.unchanged,
        "skipped_paths": [{"path": path, "reason": why} for path, why in transfer.skipped],
        "refused_paths": [{"path": path, "reason": why} for path, why in transfer.refused],
    }
    return Report(document, lines, counts, transfer.complete)


def _versions(console: Console, operations: Operations) -> MemoryVersions:
    """The versions of ``--user``'s memory; ``CommandError`` on a format-2 store without a store key,
    where no memory exists (and none is made)."""
    from s3memory.ops.operations import no_such_memory
    from s3memory.ops.versions import MemoryVersions

    memory = operations.existing_memory(console.arguments.user)
    if memory is None:
        raise CommandError(no_such_memory(console.arguments.user))
    return MemoryVersions(memory)


@command(
    "history",
    "every version of a file",
    USER,
    Argument("path", type=path_argument),
    examples=("s3memory history --user alice /memories/preferences.md",),
)
def history(console: Console, operations: Operations) -> Report:
    from s3memory.crypto import shown_author

    path = console.arguments.path
    versions = _versions(console, operations)
    found = versions.history(path)
    if not found:
        operations.check_exists(console.arguments.user, versions.memory, through_time=True)
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


def _restore_misuse(path: str | None, version: str | None) -> str | None:
    """Why ``restore``'s path and ``--version`` cannot go together: a version is a file's, and
    ``--as-of`` puts back the whole memory (a path with it was ignored)."""
    if version is not None and path is None:
        return "--version needs the file's path"
    if version is None and path is not None:
        return "--as-of puts back the whole memory: give no path"
    return None


_ISO_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}:\d{2})?"
)
"""A time as ``--as-of`` takes it: a date, with a time to the minute or the microsecond, and a zone."""


def as_of_time(text: str) -> datetime:
    """``--as-of``'s time (UTC unless it names a zone); refused (exit 2) naming the form it takes,
    also for what Python's ISO parser would read as a surprising date (``11111111``: 1111-11-11)."""
    from s3memory.core.timestamps import when

    moment = None
    if _ISO_TIME.fullmatch(text.strip()):
        with contextlib.suppress(ValueError):
            moment = when(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"an ISO 8601 time like 2026-12-01T09:00:00Z (a date, a time, a zone), not {shown(text)!r}"
        )
    return moment


@command(
    "restore",
    "a file's version, or the whole memory as it was at a time",
    USER,
    Argument("path", nargs="?", type=path_argument, help="the file (with --version)"),
    OneOf(
        Argument("--version", help="the version id (from history)"),
        Argument("--as-of", type=as_of_time, help="a time, ISO 8601 (UTC unless it names a zone)"),
        required=True,
    ),
    confirms=NO_QUESTION,
    examples=(
        "s3memory restore --user alice --as-of 2026-12-01T09:00:00Z",
        "s3memory restore --user alice /memories/notes.md --version VERSION_ID",
    ),
    misuse=lambda arguments: _restore_misuse(arguments.path, arguments.version),
)
def restore(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    versions = _versions(console, operations)
    operations.check_exists(arguments.user, versions.memory, through_time=True)
    what = arguments.path if arguments.version is not None else f"all of {arguments.user}'s memory"
    console.confirm(f"Restore {what}?")
    if arguments.version is not None:
        outcome = versions.restore(arguments.path, arguments.version)
        return Report(
            {"path": arguments.path, "outcome": outcome},
            [f"{outcome} {printable(arguments.path)}"],
            {outcome: 1},
        )
    with console.progress("file") as progress:
        restored = versions.restore_as_of(arguments.as_of, progress)
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


@command(
    "redact",
    "remove one stored version for good",
    USER,
    Argument("path", type=path_argument),
    Argument("--version", required=True, help="the version id (from history)"),
    confirms=NO_QUESTION,
    examples=("s3memory redact --user alice /memories/notes.md --version VERSION_ID --yes",),
)
def redact(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    console.confirm(f"Remove version {arguments.version} of {arguments.path} for good?")
    _versions(console, operations).redact(arguments.path, arguments.version)
    return Report(
        {"path": arguments.path, "removed": arguments.version},
        [f"removed {printable(arguments.version)}"],
        {"removed": 1},
    )


@command(
    "erase",
    "remove every object and version of a user, keys first",
    USER,
    Argument("--dry-run", action="store_true", help="count what would go, change nothing"),
    confirms=NO_QUESTION,
    examples=("s3memory erase --user alice --dry-run",),
)
def erase(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    console.confirm(f"Erase every object and version of user {arguments.user}, for good?")
    with console.progress("version") as progress:
        erasure = operations.erase(arguments.user, dry_run=arguments.dry_run, progress=progress)
    verb = "would remove" if arguments.dry_run else "removed"
    # Shredded only once the last listing found nothing: what a serving process wrote meanwhile
    # (a new wrapped data key among it) is still there, and decrypts.
    shredded = erasure.shredded and not erasure.left and not arguments.dry_run
    left = f"left: {erasure.left:,} object versions"
    if erasure.left:
        left += ": something is still writing to this user: stop serving it and run erase again"
    if shredded:
        shredding = (
            "copies kept elsewhere can no longer be decrypted: every version of the wrapped data keys is gone"
        )
        if operations.format.names_outlive_data_keys:
            shredding += (
                "; their private names (user id, paths) still decrypt with the store key, which stays"
            )
    elif erasure.shredded:
        shredding = "copies kept elsewhere may still decrypt: a wrapped data key may be among what is left"
    else:
        shredding = "with a local master key, copies kept elsewhere stay readable with that key"
    lines = [
        f"{verb} {erasure.key_versions:,} wrapped key versions and {erasure.other_versions:,} other object versions",
        *([] if arguments.dry_run else [left, shredding]),
    ]
    counts = {
        "key_versions": erasure.key_versions,
        "other_versions": erasure.other_versions,
        "left": erasure.left,
    }
    document = {
        "user_id": erasure.user_id,
        "dry_run": arguments.dry_run,
        **counts,
        "shredded": shredded,
    }
    return Report(document, lines, counts, not erasure.left)


@command(
    "expire",
    "delete the files of users idle for N days (written before, and no command since)",
    USER_OR_ALL,
    Argument("--idle-days", type=idle_days, required=True, help="days without any command (1 to 3650)"),
    Argument("--dry-run", action="store_true", help="list what would go, change nothing"),
    confirms=NO_QUESTION,
    examples=("s3memory expire --all --idle-days 90 --dry-run",),
)
def expire(console: Console, operations: Operations) -> Report:
    from s3memory.ops import idle_expiry as expiry

    arguments = console.arguments
    console.confirm(f"Delete the files of {whom(arguments)} if idle for {arguments.idle_days} days?")
    users = chosen_users(console.arguments, operations)
    with console.progress("user") as progress:
        report = expiry.expire(
            operations, arguments.idle_days, users, dry_run=arguments.dry_run, progress=progress
        )
    verb = "would expire" if arguments.dry_run else "expired"
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


@command(
    "rotate",
    "seal every file again under a new data key version; the old one goes when nothing needs it",
    USER_OR_ALL,
    Argument("--dry-run", action="store_true", help="count what would be sealed again, change nothing"),
    Argument(
        "--wait", action="store_true", help="wait until the old key may go (KMS: about 7 minutes) and finish"
    ),
    Argument(
        "--drop-history",
        action="store_true",
        help="remove an old key even while earlier versions of files need it (they become unreadable)",
    ),
    confirms=NO_QUESTION,
    examples=("s3memory rotate --all --wait",),
)
def rotate(console: Console, operations: Operations) -> Report:
    from s3memory.ops import rotation

    rotation.refuse_unsupported(operations)  # before asking, and before any request
    arguments = console.arguments
    dropping = (
        " and remove old keys that earlier versions of files still need, making that history unreadable"
        if arguments.drop_history
        else ""
    )
    console.confirm(f"Seal every file of {whom(arguments)} again under a new data key version{dropping}?")
    # Every shared memory too: the report says when an old key may go, which is true only once
    # nothing in the store needs it.
    users = chosen_users(console.arguments, operations, shared=True)
    reports = []
    with console.progress("user") as progress:
        if arguments.wait and not arguments.dry_run:  # every memory sealed again, then one wait
            reports = rotation.rotate_waiting(
                operations, users, drop_history=arguments.drop_history, progress=progress
            )
        else:
            progress.expect(len(users))
            for user in users:
                reports.append(
                    rotation.rotate(
                        operations, user, dry_run=arguments.dry_run, drop_history=arguments.drop_history
                    )
                )
                progress.advance()
    counts: dict[str, int] = {}
    for report in reports:
        for name, count in report.counts().items():
            counts[name] = counts.get(name, 0) + count
    counts["users"] = len(reports)
    lines = [line for report in reports for line in _rotation_lines(report, operations)]
    document = {"users": [{**dataclasses.asdict(r), "complete": r.complete} for r in reports]}
    return Report(document, lines or ["(no users)"], counts, all(report.complete for report in reports))


def _rotation_lines(report: RotationReport, operations: Operations) -> list[str]:
    """What a rotation of one user did, as the operator reads it."""
    from s3memory.crypto import KMSKeyProvider

    user = printable(report.user_id)
    if report.current is None:
        return [f"{user}: no data key yet, nothing to rotate"]
    verb = "would seal" if report.dry_run else "sealed"
    lines = [
        f"{user}: key version {report.current}" + (" (created)" if report.created else ""),
        f"{user}: {verb} {len(report.reencrypted):,} files and {len(report.records):,} records again",
        *(f"{user}: left {printable(label)}: {printable(why)}" for label, why in report.left),
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


@command(
    "verify",
    "authenticate every object; exit 1 on any problem",
    USER_OR_ALL,
    examples=("s3memory verify --all --json",),
)
def verify(console: Console, operations: Operations) -> Report:
    from s3memory.ops.operations import no_such_memory

    users = chosen_users(console.arguments, operations, shared=True)
    with console.progress("object") as progress:
        reports = [operations.verify(user, progress=progress) for user in users]
    if not console.arguments.all and not reports[0].checked:  # no object: no such memory, and no probe
        raise CommandError(no_such_memory(console.arguments.user))
    server = operations.check_server()
    answers = {} if server.enforced is None else server.enforced.answers
    server_problems = [
        f"server: does not enforce {condition} (it answered: {printable(answers.get(condition, ''))}), "
        f"which storage format {operations.storage_format} needs"
        for condition in server.missing
    ]
    if server.changed:
        server_problems.append(
            "server: enforces other conditions than the store's record said; the record now says what it "
            "enforces (restart the processes that serve the store, so that they learn it)"
        )
    problems = sum(len(report.problems) for report in reports) + len(server_problems)
    checked = sum(report.checked for report in reports)
    unchecked = ["server: not checked (this role may not write the probe's objects)"]
    lines = (
        (unchecked if server.enforced is None else [])
        + server_problems
        + [_finding_line(report.user_id, finding) for report in reports for finding in report.findings]
    )
    lines.append(
        f"{checked:,} objects of {len(reports):,} users checked: "
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
    counts = {"users": len(reports), "checked": checked, "problems": problems}
    return Report(document, lines, counts, not problems)


def _finding_line(user_id: str, finding: Finding) -> str:
    """One finding of ``verify`` (or of the verification after ``migrate``) as the operator reads it:
    the user, the kind, the object's key (a bucket writer may have chosen it) and why."""
    return f"{printable(user_id)}: {finding.kind} {printable(finding.key)}: {printable(finding.detail)}"


@command(
    "migrate",
    "move every user from storage format 1 to 2 (private names), verify, mark the store",
    confirms=NO_QUESTION,
    examples=("s3memory --bucket agent-memory migrate --yes",),
)
def migrate(console: Console, operations: Operations) -> Report:
    from s3memory.ops.migrate import migrate_store

    console.confirm(
        "Move every user of the store from storage format 1 to format 2 (private names)? Serve the "
        "store in format 2 first (S3MEMORY_STORAGE_FORMAT=2): format-1 readers will find nothing."
    )
    with console.progress("user") as progress:
        report = migrate_store(operations, progress)
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
        _finding_line(user, finding)
        for user, verified in report.verified.items()
        for finding in verified.problems
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
