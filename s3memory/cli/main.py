"""The ``s3memory`` command. Importing this module is light: each subcommand loads its code when run.

A command line it cannot take (an unknown command or option, a missing or malformed argument) ends
with exit status 2 and one error on stderr: argparse's usage and ``s3memory CMD: error: why``, or
with ``--json`` one JSON object (``console.error_line``). A word close to a command, an option of
its command or a choice is named instead, on one line: ``did you mean --user?``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from s3memory._version import __version__
from s3memory.cli.completion import SHELLS, commands_of, completion_script, options_of
from s3memory.cli.console import Console, error_line, examples, printable
from s3memory.cli.operator_commands import GLOBAL_OPTIONS, add_commands, add_global_options
from s3memory.demo import DEMO_INSTALL_HINT, LOCAL_S3_BUCKET, LOCAL_S3_ENV_FILE, missing_for_demo
from s3memory.mcp import DEFAULT_MCP_HOST, DEFAULT_MCP_PORT, MCP_INSTALL_HINT, missing_for_mcp
from s3memory.settings import DEFAULT_MODEL

EXIT_USAGE = 2
"""A command line that cannot work, no command, or ``demo`` or ``mcp`` without its extra installed."""


class Refusal(Exception):
    """A command line ``parser`` refused, and why (``message``); ``close``: the message names the
    choice closest to a mistyped one."""

    def __init__(self, parser: argparse.ArgumentParser, message: str, *, close: bool) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message
        self.close = close


class Parser(argparse.ArgumentParser):
    """``argparse``'s parser, whose refusals raise ``Refusal`` for ``main`` to print, and whose
    refusal of a choice (a command, ``--storage-format``) names the closest one."""

    _close = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, but a command's parser refuses what it cannot take itself, so that its
        refusal names the command and shows its usage."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and not commands_of(self):
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        raise Refusal(self, message, close=self._close)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            close = difflib.get_close_matches(
                str(value), [str(choice) for choice in action.choices or ()], n=1
            )
            if not close:
                raise
            self._close = True
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}: did you mean {close[0]!r}?"
            ) from None


DEMO_EXAMPLES = ("s3memory demo", "ANTHROPIC_API_KEY=... s3memory demo --live")
LOCAL_S3_EXAMPLES = ("s3memory local-s3", "s3memory local-s3 --port 9000 --env-file ~/s3memory.env")
COMPLETION_EXAMPLES = (
    'eval "$(s3memory completion bash)"  # in ~/.bashrc',
    'eval "$(s3memory completion zsh)"  # in ~/.zshrc',
)
MCP_EXAMPLES = (
    "s3memory mcp --user alice",
    "s3memory mcp --env-file ~/s3memory-local.env --user alice",
    "s3memory mcp --user alice --mount /memories/team=team-acme",
    "s3memory mcp --transport http --host 0.0.0.0 --url https://memory.example.com/mcp",
)


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="s3memory",
        description="Claude's memory tool (memory_20250818) on Amazon S3, encrypted on the client.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_global_options(parser, after_command=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="three conversations with Claude's memory on an embedded S3 (offline unless --live)",
        description=(
            "Run three conversations through the Anthropic SDK's tool runner with S3MemoryTool on an embedded "
            "moto S3 server: the second starts with an empty context and recalls what the first stored; the "
            "third is refused a write into a team's read-only shared memory. "
            f"Offline by default (a scripted stand-in answers for Claude). Needs the demo extra: {DEMO_INSTALL_HINT}"
        ),
        epilog=examples(DEMO_EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--live",
        action="store_true",
        help="talk to real Claude (needs ANTHROPIC_API_KEY); S3 stays embedded",
    )
    demo.add_argument("--model", default=DEFAULT_MODEL, help=f"model for --live (default: {DEFAULT_MODEL})")
    mcp = commands.add_parser(
        "mcp",
        help="serve the memory tool to MCP clients (Claude Code, Claude Desktop) on stdio or over HTTP",
        description=(
            "Serve the memory tool to an MCP client on standard input and output, for one user, until the "
            "client closes the input; or with --transport http to every user whose bearer token verifies "
            "(S3MEMORY_JWT_*), until interrupted. The S3MEMORY_* settings as docs/mcp.md says. "
            f"Needs the mcp extra: {MCP_INSTALL_HINT}"
        ),
        epilog=examples(MCP_EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mcp.add_argument("--user", help="the user id whose memory is served (stdio, or http with --no-auth)")
    mcp.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default), or http: streamable HTTP at /mcp, each request's user its bearer token's subject",
    )
    mcp.add_argument("--host", help=f"http: the address to listen on (default {DEFAULT_MCP_HOST})")
    mcp.add_argument("--port", type=int, help=f"http: the port to listen on (default {DEFAULT_MCP_PORT})")
    mcp.add_argument("--url", help="http: the URL clients reach /mcp at (default http://HOST:PORT/mcp)")
    mcp.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="POINT=MEMORY[:read_write]",
        help=(
            "stdio: mount a shared memory into the user's, read-only unless :read_write, e.g. "
            "--mount /memories/team=team-acme (repeatable; over HTTP, S3MEMORY_MOUNTS grants mounts by token)"
        ),
    )
    mcp.add_argument(
        "--no-auth",
        action="store_true",
        help="http: serve --user's memory without tokens, only on a loopback --host",
    )
    mcp.add_argument(
        "--env-file",
        type=Path,
        metavar="PATH",
        help=(
            "read the S3MEMORY_* and AWS_* settings from PATH (export NAME=VALUE lines, as local-s3 writes "
            "them; mode 600), over those of the environment"
        ),
    )
    mcp.add_argument(
        "--no-check",
        action="store_true",
        help="start without checking that the bucket and the KMS key answer (offline); the first call meets any problem",
    )
    add_commands(commands)
    local = commands.add_parser(
        "local-s3",
        help="serve a local, versioned S3 for trying s3memory, and write the settings to reach it",
        description=(
            "Serve moto's S3 on 127.0.0.1 with one versioned bucket until interrupted, and write the settings "
            "another shell needs (endpoint, bucket, a new local key, new AWS credentials) to an env file only "
            "this user may read. It answers only requests signed with those credentials, for its own address "
            "and port, from no web page. The memory lives in this process. Needs the demo extra: "
            f"{DEMO_INSTALL_HINT}"
        ),
        epilog=examples(LOCAL_S3_EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    local.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
    local.add_argument(
        "--bucket",
        dest="local_bucket",
        default=LOCAL_S3_BUCKET,
        help=f"the bucket (default {LOCAL_S3_BUCKET})",
    )
    local.add_argument(
        "--env-file",
        type=Path,
        default=Path(LOCAL_S3_ENV_FILE),
        help=f"where the settings go (default ./{LOCAL_S3_ENV_FILE})",
    )
    completion = commands.add_parser(
        "completion",
        help="print the shell completion script (bash or zsh)",
        description="Print the completion script of s3memory for bash or zsh, to evaluate in the shell's rc file.",
        epilog=examples(COMPLETION_EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    completion.add_argument("shell", choices=SHELLS)
    return parser


def _mcp(arguments: argparse.Namespace) -> int:
    """``s3memory mcp``: on stdio for ``--user``, or over HTTP; with the settings of ``--env-file``
    over those of the environment."""
    if arguments.env_file is not None:
        from s3memory.mcp import env_file

        try:
            os.environ.update(env_file.read(arguments.env_file))
        except env_file.EnvFileRefused as refusal:
            print(f"s3memory mcp: --env-file {arguments.env_file}: {refusal}", file=sys.stderr)
            return EXIT_USAGE
    if arguments.transport == "http" and arguments.mount:
        print(
            "s3memory mcp: --mount only on stdio: over HTTP, S3MEMORY_MOUNTS grants mounts by each "
            "request's verified token (docs/shared.md)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if arguments.transport == "http":
        from s3memory.mcp.http import http_main

        return http_main(
            host=DEFAULT_MCP_HOST if arguments.host is None else arguments.host,
            port=DEFAULT_MCP_PORT if arguments.port is None else arguments.port,
            url=arguments.url,
            no_auth=arguments.no_auth,
            user_id=arguments.user,
            check=not arguments.no_check,
        )
    given = [name for name in ("host", "port", "url") if getattr(arguments, name) is not None]
    if arguments.no_auth:
        given.append("no_auth")
    if given or arguments.user is None:
        wrong = ", ".join(f"--{name.replace('_', '-')}" for name in given)
        problem = f"{wrong} only with --transport http" if given else "--user ID is required on stdio"
        print(f"s3memory mcp: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from s3memory.mcp.stdio import mcp_main

    return mcp_main(arguments.user, arguments.mount, check=not arguments.no_check)


def _lacks_extra(command: str, missing: list[str], install_hint: str, *, extra: str | None = None) -> bool:
    """True (and one line on stderr naming what is missing and how to install it) if ``command``
    lacks requirements of its extra (``extra``; by default the command's own name)."""
    if missing:
        print(
            f"s3memory {command} needs the {extra or command} extra (missing: {', '.join(missing)}): {install_hint}",
            file=sys.stderr,
        )
    return bool(missing)


def _given(arguments: argparse.Namespace, flag: str) -> bool:
    """True if the global option ``flag`` was given (its value is no default)."""
    return getattr(arguments, flag.lstrip("-").replace("-", "_"), None) not in (None, False)


def _misspelt(
    parser: argparse.ArgumentParser, words: Sequence[str]
) -> tuple[argparse.ArgumentParser, str] | None:
    """Why ``words`` were refused, if one of them names no option of its parser (``parser``'s before
    the command, the command's after it) and is close to one: that parser, and ``unrecognized
    option --usr: did you mean --user?``. A value of an option is no option, nor anything after
    ``--``; an abbreviation argparse takes is no typo."""
    commands = commands_of(parser)
    current, value = parser, False
    for word in words:
        if word == "--":
            return None
        if value:
            value = False
        elif word.startswith("--"):
            name = word.partition("=")[0]
            every, valued = options_of(current)
            known = [name] if name in every else [option for option in every if option.startswith(name)]
            if not known:
                close = difflib.get_close_matches(
                    name, [option for option in every if option.startswith("--")], n=1
                )
                if close:
                    return current, f"unrecognized option {name}: did you mean {close[0]}?"
            value = "=" not in word and len(known) == 1 and known[0] in valued
        elif word.startswith("-") and len(word) > 1:
            value = word in options_of(current)[1]
        elif current is parser:
            if word not in commands:
                return None
            current = commands[word]
    return None


def _refused(parser: argparse.ArgumentParser, words: Sequence[str], refusal: Refusal) -> str:
    """What stderr shows of ``refusal``: one JSON object with ``--json``, else argparse's usage and
    error line (``printable``), or that line alone when it names a close option or choice."""
    misspelt = _misspelt(parser, words)
    where, message = misspelt or (refusal.parser, refusal.message)
    if _asks_json(words):
        return error_line(where.prog.partition(" ")[2] or None, message, EXIT_USAGE, as_json=True)
    line = f"{where.prog}: error: {printable(message)}\n"
    return line if misspelt or refusal.close else where.format_usage() + line


def _asks_json(words: Sequence[str]) -> bool:
    """True if ``--json`` (or an abbreviation argparse takes) is among ``words`` before ``--``."""
    given = words[: words.index("--")] if "--" in words else words
    return any(len(word) > 2 and "--json".startswith(word) for word in given)


def _parsed(parser: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    """``words`` parsed (``Refusal`` where they cannot work)."""
    arguments = parser.parse_args(words)
    given = [option.names[0] for option in GLOBAL_OPTIONS if _given(arguments, option.names[0])]
    if arguments.command in ("demo", "mcp", "completion", "local-s3") and given:
        parser.error(
            f"{', '.join(given)}: options of the operator commands, not of {arguments.command} "
            "(which takes the S3MEMORY_* settings: docs/settings.md)"
        )
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        arguments = _parsed(parser, words)
    except Refusal as refusal:
        sys.stderr.write(_refused(parser, words, refusal))
        raise SystemExit(EXIT_USAGE) from None
    if arguments.command == "local-s3":
        if _lacks_extra("local-s3", missing_for_demo(), DEMO_INSTALL_HINT, extra="demo"):
            return EXIT_USAGE
        from s3memory.demo.local_s3 import serve

        return serve(
            sys.stdout, port=arguments.port, bucket=arguments.local_bucket, env_file=arguments.env_file
        )
    if arguments.command == "completion":
        sys.stdout.write(completion_script(parser, arguments.shell))
        return 0
    if arguments.command == "demo":
        if _lacks_extra("demo", missing_for_demo(), DEMO_INSTALL_HINT):
            return EXIT_USAGE
        from s3memory.demo.walkthrough import demo_main

        return demo_main(live=arguments.live, model=arguments.model)
    if arguments.command == "mcp":
        if _lacks_extra("mcp", missing_for_mcp(), MCP_INSTALL_HINT):
            return EXIT_USAGE
        return _mcp(arguments)
    if arguments.command is not None:
        return Console(arguments).run()
    parser.print_help(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
