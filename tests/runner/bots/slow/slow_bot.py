"""Test agent: the random player, sleeping 40 ms before each decision."""

from __future__ import annotations

import time

from arena.actions import Action
from arena.agent import run
from arena.legal import Legal
from arena.observation import Observation
from sample_agents.random_bot import RandomPlayer


class SlowPlayer(RandomPlayer):
    name = "slow"

    def act(self, obs: Observation, legal: Legal) -> Action:
        time.sleep(0.04)
        return super().act(obs, legal)


if __name__ == "__main__":
    run(SlowPlayer())
