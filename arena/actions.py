"""Actions in the canonical text of RULES.md §5: frozen values whose text round-trips."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from arena.cards import CARDS, Card, Suit, cards_text, parse_card, sort_key
from arena.errors import UnparseableAction, UnparseableCard


class ActionKind(StrEnum):
    PASS = "pass"
    BID = "bid"
    TRUMP = "trump"
    GIVE = "give"
    KEEP = "keep"
    PLAY = "play"


class Action:
    """One decision. Cards keep the order the player gave; equality compares card sets."""

    __slots__ = ("kind", "number", "cards", "_key", "_text")

    kind: ActionKind
    number: int | None
    cards: tuple[Card, ...]

    def __init__(
        self, kind: ActionKind, number: int | None = None, cards: Iterable[Card] = ()
    ) -> None:
        self.kind = kind
        self.number = number
        self.cards = tuple(cards)
        self._key = (kind, number, frozenset(self.cards))
        if kind is ActionKind.BID:
            self._text = f"bid {number}"
        elif kind is ActionKind.TRUMP:
            self._text = f"trump {Suit(number)}" if number is not None else "trump"
        elif kind is ActionKind.PASS:
            self._text = "pass"
        else:
            self._text = f"{kind.value} {cards_text(self.cards)}" if self.cards else kind.value

    @property
    def card(self) -> Card:
        return self.cards[0]

    @property
    def suit(self) -> Suit:
        assert self.number is not None
        return Suit(self.number)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Action) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Action({self._text!r})"

    def canonical_key(self) -> tuple[int, int, tuple[int, ...]]:
        """Canonical order of RULES.md actions: by kind, then number, then sorted cards."""
        return (
            _KIND_ORDER[self.kind],
            self.number if self.number is not None else -1,
            tuple(sorted(sort_key(c) for c in self.cards)),
        )


_KIND_ORDER = {k: i for i, k in enumerate(ActionKind)}

PASS = Action(ActionKind.PASS)
_BIDS = {n: Action(ActionKind.BID, n) for n in range(1, 64)}
_TRUMPS = {s: Action(ActionKind.TRUMP, int(s)) for s in Suit}
_PLAYS = [Action(ActionKind.PLAY, None, (c,)) for c in CARDS]


def bid(n: int) -> Action:
    return _BIDS[n]


def trump(suit: Suit) -> Action:
    return _TRUMPS[suit]


def play(card: int) -> Action:
    return _PLAYS[card]


def give(cards: Iterable[Card]) -> Action:
    return Action(ActionKind.GIVE, None, cards)


def keep(cards: Iterable[Card]) -> Action:
    return Action(ActionKind.KEEP, None, cards)


_HELP = "actions are: pass | bid N | trump S|H|D|C | give CARDS... | keep CARDS... | play CARD"


def parse_action(text: str) -> Action:
    """Parse canonical action text; raise UnparseableAction naming the text otherwise."""
    if not isinstance(text, str):
        raise UnparseableAction(f"{text!r} is not an action: expected text; {_HELP}")
    if text and text != text.strip():
        # Said apart: the usual "actions are: ..." list hid that only the spaces were wrong.
        raise UnparseableAction(f"{text!r} is not an action: it has white space around it")
    words = text.split(" ")
    verb, args = words[0], words[1:]
    try:
        if verb == "pass" and not args:
            return PASS
        if verb == "bid" and len(args) == 1 and args[0].isascii() and args[0].isdigit():
            # ASCII only: other digits (superscripts, say) pass isdigit but not int()
            n = int(args[0])
            if n not in _BIDS:
                raise UnparseableAction(f"{text!r} is not an action: bids are 1 to 63")
            if args[0] != str(n):
                raise UnparseableAction(f"{text!r} is not an action: no leading zeros in a bid")
            return _BIDS[n]
        elif verb == "trump" and len(args) == 1 and args[0] in Suit.__members__:
            return _TRUMPS[Suit[args[0]]]
        elif verb == "play" and len(args) == 1:
            return _PLAYS[parse_card(args[0])]
        elif verb in ("give", "keep") and "" not in args:
            cards = [parse_card(a) for a in args]
            if len(set(cards)) != len(cards):
                raise UnparseableAction(f"{text!r} names a card twice")
            return Action(ActionKind(verb), None, cards)
    except UnparseableCard as exc:
        raise UnparseableAction(f"{text!r} is not an action: {exc}") from None
    raise UnparseableAction(f"{text!r} is not an action; {_HELP} (single spaces, upper-case cards)")
