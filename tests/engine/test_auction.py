"""The auction (RULES.md §3.2), table-driven: who acts, what is legal, how it ends."""

from __future__ import annotations

import pytest

from arena.errors import IllegalAction
from arena.game import Game
from arena.legal import Phase
from arena.rulesets import RULESETS, STANDARD, Ruleset

from .builders import legal_texts, run

WIKI = RULESETS["wiki-2010"]
SITE = RULESETS["rules-site"]


def new_game(ruleset: Ruleset = STANDARD, dealer: int = 0) -> Game:
    return Game(ruleset, seed=7, first_dealer=dealer)


def bids(lo: int, hi: int = 63) -> list[str]:
    return [f"bid {n}" for n in range(lo, hi + 1)]


# (ruleset, dealer, actions, expected next seat to act in the auction)
TURN_CASES = [
    pytest.param(STANDARD, 0, [], 1, id="starts-left-of-dealer-0"),
    pytest.param(STANDARD, 3, [], 0, id="starts-left-of-dealer-3-wraps"),
    pytest.param(STANDARD, 0, ["bid 40"], 2, id="clockwise"),
    pytest.param(STANDARD, 0, ["pass", "bid 40", "bid 45", "bid 50"], 2, id="passed-seat-skipped"),
    pytest.param(
        STANDARD, 0, ["bid 40", "pass", "bid 45", "bid 46", "bid 47"], 3, id="passes-stay-final"
    ),
    pytest.param(STANDARD, 2, ["pass", "pass", "bid 41"], 2, id="dealer-2-order-3-0-1-2"),
]


@pytest.mark.parametrize(("ruleset", "dealer", "actions", "seat"), TURN_CASES)
def test_auction_turn_order(ruleset: Ruleset, dealer: int, actions: list[str], seat: int) -> None:
    game = run(new_game(ruleset, dealer), *actions)
    assert game.phase is Phase.AUCTION
    assert game.to_act == seat
    assert game.legal().seat == seat


# (ruleset, actions so far, legal actions now)
LEGAL_CASES = [
    pytest.param(STANDARD, [], ["pass", *bids(40)], id="min-bid-40"),
    pytest.param(STANDARD, ["bid 40"], ["pass", *bids(41)], id="must-raise"),
    pytest.param(STANDARD, ["bid 57"], ["pass", *bids(58)], id="after-jump"),
    pytest.param(STANDARD, ["pass", "pass"], ["pass", *bids(40)], id="third-may-pass"),
    pytest.param(STANDARD, ["pass", "pass", "pass"], ["bid 25", *bids(40)], id="dealer-forced"),
    pytest.param(STANDARD, ["pass", "pass", "bid 40"], ["pass", *bids(41)], id="dealer-not-forced"),
    pytest.param(STANDARD, ["bid 62"], ["pass", "bid 63"], id="only-63-left"),
    pytest.param(WIKI, [], ["pass", *bids(25)], id="wiki-min-25"),
    pytest.param(WIKI, ["pass", "pass", "pass"], bids(25), id="wiki-dealer-forced-default-is-min"),
    pytest.param(SITE, [], ["pass", *bids(1)], id="site-min-1"),
    pytest.param(SITE, ["pass", "pass", "pass"], bids(1), id="site-dealer-no-default"),
    pytest.param(RULESETS["inverness"], [], ["pass", *bids(40)], id="inverness-min-40"),
    pytest.param(
        RULESETS["queens-county"], ["pass"] * 3, ["bid 25", *bids(40)], id="queens-dealer-default"
    ),
]


@pytest.mark.parametrize(("ruleset", "actions", "legal"), LEGAL_CASES)
def test_auction_legal_actions(ruleset: Ruleset, actions: list[str], legal: list[str]) -> None:
    game = run(new_game(ruleset), *actions)
    assert game.phase is Phase.AUCTION
    assert legal_texts(game) == legal


# (ruleset, actions, illegal action now, words the reason must contain)
ILLEGAL_CASES = [
    pytest.param(STANDARD, [], "bid 39", "at least 40", id="below-min"),
    pytest.param(STANDARD, [], "bid 25", "at least 40", id="default-only-for-forced-dealer"),
    pytest.param(STANDARD, ["bid 45"], "bid 45", "higher than", id="equal-bid"),
    pytest.param(STANDARD, ["bid 45"], "bid 44", "higher than", id="lower-bid"),
    pytest.param(STANDARD, ["pass", "pass", "bid 40"], "bid 25", "", id="default-after-a-bid"),
    pytest.param(STANDARD, ["pass", "pass", "pass"], "pass", "must take", id="forced-dealer-pass"),
    pytest.param(
        STANDARD, ["pass", "pass", "pass"], "bid 39", "at least 40", id="forced-below-min"
    ),
    pytest.param(STANDARD, [], "trump H", "auction", id="wrong-kind"),
    pytest.param(STANDARD, [], "play AS", "auction", id="play-in-auction"),
    pytest.param(WIKI, [], "bid 24", "at least 25", id="wiki-below-min"),
    pytest.param(SITE, ["pass", "pass", "pass"], "pass", "must", id="site-forced-dealer-pass"),
    pytest.param(SITE, ["bid 1"], "bid 1", "higher", id="site-raise"),
]


