"""Reference bots: in process here, and as separate processes through the agent SDK."""

from __future__ import annotations

from collections.abc import Callable

from arena.play import Player


def builtin_players() -> dict[str, Callable[[int | str], Player]]:
    """Built-in player names -> factory taking a seed."""
    from sample_agents.greedy_bot import GreedyPlayer
    from sample_agents.random_bot import RandomPlayer

    return {"random": RandomPlayer, "greedy": GreedyPlayer}
