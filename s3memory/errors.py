"""The exceptions of the core. The tool adapters turn each into the SDK's ``ToolError``."""

from __future__ import annotations

_DISPLAY_LIMIT = 200


class CommandError(Exception):
    """A refusal whose message is returned to the model verbatim."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StorageError(CommandError):
    """S3 failed or answered something we cannot trust; the message names no content."""


class IntegrityError(CommandError):
    """A stored object failed authentication: tampered, truncated, foreign or wrongly keyed."""


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
