"""What an agent says of its own processes, in the host's process table.

Process agents run in a PID namespace of their own where the fork server may make one
(runner/launch/pidns.py): the pid an agent reports is then its namespace's, not the host's.
"""

from __future__ import annotations

import os
from pathlib import Path


def host_pid(reported: int, agent: int) -> int | None:
    """The host pid of the live process that the agent whose (host) pid is `agent` knows as
    `reported`; None if there is none."""
    if not _namespaced(agent):
        return reported if Path(f"/proc/{reported}").exists() else None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pids = _status(int(entry)).get("NSpid", "").split()
        if len(pids) > 1 and int(pids[-1]) == reported and _descends_from(int(entry), agent):
            return int(entry)
    return None


def _namespaced(agent: int) -> bool:
    """Whether the agent's pid (its relay's) made a PID namespace for its children."""
    try:
        ns = Path(f"/proc/{agent}/ns")
        return os.readlink(ns / "pid") != os.readlink(ns / "pid_for_children")
    except OSError:
        return False


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        pid = int(_status(pid).get("PPid", "0"))
    return False


def _status(pid: int) -> dict[str, str]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)
