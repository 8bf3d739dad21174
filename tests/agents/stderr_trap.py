"""Test agent: leaves a trap where the launcher mirrors its stderr (the run directory, its
HOME's parent), writes a line to stderr and exits 1. `fifo`: a named pipe, which would block
whoever opens it for writing; `symlink TARGET`: a link to a file of someone else's."""

from __future__ import annotations

import os
import sys

path = os.path.join(os.path.dirname(os.environ["HOME"]), "stderr.log")
if os.path.lexists(path):
    os.unlink(path)
if sys.argv[1] == "fifo":
    os.mkfifo(path)
else:
    os.symlink(sys.argv[2], path)
sys.stderr.write("trapped\n")
sys.exit(1)
