"""Every exception a caller of s3memory can meet, in one tree, and which are the operator's to mend.

    Exception
    ├── CommandError                the command was refused or failed; its message is the answer
    │   ├── StorageError            S3 or KMS failed, or answered what cannot be trusted: the operator's
    │   │   ├── StorageRefusal      ...that the caller mends alone
    │   │   ├── RequestFailed       an S3 request failed (``storage.diagnosis``: the cause and the fix)
    │   │   │   └── AccessDenied    S3 refused it to this role (403)
    │   │   ├── ObjectTooLarge      a stored object larger than s3memory writes, left unread
    │   │   └── ServerRefused       (``storage.conditions``) the server does not enforce a condition
    │   ├── IntegrityError          a store object failed authentication: the operator's
    │   │   ├── ObjectRefused       ...a memory file, named by its path: the caller's
    │   │   └── RecordRefused       a job record that can never run
    │   ├── StoreMisconfigured      the store cannot serve the command as set up: the operator's
    │   │   └── NestedStore         stores inside stores
    │   ├── FileTooLarge            a file would be larger than the size limit
    │   └── Unsettled               (``core.job_runner``) a refusal an unfinished job may explain
    ├── PreconditionFailed          a conditional write lost (412): handled where it was sent
    ├── ConditionalConflict         S3 answered 409 to racing conditional writes: retried
    ├── SourceChanged               a server-side copy's source changed or went: no copy made
    ├── FolderRefused               (``sync.folder``) a folder sync will not work on, and why
    ├── TokenRefused                an HTTP edge's bearer token proves no user (401, 403)
    └── KeysUnavailable             the token issuer's signing keys could not be fetched (503)
    ValueError
    └── SettingsError               (``settings``) a setting is wrong, named
        └── Misconfigured           (``aws_lambda.agent.config``) the agent function's settings

Those named in brackets live in the module that raises them. What each edge answers for each:
``docs/errors.md``. The tool adapters turn a ``CommandError`` into the SDK's ``ToolError``. Where
the caller is the operator (the library, the command line, ``s3memory mcp`` on stdio) every message
is answered whole. A network edge answers verbatim only the memory tool contract's refusals, and
each of the operator's failures (``operators``) with a fixed text, its diagnosis in the log
(``edge.answers``).
"""

from __future__ import annotations

_DISPLAY_LIMIT = 200


