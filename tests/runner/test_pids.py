"""runner.pids: whether a process runs, zombies counted as ended."""

from __future__ import annotations

import subprocess
import sys
import time

from runner.pids import running


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
