"""The engine's error kinds: one small hierarchy, every message naming input, seat and phase."""

from __future__ import annotations


class ArenaError(Exception):
    """Base of every error the arena raises on purpose."""


class UnknownRuleset(ArenaError, KeyError):
    """A ruleset name that is not one of RULES.md §6."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else "unknown ruleset"


class BadRuleset(ArenaError, ValueError):
    """A custom ruleset whose parameters do not make a playable game."""


class UnparseableCard(ArenaError, ValueError):
    """Text that is not a card in RULES.md §2 notation."""


class UnparseableAction(ArenaError, ValueError):
    """Text that is not an action in RULES.md §5 notation."""


class IllegalAction(ArenaError, ValueError):
    """A well-formed action that the rules do not allow at this point."""


class NotYourTurn(IllegalAction):
    """An action offered by a seat that is not the one to decide."""


class GameOver(IllegalAction):
    """An action offered after the game has ended."""


class RecordError(ArenaError, ValueError):
    """A game record that is malformed or does not re-play as written."""
