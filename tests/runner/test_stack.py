"""runner.stack: stopping the local stack leaves none of its processes running."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runner import stack as stack_module
from runner.pids import group_members
from runner.stack import Stack

# A service whose group holds many processes that ignore SIGTERM: only SIGKILL ends them,
# and each takes a moment to end after it is sent.
_STUBBORN_GROUP = """
import pathlib, signal, subprocess, sys, time
children = [
    subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 600"]) for _ in range(30)
]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(sys.argv[1]).write_text("ready")
time.sleep(600)
"""


def test_stop_returns_once_every_process_of_a_service_group_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack_module, "STOP_GRACE_SECONDS", 2.0)  # SIGKILL after 2 s, not 10
    ready = tmp_path / "ready"
    stack = Stack(log_dir=tmp_path / "logs")
    service = stack.start(
        "stubborn", [sys.executable, "-c", _STUBBORN_GROUP, str(ready)], ready.exists
    )
    group = service.process.pid
    assert len(group_members(group)) == 31
    stack.stop()
    # Not a moment later: the demo stops the embedded Redis right after, unless a process
    # still connected to it runs.
    assert group_members(group) == []
