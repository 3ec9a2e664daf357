"""Times as s3memory reads them: S3's ``LastModified`` as a listing gives it, and an operator's
``--as-of`` (pure)."""

from __future__ import annotations

from datetime import UTC, datetime


def when(text: str) -> datetime:
    """A timestamp of S3 or of the operator (ISO 8601; UTC unless it names a zone)."""
    moment = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
