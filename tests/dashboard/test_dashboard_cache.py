"""dashboard.cache.LRU: least recently used out, and each value computed once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from dashboard.cache import LRU


def test_the_least_recently_used_value_goes_first() -> None:
    cache = LRU(2)
    computed: list[str] = []

    def value(key: str) -> str:
        computed.append(key)
        return key.upper()

    for key in ("a", "b", "a", "c", "a", "b"):
        assert cache.get_or_compute(key, lambda key=key: value(key)) == key.upper()
    assert computed == ["a", "b", "c", "b"]  # "b" went when "c" came; "a" stayed in use


def test_callers_asking_for_a_value_being_computed_wait_for_it() -> None:
    cache = LRU(4)
    started = threading.Event()
    release = threading.Event()
    calls = 0

    def slow() -> object:
        nonlocal calls
        calls += 1
        started.set()
        assert release.wait(10)
        return object()

    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(cache.get_or_compute, "replay", slow)
        assert started.wait(10)
        others = [pool.submit(cache.get_or_compute, "replay", slow) for _ in range(3)]
        time.sleep(0.2)  # let them ask while it is computed (were they late, they'd find it)
        release.set()
        values = {id(f.result(timeout=10)) for f in (first, *others)}
    assert calls == 1 and len(values) == 1


def test_a_failed_computation_fails_its_waiters_and_is_not_kept() -> None:
    cache = LRU(4)
    started = threading.Event()
    release = threading.Event()

    def failing() -> object:
        started.set()
        assert release.wait(10)
        raise ValueError("unplayable")

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(cache.get_or_compute, "replay", failing)
        assert started.wait(10)
        waiter = pool.submit(cache.get_or_compute, "replay", failing)
        release.set()
        for future in (first, waiter):
            with pytest.raises(ValueError, match="unplayable"):
                future.result(timeout=10)
    assert cache.get_or_compute("replay", lambda: "now it works") == "now it works"
