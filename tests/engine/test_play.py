"""Play (RULES.md §3.5): leads, following, going out, the lead passing on, long hands."""

from __future__ import annotations

import dataclasses

import pytest

from arena.cards import Suit
from arena.errors import IllegalAction
from arena.game import Game
from arena.legal import Phase
from arena.rulesets import RULESETS, STANDARD, DirtFollow, Ruleset

from .builders import (
    check_census,
    draw4_position,
    events_of,
    legal_texts,
    play_position,
    play_trick,
)

SITE = RULESETS["rules-site"]

# Standard, dealer 0, trump H, after the re-deal (the dealer gives nothing).
# Seat 1 bids and holds two trumps; seat 2 two; seat 3 one; the dealer the other ten.
FINALS_A = [
    "QH JH TH 9H 8H 7H 6H 5H 5D JO",
    "AH 4H AS KS QS JS",
    "KH 2H AD KD QD JD",
    "3H AC KC QC JC TC",
]


def game_a(ruleset: Ruleset = STANDARD, contract: int | None = None) -> Game:
    return play_position(ruleset, Suit.H, FINALS_A, bidder=1, contract=contract)


def plays(game: Game) -> set[str]:
    return set(legal_texts(game))


def test_bidder_leads_and_the_first_lead_must_be_a_trump() -> None:
    game = game_a()
    assert (game.phase, game.to_act) == (Phase.PLAY, 1)
    assert plays(game) == {"play AH", "play 4H"}
    with pytest.raises(IllegalAction) as exc:
        game.apply("play AS", seat=1)
    assert "first lead" in str(exc.value) and "'play AS'" in str(exc.value)


def test_after_a_trump_lead_a_player_holding_trumps_must_play_one() -> None:
    game = game_a()
    game.apply("play AH", seat=1)
    assert game.to_act == 2
    assert plays(game) == {"play KH", "play 2H"}
    with pytest.raises(IllegalAction) as exc:
        game.apply("play AD", seat=2)
    assert "trump" in str(exc.value)
    game.apply("play 2H", seat=2)
    assert plays(game) == {"play 3H"}
    game.apply("play 3H", seat=3)
    assert plays(game) == {f"play {c}" for c in FINALS_A[0].split()}  # all trumps


def test_a_card_not_held_is_refused() -> None:
    game = game_a()
    with pytest.raises(IllegalAction) as exc:
        game.apply("play KH", seat=1)
    assert "not in seat 1's hand" in str(exc.value)


def test_trick_goes_clockwise_and_its_winner_leads_next() -> None:
    game = game_a()
    trick = play_trick(game, "AH", "2H", "3H", "JO")
    assert trick["leader"] == 1 and trick["winner"] == 1
    assert [s for s, _c in trick["cards"]] == [1, 2, 3, 0]
    assert game.to_act == 1


def test_player_without_trumps_goes_out_after_a_trick() -> None:
    game = game_a()
    play_trick(game, "AH", "2H", "3H", "JO")
    assert game.out == [False, False, False, True]
    outs = events_of(game, "out", 1)
    assert outs == [{"event": "out", "hand": 1, "seat": 3, "cards": ["AC", "KC", "QC", "JC", "TC"]}]
    assert game.hands[3] == []
    check_census(game)  # the set-aside dirt is still accounted for


def test_later_leads_are_free_and_dirt_may_be_followed_by_anything() -> None:
    game = game_a()
    play_trick(game, "AH", "2H", "3H", "JO")
    assert plays(game) == {"play 4H", "play AS", "play KS", "play QS", "play JS"}
    game.apply("play AS", seat=1)
    assert game.to_act == 2  # seat 3 is out and skipped later
    assert plays(game) == {"play KH", "play AD", "play KD", "play QD", "play JD"}
    game.apply("play AD", seat=2)
    assert game.to_act == 0
    assert plays(game) == {f"play {c}" for c in game.hands[0]}
    trick = play_trick(game, "8H")
    assert trick["winner"] == 0 and [s for s, _ in trick["cards"]] == [1, 2, 0]


def test_lead_passes_on_when_the_winner_goes_out() -> None:
    game = game_a()
    play_trick(game, "AH", "2H", "3H", "JO")
    trick = play_trick(game, "4H", "KH", "QH")  # seat 2 wins with its last trump
    assert trick["winner"] == 2
    assert game.out == [False, True, True, True]  # seats 1 and 2 hold only dirt now
    assert game.to_act == 0  # seat 3 is out too: the next active player clockwise is 0


def test_a_player_with_more_than_six_cards_plays_on_alone() -> None:
    game = game_a()
    assert len(game.hands[0]) == 10
    play_trick(game, "AH", "2H", "3H", "JO")
    play_trick(game, "4H", "KH", "QH")
    assert len(game.hands[0]) == 8
    for _ in range(8):
        assert game.to_act == 0 and game.phase is Phase.PLAY
        trick = play_trick(game, legal_texts(game)[0].split()[1])
        assert trick["winner"] == 0 and len(trick["cards"]) == 1
    assert game.hand_number == 2  # the hand ended when nobody was left
    assert len(events_of(game, "trick", 1)) == 10


