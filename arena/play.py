"""Playing a game in process: players answer decisions, the engine keeps the record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from arena.actions import Action
from arena.game import Game
from arena.legal import Legal
from arena.observation import Observation, observe
from arena.rulesets import Ruleset


class Player(Protocol):
    """A bot in process. It sees only its observation and the legal actions, never the state."""

    name: str

    def act(self, obs: Observation, legal: Legal) -> Action | str: ...


def play_game(
    ruleset: Ruleset,
    seed: int | str,
    players: Sequence[Player],
    first_dealer: int | None = None,
) -> Game:
    """Play one game to its end. A player's illegal answer raises: in process, that is a bug."""
    if len(players) != 4:
        raise ValueError(f"a game needs 4 players, got {len(players)}")
    game = Game(ruleset, seed, first_dealer)
    while not game.is_over:
        seat = game.to_act
        assert seat is not None
        legal = game.legal()
        game.apply(players[seat].act(observe(game, seat), legal), seat)
    return game
