"""runner.pids: whether a process runs, and which of a group run, zombies counted as ended."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from runner.pids import group_members, running


def test_a_process_runs_until_it_ends_even_unreaped() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert running(process.pid)
        process.kill()
        # Not reaped yet: a zombie, which an orphan here may stay for good.
        deadline = time.monotonic() + 10
        while running(process.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not running(process.pid)
        assert process.poll() is not None, "it was a zombie until now"
    finally:
        process.kill()
        process.wait()
    assert not running(process.pid)


def test_group_members_are_the_running_processes_of_a_group() -> None:
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(group_members(leader.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        members = group_members(leader.pid)
        assert leader.pid in members and len(members) == 3
        assert os.getpid() not in members  # another group's
        os.killpg(leader.pid, signal.SIGKILL)
        # Unreaped, the leader is a zombie (its children orphans, ended): none counts.
        while group_members(leader.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group_members(leader.pid) == []
        assert leader.poll() is not None, "it was a zombie until now"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
