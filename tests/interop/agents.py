"""Command lines of the agents the interop tests play with (real processes over loopback)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from arena.local_match import SeatSpec

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
JS_DIR = REPO / "sample_agents" / "js"
BOTS = Path(__file__).resolve().parent / "bots"
AGENTS = REPO / "tests" / "agents"

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


def bridge(*bot: str, events: bool = True) -> tuple[str, ...]:
    """`arena stdio-agent -- BOT...` with this arena's Python."""
    return (PY, "-m", "arena.cli", "stdio-agent", *(() if events else ("--no-events",)), "--", *bot)


PY_GREEDY = SeatSpec("py-greedy", (PY, "-m", "sample_agents.greedy_bot"))
PY_RANDOM = SeatSpec("py-random", (PY, "-m", "sample_agents.random_bot"))
JS = SeatSpec("js", ("node", str(JS_DIR / "agent.js")))
STDIO_PY = SeatSpec("stdio-py", bridge(PY, str(REPO / "sample_agents" / "stdio" / "bot.py")))
STDIO_AWK = SeatSpec(
    "stdio-awk", bridge("sh", str(REPO / "sample_agents" / "stdio" / "fallback.sh"), events=False)
)


def misbehaving(mode: str, *args: str) -> SeatSpec:
    return SeatSpec(f"stdio-{mode}", bridge(PY, str(BOTS / "misbehaving_stdio.py"), mode, *args))
