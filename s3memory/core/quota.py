"""Per-user limits on the memory's size: the quota, the largest file's bounds, and the usage a process
tracks against the quota."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from s3memory.core.paths import MemoryPath
from s3memory.errors import CommandError

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
"""The largest file a memory takes unless told (``S3MEMORY_MAX_FILE_BYTES``'s default too)."""
MAX_FILE_BYTES_LIMIT = 4 * 1024 * 1024
"""The largest file size limit a store may set (``S3MEMORY_MAX_FILE_BYTES``)."""


@dataclass(frozen=True)
class Quota:
    """Per-user limits on the memory's total plaintext bytes and file count (None: no limit).

    Usage is listed once and then tracked in process, re-listed every ``refresh_seconds``: a soft
    limit that concurrent writers in other processes can pass by what they write in that time.
    """

    max_bytes: int | None = None
    max_files: int | None = None
    refresh_seconds: float = 60.0

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_files"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"Quota {name} must be a non-negative integer or None")


class Usage:
    """One user's usage (plaintext bytes, files) as this process knows it, checked against a quota.

    ``measure`` lists the user's memory and returns its (bytes, files); it runs on the first check
    and again once the last measure is ``refresh_seconds`` old, or after ``forget``.
    """

    def __init__(self, quota: Quota | None, measure: Callable[[], tuple[int, int]]) -> None:
        self.quota = quota
        self._measure = measure
        self._known: tuple[float, int, int] | None = None
        self._lock = threading.Lock()

    def _current(self, quota: Quota) -> tuple[int, int]:
        with self._lock:
            known = self._known
        if known is None or known[0] <= time.monotonic():
            used_bytes, used_files = self._measure()
            known = (time.monotonic() + quota.refresh_seconds, used_bytes, used_files)
            with self._lock:
                self._known = known
        return known[1], known[2]

    def check(
        self, path: MemoryPath, added_bytes: int, added_files: int, planned: tuple[int, int] = (0, 0)
    ) -> None:
        """Refuse a write that would pass the user's quota, counting as used the ``planned``
        (bytes, files) of writes a dry run has passed but not made; nothing is changed."""
        quota = self.quota
        if quota is None:
            return
        used_bytes, used_files = self._current(quota)
        used_bytes, used_files = used_bytes + planned[0], used_files + planned[1]
        if quota.max_files is not None and added_files and used_files + added_files > quota.max_files:
            raise CommandError(
                f"Error: Cannot write {path.quoted}: the memory quota allows {quota.max_files:,} files and "
                f"{used_files:,} exist. Delete or merge files first; nothing was changed."
            )
        if quota.max_bytes is not None and added_bytes > 0 and used_bytes + added_bytes > quota.max_bytes:
            raise CommandError(
                f"Error: Cannot write {path.quoted}: the memory quota allows {quota.max_bytes:,} bytes, "
                f"{used_bytes:,} are used and this write adds {added_bytes:,}. Nothing was changed."
            )

    def add(self, added_bytes: int, added_files: int) -> None:
        """Count a write that succeeded."""
        with self._lock:
            if self._known is not None:
                expires, used_bytes, used_files = self._known
                self._known = (expires, used_bytes + added_bytes, used_files + added_files)

    def forget(self) -> None:
        """Measure again at the next check (after deletes, whose sizes are not tracked)."""
        with self._lock:
            self._known = None
