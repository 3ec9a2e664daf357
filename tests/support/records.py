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
