"""``s3memory mcp``: the memory tool served to MCP clients (Claude Code, Claude Desktop, any client of
the Model Context Protocol), on the official ``mcp`` Python SDK (the ``mcp`` extra, ``docs/mcp.md``).

This package is light: it only says whether the extra is installed (:func:`missing_for_mcp`), without
importing it. ``tool.py`` is the tool itself, without the SDK: its name, input schema, annotations and
the server's instructions (one call's answer is ``s3memory.edge.answers``). ``server.py`` builds the SDK's server from two
functions (the memory of a user, the user of a request: one set by ``--user`` on stdio, a verified token
over HTTP); ``stdio.py`` serves it on standard input and output, ``http.py`` over streamable HTTP, each
once ``startup.py`` found that the bucket and the KMS key answer; ``env_file.py`` reads ``--env-file``.
"""

from __future__ import annotations

from importlib.util import find_spec

MCP_INSTALL_HINT = "pip install -e '.[mcp]' in the s3memory checkout (or its wheel with [mcp])"
DEFAULT_MCP_HOST = "127.0.0.1"
DEFAULT_MCP_PORT = 8000
"""Where ``s3memory mcp --transport http`` listens unless told (``http.py``)."""
EXIT_SERVED = 0
EXIT_USAGE = 2
"""The exit statuses of ``s3memory mcp``: served until its client or a signal ended it; refused before
anything was served (a bad setting, option or env file, or settings the bucket or the KMS key do not
answer to: ``startup.py``), with one line that names no key, token or user id."""
MCP_REQUIREMENT = "mcp"
"""The distribution the ``mcp`` extra adds (its module has the same name)."""


def missing_for_mcp() -> list[str]:
    """The requirements of the ``mcp`` extra whose modules cannot be found, without importing any."""
    return [] if find_spec(MCP_REQUIREMENT) is not None else [MCP_REQUIREMENT]
