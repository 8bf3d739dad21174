"""A child process's exit status in words, and passing it on as one's own; why one could not
start, in words."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

# `arena stdio-agent` ends with this code when its bot exited with 0 before the game ended,
# closed its stdout or could not be started (else it ends as the bot did); its stderr's last
# BRIDGE_SAYS line says which.
BRIDGE_BOT_GONE = 6
BRIDGE_SAYS = "[stdio-agent] "


def how_it_ended(returncode: int) -> str:
    """Popen's returncode in words: "exited with code 7", "was killed by SIGXCPU"."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        return f"was killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"was killed by signal {-returncode}"


def why_not_started(program: str, exc: OSError) -> str:
    """Why exec'ing `program` failed, without "[Errno 2]": the program missing from PATH, the
    file missing, or not executable."""
    if isinstance(exc, FileNotFoundError):
        return f"there is no file {program!r}" if "/" in program else f"no {program!r} on PATH"
    if isinstance(exc, PermissionError):
        return f"{program!r} is not executable: chmod +x it, or start it with its interpreter"
    return exc.strerror or str(exc)


def end_like(returncode: int) -> int:
    """End this process as the child with `returncode` ended: killed by the same signal (the
    default action of most signals ends the process), else returns the exit code to exit
    with. So whoever watches this process sees the child's own end: a CPU time limit's
    SIGXCPU, a crash's SIGSEGV, an exit code."""
    if returncode >= 0:
        return returncode
    number = -returncode
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError, ValueError):  # SIGKILL's action cannot be set, nor needs to
        signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    return 128 + number  # a signal whose default action is not to end the process
