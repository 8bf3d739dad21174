"""Test agent: writes its environment, working directory and argv to stderr as JSON."""

from __future__ import annotations

import json
import os
import sys

json.dump({"env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv}, sys.stderr)
sys.stderr.write("\n")
