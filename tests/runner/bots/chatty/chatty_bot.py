"""Test agent: the random player, saying each action on stderr."""

from __future__ import annotations

import sys

from arena.actions import Action
from arena.agent import run
from arena.legal import Legal
from arena.observation import Observation
from sample_agents.random_bot import RandomPlayer


class ChattyPlayer(RandomPlayer):
    name = "chatty"

    def act(self, obs: Observation, legal: Legal) -> Action:
        action = super().act(obs, legal)
        print(f"chatty plays {action}", file=sys.stderr, flush=True)
        return action


if __name__ == "__main__":
    run(ChattyPlayer())
