"""Notation (RULES.md §2, §5): every card and every kind of action round-trips through text."""

from __future__ import annotations

import pytest

from arena.actions import PASS, Action, ActionKind, bid, give, keep, parse_action, play, trump
from arena.cards import CARDS, JOKER, Suit, card, deck, parse_card, sort_key
from arena.errors import UnparseableAction, UnparseableCard

from .builders import cards

ALL_CARD_TEXTS = [r + s for s in "SHDC" for r in "AKQJT98765432"] + ["JO"]


def test_every_card_round_trips_through_its_text() -> None:
    assert len(CARDS) == 53
    for c in CARDS:
        assert parse_card(str(c)) == c
        assert parse_card(str(c)) is c  # interned
    for text in ALL_CARD_TEXTS:
        assert str(parse_card(text)) == text
    assert sorted(str(c) for c in CARDS) == sorted(ALL_CARD_TEXTS)


@pytest.mark.parametrize(
    ("text", "suit", "rank"),
    [
        ("AS", Suit.S, 14),
        ("KH", Suit.H, 13),
        ("TD", Suit.D, 10),
        ("2C", Suit.C, 2),
        ("5D", Suit.D, 5),
    ],
)
def test_card_suit_and_rank(text: str, suit: Suit, rank: int) -> None:
    c = parse_card(text)
    assert (c.suit, c.rank, c.is_joker) == (suit, rank, False)
    assert card(suit, rank) == c


def test_joker_has_no_suit() -> None:
    assert JOKER.is_joker and JOKER.suit is None and str(JOKER) == "JO"


def test_packs_have_53_or_52_cards_in_canonical_order() -> None:
    full, plain = deck(True), deck(False)
    assert len(full) == len(set(full)) == 53
    assert len(plain) == len(set(plain)) == 52 and JOKER not in plain
    assert " ".join(map(str, full[:14])) == "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S AH"
    assert str(full[-1]) == "JO"
    assert full == sorted(full, key=sort_key)


@pytest.mark.parametrize(
    "text", ["", "as", "1S", "10H", "AX", "JOK", "jo", " AS", "AS ", "A S", "ZZ"]
)
def test_unparseable_card_text_names_the_text(text: str) -> None:
    with pytest.raises(UnparseableCard) as exc:
        parse_card(text)
    assert repr(text) in str(exc.value)


def _every_simple_action() -> list[Action]:
    return (
        [PASS]
        + [bid(n) for n in range(1, 64)]
        + [trump(s) for s in Suit]
        + [play(c) for c in CARDS]
    )


def test_every_pass_bid_trump_and_play_round_trips() -> None:
    actions = _every_simple_action()
    assert len(actions) == 1 + 63 + 4 + 53
    for a in actions:
        assert parse_action(str(a)) == a
        assert str(parse_action(str(a))) == str(a)


@pytest.mark.parametrize(
    "text",
    [
        "pass",
        "bid 1",
        "bid 25",
        "bid 40",
        "bid 63",
        "trump S",
        "trump H",
        "trump D",
        "trump C",
        "play AS",
        "play TH",
        "play 5D",
        "play JO",
        "give",
        "give 4H",
        "give 4H 6H",
        "give 8H 4H 6H",
        "keep",
        "keep 9S",
        "keep 9S 7C",
        "keep AS KS QS JS TS 9S",
        "keep 2C JO 5D 5H AH KH",
    ],
)
def test_action_text_round_trips(text: str) -> None:
    a = parse_action(text)
    assert str(a) == text
    assert parse_action(str(a)) == a
    assert eval(repr(a), {"Action": lambda t: parse_action(t)}) == a  # repr shows the text


@pytest.mark.parametrize(
    ("action", "text"),
    [
        (PASS, "pass"),
        (bid(45), "bid 45"),
        (trump(Suit.H), "trump H"),
        (play(parse_card("KH")), "play KH"),
        (give([]), "give"),
        (give(cards("4H 6H")), "give 4H 6H"),
        (keep(cards("9S 7C")), "keep 9S 7C"),
    ],
)
def test_constructed_actions_have_canonical_text(action: Action, text: str) -> None:
    assert str(action) == text
    assert parse_action(text) == action


def test_card_lists_keep_the_players_order_but_compare_as_sets() -> None:
    a, b = parse_action("give 4H 6H"), parse_action("give 6H 4H")
    assert a == b and hash(a) == hash(b)
    assert str(a) == "give 4H 6H" and str(b) == "give 6H 4H"
    assert parse_action("keep 4H") != parse_action("give 4H")
    assert a.kind is ActionKind.GIVE and set(a.cards) == set(cards("4H 6H"))


def test_every_kind_of_action_is_covered() -> None:
    kinds = {
        parse_action(t).kind for t in ["pass", "bid 40", "trump S", "give", "keep 2S", "play 2S"]
    }
    assert kinds == set(ActionKind)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Pass",
        "pass ",
        " pass",
        "pass now",
        "bid",
        "bid 0",
        "bid 64",
        "bid 040",
        "bid -5",
        "bid 4O",
        "bid  40",
        "Bid 40",
        "bid 40 41",
        "bid \u00b2",  # superscript two: a digit to str.isdigit, not to int()
        "bid 4\u00b2",
        "bid \u2460",  # circled one
        "bid \u0664\u0660",  # Arabic-Indic 40: int() reads it, it is not the canonical text
        "trump",
        "trump X",
        "trump h",
        "trump HD",
        "play",
        "play 4h",
        "play 4H 5H",
        "play XX",
        "give 4H 4H",
        "give 4H  6H",
        "give 4H ",
        "keep 9S 9S",
        "keep 10S",
        "deal",
    ],
)
def test_unparseable_action_text_names_the_text(text: str) -> None:
    with pytest.raises(UnparseableAction) as exc:
        parse_action(text)
    assert repr(text) in str(exc.value)


def test_non_text_is_unparseable() -> None:
    with pytest.raises(UnparseableAction):
        parse_action(45)  # type: ignore[arg-type]
