"""Signals for the commands that run until they are stopped, then clean up and exit (demo,
match). Both end once stopped, so the handlers are set for the rest of the process."""

from __future__ import annotations

import signal

# `kill`, `docker stop` and a closed terminal: stopped like Ctrl-C, cleaning up as it does.
STOPPING = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is (`except KeyboardInterrupt` catches it).

    Its own class because CPython run with -m exits by SIGINT, whatever the program returns,
    once a plain KeyboardInterrupt has passed through code that C evaluated (PyRun_String, as
    some libraries do), even one caught later: a demo stopped with `kill` then said "all
    processes stopped" and died of SIGINT. CPython checks for exactly KeyboardInterrupt."""


def _interrupt(signum: int, _frame: object) -> None:
    raise Stopped(f"signal {signal.Signals(signum).name}")


def stop_like_ctrl_c() -> None:
    """From now on SIGTERM and SIGHUP raise Stopped (a KeyboardInterrupt), as Ctrl-C does."""
    for signum in STOPPING:
        signal.signal(signum, _interrupt)


def ignore_stopping() -> None:
    """From now on neither Ctrl-C nor SIGTERM/SIGHUP: clean-up that must finish (it must not
    leave processes behind), and the exit after it."""
    for signum in (signal.SIGINT, *STOPPING):
        signal.signal(signum, signal.SIG_IGN)
