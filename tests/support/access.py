"""Telling the access record's requests (``s3memory.core.last_used``) from the commands' own."""

from __future__ import annotations

import threading
from typing import Any


def is_access_record(request: Any) -> bool:
    """True if botocore's ``request`` is for a user's access record."""
    return str(request.url).split("?")[0].endswith("/internal/access")


class AccessRecordWrites:
    """Counts the PutObjects of access records a client sends (each attempt, as ``RequestCounter``)."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        self._lock = threading.Lock()
        client.meta.events.register("request-created.s3.PutObject", self._count)

    def _count(self, request: Any, **_: Any) -> None:
        if is_access_record(request):
            with self._lock:
                self.count += 1

    def reset(self) -> None:
        with self._lock:
            self.count = 0
