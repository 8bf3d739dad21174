"""Scoring a hand (RULES.md §3.6) and ending a game (§4), table-driven over rulesets."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from arena.cards import Suit
from arena.game import Game
from arena.legal import Phase
from arena.rulesets import RULESETS, STANDARD, Ruleset, TwoScoresFor

from .builders import (
    auction_for,
    draw4_position,
    events_of,
    game_with_deals,
    play_trick,
    refill_deal_for,
    run,
)

SITE = RULESETS["rules-site"]

# Dealer 0, trump H, seat 1 bids. Seat 1 wins trick 1 (AH over 2H 3H and the dealer's low
# trump), seat 2 wins trick 2 with KH and goes out, then the dealer plays its trumps alone.
FINALS_JOKER = [
    "QH JH TH 9H 8H 7H 6H 5H 5D JO",
    "AH 4H AS KS QS JS",
    "KH 2H AD KD QD JD",
    "3H AC KC QC JC TC",
]
FINALS_PLAIN = [
    "QH JH TH 9H 8H 7H 6H 5H 5D",
    "AH 4H AS KS QS JS",
    "KH 2H AD KD QD JD",
    "3H AC KC QC JC TC",
]


def rotate(finals: list[str], k: int) -> list[str]:
    """The same hands, each moved k seats clockwise."""
    return [finals[(s - k) % 4] for s in range(4)]


def play_hand_a(game: Game, low: str) -> dict[str, Any]:
    """Play the scripted hand; ``low`` is the dealer's card in trick 1. Returns its hand_end."""
    number = game.hand_number
    play_trick(game, "AH", "2H", "3H", low)
    play_trick(game, "4H", "KH", "QH")
    while game.hand_number == number and not game.is_over:
        game.apply(game.legal().first(), seat=game.to_act)
    return events_of(game, "hand_end", number)[0]


def start(
    ruleset: Ruleset,
    finals: list[str],
    bidder: int,
    dealer: int = 0,
    contract: int | None = None,
    later: list[list[str]] | None = None,
) -> Game:
    deal, decisions = refill_deal_for(ruleset, Suit.H, finals, dealer)
    deals = [deal]
    for f in later or []:
        deals.append(refill_deal_for(ruleset, Suit.H, f, (dealer + len(deals)) % 4)[0])
    game = game_with_deals(ruleset, deals, dealer)
    run(game, *auction_for(ruleset, bidder, dealer, contract), "trump H", *decisions)
    assert game.phase is Phase.PLAY
    return game


def custom(base: Ruleset = STANDARD, **changes: Any) -> Ruleset:
    return dataclasses.replace(base, name="custom", **changes)


# (ruleset, contract, points, made, scores) for the scripted hand, bidder seat 1 (team 1)
HAND_CASES = [
    pytest.param(STANDARD, 40, [47, 16], False, [47, -40], id="standard-failed-subtracts-contract"),
    pytest.param(custom(min_bid=1), 16, [47, 16], True, [47, 16], id="made-exactly-adds-points"),
    pytest.param(custom(min_bid=1), 17, [47, 16], False, [47, -17], id="one-short-subtracts"),
    pytest.param(
        custom(two_scores_for=TwoScoresFor.TRICK),
        40,
        [46, 17],
        False,
        [46, -40],
        id="two-scores-for-trick-winner",
    ),
    pytest.param(RULESETS["queens-county"], 40, [47, 16], False, [47, -40], id="queens-2-is-2"),
]


@pytest.mark.parametrize(("ruleset", "contract", "points", "made", "scores"), HAND_CASES)
def test_hand_scoring(
    ruleset: Ruleset, contract: int, points: list[int], made: bool, scores: list[int]
) -> None:
    game = start(ruleset, FINALS_JOKER, bidder=1, contract=contract)
    end = play_hand_a(game, "JO")
    assert end == {
        "event": "hand_end",
        "hand": 1,
        "bidder": 1,
        "contract": contract,
        "trump": "H",
        "points": points,
        "made": made,
        "scores": scores,
    }
    assert game.scores == scores


def test_trump_two_points_go_to_the_team_of_the_player_who_played_it() -> None:
    game = start(STANDARD, FINALS_JOKER, bidder=1)
    trick = play_trick(game, "AH", "2H", "3H", "JO")
    assert trick["winner"] == 1
    assert trick["points"] == [1, 16]  # 2H to seat 2's team; AH and JO to the winner's


def test_trump_two_points_go_to_the_trick_where_the_ruleset_says() -> None:
    game = start(custom(two_scores_for=TwoScoresFor.TRICK), FINALS_JOKER, bidder=1)
    trick = play_trick(game, "AH", "2H", "3H", "JO")
    assert trick["points"] == [0, 17]


def test_queens_county_two_is_worth_two_and_ten_nothing() -> None:
    game = start(RULESETS["queens-county"], FINALS_JOKER, bidder=1)
    assert play_trick(game, "AH", "2H", "3H", "JO")["points"] == [2, 16]


@pytest.mark.parametrize("name", ["inverness"])
def test_inverness_three_is_worth_fifteen_and_there_is_no_joker(name: str) -> None:
    game = start(RULESETS[name], FINALS_PLAIN, bidder=1)
    assert play_trick(game, "AH", "2H", "3H", "6H")["points"] == [1, 16]  # AH 1 + 3H 15
    end = play_hand_a_rest(game)
    assert end["points"] == [47, 16] and sum(end["points"]) == 63


