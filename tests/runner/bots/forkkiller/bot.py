"""Test bot: on its first decision, SIGKILL its parent (the fork server, were it visible), then play
on."""

import os
import signal

from arena.agent import run


class ForkKiller:
    name = "forkkiller"

    def __init__(self) -> None:
        self.struck = False

    def act(self, obs, legal):  # type: ignore[no-untyped-def]
        if not self.struck:
            self.struck = True
            os.kill(os.getppid(), signal.SIGKILL)
        return legal.first()


run(ForkKiller())
