"""Test agent: starts `sleep 1000` as a child, reports its pid on stderr, and waits forever."""

from __future__ import annotations

import subprocess
import sys
import time

child = subprocess.Popen(["sleep", "1000"])
sys.stderr.write(f"child pid {child.pid}\n")
sys.stderr.flush()
while True:
    time.sleep(1)