def play_hand_a_rest(game: Game) -> dict[str, Any]:
    play_trick(game, "4H", "KH", "QH")
    while game.hand_number == 1 and not game.is_over:
        game.apply(game.legal().first(), seat=game.to_act)
    return events_of(game, "hand_end", 1)[0]


def test_rules_site_two_goes_to_the_trick_and_a_failed_contract_loses_the_bid() -> None:
    finals = [
        "8S AC KC QC JC TC",
        "AS KS QS JS TS 9S",
        "AH KH JH TH 9H 5H 5D 3H",
        "2H AD KD QD JD TD",
    ]
    game = draw4_position(SITE, Suit.H, finals, bidder=1, contract=30)
    trick = play_trick(game, "AS", "AH", "2H", "8S")
    assert trick["winner"] == 2 and trick["points"] == [2, 0]
    while game.hand_number == 1:
        game.apply(game.legal().first(), seat=game.to_act)
    end = events_of(game, "hand_end", 1)[0]
    assert sum(end["points"]) == 63
    assert end["made"] is False and end["contract"] == 30
    assert end["scores"] == [end["points"][0], -30]


def test_rules_site_with_the_players_two_rule_differs() -> None:
    finals = [
        "8S AC KC QC JC TC",
        "AS KS QS JS TS 9S",
        "AH KH JH TH 9H 5H 5D 3H",
        "2H AD KD QD JD TD",
    ]
    rs = custom(SITE, two_scores_for=TwoScoresFor.PLAYER)
    game = draw4_position(rs, Suit.H, finals, bidder=1)
    assert play_trick(game, "AS", "AH", "2H", "8S")["points"] == [1, 1]


# ------------------------------------------------------------------------------ game end


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("standard", 250),
        ("wiki-2010", 250),
        ("inverness", 250),
        ("queens-county", 225),
        ("rules-site", 152),
    ],
)
def test_target_per_ruleset(name: str, target: int) -> None:
    assert RULESETS[name].target == target
    assert RULESETS[name].max_hands == 100


def test_game_goes_on_below_the_target() -> None:
    game = start(STANDARD, FINALS_JOKER, bidder=1)
    play_hand_a(game, "JO")
    assert not game.is_over and game.hand_number == 2
    assert game.dealer == 1  # the deal passes clockwise
    assert game.to_act == 2 and game.phase is Phase.AUCTION


def test_team_reaching_the_target_wins() -> None:
    game = start(custom(target=47), FINALS_JOKER, bidder=1)
    play_hand_a(game, "JO")
    assert game.is_over and game.phase is Phase.GAME_OVER
    assert game.events[-1] == {
        "event": "game_end",
        "scores": [47, -40],
        "winner": 0,
        "reason": "target",
    }
    assert (game.winner, game.end_reason, game.to_act) == (0, "target", None)


@pytest.mark.parametrize(
    ("target", "winner"),
    [(16, 1), (17, 0), (47, 0), (48, None)],
)
def test_both_teams_past_the_target_the_bidders_team_wins(target: int, winner: int | None) -> None:
    game = start(custom(min_bid=1, target=target), FINALS_JOKER, bidder=1, contract=16)
    play_hand_a(game, "JO")  # scores [47, 16]: the bidder's team 1 made its contract
    if winner is None:
        assert not game.is_over
    else:
        assert game.events[-1]["winner"] == winner and game.events[-1]["reason"] == "target"


def test_max_hands_ends_with_a_draw_on_equal_scores() -> None:
    rs = custom(min_bid=1, max_hands=2)
    # hand 2: the same cards moved one seat on: dealer 1, bidder 2, so the teams swap roles
    game = start(rs, FINALS_JOKER, bidder=1, contract=16, later=[rotate(FINALS_JOKER, 1)])
    play_hand_a(game, "JO")
    assert game.scores == [47, 16] and game.hand_number == 2
    _deal2, decisions2 = refill_deal_for(rs, Suit.H, rotate(FINALS_JOKER, 1), dealer=1)
    run(game, *auction_for(rs, 2, dealer=1, contract=16), "trump H", *decisions2)
    play_hand_a(game, "JO")
    assert game.scores == [63, 63]
    assert game.events[-1] == {
        "event": "game_end",
        "scores": [63, 63],
        "winner": None,
        "reason": "max_hands",
    }


def test_max_hands_higher_score_wins() -> None:
    game = start(custom(max_hands=1), FINALS_JOKER, bidder=1)
    play_hand_a(game, "JO")
    assert game.events[-1] == {
        "event": "game_end",
        "scores": [47, -40],
        "winner": 0,
        "reason": "max_hands",
    }


def test_target_beats_max_hands_in_the_last_hand() -> None:
    game = start(custom(max_hands=1, min_bid=1, target=16), FINALS_JOKER, bidder=1, contract=16)
    play_hand_a(game, "JO")
    assert game.events[-1]["reason"] == "target" and game.events[-1]["winner"] == 1


def test_forfeit_ends_the_game_for_the_other_team() -> None:
    game = start(STANDARD, FINALS_JOKER, bidder=1)
    game.forfeit(3)
    end = game.events[-1]
    assert end["event"] == "game_end" and end["winner"] == 0
    assert end["reason"] == "forfeit" and end["forfeit_seat"] == 3
    assert game.is_over
