"""Test agent: writes 1 MiB of numbered lines to stderr, then exits with code 3."""

from __future__ import annotations

import sys

for n in range(1024 * 1024 // 16):
    sys.stderr.write(f"line {n:010d}\n")  # 16 bytes a line
sys.exit(3)
