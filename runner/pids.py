"""Whether a process id is in use."""

from __future__ import annotations

import os


def running(pid: int) -> bool:
    """Whether a process `pid` runs (another user's too). A zombie does not: it has ended,
    and an orphan's zombie may never be reaped here (this machine's PID 1 leaves them)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # "pid (command) state ...": the command may hold spaces and parentheses.
            return stat.read().rpartition(b")")[2].split()[0] == b"Z"
    except (OSError, IndexError):  # gone meanwhile, or no /proc: it was there a moment ago
        return False
