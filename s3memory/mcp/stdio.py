"""``s3memory mcp --user ID``: the MCP server on standard input and output, for one user, with the
shared memories each ``--mount POINT=MEMORY[:read_write]`` names mounted in that user's memory (the
one who starts the server is trusted, as an application passing mounts is: ``docs/shared.md``).

The settings are the ``S3MEMORY_*`` variables, read as the Lambda functions and the operator commands
read them (``settings.py``; the store, the key provider and the limits built by ``assembly.py``). Bad settings or a bad user id are
refused before anything is served (exit 2), with a message that names neither a key nor the user id;
so are settings the bucket or the KMS key do not answer to (``startup.py``), unless ``--no-check``.
The server runs until its client closes standard input (exit 0). Nothing it logs names memory
content, a path or the user.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from s3memory.assembly import make_store
from s3memory.core.paths import UserId
from s3memory.mcp import EXIT_SERVED, EXIT_USAGE
from s3memory.mcp.schema import MCP_ACTOR
from s3memory.mcp.startup import unusable
from s3memory.memory import S3Memory
from s3memory.mounts import mount_of_option, with_mounts
from s3memory.settings import Settings, SettingsError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

EXIT_INTERRUPTED = 130


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on this process's standard input and output until the input closes."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def mcp_main(user_id: str, mount_options: Sequence[str] = (), *, check: bool = True) -> int:
    """``s3memory mcp --user ID [--mount POINT=MEMORY[:MODE]]...``: serve ``user_id``'s memory on
    stdio, with the shared memories ``mount_options`` name mounted in it, once the bucket and the key
    answer (``startup.py``; not ``check``: at once); the exit status."""
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as error:
        print(f"s3memory mcp: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        user = UserId(user_id)
    except ValueError as error:
        print(f"s3memory mcp: the user id of --user is refused: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        mounts = [mount_of_option(option) for option in mount_options]
    except ValueError as error:
        print(f"s3memory mcp: a --mount is refused: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = make_store(settings)
    except SettingsError as error:
        print(f"s3memory mcp: {error}", file=sys.stderr)
        return EXIT_USAGE
    own = S3Memory(store, user, **settings.limits.memory_options()).acting_as(MCP_ACTOR)
    try:
        memory = with_mounts(own, mounts)
    except ValueError as error:
        print(f"s3memory mcp: the mounts are refused: {error}", file=sys.stderr)
        return EXIT_USAGE
    reason = unusable(settings) if check else None
    if reason is not None:
        print(f"s3memory mcp: {reason}", file=sys.stderr)
        return EXIT_USAGE
    # The SDK is imported once the settings and the user are known good: a refusal answers at once.
    import anyio

    from s3memory.mcp.server import build_server

    # one user's memory and its mounts, and no other's; its caller is the operator's own client, told
    # every failure in full
    server = build_server(lambda: memory, remote=False)
    try:
        anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseExceptionGroup as group:
        if group.split(BrokenPipeError)[1] is not None:
            raise
        return EXIT_SERVED  # the client went away while an answer was written: nothing to serve
    return EXIT_SERVED
