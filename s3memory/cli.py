"""The ``s3memory`` command. Importing this module is light: each subcommand loads its code when run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._version import __version__
from .console import Console
from .demo import DEMO_INSTALL_HINT, missing_for_demo
from .settings import DEFAULT_MODEL

EXIT_USAGE = 2
"""No command, or ``demo`` without the ``demo`` extra installed."""


def _one_user_or_all(command: argparse.ArgumentParser) -> None:
    """``--user U`` or ``--all``, exactly one."""
    whom = command.add_mutually_exclusive_group(required=True)
    whom.add_argument("--user", help="the user id")
    whom.add_argument("--all", action="store_true", help="every user in the store")


def add_commands(commands: Any) -> None:
    """The operator subcommands, on the ``s3memory`` parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bucket", help="the bucket (S3MEMORY_BUCKET)")
    common.add_argument("--prefix", help="the users' key prefix (S3MEMORY_PREFIX, default users/)")
    common.add_argument(
        "--storage-format",
        choices=("auto", "1", "2"),
        help="the store's storage format: 1 plain names, 2 private names, auto 2 unless the store "
        "holds format 1 (S3MEMORY_STORAGE_FORMAT, default auto)",
    )
    common.add_argument("--store-id", help="format 2: the store's id (S3MEMORY_STORE_ID, default the bucket)")
    common.add_argument("--kms-key-id", help="the KMS key (S3MEMORY_KMS_KEY_ID)")
    common.add_argument("--endpoint-url", help="an S3 endpoint (S3MEMORY_ENDPOINT_URL)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    user = argparse.ArgumentParser(add_help=False)
    user.add_argument("--user", required=True, help="the user id")

    commands.add_parser("users", parents=[common], help="list the user ids in the store")
    ls = commands.add_parser("ls", parents=[common, user], help="a user's files and their sizes")
    ls.add_argument("path", nargs="?", default="/memories")
    cat = commands.add_parser("cat", parents=[common, user], help="a user's file, decrypted")
    cat.add_argument("path")
    export = commands.add_parser(
        "export",
        parents=[common, user],
        help="write a user's memory as DIR/memories/... (the SDK's local layout)",
    )
    export.add_argument("directory", type=Path)
    export.add_argument("--overwrite", action="store_true", help="replace local files that differ")
    load = commands.add_parser(
        "import", parents=[common, user], help="load DIR/memories/... (what the SDK's local tool wrote)"
    )
    load.add_argument("directory", type=Path)
    load.add_argument("--overwrite", action="store_true", help="replace stored files whose text differs")
    load.add_argument("--dry-run", action="store_true", help="check every file, change nothing")
    load.add_argument("--yes", action="store_true", help="do not ask before overwriting")
    history = commands.add_parser("history", parents=[common, user], help="every version of a file")
    history.add_argument("path")
    restore = commands.add_parser(
        "restore", parents=[common, user], help="a file's version, or the whole memory as it was at a time"
    )
    restore.add_argument("path", nargs="?", help="the file (with --version)")
    point = restore.add_mutually_exclusive_group(required=True)
    point.add_argument("--version", help="the version id (from history)")
    point.add_argument("--as-of", help="a time, ISO 8601 (UTC unless it names a zone)")
    restore.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    redact = commands.add_parser("redact", parents=[common, user], help="remove one stored version for good")
    redact.add_argument("path")
    redact.add_argument("--version", required=True, help="the version id (from history)")
    redact.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    erase = commands.add_parser(
        "erase", parents=[common, user], help="remove every object and version of a user, keys first"
    )
    erase.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")
    erase.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    expire = commands.add_parser(
        "expire",
        parents=[common],
        help="delete the files of users idle for N days (written before, and no command since)",
    )
    _one_user_or_all(expire)
    expire.add_argument("--idle-days", type=int, required=True, help="days without any command (1 to 3650)")
    expire.add_argument("--dry-run", action="store_true", help="list what would go, change nothing")
    expire.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    rotate = commands.add_parser(
        "rotate",
        parents=[common],
        help="seal every file again under a new data key version; the old one goes when nothing needs it",
    )
    _one_user_or_all(rotate)
    rotate.add_argument(
        "--dry-run", action="store_true", help="count what would be sealed again, change nothing"
    )
    rotate.add_argument(
        "--wait", action="store_true", help="wait until the old key may go (KMS: about 7 minutes) and finish"
    )
    rotate.add_argument(
        "--drop-history",
        action="store_true",
        help="remove an old key even while earlier versions of files need it (they become unreadable)",
    )
    rotate.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    verify = commands.add_parser(
        "verify", parents=[common], help="authenticate every object; exit 1 on any problem"
    )
    _one_user_or_all(verify)
    migrate = commands.add_parser(
        "migrate",
        parents=[common],
        help="move every user from storage format 1 to 2 (private names), verify, mark the store",
    )
    migrate.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="s3memory",
        description="Claude's memory tool (memory_20250818) on Amazon S3, encrypted on the client.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="two conversations with Claude's memory on an embedded S3 (offline unless --live)",
        description=(
            "Run two conversations through the Anthropic SDK's tool runner with S3MemoryTool on an embedded "
            "moto S3 server: the second starts with an empty context and recalls what the first stored. "
            f"Offline by default (a scripted stand-in answers for Claude). Needs the demo extra: {DEMO_INSTALL_HINT}"
        ),
    )
    demo.add_argument(
        "--live",
        action="store_true",
        help="talk to real Claude (needs ANTHROPIC_API_KEY); S3 stays embedded",
    )
    demo.add_argument("--model", default=DEFAULT_MODEL, help=f"model for --live (default: {DEFAULT_MODEL})")
    add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        missing = missing_for_demo()
        if missing:
            print(
                f"s3memory demo needs the demo extra (missing: {', '.join(missing)}): {DEMO_INSTALL_HINT}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        from .demo.walkthrough import demo_main

        return demo_main(live=arguments.live, model=arguments.model)
    if arguments.command is not None:
        return Console(arguments).run()
    parser.print_help(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
