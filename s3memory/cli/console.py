"""How an operator command of ``s3memory`` runs: settings from ``S3MEMORY_*`` with flags over them, the
operator's confirmation, a progress bar, the command's report as text or ``--json``, the exit status
and one audit line. The commands themselves are declared in ``cli.operator_commands``.

The audit line is JSON: who ran the command (the local user), which command, which user's memory,
and counts; never content or paths. It is appended to ``--audit-log FILE``, and written on stderr
when stderr is no terminal (a job's, a pipeline's log) unless ``--quiet``: never where a person reads.
Long commands draw a progress bar on stderr when it is a terminal (tqdm), not with ``--quiet``.
An error is one line on stderr, ``s3memory COMMAND: message``, or with ``--json`` one JSON object
(``error_line``). Every path, key, user id or message a report or an error line prints that came
from a folder, a bucket or a user goes through ``printable`` (control characters, escape sequences
and surrogates escaped); ``cat`` prints the file's text as it is stored, and ``--json`` escapes
through ``json.dumps``. ``--profile`` and ``--region`` choose the AWS credentials and region of the
clients. Exit status: 0 done, 1 a refusal, a problem or an incomplete transfer, 2 bad usage or settings.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import getpass
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TextIO

from s3memory.errors import CommandError, StorageError, escaped
from s3memory.ops.progress import Progress

if TYPE_CHECKING:
    from s3memory.ops.operations import Operations
    from s3memory.settings import Settings

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
    from s3memory.settings import LOCAL_KEY_VARIABLES, Settings

    merged = dict(environ)
    for flag, variable in FLAG_VARIABLES.items():
        value = getattr(arguments, flag, None)
        if value is not None:
            merged[variable] = value
            if flag == "kms_key_id":
                for local in LOCAL_KEY_VARIABLES:
                    merged.pop(local, None)
    return Settings.from_env(merged)


@dataclasses.dataclass(frozen=True)
class Report:
    """What an operator command found or did: the document ``--json`` prints, the lines printed
    otherwise, the counts of its audit line, and whether it is complete (exit 0) or not (exit 1)."""

    document: Mapping[str, object]
    lines: Sequence[str]
    counts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    complete: bool = True
    end: str = "\n"
    """What follows the last line: a newline, or nothing after a file's text printed as it is."""

    @classmethod
    def of(cls, rendered: Rendered) -> Report:
        """The report of ``rendered``, as it renders itself."""
        return cls(rendered.document(), rendered.lines(), rendered.counts(), rendered.complete)


class Rendered(Protocol):
    """A report of ``ops`` that renders itself (``verify.VerifyReport``, ``erase.Erasure``,
    ``transfer.Transfer``, the listings of ``inventory``, ``versions.History`` and ``Restored``,
    ``idle_expiry.ExpiryReport``, ``rotation_report.Rotations``, ``migrate.StoreMigration``): its
    ``--json`` document, its lines of text (every name from a folder, a bucket or a user
    ``printable``), the counts of its audit line, and whether it is complete."""

    @property
    def complete(self) -> bool: ...

    def document(self) -> Mapping[str, object]: ...

    def lines(self) -> Sequence[str]: ...

    def counts(self) -> Mapping[str, int]: ...


class UsageError(Exception):
    """A command line that cannot work, whatever the store holds (exit 2); nothing was done."""


def error_line(command: str | None, message: str, status: int, as_json: bool) -> str:
    """An error as stderr shows it: ``s3memory COMMAND: message`` (``message`` made ``printable``),
    or with ``as_json`` the same as one JSON object, ``{"command", "error", "status"}``."""
    if as_json:
        return json.dumps({"command": command, "error": message, "status": status}) + "\n"
    return f"s3memory{'' if command is None else f' {command}'}: {printable(message)}\n"


def printable(value: str) -> str:
    """``value`` (a path, a key, a user id or a message that came from a folder, a bucket or a user)
    as a report or an error line may print it: ``errors.escaped`` (no escape sequence reaches the
    terminal, no line is forged, and no surrogate of a name that is not UTF-8 fails the write),
    never cut (what it prints is bounded where it comes from: a name, a key, a message)."""
    return escaped(value)


def render(report: Report, as_json: bool) -> str:
    """``report`` as the operator reads it, or as indented JSON."""
    if as_json:
        return json.dumps(report.document, indent=2) + "\n"
    return "\n".join(report.lines) + report.end


