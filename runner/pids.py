"""Whether a process id is in use, which processes of a group still run, dying with a parent, and
keeping a process's secrets from others of its user."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path


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


def group_members(pgid: int) -> list[int]:
    """The processes of process group `pgid` that still run (zombies aside). A process killed
    with SIGKILL runs on for a moment after kill() returns, its connections open."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # After the command: state, parent pid, process group.
        if fields is not None and fields[0] != b"Z" and fields[2] == str(pgid).encode():
            members.append(int(entry.name))
    return members


def _zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    # Gone meanwhile, or no /proc: it was there a moment ago.
    return fields is not None and fields[0] == b"Z"


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command, None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # "pid (command) state ...": the command may hold spaces and parentheses.
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return fields if len(fields) >= 3 else None


_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> None:
    """Ask Linux to send `sig` to this process when its parent dies (no-op elsewhere). A program
    that calls this as it starts names the parent that started it: it may be gone already."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), sig)


def keep_private() -> None:
    """Make this process undumpable: no other process of its user may then read its
    /proc/PID/environ (the database URL, the admin token, a seat token) or its memory, or trace
    it; only root may. Bots that share the host's process table (where the worker may make no
    namespace, docs/writing-a-bot.md section 8) run as the worker's user. A program this
    process execs is dumpable again; a fork of it is not. No-op off Linux."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
