"""Which Python runs Python bots: the arena's own, the one that has the SDK.

A bot's command (in its manifest, or a seat of `arena play`) that starts with `python` or
`python3` means this Python, wherever the worker runs: an agent's PATH is cleaned, so a bare
name would otherwise find whichever Python happens to be first on the worker's PATH, often
one without grpcio and the arena package. Likewise a leading `arena` (as in
`arena stdio-agent -- ...`) means this arena, run as `python -m arena.cli` by this Python: a
worker started as `.venv/bin/arena worker` has no `arena` on its PATH.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

PYTHON_NAMES = ("python", "python3")


def arena_command(argv: Sequence[str]) -> list[str]:
    """`argv` with a leading `python`/`python3` or `arena` made this arena's own."""
    if argv and argv[0] == "arena":
        return [sys.executable, "-m", "arena.cli", *argv[1:]]
    if argv and argv[0] in PYTHON_NAMES:
        return [sys.executable, *argv[1:]]
    return list(argv)


def bridged_at(argv: Sequence[str]) -> int | None:
    """Where in `argv` (as arena_command gives it) the command the stdio bridge runs begins,
    the word after its '--'; None if `argv` runs no bridge, or a bridge with no command."""
    words = list(argv)
    runs_arena = words[1:3] in (["-m", "arena.cli"], ["-m", "arena"])
    if not (runs_arena and "stdio-agent" in words and "--" in words):
        return None
    at = words.index("--") + 1
    return at if at < len(words) else None
