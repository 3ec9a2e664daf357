"""One ``S3Memory`` per user (and per shared memory) of a store, kept warm for the process that serves
many users (the Lambda runtime, the MCP server over HTTP): shared by that user's requests, the least
recently used dropped beyond a bound, so what a process keeps does not grow with the users it has
served."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from s3memory.core.paths import SharedName, UserId
from s3memory.memory import S3Memory

WARM_USERS = 128
"""Users whose memory objects a process keeps; each holds at most a few thousand directory hints."""


class Memories:
    """The memory of each user, made by ``make`` on first need (building one sends no request) and
    kept for the ``kept`` users served most recently (``WARM_USERS`` unless told)."""

    def __init__(self, make: Callable[[UserId | SharedName], S3Memory], kept: int | None = None) -> None:
        self._make = make
        self._kept = WARM_USERS if kept is None else kept
        self._memories: OrderedDict[str, S3Memory] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._memories)

    def __call__(self, user: UserId | SharedName) -> S3Memory:
        """The memory of ``user`` (checked where the request came in), or of a shared memory."""
        key = user.principal if isinstance(user, SharedName) else user  # never equal to a user id
        with self._lock:
            memory = self._memories.get(key)
            if memory is None:
                memory = self._memories[key] = self._make(user)
            self._memories.move_to_end(key)
            while len(self._memories) > self._kept:
                self._memories.popitem(last=False)
            return memory