@pytest.mark.parametrize(("ruleset", "actions", "bad", "reason"), ILLEGAL_CASES)
def test_auction_illegal_actions(
    ruleset: Ruleset, actions: list[str], bad: str, reason: str
) -> None:
    game = run(new_game(ruleset), *actions)
    before = (game.to_act, list(game.events))
    with pytest.raises(IllegalAction) as exc:
        game.apply(bad, seat=game.to_act)
    assert repr(bad) in str(exc.value) and reason in str(exc.value)
    assert (game.to_act, game.events) == before  # a refused action changes nothing


# (ruleset, dealer, actions, bidder, contract): the auction is over after the last action
END_CASES = [
    pytest.param(STANDARD, 0, ["bid 40", "pass", "pass", "pass"], 1, 40, id="all-others-passed"),
    pytest.param(STANDARD, 0, ["pass", "pass", "pass", "bid 25"], 0, 25, id="dealer-takes-default"),
    pytest.param(STANDARD, 0, ["pass", "pass", "pass", "bid 52"], 0, 52, id="dealer-bids-higher"),
    pytest.param(STANDARD, 0, ["bid 63"], 1, 63, id="63-ends-at-once"),
    pytest.param(STANDARD, 0, ["bid 40", "bid 50", "bid 63"], 3, 63, id="63-ends-with-others-live"),
    pytest.param(STANDARD, 0, ["pass", "pass", "bid 40", "bid 63"], 0, 63, id="dealer-bids-63"),
    pytest.param(
        STANDARD,
        0,
        ["bid 40", "pass", "bid 41", "pass", "bid 42", "pass"],
        1,
        42,
        id="partners-1-and-3-outbid-each-other",
    ),
    pytest.param(
        STANDARD,
        0,
        [
            "bid 40",
            "bid 41",
            "bid 42",
            "bid 43",
            "bid 44",
            "bid 45",
            "bid 46",
            "bid 47",
            "pass",
            "pass",
            "pass",
        ],
        0,
        47,
        id="bidding-war-goes-round",
    ),
    pytest.param(STANDARD, 1, ["pass", "bid 44", "pass", "pass"], 3, 44, id="dealer-1"),
    pytest.param(WIKI, 0, ["pass", "pass", "pass", "bid 25"], 0, 25, id="wiki-dealer"),
    pytest.param(WIKI, 0, ["bid 25", "pass", "pass", "pass"], 1, 25, id="wiki-open-25"),
    pytest.param(SITE, 0, ["pass", "pass", "pass", "bid 1"], 0, 1, id="site-dealer-bids-1"),
    pytest.param(SITE, 0, ["bid 1", "bid 2", "pass", "pass", "pass"], 2, 2, id="site-low-bids"),
]


@pytest.mark.parametrize(("ruleset", "dealer", "actions", "bidder", "contract"), END_CASES)
def test_auction_ends_with_bidder_and_contract(
    ruleset: Ruleset, dealer: int, actions: list[str], bidder: int, contract: int
) -> None:
    game = new_game(ruleset, dealer)
    run(game, *actions[:-1])
    assert game.phase is Phase.AUCTION
    run(game, actions[-1])
    assert game.phase is Phase.TRUMP
    assert (game.bidder, game.contract, game.to_act) == (bidder, contract, bidder)
    assert legal_texts(game) == ["trump S", "trump H", "trump D", "trump C"]


def test_partner_may_outbid_partner() -> None:
    game = run(new_game(), "bid 40", "pass", "bid 45")  # seat 3 outbids partner seat 1
    assert (game.bidder, game.high_bid, game.to_act) == (3, 45, 0)
    run(game, "pass")
    assert game.to_act == 1  # seat 2 has passed and is skipped
    run(game, "bid 50")
    assert game.to_act == 3


def test_high_bidder_is_asked_again_until_everyone_else_passes() -> None:
    game = run(new_game(), "bid 40", "bid 41", "pass", "pass")
    assert game.phase is Phase.AUCTION and game.to_act == 1
    assert legal_texts(game) == ["pass", *bids(42)]
    run(game, "pass")
    assert (game.phase, game.bidder, game.contract) == (Phase.TRUMP, 2, 41)


def test_dealer_default_is_not_offered_when_it_is_not_below_the_minimum() -> None:
    game = run(new_game(WIKI), "pass", "pass", "pass")
    assert legal_texts(game).count("bid 25") == 1


@pytest.mark.parametrize("suit", ["S", "H", "D", "C"])
def test_bidder_names_any_suit(suit: str) -> None:
    game = run(new_game(), "bid 40", "pass", "pass", "pass", f"trump {suit}")
    assert str(game.trump) == suit
    assert game.phase is not Phase.TRUMP


def test_only_the_bidder_names_trump() -> None:
    from arena.errors import NotYourTurn

    game = run(new_game(), "bid 40", "pass", "pass", "pass")
    with pytest.raises(NotYourTurn):
        game.apply("trump H", seat=2)
    with pytest.raises(IllegalAction):
        game.apply("bid 41", seat=1)
