"""Trumps (RULES.md §2): which cards, their order, their points, and who wins a trick."""

from __future__ import annotations

import dataclasses

import pytest

from arena.cards import JOKER, Suit, deck, parse_card
from arena.rulesets import RULESETS, STANDARD, Redeal, Ruleset
from arena.trumps import trump_table

from .builders import draw4_position, legal_texts, play_trick

# The opposite five of each trump suit: the 5 of the other suit of the same colour.
OPPOSITE = {Suit.S: "5C", Suit.C: "5S", Suit.H: "5D", Suit.D: "5H"}


def trump_order(suit: Suit, joker: bool = True) -> list[str]:
    """RULES.md's order, high to low: A K Q J T 9 8 7 6 5 (opposite 5) 4 3 2 JO."""
    s = str(suit)
    ranks = ["A", "K", "Q", "J", "T", "9", "8", "7", "6", "5"]
    return (
        [r + s for r in ranks]
        + [OPPOSITE[suit]]
        + [r + s for r in "432"]
        + (["JO"] if joker else [])
    )


@pytest.mark.parametrize("name", sorted(RULESETS))
@pytest.mark.parametrize("suit", list(Suit))
def test_trump_cards_are_the_suit_the_opposite_five_and_the_joker(name: str, suit: Suit) -> None:
    rs = RULESETS[name]
    table = trump_table(rs, suit)
    trumps = {str(c) for c in deck(rs.joker) if table.is_trump[c]}
    assert trumps == set(trump_order(suit, rs.joker))
    assert len(trumps) == (15 if rs.joker else 14)
    assert str(table.opposite_five) == OPPOSITE[suit]
    assert table.is_trump[JOKER] == rs.joker


@pytest.mark.parametrize("name", sorted(RULESETS))
@pytest.mark.parametrize("suit", list(Suit))
def test_trump_order_high_to_low(name: str, suit: Suit) -> None:
    rs = RULESETS[name]
    table = trump_table(rs, suit)
    strengths = [table.strength[parse_card(t)] for t in trump_order(suit, rs.joker)]
    assert strengths == sorted(strengths, reverse=True)
    assert len(set(strengths)) == len(strengths)
    dirt = [c for c in deck(rs.joker) if not table.is_trump[c]]
    assert all(table.strength[c] < min(strengths) for c in dirt)  # even the joker beats dirt


@pytest.mark.parametrize("suit", list(Suit))
def test_opposite_five_belongs_to_the_trump_suit(suit: Suit) -> None:
    table = trump_table(STANDARD, suit)
    five = parse_card(OPPOSITE[suit])
    assert table.suit_of[five] == int(suit)
    assert five.suit is suit.partner
    assert table.suit_of[five] != int(suit.partner)  # no longer a card of its printed suit
    assert table.suit_of[JOKER] == int(suit)


# ruleset -> trump points as RULES.md §2 and §6 give them (A K J T 9 5 O 3 2 JO)
POINTS: dict[str, dict[str, int | None]] = {
    "standard": dict(A=1, K=25, J=1, T=1, N=9, F=5, O=5, three=0, two=1, JO=15),
    "wiki-2010": dict(A=1, K=25, J=1, T=1, N=9, F=5, O=5, three=0, two=1, JO=15),
    "inverness": dict(A=1, K=25, J=1, T=1, N=9, F=5, O=5, three=15, two=1, JO=None),
    "queens-county": dict(A=1, K=25, J=1, T=0, N=9, F=5, O=5, three=0, two=2, JO=15),
    "rules-site": dict(A=1, K=25, J=1, T=1, N=9, F=5, O=5, three=15, two=1, JO=None),
}


@pytest.mark.parametrize("name", sorted(POINTS))
@pytest.mark.parametrize("suit", list(Suit))
def test_trump_points_per_ruleset_add_up_to_63(name: str, suit: Suit) -> None:
    rs = RULESETS[name]
    p = POINTS[name]
    table = trump_table(rs, suit)
    s = str(suit)
    expected: dict[str, int | None] = {
        "A" + s: p["A"],
        "K" + s: p["K"],
        "Q" + s: 0,
        "J" + s: p["J"],
        "T" + s: p["T"],
        "9" + s: p["N"],
        "8" + s: 0,
        "7" + s: 0,
        "6" + s: 0,
        "5" + s: p["F"],
        OPPOSITE[suit]: p["O"],
        "4" + s: 0,
        "3" + s: p["three"],
        "2" + s: p["two"],
    }
    if p["JO"] is not None:
        expected["JO"] = p["JO"]
    got = {str(c): table.points[c] for c in deck(rs.joker) if table.is_trump[c]}
    assert got == expected
    assert sum(got.values()) == 63
    assert all(table.points[c] == 0 for c in deck(rs.joker) if not table.is_trump[c])


# Trick tests: a draw4 variant of standard where every player keeps exactly the cards a test
# names (topped up with dirt), nobody goes out and the bidder may lead anything.
TRICKS = dataclasses.replace(
    STANDARD,
    name="trick-tests",
    redeal=Redeal.DRAW4,
    out_of_trumps=False,
    first_lead_trump=False,
    points={"K": 63},
)


