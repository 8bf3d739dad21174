"""Small thread-safe LRU caches held by the app, for results that depend only on their key."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

from flask import current_app


class LRU:
    """Least-recently-used cache. A value is computed outside the lock, once: callers asking
    for a key being computed wait for that result (four requests for one long game's replay,
    each computing its own, took six times as long, and as much memory, as one)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._computing: dict[Hashable, Future[Any]] = {}
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            computing = self._computing.get(key)
            if computing is None:
                computing = self._computing[key] = Future()
                mine = True
            else:
                mine = False
        if not mine:
            return computing.result()  # or raises what computing it raised
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                del self._computing[key]
            computing.set_exception(exc)
            raise
        with self._lock:
            del self._computing[key]
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        computing.set_result(value)
        return value


def app_cache(name: str, size: int = 64) -> LRU:
    """The current app's cache called `name`, created on first use."""
    caches: dict[str, LRU] = current_app.extensions.setdefault("arena_caches", {})
    found = caches.get(name)
    if found is None:
        found = caches.setdefault(name, LRU(size))
    return found
