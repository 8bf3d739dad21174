"""Test agent: burns CPU forever (with --ignore-sigxcpu only the hard CPU limit ends it)."""

from __future__ import annotations

import signal
import sys

if "--ignore-sigxcpu" in sys.argv:
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
while True:
    pass
