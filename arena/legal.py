"""The one legality oracle's answer: the legal actions of the decision at hand."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

from arena.actions import Action, ActionKind
from arena.cards import Card, sort_key


class Phase(StrEnum):
    AUCTION = "auction"
    TRUMP = "trump"
    GIVE = "give"
    KEEP = "keep"
    PLAY = "play"
    GAME_OVER = "game_over"


@dataclass(frozen=True, slots=True)
class CardChoice:
    """A `give` or `keep` decision as a choice of cards with counts (never enumerated on the wire).

    An action is legal when its cards are distinct, drawn from ``cards``, include every card of
    ``required`` and number between ``min_count`` and ``max_count`` (required ones included).
    """

    kind: ActionKind
    cards: tuple[Card, ...]
    required: tuple[Card, ...]
    min_count: int
    max_count: int

    def why_not(self, action: Action) -> str | None:
        chosen = set(action.cards)
        if len(chosen) != len(action.cards):
            return "a card is named twice"
        allowed = set(self.cards)
        if not chosen <= allowed:
            bad = " ".join(str(c) for c in action.cards if c not in allowed)
            return f"{bad} may not be chosen here (choose from {_text(self.cards)})"
        missing = [c for c in self.required if c not in chosen]
        if missing:
            return f"point trumps must be kept: {_text(missing)}"
        n = len(chosen)
        if not self.min_count <= n <= self.max_count:
            span = (
                f"exactly {self.min_count}"
                if self.min_count == self.max_count
                else f"{self.min_count} to {self.max_count}"
            )
            return f"{n} cards chosen, {span} required"
        return None

    def first(self) -> Action:
        """The first legal action in canonical order: the fallback for a faulting seat."""
        optional = [c for c in self.cards if c not in self.required]
        chosen = list(self.required) + optional[: self.min_count - len(self.required)]
        return Action(self.kind, None, sorted(chosen, key=sort_key))

    def all(self) -> Iterator[Action]:
        optional = [c for c in self.cards if c not in self.required]
        for n in range(self.min_count, self.max_count + 1):
            for combo in itertools.combinations(optional, n - len(self.required)):
                yield Action(self.kind, None, sorted(self.required + combo, key=sort_key))


def _text(cards: tuple[Card, ...] | list[Card]) -> str:
    return " ".join(str(c) for c in cards) or "nothing"


class Legal:
    """What ``seat`` may do now: an explicit tuple of actions, or a card choice.

    A plain slotted class rather than a frozen dataclass: one is built per decision, and the
    engine's speed target counts every microsecond. Treat it as immutable.
    """

    __slots__ = ("phase", "seat", "actions", "choice")

    def __init__(
        self,
        phase: Phase,
        seat: int,
        actions: tuple[Action, ...] = (),
        choice: CardChoice | None = None,
    ) -> None:
        self.phase = phase
        self.seat = seat
        self.actions = actions
        self.choice = choice

    def __repr__(self) -> str:
        shown = self.choice if self.choice is not None else [str(a) for a in self.actions]
        return f"Legal({self.phase.value}, seat {self.seat}, {shown})"

    def __contains__(self, action: object) -> bool:
        if self.choice is None:
            return action in self.actions
        return (
            isinstance(action, Action)
            and action.kind is self.choice.kind
            and self.choice.why_not(action) is None
        )

    def first(self) -> Action:
        return self.choice.first() if self.choice is not None else self.actions[0]

    def all(self) -> list[Action]:
        """Every legal action in canonical order (enumerates card choices: tests, small bots)."""
        found = list(self.choice.all()) if self.choice is not None else list(self.actions)
        return sorted(found, key=Action.canonical_key)