class Argument:
    """One argument of a command: ``argparse``'s ``add_argument(*names, **options)``."""

    def __init__(self, *names: str, **options: Any) -> None:
        self.names = names
        self.options = options

    def add_to(self, parser: Any) -> None:
        """This argument, on ``parser`` (a parser or a group)."""
        parser.add_argument(*self.names, **self.options)


class OneOf:
    """Arguments of which at most one is given (exactly one if ``required``)."""

    def __init__(self, *arguments: Argument, required: bool) -> None:
        self.arguments = arguments
        self.required = required

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """The group, on ``parser``."""
        group = parser.add_mutually_exclusive_group(required=self.required)
        for argument in self.arguments:
            argument.add_to(group)


Handler = Callable[["Console", "Operations"], Report]
"""What a command does, given its console (arguments, confirmation, progress) and the operations."""


@dataclasses.dataclass(frozen=True)
class OperatorCommand:
    """One operator subcommand: its name, its help, its arguments, whether it asks before it changes
    anything (``confirms``: the help of its ``--yes``), its handler, examples of its use, and what
    it refuses of its arguments together (``misuse``: why they cannot work, or None), before any
    setting is read."""

    name: str
    help: str
    arguments: Sequence[Argument | OneOf]
    handler: Handler
    confirms: str | None = None
    examples: Sequence[str] = ()
    misuse: Callable[[argparse.Namespace], str | None] = lambda _: None

    def add_to(self, commands: Any, common: argparse.ArgumentParser) -> None:
        """This command on ``commands`` (the subparsers), with the ``common`` options first and its
        examples after the options in its help."""
        parser = commands.add_parser(
            self.name,
            parents=[common],
            help=self.help,
            description=f"{self.help[0].upper()}{self.help[1:]}.",
            epilog=examples(self.examples),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        for argument in self.arguments:
            argument.add_to(parser)
        if self.confirms is not None:
            parser.add_argument("--yes", action="store_true", help=self.confirms)
        parser.set_defaults(operator_command=self)


def examples(lines: Sequence[str]) -> str:
    """The epilog of a command's help: its examples, one a line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


class NotConfirmed(Exception):
    """The operator did not confirm a change: nothing was changed."""


class Console:
    """One operator command run: its settings, its output streams and its confirmation prompt."""

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
        self._confirm = confirm or _ask
        self._operations = operations
        self._log: BinaryIO | None = None

    def run(self) -> int:
        """The command declared for the arguments: its report printed, its exit status returned."""
        command: OperatorCommand = self.arguments.operator_command
        with contextlib.ExitStack() as stack:
            log: BinaryIO | None = None
            if self.arguments.audit_log is not None:
                try:
                    log = stack.enter_context(_appended(self.arguments.audit_log))
                except OSError as error:
                    cause = _NO_READER if error.errno == errno.ENXIO else error.strerror
                    return self._error(
                        command.name,
                        f"--audit-log cannot be written ({cause}): give a file this user may append to; "
                        "nothing was done",
                        EXIT_USAGE,
                    )
            return self._run(command, log)

    def _run(self, command: OperatorCommand, log: BinaryIO | None) -> int:
        """``run``, with the audit line also appended to ``log`` when given."""
        from s3memory.settings import SettingsError

        started = time.monotonic()
        counts: Mapping[str, int] = {}
        self._log = log
        try:
            problem = command.misuse(self.arguments)
            if problem is not None:
                raise UsageError(problem)
            operations = self._operations or self._operations_of(settings_from(self.arguments, self.environ))
            report = command.handler(self, operations)
            counts = report.counts
            self.out.write(render(report, self.arguments.json))
            status = EXIT_OK if report.complete else EXIT_INCOMPLETE
        except NotConfirmed:
            status = self._error(command.name, "not confirmed; nothing was changed", EXIT_INCOMPLETE)
        except (SettingsError, UsageError) as error:
            status = self._error(command.name, str(error), EXIT_USAGE)
        except (CommandError, StorageError) as error:
            status = self._error(command.name, error.message, EXIT_INCOMPLETE)
        except (ValueError, OSError) as error:
            status = self._error(command.name, str(error), EXIT_INCOMPLETE)
        return self._audit(command.name, status, counts, time.monotonic() - started, log)

    def _error(self, command: str, message: str, status: int) -> int:
        """``message`` on stderr (``error_line``: JSON with ``--json``); ``status``."""
        self.err.write(error_line(command, message, status, self.arguments.json))
        return status

    def _operations_of(self, settings: Settings) -> Operations:
        """The operations of ``settings``, through the clients of ``--profile`` and ``--region``
        when given; ``SettingsError`` naming an AWS setting botocore refuses."""
        from botocore.exceptions import BotoCoreError

        from s3memory.clients import make_kms_client, make_s3_client
        from s3memory.crypto import KMSKeyProvider
        from s3memory.ops.operations import Operations
        from s3memory.settings import SettingsError

        profile, region = self.arguments.profile, self.arguments.region
        try:
            if profile is None and region is None:
                return Operations.from_settings(settings, actor=operator_actor())
            s3 = make_s3_client(endpoint_url=settings.endpoint_url, region_name=region, profile_name=profile)
            key_provider = None
            if settings.kms_key_id is not None:
                kms = make_kms_client(region_name=region, profile_name=profile)
                key_provider = KMSKeyProvider(settings.kms_key_id, kms)
            return Operations.from_settings(settings, s3, key_provider=key_provider, actor=operator_actor())
        except BotoCoreError as error:
            raise SettingsError(
                f"the AWS client could not be built: {error} (check --profile and --region)"
            ) from None

    def _audit(
        self, command: str, status: int, counts: Mapping[str, int], seconds: float, log: BinaryIO | None
    ) -> int:
        """Write the audit line (to ``log``, and on stderr unless quiet or a terminal); the command's
        exit status, ``EXIT_INCOMPLETE`` when ``log`` could not take the line."""
        record = {
            "event": "s3memory.operator",
            "operator": _operator(),
            "command": command,
            "user_id": getattr(self.arguments, "user", None),
            "status": status,
            "seconds": round(seconds, 3),
            **counts,
        }
        line = json.dumps(record, sort_keys=True) + "\n"
        if not self.arguments.quiet and not self.err.isatty():
            self.err.write(line)
        if log is not None:
            try:
                log.write(line.encode("utf-8"))
            except OSError as error:
                return self._error(
                    command,
                    f"the audit line could not be appended to --audit-log ({error.strerror}); the command "
                    f"ran (status {status}), free the space or give another file",
                    EXIT_INCOMPLETE,
                )
        return status

    def emit(self, report: Report, seconds: float) -> None:
        """Print ``report`` and write its audit line now: a command that reports more than once
        (each round of ``sync``) before its handler returns its last report."""
        command: OperatorCommand = self.arguments.operator_command
        self.out.write(render(report, self.arguments.json))
        self.out.flush()
        status = EXIT_OK if report.complete else EXIT_INCOMPLETE
        self._audit(command.name, status, report.counts, seconds, self._log)

    def emit_error(self, message: str, seconds: float) -> None:
        """``message`` as an error line (``error_line``) and its audit line (status 1) now, the
        command going on (a failed round of ``sync``)."""
        command: OperatorCommand = self.arguments.operator_command
        status = self._error(command.name, message, EXIT_INCOMPLETE)
        self._audit(command.name, status, {}, seconds, self._log)

    def confirm(self, question: str) -> None:
        """A dry run (it changes nothing), ``--yes``, or the operator's answer to ``question``; raises
        ``NotConfirmed`` otherwise."""
        if getattr(self.arguments, "dry_run", False) or self.arguments.yes:
            return
        if not self._confirm(printable(question)):
            raise NotConfirmed

    @contextlib.contextmanager
    def progress(self, unit: str) -> Iterator[Progress]:
        """A progress bar on stderr while the block runs: only on a terminal, never with --json."""
        from tqdm import tqdm

        shown = not self.arguments.json and not self.arguments.quiet and self.err.isatty()
        with tqdm(
            desc=self.arguments.command, unit=unit, file=self.err, disable=not shown, leave=False
        ) as bar:
            yield _Bar(bar)


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
    from s3memory.crypto import OPERATOR, validate_author

    try:
        return validate_author(f"{OPERATOR}:{_operator()}")
    except ValueError:
        return OPERATOR


def _operator() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


_NO_READER = "a FIFO no process reads: start its reader first"
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC


def _appended(path: str) -> BinaryIO:
    """``path`` opened to append to, made if missing, unbuffered (a write that fails leaves nothing
    to write again at close); never waiting for a FIFO's reader (no reader: ``ENXIO``)."""
    return os.fdopen(os.open(path, _APPEND, 0o666), "ab", buffering=0)


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
