"""The invocation records the Lambda handlers log (``s3memory.aws_lambda.record``), as dicts."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from s3memory.aws_lambda.record import MESSAGE

_PLAIN_RECORD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def invocation_records(caplog: pytest.LogCaptureFixture, function: str | None = None) -> list[dict[str, Any]]:
    """The fields each invocation record carries in ``extra``, oldest first (optionally one function's)."""
    return [
        fields
        for fields in (
            {name: value for name, value in vars(entry).items() if name not in _PLAIN_RECORD}
            for entry in caplog.records
            if entry.name == "s3memory" and entry.getMessage() == MESSAGE
        )
        if function is None or fields.get("function") == function
    ]


def diagnoses(caplog: pytest.LogCaptureFixture, request_id: str) -> list[str]:
    """The diagnoses logged at ERROR under ``request_id`` (``answers.diagnose``), oldest first: each
    line's text, which names the request id."""
    return [
        entry.getMessage()
        for entry in caplog.records
        if entry.name == "s3memory"
        and entry.levelno == logging.ERROR
        and getattr(entry, "request_id", None) == request_id
        and entry.getMessage() != MESSAGE
    ]
