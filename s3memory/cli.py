"""The ``s3memory`` command. Importing this module is light: each subcommand loads its code when run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DEFAULT_MODEL = "claude-sonnet-4-5"
"""The model used when none is named: by the demo's ``--live`` and by the agent Lambda."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="s3memory",
        description="Claude's memory tool (memory_20250818) on Amazon S3, encrypted on the client.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="two conversations with Claude's memory on an embedded S3 (offline unless --live)",
        description=(
            "Run two conversations through the Anthropic SDK's tool runner with S3MemoryTool on an embedded "
            "moto S3 server: the second starts with an empty context and recalls what the first stored. "
            "Offline by default (a scripted stand-in answers for Claude)."
        ),
    )
    demo.add_argument(
        "--live",
        action="store_true",
        help="talk to real Claude (needs ANTHROPIC_API_KEY); S3 stays embedded",
    )
    demo.add_argument("--model", default=DEFAULT_MODEL, help=f"model for --live (default: {DEFAULT_MODEL})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        from .demo import demo_main

        return demo_main(live=arguments.live, model=arguments.model)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
