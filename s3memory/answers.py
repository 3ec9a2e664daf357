"""One call's answer as the edges give it: the text, and whether it is a refusal or a failure.

The SDK adapters (``tool.py``) raise ``ToolError`` with the text of an error answer; the MCP server
(``mcp/``) returns it with ``isError``. Both run a raw input through ``answer``, so a refusal and a
failure read the same on every edge, and no answer names content.
"""

from __future__ import annotations

import logging
import traceback
from typing import NamedTuple

from s3memory.errors import CommandError, unexpected_failure
from s3memory.mounts import UserMemory

logger = logging.getLogger("s3memory")


class Answer(NamedTuple):
    """One call's answer: the text, and whether it is a refusal or a failure."""

    text: str
    is_error: bool


def answer(memory: UserMemory, raw_input: object) -> Answer:
    """Run one raw ``tool_use`` input: the contract's text, or an error answer (a refusal's own
    text; any other failure answered as an unexpected failure, and logged by its type and frames,
    never its message, which may hold content, a path or a user id)."""
    try:
        return Answer(memory.run(raw_input), False)
    except CommandError as error:
        return Answer(error.message, True)
    except Exception as error:
        frames = "".join(traceback.format_tb(error.__traceback__))
        logger.error("s3memory: unexpected %s (its message left out)\n%s", type(error).__name__, frames)
        return Answer(unexpected_failure(error), True)
