"""Which Python runs Python bots: the arena's own, the one that has the SDK.

A bot's command (in its manifest, or a seat of `arena play`) that starts with `python` or
`python3` means this Python, wherever the worker runs: an agent's PATH is cleaned, so a bare
name would otherwise find whichever Python happens to be first on the worker's PATH, often
one without grpcio and the arena package.
"""

from __future__ import annotations

import sys

PYTHON_NAMES = ("python", "python3")


def arena_python(program: str) -> str | None:
    """The arena's Python for a bare `python`/`python3`, else None (resolve as usual)."""
    return sys.executable if program in PYTHON_NAMES else None
