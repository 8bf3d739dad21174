"""A seeded random player: every legal action equally likely (card choices: a random size)."""

from __future__ import annotations

import random

from arena.actions import Action
from arena.cards import sort_key
from arena.legal import Legal
from arena.observation import Observation


class RandomPlayer:
    name = "random"

    def __init__(self, seed: int | str = 0) -> None:
        self._rng = random.Random(f"random-player/{seed}")

    def act(self, obs: Observation, legal: Legal) -> Action:
        choice = legal.choice
        if choice is None:
            return self._rng.choice(legal.actions)
        optional = [c for c in choice.cards if c not in choice.required]
        n = self._rng.randint(choice.min_count, choice.max_count) - len(choice.required)
        picked = list(choice.required) + self._rng.sample(optional, n)
        return Action(choice.kind, None, sorted(picked, key=sort_key))


if __name__ == "__main__":
    from arena.agent import run

    run(RandomPlayer())
