"""One call's answer as the edges give it: the text, and whether it is a refusal or a failure.

The SDK adapters (``tool.py``) raise ``ToolError`` with the text of an error answer; the MCP server
(``mcp/``) returns it with ``isError``; the Lambda functions put it in their answer. All of them run a
command through ``answered``, so a refusal and a failure read the same on every edge, and no answer
names content.

Who is answered decides how much a failure says. Where the caller is the operator (the library, the
command line, ``s3memory mcp`` on stdio) every refusal and storage failure is answered whole: it
names the bucket, the endpoint, the setting to fix. Within ``remote`` (a network edge: the MCP server
over HTTP, the Lambda functions) the memory tool contract's refusals are answered whole, and each of
the operator's failures (``errors.operators``) with a fixed text that names a request id
(``UNAVAILABLE``, or ``INTERRUPTED`` where a request that may have changed the memory was sent); its
diagnosis goes to the log (logger ``s3memory``, at ERROR) under that id, never with content, a path
or a user id.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import NamedTuple

from s3memory.errors import CommandError, operators, unexpected_failure
from s3memory.mounts import UserMemory
from s3memory.settings import SettingsError
from s3memory.storage.bucket import watching
from s3memory.storage.concurrency import holding

logger = logging.getLogger("s3memory")

UNAVAILABLE = "Error: The memory store is unavailable; nothing was changed. (request id {request_id})"
"""A remote caller's answer to the operator's failure of a command that changed nothing."""
INTERRUPTED = (
    "Error: The memory store failed during the command; part of it may have been applied. View the "
    "memory before trying again. (request id {request_id})"
)
"""A remote caller's answer to the operator's failure of a command that may have changed the memory."""

_remote: ContextVar[str | None] = ContextVar("s3memory_remote_request", default=None)


class Answer(NamedTuple):
    """One call's answer: the text, and whether it is a refusal or a failure."""

    text: str
    is_error: bool


def remote(request_id: str | None = None) -> contextlib.AbstractContextManager[str]:
    """Answer a remote caller within (``failed``): under ``request_id`` (Lambda's), else the remote
    request already being served, else a fresh random id; yields the id."""
    return holding(_remote, request_id or _remote.get() or uuid.uuid4().hex)


def answer(memory: UserMemory, raw_input: object) -> Answer:
    """Run one raw ``tool_use`` input on ``memory`` (``answered``)."""
    return answered(lambda: memory.run(raw_input))


def answered(command: Callable[[], str]) -> Answer:
    """Run ``command`` (one memory command): its text, or the error answer of its failure
    (``failed``), worded by whether a request that may have changed the memory was sent."""
    with watching() as changes:
        try:
            return Answer(command(), False)
        except Exception as error:
            return Answer(failed(error, changed=changes.maybe), True)


def failed(error: BaseException, *, changed: bool = False) -> str:
    """The answer to ``error``. For the operator: a refusal's or a storage failure's own message, or
    an unexpected failure named by its class (logged by its type and frames, never its message, which
    may hold content, a path or a user id). Within ``remote``: the contract's refusals verbatim, and
    the operator's failures with ``UNAVAILABLE`` (``INTERRUPTED`` where ``changed``), diagnosed in
    the log (``diagnose``)."""
    if _remote.get() is not None:
        if not operators(error) and isinstance(error, CommandError):
            return error.message
        template = INTERRUPTED if changed else UNAVAILABLE
        return template.format(request_id=diagnose(error))
    if isinstance(error, CommandError):
        return error.message
    logger.error("s3memory: unexpected %s (its message left out)\n%s", type(error).__name__, _frames(error))
    return unexpected_failure(error)


def diagnose(error: BaseException) -> str:
    """Log (at ERROR) what the operator needs of ``error``, under the remote request's id (a fresh
    one outside ``remote``), and return the id: a failure's message where its kind names no content,
    path or user id (``CommandError.diagnosis``; a setting's, which names the variable), else its
    class, and the frames of an unexpected one."""
    with remote() as request_id:
        name = type(error).__name__
        if isinstance(error, CommandError):
            said = error.diagnosis
            detail = said if said is not None else "its message left out: it may name a path"
        elif isinstance(error, SettingsError):
            detail = str(error)
        else:
            detail = f"unexpected; its message left out\n{_frames(error)}"
        logger.error(
            "s3memory: request %s failed (%s): %s", request_id, name, detail, extra={"request_id": request_id}
        )
        return request_id


def _frames(error: BaseException) -> str:
    return "".join(traceback.format_tb(error.__traceback__))