class CommandError(Exception):
    """A refusal whose message is returned to the model verbatim (at a network edge only where it is
    not the operator's failure: ``operators``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def diagnosis(self) -> str | None:
        """What the log may say of this failure: None for a message that may name content, a path or a
        user id (a refusal's may); a class whose every message names none of them returns it."""
        return None


class StorageError(CommandError):
    """S3 or KMS failed or answered something we cannot trust: the operator's to mend. The message
    names no content, path or user id (the bucket, the endpoint, the region, a setting where one is
    the cause), so it is the log's diagnosis too."""

    @property
    def diagnosis(self) -> str | None:
        return self.message


class StorageRefusal(StorageError):
    """A storage failure the caller mends alone (another writer kept winning; a write left behind that
    it should delete): its message names the caller's own paths and nothing of the operator's."""

    @property
    def diagnosis(self) -> str | None:
        return None


class IntegrityError(CommandError):
    """A stored object failed authentication: tampered, truncated, foreign or wrongly keyed. Of the
    store's own objects (the store key, a user's data keys, a record): the operator's to mend, and the
    message names none of content, a path or a user id."""

    @property
    def diagnosis(self) -> str | None:
        return self.message


class ObjectRefused(IntegrityError):
    """A stored object, named by its path (a memory file's), failed authentication: the caller sees
    which file cannot be read, and the log never does."""

    @property
    def diagnosis(self) -> str | None:
        return None


class StoreMisconfigured(CommandError):
    """The store is set up so that the command cannot be served (stores inside stores, a shared memory
    in a store of format 1): the operator's to mend. ``diagnosis``: what the log may say (the
    message, unless it names a key or a user's namespace)."""

    def __init__(self, message: str, diagnosis: str | None = None) -> None:
        super().__init__(message)
        self._diagnosis = message if diagnosis is None else diagnosis

    @property
    def diagnosis(self) -> str | None:
        return self._diagnosis


class RequestFailed(StorageError):
    """An S3 request failed; ``code`` is the S3 error code (or the exception's class name);
    ``explained``: the message names what is misconfigured and the fix; ``where``: the bucket it was
    sent to, as the log names it (``storage.diagnosis.described``; empty where unknown)."""

    def __init__(self, message: str, code: str, *, explained: bool = False, where: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.explained = explained
        self.where = where

    @property
    def diagnosis(self) -> str | None:
        return f"{self.message} ({self.where})" if self.where else self.message


class AccessDenied(RequestFailed):
    """S3 refused the request to this role (403): what it asked about may exist or not."""


class ObjectTooLarge(StorageError):
    """An object larger than s3memory writes there; it was not read."""


class RecordRefused(IntegrityError):
    """A record that can never run: not in our format, or a plan that breaks the rules of
    ``core.job_records``."""


class NestedStore(StoreMisconfigured):
    """Two stores of one bucket nest: one's prefix lies inside the other's. The message names a key
    found there (on format 1, a user id and a path); the diagnosis names prefixes only."""


class FileTooLarge(CommandError):
    """A file would be larger than the size limit."""


class PreconditionFailed(Exception):
    """A conditional write lost: the object exists (IfNoneMatch) or changed (IfMatch).

    ``after_retry``: botocore had retried the request (its first answer was lost), so the winning
    write may have been this one.
    """

    def __init__(self, key: str, *, after_retry: bool = False) -> None:
        super().__init__(key)
        self.after_retry = after_retry


class ConditionalConflict(Exception):
    """S3 answered 409 to a conditional write racing another one; retry."""


class SourceChanged(Exception):
    """The source no longer has the ETag its copy was to be made from, or is gone, and nothing is
    at the destination: no copy was made."""


class TokenRefused(Exception):
    """The token does not prove who the caller is: 401, or 403 for a valid token that may not pass."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class KeysUnavailable(Exception):
    """The issuer's signing keys could not be fetched; the message says why, never a token."""


def operators(error: BaseException) -> bool:
    """Whether ``error`` is the operator's failure rather than one of the memory tool contract's
    refusals: a storage failure (``StorageError``, but a ``StorageRefusal``), a store object failing
    authentication (``IntegrityError``, but an ``ObjectRefused`` file), a misconfigured store
    (``StoreMisconfigured``), and anything that is no ``CommandError`` (a setting, a fault). A network
    edge answers it with a fixed text and logs its diagnosis (``answers``); every other
    ``CommandError`` (a path refused, a file missing or present, a quota, the guard, a read-only
    mount...) is the caller's, answered verbatim everywhere."""
    if not isinstance(error, CommandError):
        return True
    if isinstance(error, StorageRefusal | ObjectRefused):
        return False
    return isinstance(error, StorageError | IntegrityError | StoreMisconfigured)


def aws_error_code(error: BaseException) -> str:
    """The code an AWS error names: a botocore ``ClientError``'s error code (``Unknown`` when it
    carries none), else the exception's class name. Never the message, which may quote request data."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return type(error).__name__
    details = response.get("Error")
    return str(details.get("Code", "Unknown")) if isinstance(details, dict) else "Unknown"


def unexpected_failure(
    error: BaseException, subject: str = "s3memory", consequence: str = "the command may not have run"
) -> str:
    """The answer to a failure nobody foresaw: it names the exception's class, never its message."""
    tail = f"; {consequence}" if consequence else ""
    return f"Error: {subject} failed unexpectedly ({type(error).__name__}){tail}."


def type_name(value: object) -> str:
    """A value's type as a refusal names it: ``null`` for ``None``, else its class name."""
    return "null" if value is None else type(value).__name__


def shown(value: str) -> str:
    """An untrusted string made safe to echo in an error: printable and bounded. Only its first
    ``_DISPLAY_LIMIT`` characters are looked at, so a huge value costs no more than a short one."""
    safe = escaped(value[: _DISPLAY_LIMIT + 1])
    return safe if len(safe) <= _DISPLAY_LIMIT else safe[:_DISPLAY_LIMIT] + "…"


def escaped(value: str) -> str:
    """``value`` as it is when every character is printable, else with Python's escapes in ASCII
    (``\\x1b``, ``\\n``, ``\\udcff``, ``\\xe9``): no escape sequence, line break or surrogate."""
    return (
        value if value.isprintable() else value.encode("unicode_escape", "backslashreplace").decode("ascii")
    )


AUTHENTICATION_FIX = (
    "`s3memory history` marks each version of the file that fails authentication: `s3memory redact` "
    "that version (if it is the current one, the version before it becomes current), then run this "
    "again."
)
"""What an operator does about a stored file that fails authentication (export, restore --as-of)."""


def with_fix(error: CommandError) -> str:
    """The message of ``error``, followed by ``AUTHENTICATION_FIX`` where it is a stored file
    failing authentication (``IntegrityError``)."""
    return f"{error.message} {AUTHENTICATION_FIX}" if isinstance(error, IntegrityError) else error.message
