"""Job records for multi-request commands (directory rename and delete). Pure, no I/O.

A job is recorded, encrypted, under the user's internal prefix before its first change, and removed
after its last. Whoever finds a record finishes the job (roll forward); every step is idempotent, so
a retry, a later command or two processes at once all converge to the same clean state.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from .errors import IntegrityError

JOB_PREFIX = "jobs/"
RECORD_PATH_PREFIX = "internal:"
"""Associated-data path of a job record: no memory path starts with it, so no file can pass for one."""


@dataclass(frozen=True)
class Job:
    """Move (``rename``) or remove (``delete``) the objects ``keys`` below ``old``."""

    kind: Literal["rename", "delete"]
    old: str
    new: str | None
    keys: tuple[str, ...]

    @property
    def name(self) -> str:
        """The record's name: the same command always names the same record."""
        digest = hashlib.sha256(json.dumps([self.kind, self.old, self.new]).encode("utf-8")).hexdigest()
        return f"{JOB_PREFIX}{digest[:40]}"

    @property
    def record_path(self) -> str:
        return RECORD_PATH_PREFIX + self.name

    def encode(self) -> bytes:
        return json.dumps(
            {"kind": self.kind, "old": self.old, "new": self.new, "keys": list(self.keys)},
            separators=(",", ":"),
        ).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> Job:
        """The job in a decrypted record; anything else is refused."""
        try:
            fields = json.loads(data.decode("utf-8"))
            kind, old, new, keys = fields["kind"], fields["old"], fields["new"], fields["keys"]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise IntegrityError("Error: A job record is not in the format s3memory writes.") from None
        valid = (
            (kind == "rename" and isinstance(new, str)) or (kind == "delete" and new is None)
        ) and isinstance(old, str)
        if not valid or not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise IntegrityError("Error: A job record is not in the format s3memory writes.")
        return cls(kind, old, new, tuple(keys))
