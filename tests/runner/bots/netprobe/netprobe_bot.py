"""Test agent: the random player, first saying which network it is in and what it dials."""

from __future__ import annotations

import os
import sys

from arena.agent import run
from sample_agents.random_bot import RandomPlayer

if __name__ == "__main__":
    network = os.readlink("/proc/self/ns/net")
    print(f"network {network} dials {os.environ['ARENA_GAME_MASTER']}", file=sys.stderr, flush=True)
    run(RandomPlayer())
