"""Doing something every few seconds on a thread of its own, for as long as a block runs."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def every(seconds: float, action: Callable[[], object], name: str) -> Iterator[None]:
    """Call `action` every `seconds` while the block runs (first after `seconds`), on a thread
    named `name`; it is stopped, and its last call over, when the block ends. `action` handles
    its own errors: one it raises ends the calls."""
    done = threading.Event()

    def loop() -> None:
        while not done.wait(seconds):
            action()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
