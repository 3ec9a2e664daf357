"""The operator commands of ``s3memory``, each declared once: its name, help, arguments, whether it
asks first, and a handler that makes one call into ``operations`` (or ``versions``, ``rotation``,
``expiry``, ``ops.migrate``; ``sync``'s rounds, in ``cli.sync_loop``) and returns a ``Report``: the
one the call's report renders of itself (``Report.of``). ``console`` runs them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3memory.cli.arguments import (
    MEMORY_NAME_HELP,
    SYNC_INTERVAL,
    USER,
    USER_OR_ALL,
    as_of_time,
    chosen_users,
    idle_days,
    new_memory_name,
    path_argument,
    restore_misuse,
    sync_interval,
    transfer_arguments,
    whom,
)
from s3memory.cli.console import (
    Argument,
    Console,
    Handler,
    OneOf,
    OperatorCommand,
    Report,
    printable,
)
from s3memory.errors import CommandError

if TYPE_CHECKING:
    from s3memory.ops.operations import Operations
    from s3memory.ops.versions import MemoryVersions

NO_QUESTION = "do not ask for confirmation"
"""The help of ``--yes`` for most commands that ask first."""


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
    from s3memory.ops.inventory import UserListing

    return Report.of(UserListing(list(operations.users())))


@command(
    "shared",
    "list the shared memories in the store, each with its namespace token (CloudTrail)",
    examples=("s3memory shared --json",),
)
def shared(console: Console, operations: Operations) -> Report:
    from s3memory.ops.inventory import SharedListing

    return Report.of(SharedListing(operations.shared_namespaces()))


@command(
    "ls",
    "a user's files and their sizes",
    USER,
    Argument("path", nargs="?", default="/memories", type=path_argument),
    examples=("s3memory ls --user alice /memories/projects",),
)
def ls(console: Console, operations: Operations) -> Report:
    from s3memory.ops.inventory import FileListing

    path = console.arguments.path
    return Report.of(FileListing(path, operations.files(console.arguments.user, path)))


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


@command(
    "export",
    "write a user's memory as DIR/memories/... (the SDK's local layout)",
    *transfer_arguments(USER, "local files that differ"),
    examples=("s3memory export --user alice ./backup",),
)
def export(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    with console.progress("file") as progress:
        transfer = operations.export(
            arguments.user, arguments.directory, overwrite=arguments.overwrite, progress=progress
        )
    return Report.of(transfer)


@command(
    "import",
    "load DIR/memories/... (what the SDK's local tool wrote)",
    *transfer_arguments(
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
    return Report.of(transfer)


@command(
    "sync",
    "keep DIR and a user's /memories the same, both ways (DIR/notes.md is /memories/notes.md)",
    Argument("--user", required=True, type=new_memory_name, help=MEMORY_NAME_HELP),
    Argument("directory", type=Path),
    Argument("--once", action="store_true", help="one round, then exit (0 when the round completed)"),
    Argument(
        "--interval",
        type=sync_interval,
        default=SYNC_INTERVAL,
        metavar="SECONDS",
        help=f"seconds between rounds (default {SYNC_INTERVAL}, at least 5)",
    ),
    Argument(
        "--allow-deletes",
        action="store_true",
        help="delete even where a round would delete more than 8 files and more than half the tree",
    ),
    Argument(
        "--adopt",
        action="store_true",
        help="take a folder never synced even where it holds what a memory cannot (left alone)",
    ),
    Argument("--rehash", action="store_true", help="read every local file, its size and times unchanged too"),
    Argument(
        "--pull-only",
        action="store_true",
        help="never write the memory (credentials that may only read): pull its changes, keep this folder's",
    ),
    examples=(
        "s3memory sync --user alice ~/.claude/projects/-home-alice-src-app/memory --once",
        "s3memory sync --user alice ./memory --interval 30",
    ),
)
def sync(console: Console, operations: Operations) -> Report:
    from s3memory.cli.sync_loop import run_sync

    return run_sync(console, operations)


def _versions(console: Console, operations: Operations) -> MemoryVersions:
    """The versions of ``--user``'s memory; ``CommandError`` on a format-2 store without a store key,
    where no memory exists (and none is made)."""
    from s3memory.ops.context import no_such_memory
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
    from s3memory.ops.versions import History

    path = console.arguments.path
    versions = _versions(console, operations)
    found = versions.history(path)
    if not found:
        operations.check_exists(console.arguments.user, versions.placed, through_time=True)
    return Report.of(History(path, found))


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
    misuse=lambda arguments: restore_misuse(arguments.path, arguments.version),
)
def restore(console: Console, operations: Operations) -> Report:
    arguments = console.arguments
    versions = _versions(console, operations)
    operations.check_exists(arguments.user, versions.placed, through_time=True)
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
    return Report.of(restored)


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
    return Report.of(erasure)


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
    return Report.of(report)


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
    from s3memory.crypto import KMSKeyProvider
    from s3memory.ops import rotation
    from s3memory.ops.rotation_report import Rotations

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
    return Report.of(Rotations(reports, isinstance(operations.key_provider, KMSKeyProvider)))


@command(
    "verify",
    "authenticate every object; exit 1 on any problem",
    USER_OR_ALL,
    examples=("s3memory verify --all --json",),
)
def verify(console: Console, operations: Operations) -> Report:
    from s3memory.ops.context import no_such_memory
    from s3memory.ops.verify import VerifyReport

    users = chosen_users(console.arguments, operations, shared=True)
    with console.progress("object") as progress:
        reports = [operations.verify(user, progress=progress) for user in users]
    if not console.arguments.all and not reports[0].checked:  # no object: no such memory, and no probe
        raise CommandError(no_such_memory(console.arguments.user))
    return Report.of(VerifyReport(reports, operations.check_server(), operations.storage_format))


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
    return Report.of(report)
