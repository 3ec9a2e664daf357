"""The operator commands' arguments: their types, each refusing (a usage error, exit 2) what cannot work
whatever the store holds, with the reason; the arguments several commands take; what they mean
together (``--all`` or ``--user``; ``restore``'s path with ``--version``)."""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from s3memory.cli.console import Argument, OneOf
from s3memory.core.paths import UserId, check_user_id, memory_path, owner_of
from s3memory.errors import CommandError, shown

if TYPE_CHECKING:
    from s3memory.ops.operations import Operations


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


SYNC_INTERVAL = 15
"""``sync``'s seconds between rounds unless ``--interval`` says."""
SYNC_INTERVAL_LEAST = 5
SYNC_INTERVAL_MOST = 86_400


def sync_interval(text: str) -> int:
    """``sync --interval``: whole seconds from ``SYNC_INTERVAL_LEAST`` to a day; refused (exit 2)
    otherwise."""
    try:
        seconds = int(text)
    except ValueError:
        seconds = 0
    if not SYNC_INTERVAL_LEAST <= seconds <= SYNC_INTERVAL_MOST:
        raise argparse.ArgumentTypeError(
            f"a whole number of seconds from {SYNC_INTERVAL_LEAST} to {SYNC_INTERVAL_MOST:,}, not {shown(text)!r}"
        )
    return seconds


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


def whom(arguments: argparse.Namespace) -> str:
    """``--all`` or ``--user U``, as a confirmation question names them."""
    return "every user" if arguments.all else f"user {arguments.user}"


def transfer_arguments(user: Argument, overwrites: str) -> tuple[Argument, ...]:
    """The arguments of a transfer between a user's memory and DIR/memories/... (export, import):
    the ``user``, the folder, and ``--overwrite``, which replaces ``overwrites``."""
    return (
        user,
        Argument("directory", type=Path),
        Argument("--overwrite", action="store_true", help=f"replace {overwrites}"),
    )


def restore_misuse(path: str | None, version: str | None) -> str | None:
    """Why ``restore``'s path and ``--version`` cannot go together: a version is a file's, and
    ``--as-of`` puts back the whole memory (a path with it was ignored)."""
    if version is not None and path is None:
        return "--version needs the file's path"
    if version is None and path is not None:
        return "--as-of puts back the whole memory: give no path"
    return None
