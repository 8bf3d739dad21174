"""An SDK bot that thinks THINK_S seconds (default 2) before each answer: the first legal one."""

import os
import time

from arena.agent import run
from arena.legal import Legal
from arena.observation import Observation


class Thinker:
    name = "thinker"

    def act(self, obs: Observation, legal: Legal) -> str:
        time.sleep(float(os.environ.get("THINK_S", "2")))
        return str(legal.first())


run(Thinker())
