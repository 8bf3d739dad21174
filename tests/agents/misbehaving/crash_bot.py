"""A bot through the SDK whose act() raises on every other decision (a "crash" fault each time)."""

from arena.agent import run
from sample_agents.random_bot import RandomPlayer


class Crashy(RandomPlayer):
    name = "crashy"
    calls = 0

    def act(self, obs, legal):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls % 2 == 0:
            raise ZeroDivisionError("the bot divided by zero")
        return super().act(obs, legal)


run(Crashy())
