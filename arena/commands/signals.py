"""Signals for the commands that run until they are stopped (demo, match)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

# `kill`, `docker stop` and a closed terminal: stopped like Ctrl-C, cleaning up as it does.
STOPPING = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def handling(handler: Any, *signums: signal.Signals) -> Iterator[None]:
    """Signals handled by `handler` inside the block, as before it after."""
    before = {signum: signal.signal(signum, handler) for signum in signums}
    try:
        yield
    finally:
        for signum, old in before.items():
            signal.signal(signum, old)


def stopped_like_ctrl_c() -> contextlib.AbstractContextManager[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt inside the block, as Ctrl-C does."""
    return handling(_interrupt, *STOPPING)


def ignore_stopping() -> None:
    """Neither Ctrl-C nor SIGTERM/SIGHUP from now on: a process that is ending anyway."""
    for signum in (signal.SIGINT, *STOPPING):
        signal.signal(signum, signal.SIG_IGN)


def not_interrupted() -> contextlib.AbstractContextManager[None]:
    """Neither Ctrl-C nor SIGTERM/SIGHUP inside the block: clean-up that must finish."""
    return handling(signal.SIG_IGN, signal.SIGINT, *STOPPING)
