"""Small thread-safe LRU caches held by the app, for results that depend only on their key."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from flask import current_app


class LRU:
    """Least-recently-used cache; values are computed outside the lock."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute()
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def app_cache(name: str, size: int = 64) -> LRU:
    """The current app's cache called `name`, created on first use."""
    caches: dict[str, LRU] = current_app.extensions.setdefault("arena_caches", {})
    found = caches.get(name)
    if found is None:
        found = caches.setdefault(name, LRU(size))
    return found