def test_player_without_trumps_is_out_right_after_the_redeal_and_bidder_out_passes_lead() -> None:
    finals = [
        "9H 8H 7H 6H 5H 5D 4H 3H 2H JO",
        "AS KS QS JS TS 9S",
        "AH KH QH AD KD QD",
        "JH TH AC KC QC JC",
    ]
    game = play_position(STANDARD, Suit.H, finals, bidder=1)
    assert game.out == [False, True, False, False]
    assert events_of(game, "out", 1)[0]["seat"] == 1
    assert game.to_act == 2  # the bidder is out: the next active player leads
    assert plays(game) == {"play AH", "play KH", "play QH"}  # still the first lead: a trump
    trick = play_trick(game, "AH", "TH", "2H")
    assert [s for s, _ in trick["cards"]] == [2, 3, 0]


def test_every_trick_has_every_active_player_once() -> None:
    game = game_a()
    play_trick(game, "AH", "2H", "3H", "JO")
    with pytest.raises(IllegalAction):
        game.apply("play AC", seat=3)  # out: never asked again this hand


# rules-site, dealer 0, trump H. Seat 2 keeps eight point trumps; nobody ever goes out early.
FINALS_D = [
    "8S AC KC QC JC TC",
    "AS KS QS JS TS 9S",
    "AH KH JH TH 9H 5H 5D 3H",
    "2H AD KD QD JD TD",
]


def game_d(contract: int | None = None) -> Game:
    return draw4_position(SITE, Suit.H, FINALS_D, bidder=1, contract=contract)


def test_rules_site_bidder_may_lead_any_card() -> None:
    game = game_d()
    assert game.to_act == 1
    assert plays(game) == {f"play {c}" for c in FINALS_D[1].split()}


def test_rules_site_must_follow_the_suit_led_if_able() -> None:
    game = game_d()
    game.apply("play AS", seat=1)
    assert plays(game) == {f"play {c}" for c in game.hands[2]}  # no spades: anything
    game.apply("play AH", seat=2)
    assert plays(game) == {f"play {c}" for c in game.hands[3]}
    game.apply("play 2H", seat=3)
    assert plays(game) == {"play 8S"}  # holds a spade: must play it
    with pytest.raises(IllegalAction) as exc:
        game.apply("play AC", seat=0)
    assert "follow the suit" in str(exc.value)


def test_rules_site_trump_lead_requires_a_trump_if_able() -> None:
    game = game_d()
    play_trick(game, "AS", "AH", "2H", "8S")
    assert game.to_act == 2
    game.apply("play 3H", seat=2)
    assert plays(game) == {f"play {c}" for c in game.hands[3]}  # no trump left: anything
    game.apply("play AD", seat=3)
    assert plays(game) == {f"play {c}" for c in game.hands[0]}
    game.apply("play AC", seat=0)
    assert plays(game) == {f"play {c}" for c in game.hands[1]}


def test_rules_site_nobody_goes_out_and_every_card_is_played() -> None:
    game = game_d()
    play_trick(game, "AS", "AH", "2H", "8S")
    assert game.out == [False, False, False, False]  # seats 0, 1, 3 hold no trump: not out
    while game.hand_number == 1:
        game.apply(game.legal().first(), seat=game.to_act)
    tricks = events_of(game, "trick", 1)
    assert len(tricks) == 8
    played: dict[int, int] = {0: 0, 1: 0, 2: 0, 3: 0}
    for t in tricks:
        for s, _c in t["cards"]:
            played[s] += 1
    assert played == {0: 6, 1: 6, 2: 8, 3: 6}  # seat 2 played its eight cards, alone at the end
    assert [len(t["cards"]) for t in tricks[6:]] == [1, 1]
    assert all(not e["cards"] for e in events_of(game, "out", 1))  # out only with no cards


def test_dirt_follow_suit_parameter_alone() -> None:
    # standard with dirt_follow suit: later dirt leads must be followed by suit
    rs = dataclasses.replace(STANDARD, name="suit-follow", dirt_follow=DirtFollow.SUIT)
    game = play_position(rs, Suit.H, FINALS_A, bidder=1)
    play_trick(game, "AH", "2H", "3H", "JO")
    game.apply("play AS", seat=1)
    assert plays(game) == {f"play {c}" for c in game.hands[2]}  # seat 2: no spades
    game2 = play_position(rs, Suit.H, FINALS_A, bidder=1)
    play_trick(game2, "AH", "2H", "3H", "JO")
    game2.apply("play 4H", seat=1)
    assert plays(game2) == {"play KH"}
