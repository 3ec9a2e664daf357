"""The providers' cache: a map bounded in count whose entries lapse by a clock and the wall clock."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class Expiring(Generic[_Key, _Value]):
    """A map bounded in count whose entries lapse at a time of ``clock``; least recently used go first."""

    def __init__(self, entries: int, clock: Callable[[], float]) -> None:
        self._entries = entries
        self._clock = clock
        self._items: OrderedDict[_Key, tuple[float, float, _Value]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key) -> _Value | None:
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] <= self._clock() or item[1] <= time.time():
                return None
            self._items.move_to_end(key)
            return item[2]

    def put(self, key: _Key, value: _Value, expires: float) -> None:
        """Keep ``value`` until ``expires`` by the clock, or as long by the wall clock, whichever
        comes first: a monotonic clock stands still while the machine sleeps."""
        with self._lock:
            self._items[key] = (expires, time.time() + (expires - self._clock()), value)
            self._items.move_to_end(key)
            while len(self._items) > self._entries:
                self._items.popitem(last=False)

    def drop(self, key: _Key) -> None:
        with self._lock:
            self._items.pop(key, None)
