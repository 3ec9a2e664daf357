"""The mark of a format-2 store (``migration.py``) as a test reads it: what it says once it has
authenticated under the store's key, or None."""

from __future__ import annotations

from typing import Any

from s3memory.crypto import LocalKeyProvider
from s3memory.formats.store_keys import store_identity, stored_store_key
from s3memory.formats.upgrade import fetch_mark, mark_state
from s3memory.storage.bucket import Bucket

from .bucket import BUCKET, MASTER_KEY


def mark_of(s3: Any, prefix: str = "users/") -> bytes | None:
    """What the mark of the store at ``prefix`` in ``BUCKET`` says (``BORN`` or ``SETTLED``), or
    None if there is none, no store key, or it does not authenticate."""
    bucket, identity = Bucket(s3, BUCKET), store_identity(BUCKET, prefix)
    key = stored_store_key(bucket, prefix, identity, LocalKeyProvider(MASTER_KEY))
    return None if key is None else mark_state(fetch_mark(bucket, prefix), identity, key)
