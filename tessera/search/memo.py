"""A bounded, thread-safe memo for the per-commit caches of search (column names, duplicate
groups, claims masks): the least recently used entries go first once there are more than
``keep`` of them or their sizes add up past ``budget``; the newest entry always stays."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    def __init__(self, keep: int, budget: int | None = None, size: Callable[[V], int] | None = None) -> None:
        self._keep, self._budget, self._size = keep, budget, size or (lambda _: 0)
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value remembered for ``key`` (now the most recently used), or None."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return self._entries[key]

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` for ``key``, evicting the least recently used past the bounds."""
        with self._lock:
            if key in self._entries:
                self._total -= self._size(self._entries.pop(key))
            self._entries[key] = value
            self._total += self._size(value)
            while len(self._entries) > 1 and (
                len(self._entries) > self._keep or (self._budget is not None and self._total > self._budget)
            ):
                _, gone = self._entries.popitem(last=False)
                self._total -= self._size(gone)
        return value

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._total = 0