def trick_winner(plays: str, trump: Suit = Suit.H, ruleset: Ruleset = TRICKS) -> int:
    """Seat 1 (the bidder, left of dealer 0) leads; seats 2, 3, 0 follow with ``plays``."""
    played = plays.split()
    finals = ["", "", "", ""]
    for i, c in enumerate(played):
        finals[(1 + i) % 4] = c
    game = draw4_position(ruleset, trump, finals, bidder=1)
    return play_trick(game, *played)["winner"]


# (cards played by seats 1, 2, 3, 0 in order, trump H, winning seat)
TRICK_CASES = [
    pytest.param("9S AC KD TS", 0, id="dirt-highest-of-suit-led"),
    pytest.param("9S AC KD 8S", 1, id="dirt-off-suit-aces-lose"),
    pytest.param("2S AC AD AS", 0, id="dirt-ace-of-suit-led"),
    pytest.param("2C AS AD KC", 0, id="dirt-clubs"),
    pytest.param("AS 2H KS QS", 2, id="lowest-suit-trump-beats-dirt-ace"),
    pytest.param("AS JO AD KS", 2, id="joker-beats-dirt"),
    pytest.param("AS JO 2H KS", 3, id="joker-is-lowest-trump"),
    pytest.param("JO AS AD AC", 1, id="joker-lead-beats-dirt"),
    pytest.param("4H 5D 3H 2H", 2, id="opposite-five-beats-4"),
    pytest.param("5D 5H 4H JO", 2, id="five-beats-opposite-five"),
    pytest.param("5D AD KD QD", 1, id="opposite-five-lead-is-a-trump-not-a-diamond"),
    pytest.param("4D 5D AD KD", 2, id="opposite-five-is-not-a-diamond-when-followed"),
    pytest.param("4D 3D 2D 6D", 0, id="diamonds-without-their-five"),
    pytest.param("AH KH QH JH", 1, id="ace-high"),
    pytest.param("2H AH JO 3H", 2, id="ace-second"),
    pytest.param("6H 7H 8H 9H", 0, id="rising"),
    pytest.param("AS 2H 3H JO", 3, id="three-beats-two"),
]


@pytest.mark.parametrize(("plays", "winner"), TRICK_CASES)
def test_trick_winner(plays: str, winner: int) -> None:
    assert trick_winner(plays) == winner


@pytest.mark.parametrize("suit", list(Suit))
def test_trick_winner_for_every_adjacent_pair_in_trump_order(suit: Suit) -> None:
    """Each trump beats the next lower one, led or played after it, and dirt besides."""
    order = trump_order(suit)
    other = next(s for s in Suit if s not in (suit, suit.partner))
    fillers = [f"{r}{other}" for r in "AK"]
    for hi, lo in zip(order, order[1:], strict=False):
        assert trick_winner(f"{lo} {hi} {fillers[0]} {fillers[1]}", suit) == 2, (hi, lo)
        assert trick_winner(f"{hi} {fillers[0]} {lo} {fillers[1]}", suit) == 1, (hi, lo)


@pytest.mark.parametrize("suit", list(Suit))
def test_opposite_five_lead_must_be_followed_by_trump(suit: Suit) -> None:
    """After the opposite five is led, a trump is required; a card of its printed suit is not."""
    five = OPPOSITE[suit]
    printed = parse_card(five).suit
    assert printed is not None
    s = str(suit)
    p = str(printed)
    game = draw4_position(
        TRICKS, suit, [f"A{p}", f"{five} K{p}", f"4{s} Q{p} J{p}", f"T{p}"], bidder=1
    )
    game.apply(f"play {five}", seat=1)
    assert legal_texts(game) == [f"play 4{s}"]  # seat 2 must trump, not follow the printed suit
    game.apply(f"play 4{s}", seat=2)
    # seat 3 holds no trump: it may play anything, not only the printed suit
    assert set(legal_texts(game)) == {f"play {c}" for c in game.hands[3]}


@pytest.mark.parametrize("suit", list(Suit))
def test_printed_suit_lead_does_not_require_the_opposite_five(suit: Suit) -> None:
    """rules-site follows suit after dirt: the opposite five is not of its printed suit."""
    site = RULESETS["rules-site"]
    five = OPPOSITE[suit]
    printed = parse_card(five).suit
    assert printed is not None
    p, s = str(printed), str(suit)
    # every point trump of rules-site must be kept by someone
    points = [f"{r}{s}" for r in "AKJT9532"]
    finals = [
        f"{five} {points[0]} {points[1]}",
        f"9{p} {points[2]} {points[3]}",
        f"8{p} {points[4]} {points[5]}",
        f"{points[6]} {points[7]}",
    ]
    game = draw4_position(site, suit, finals, bidder=1)
    game.apply(f"play 9{p}", seat=1)
    assert legal_texts(game) == [f"play 8{p}"]  # seat 2 must follow the printed suit
    game.apply(f"play 8{p}", seat=2)
    assert set(legal_texts(game)) == {f"play {c}" for c in game.hands[3]}  # none: anything
    game.apply(legal_texts(game)[0], seat=3)
    # seat 0 holds the opposite five and no card of the printed suit: a free choice
    assert parse_card(five) in game.hands[0]
    assert set(legal_texts(game)) == {f"play {c}" for c in game.hands[0]}
