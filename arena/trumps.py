"""What trump naming does to the pack: which cards are trumps, their order and their points."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from arena.cards import CARDS, JOKER_INDEX, Card, Suit, card
from arena.rulesets import Ruleset

_POINT_RANKS = {14: "A", 13: "K", 11: "J", 10: "T", 9: "9", 5: "5", 3: "3", 2: "2"}


@dataclass(frozen=True)
class TrumpTable:
    """Per-card lookup tables (indexed by card) for one ruleset and trump suit.

    ``strength`` orders trumps (A=28 .. 2=4, opposite five 9, joker 1) and is 0 for dirt;
    ``suit_of`` is the suit a card belongs to for leading and following (trumps: the trump suit).
    """

    trump: Suit
    is_trump: tuple[bool, ...]
    strength: tuple[int, ...]
    points: tuple[int, ...]
    suit_of: tuple[int, ...]
    opposite_five: Card
    two: Card

    def trumps_in(self, cards: list[Card]) -> int:
        return sum(map(self.is_trump.__getitem__, cards))

    def has_trump(self, cards: list[Card]) -> bool:
        return any(map(self.is_trump.__getitem__, cards))


@cache
def trump_table(ruleset: Ruleset, trump: Suit) -> TrumpTable:
    opposite = card(trump.partner, 5)
    is_trump = [False] * 53
    strength = [0] * 53
    points = [0] * 53
    suit_of = [c // 13 for c in range(52)] + [int(trump)]
    for rank in range(2, 15):
        c = card(trump, rank)
        is_trump[c] = True
        strength[c] = rank * 2
        points[c] = ruleset.point(_POINT_RANKS.get(rank, "-"))
    is_trump[opposite], strength[opposite], points[opposite] = True, 9, ruleset.point("O")
    suit_of[opposite] = int(trump)
    if ruleset.joker:
        is_trump[JOKER_INDEX], strength[JOKER_INDEX] = True, 1
        points[JOKER_INDEX] = ruleset.point("JO")
    return TrumpTable(
        trump=trump,
        is_trump=tuple(is_trump),
        strength=tuple(strength),
        points=tuple(points),
        suit_of=tuple(suit_of),
        opposite_five=CARDS[opposite],
        two=card(trump, 2),
    )
