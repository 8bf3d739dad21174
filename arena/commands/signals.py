"""Signals for the commands that run until they are stopped, then clean up and exit (demo,
match). Both end once stopped, so the handlers are set for the rest of the process."""

from __future__ import annotations

import signal

# `kill`, `docker stop` and a closed terminal: stopped like Ctrl-C, cleaning up as it does.
STOPPING = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def stop_like_ctrl_c() -> None:
    """From now on SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does."""
    for signum in STOPPING:
        signal.signal(signum, _interrupt)


def ignore_stopping() -> None:
    """From now on neither Ctrl-C nor SIGTERM/SIGHUP: clean-up that must finish (it must not
    leave processes behind), and the exit after it."""
    for signum in (signal.SIGINT, *STOPPING):
        signal.signal(signum, signal.SIG_IGN)
