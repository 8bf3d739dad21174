"""Commands stopped by SIGTERM clean up as on Ctrl-C and then exit with their own status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# A command stopped while the interpreter runs code that C evaluated (PyRun_String), then
# exiting normally: run with -m, as `python -m arena.cli` is.
_STOPPED_IN_C_EVALUATED_CODE = """
import ctypes, sys
from arena.commands.signals import stop_like_ctrl_c

stop_like_ctrl_c()
run = ctypes.pythonapi.PyRun_String
run.restype = ctypes.py_object
run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object]
try:  # "running" is printed inside the try: a SIGTERM sent as soon as it is read lands here
    code = b"import time\\nprint('running', flush=True)\\nwhile True: time.sleep(0.01)"
    run(code, 257, {}, {})  # 257: Py_file_input
except KeyboardInterrupt:
    print("stopped", flush=True)
sys.exit(0)
"""


def test_a_command_stopped_by_sigterm_exits_with_its_own_status(tmp_path: Path) -> None:
    (tmp_path / "stoppable.py").write_text(_STOPPED_IN_C_EVALUATED_CODE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoppable"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "running"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert out.strip() == "stopped"
    assert proc.returncode == 0  # not -SIGINT
