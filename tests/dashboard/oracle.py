"""An independent re-play of a record with the engine: every seat's hand after k decisions."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from arena.cards import CARD_TEXT, parse_card
from arena.game import Game
from arena.record import ruleset_of

CARD_CODE = re.compile(r"(?<![0-9A-Z])(?:[2-9TJQKA][SHDC]|JO)(?![0-9A-Z])")
CARD_PRETTY = re.compile(r"(10|[2-9JQKA])([♠♥♦♣])")
_SUIT_LETTER = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}


def hands_after_decisions(record: bytes) -> list[list[set[str]]]:
    """hands[k][seat]: the cards seat held right after the k-th decision (k = 0: the deal)."""
    lines = [json.loads(line) for line in record.splitlines() if line.strip()]
    head = lines[0]
    deals = {line["hand"]: line for line in lines if line.get("event") == "deal"}

    def provide(hand: int, dealer: int) -> Any:
        deal = deals[hand]
        return [[parse_card(c) for c in h] for h in deal["hands"]], [
            parse_card(c) for c in deal["stock"]
        ]

    game = Game(ruleset_of(head), head.get("seed", 0), head["first_dealer"], provide)
    out = [_hands(game)]
    for line in lines:
        if line.get("event") == "action":
            game.apply(line["action"], line["seat"])
            out.append(_hands(game))
    return out


def _hands(game: Game) -> list[set[str]]:
    return [{CARD_TEXT[c] for c in hand} for hand in game.hands]


def cards_mentioned(value: Any) -> Iterator[str]:
    """Every card named anywhere in a JSON value, in code (AS) or pretty (A♠, 10♥) form."""
    if isinstance(value, str):
        yield from CARD_CODE.findall(value)
        for rank, suit in CARD_PRETTY.findall(value):
            yield ("T" if rank == "10" else rank) + _SUIT_LETTER[suit]
        if "Joker" in value:
            yield "JO"
    elif isinstance(value, dict):
        for item in value.values():
            yield from cards_mentioned(item)
    elif isinstance(value, list):
        for item in value:
            yield from cards_mentioned(item)
