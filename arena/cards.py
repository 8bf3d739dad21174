"""Cards and suits in the notation of RULES.md §2."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

from arena.errors import UnparseableCard

SUIT_LETTERS = "SHDC"
RANK_LETTERS = "23456789TJQKA"  # index + 2 is the rank value: 2..14


class Suit(IntEnum):
    S = 0
    H = 1
    D = 2
    C = 3

    def __str__(self) -> str:
        return self.name

    @property
    def partner(self) -> Suit:
        """The other suit of the same colour (whose five becomes a trump)."""
        return _SAME_COLOUR[self]


_SAME_COLOUR = {Suit.S: Suit.C, Suit.C: Suit.S, Suit.H: Suit.D, Suit.D: Suit.H}

JOKER_INDEX = 52


class Card(int):
    """A card: an int 0..52 (suit * 13 + rank - 2; 52 is the joker) with canonical text.

    Cards are interned (``CARDS[i]``), so they are cheap to compare, hash and index tables with.
    """

    __slots__ = ()

    @property
    def suit(self) -> Suit | None:
        return None if self == JOKER_INDEX else Suit(self // 13)

    @property
    def rank(self) -> int:
        """2..14 for A high; 0 for the joker."""
        return 0 if self == JOKER_INDEX else self % 13 + 2

    @property
    def is_joker(self) -> bool:
        return self == JOKER_INDEX

    def __str__(self) -> str:
        return _TEXT[self]

    def __repr__(self) -> str:
        return f"Card({_TEXT[self]!r})"


def _text(index: int) -> str:
    if index == JOKER_INDEX:
        return "JO"
    return RANK_LETTERS[index % 13] + SUIT_LETTERS[index // 13]


_TEXT = [_text(i) for i in range(53)]
CARD_TEXT: tuple[str, ...] = tuple(_TEXT)  # card index -> text, for hot loops
CARDS: tuple[Card, ...] = tuple(Card(i) for i in range(53))
JOKER = CARDS[JOKER_INDEX]
_BY_TEXT = {t: CARDS[i] for i, t in enumerate(_TEXT)}


def card(suit: Suit, rank: int) -> Card:
    return CARDS[suit * 13 + rank - 2]


def parse_card(text: str) -> Card:
    """Parse ``'AS'``, ``'TH'``, ``'JO'``; raise UnparseableCard for anything else."""
    found = _BY_TEXT.get(text)
    if found is None:
        raise UnparseableCard(
            f"{text!r} is not a card: write rank + suit (ranks A K Q J T 9..2, suits S H D C) "
            "or JO for the joker"
        )
    return found


def deck(joker: bool) -> list[Card]:
    """A fresh pack in canonical order."""
    return sorted(CARDS if joker else CARDS[:52], key=sort_key)


def sort_key(c: int) -> int:
    """Canonical order: suits S H D C, each ace high down to two, the joker last."""
    return _SORT_KEY[c]


_SORT_KEY = [(i // 13) * 13 + (12 - i % 13) if i != JOKER_INDEX else 99 for i in range(53)]


def sorted_cards(cards: Iterable[int]) -> list[Card]:
    return [CARDS[c] for c in sorted(cards, key=_SORT_KEY.__getitem__)]


def cards_text(cards: Iterable[int]) -> str:
    return " ".join(_TEXT[c] for c in cards)
