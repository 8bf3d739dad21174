"""The re-deal (RULES.md §3.4 refill, wiki-2010's variant, rules-site's draw4), step by step."""

from __future__ import annotations

import pytest

from arena.actions import ActionKind
from arena.errors import IllegalAction
from arena.game import Game
from arena.legal import Phase
from arena.observation import observe
from arena.rulesets import RULESETS, STANDARD, Ruleset

from .builders import (
    auction_for,
    card_set,
    cards,
    check_census,
    events_of,
    fixed_game,
    hand,
    legal_texts,
    run,
    sorted_text,
)

WIKI = RULESETS["wiki-2010"]
SITE = RULESETS["rules-site"]

# Standard, dealer 0, trump H. Seat 1 holds eight trumps, two of them spare beyond six.
OVERFLOW_DEAL = (
    ["5H 2H JO", "AH KH QH 8H 7H 6H 4H 3H", "JH", "TH 9H"],
    "AD KD QD JD TD 9D 8D 7D 6D",
)


def at_redeal(
    hands: list[str],
    stock_top: str = "",
    ruleset: Ruleset = STANDARD,
    bidder: int = 1,
    trump: str = "H",
    dealer: int = 0,
) -> Game:
    game = fixed_game(ruleset, hands, stock_top, dealer=dealer)
    return run(game, *auction_for(ruleset, bidder, dealer), f"trump {trump}")


def texts(game: Game, kind: str, seat: int) -> list[str]:
    return [" ".join(e["cards"]) for e in events_of(game, kind, 1) if e["seat"] == seat]


def dealt(game: Game, seat: int) -> list[str]:
    return events_of(game, "deal", game.hand_number)[0]["hands"][seat]


def test_non_dealers_discard_all_dirt_automatically() -> None:
    game = at_redeal(*OVERFLOW_DEAL)
    table = game.table
    assert table is not None
    for seat in (1, 2, 3):
        dirt = [c for c in cards(" ".join(dealt(game, seat))) if not table.is_trump[c]]
        assert texts(game, "discard", seat) == [sorted_text(dirt)]
        assert sorted(game.discards[seat]) == sorted(dirt)
    assert texts(game, "discard", 0) == []  # the dealer discards only in its pick
    assert game.discard_counts[1:] == [1, 8, 7]
    check_census(game)


def test_overflow_offers_up_to_trumps_minus_six_non_point_trumps() -> None:
    game = at_redeal(*OVERFLOW_DEAL)
    legal = game.legal()
    assert (game.phase, game.to_act) == (Phase.GIVE, 1)
    assert legal.choice is not None
    assert sorted_text(legal.choice.cards) == "QH 8H 7H 6H 4H 3H"  # A, K are point trumps
    assert (legal.choice.min_count, legal.choice.max_count) == (0, 2)
    assert legal_texts(game)[0] == "give"
    assert len(legal_texts(game)) == 1 + 6 + 15


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("give AH", "may not be chosen"),
        ("give KH 8H", "may not be chosen"),
        ("give 8H 7H 6H", "3 cards chosen"),
        ("give 9S", "may not be chosen"),
        ("keep 8H", "give"),
        ("play 8H", "give"),
    ],
)
def test_overflow_refuses_point_trumps_and_too_many(action: str, reason: str) -> None:
    game = at_redeal(*OVERFLOW_DEAL)
    with pytest.raises(IllegalAction) as exc:
        game.apply(action, seat=1)
    assert reason in str(exc.value)
    assert game.phase is Phase.GIVE and game.to_act == 1


def test_overflow_give_goes_face_up_to_partner_before_refill() -> None:
    game = at_redeal(*OVERFLOW_DEAL)
    game.apply("give 8H 3H", seat=1)
    assert hand(game, 1) == "AH KH QH 7H 6H 4H"
    # seat 3 received two trumps, so it held four and drew only two
    assert texts(game, "draw", 2) == ["AD KD QD JD TD"]
    assert texts(game, "draw", 3) == ["9D 8D"]
    assert card_set("TH 9H 8H 3H 9D 8D") == set(game.hands[3])
    assert game.given == [(1, 3, tuple(cards("8H 3H")))]
    gives = events_of(game, "give", 1)
    assert gives == [{"event": "give", "hand": 1, "seat": 1, "to": 3, "cards": ["8H", "3H"]}]
    for seat in range(4):  # public: every seat sees what was given
        assert observe(game, seat).given == ((1, 3, tuple(cards("8H 3H"))),)
    check_census(game)


def test_overflow_give_of_nothing_keeps_eight_cards() -> None:
    game = at_redeal(*OVERFLOW_DEAL)
    game.apply("give", seat=1)
    assert len(game.hands[1]) == 8
    assert texts(game, "draw", 1) == []
    assert events_of(game, "give", 1) == [] and game.given == []


def test_overflow_max_is_limited_by_spare_non_point_trumps() -> None:
    # seven trumps but only one without points: at most one can be given
    game = at_redeal(["5H 2H JO", "AH KH JH TH 9H 5D 4H", "QH", "8H"], "")
    legal = game.legal()
    assert legal.phase is Phase.GIVE and legal.choice is not None
    assert sorted_text(legal.choice.cards) == "4H"
    assert legal.choice.max_count == 1
    assert legal_texts(game) == ["give", "give 4H"]


def test_six_trumps_are_no_overflow() -> None:
    game = at_redeal(["5H 2H JO 3H", "AH KH QH 8H 7H 6H", "JH", "TH 9H"], "")
    assert not any(e["seat"] == 1 for e in events_of(game, "action", 1)[5:])
    assert not (game.phase is Phase.GIVE and game.to_act == 1)
    assert hand(game, 1) == "AH KH QH 8H 7H 6H"


@pytest.mark.parametrize(
    ("name", "spare"),
    [
        ("standard", "QH 8H 7H 6H 4H 3H"),
        ("queens-county", "TH QH 8H 7H 6H 4H 3H"),  # the ten scores nothing there
        ("inverness", "QH 8H 7H 6H 4H"),  # the three scores 15 there
    ],
)
def test_which_trumps_may_be_given_depends_on_the_ruleset(name: str, spare: str) -> None:
    game = at_redeal(["5H 2H", "AH KH QH TH 8H 7H 6H 4H 3H", "JH", "9H"], "", RULESETS[name])
    legal = game.legal()
    assert legal.phase is Phase.GIVE and legal.choice is not None
    assert sorted_text(legal.choice.cards) == sorted_text(cards(spare))
    assert legal.choice.max_count == 3


@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_refill_draws_from_the_top_clockwise_from_dealers_left(dealer: int) -> None:
    order = [(dealer + k) % 4 for k in (1, 2, 3)]
    hands = ["", "", "", ""]
    hands[order[0]] = "AH KH QH"  # draws 3
    hands[order[1]] = "JH"  # draws 5
    hands[order[2]] = "TH 9H 8H 7H"  # draws 2
    hands[dealer] = "6H 5H 4H 3H 2H JO"
    game = at_redeal(hands, "AD KD QD JD TD 9D 8D 7D 6D 4D", dealer=dealer, bidder=order[0])
    draws = [(e["seat"], " ".join(e["cards"])) for e in events_of(game, "draw", 1)]
    assert draws[:3] == [
        (order[0], "AD KD QD"),
        (order[1], "JD TD 9D 8D 7D"),
        (order[2], "6D 4D"),
    ]
    assert draws[3][0] == dealer  # the dealer's pick takes the rest of the stock
    assert [len(game.hands[s]) for s in order] == [6, 6, 6]
    assert game.stock == []


def test_stock_running_out_leaves_the_last_player_short() -> None:
    # the three non-dealers hold no trumps: they need 18 cards and the stock has 17
    game = at_redeal(
        ["AH KH QH JH TH 9H 8H 7H 6H", "AS KS", "QS JS", "TS 9S"],
        "AD KD QD JD TD 9D 8D 7D 6D 5D 3D 2D 5H 4H 3H 2H JO",
        bidder=0,
    )
    assert game.draw_counts == [0, 6, 6, 5]
    assert texts(game, "draw", 2) == ["8D 7D 6D 5D 3D 2D"]
    assert texts(game, "draw", 3) == ["5H 4H 3H 2H JO"]
    assert game.draw_counts[0] == 0  # nothing left for the dealer's pool
    assert game.stock == []
    # the dealer's pool is its own nine trumps: more than six, so it may give
    assert (game.phase, game.to_act) == (Phase.GIVE, 0)
    game.apply("give", seat=0)
    assert game.phase is Phase.PLAY
    assert len(game.hands[3]) == 5  # plays on with fewer cards
    assert game.out == [False, True, False, False]
    check_census(game)


def test_dealers_pick_keeps_every_trump_and_chooses_dirt_to_six() -> None:
    game = at_redeal(
        ["2H AS", "AH KH QH JH TH 9H", "8H 7H 6H 5H 4H 3H", "5D JO"],
        "AD KD QD JD",
        bidder=1,
    )
    assert texts(game, "draw", 3) == ["AD KD QD JD"]
    pool = list(game.hands[0])
    assert len(pool) == 9 + 13  # nine dealt and the thirteen left in the stock
    assert (game.phase, game.to_act) == (Phase.KEEP, 0)
    legal = game.legal()
    assert legal.choice is not None and legal.choice.kind is ActionKind.KEEP
    assert (legal.choice.min_count, legal.choice.max_count) == (5, 5)  # one trump: five dirt
    dirt = [c for c in pool if str(c) != "2H"]
    assert set(legal.choice.cards) == set(dirt)
    assert "AS" in map(str, dirt)
    for bad in (dirt[:4], dirt[:6], cards("2H") + dirt[:4], cards("2H") + dirt[:5]):
        with pytest.raises(IllegalAction):
            game.apply(f"keep {sorted_text(bad)}", seat=0)
    assert game.phase is Phase.KEEP
    chosen = dirt[-5:]
    game.apply(f"keep {' '.join(str(c) for c in reversed(chosen))}", seat=0)
    assert set(game.hands[0]) == set(chosen) | set(cards("2H"))
    assert sorted(game.discards[0]) == sorted(dirt[:-5])
    assert game.phase is Phase.PLAY
    check_census(game)


def test_dealers_pick_is_automatic_with_six_or_more_trumps() -> None:
    game = at_redeal(["6H 5H 4H 3H 2H JO AS", "AH KH", "QH JH", "TH 9H 8H 7H 5D"], "")
    assert game.phase is Phase.PLAY  # exactly six trumps: nothing to decide
    assert hand(game, 0) == "6H 5H 4H 3H 2H JO"
    assert "AS" in texts(game, "discard", 0)[0].split()
    assert not any(e["action"].startswith("keep") for e in events_of(game, "action", 1))


def test_dealers_pool_includes_trumps_given_by_partner() -> None:
    # seat 2 holds eight trumps and gives two spare ones to the dealer
    game = at_redeal(["5H 2H", "AH KH", "QH 8H 7H 6H 4H 3H 9H TH", "JH 5D JO"], "", bidder=2)
    assert (game.phase, game.to_act) == (Phase.GIVE, 2)
    game.apply("give 8H 7H", seat=2)
    # the dealer's pool: 5H 2H + 8H 7H given: four trumps, so it keeps two dirt
    assert (game.phase, game.to_act) == (Phase.KEEP, 0)
    assert game.legal().choice.min_count == 2  # type: ignore[union-attr]
    dirt = [c for c in game.hands[0] if not game.table.is_trump[c]][:2]  # type: ignore[union-attr]
    game.apply(f"keep {sorted_text(dirt)}", seat=0)
    assert card_set("5H 2H 8H 7H") <= set(game.hands[0]) and len(game.hands[0]) == 6


def test_dealer_gives_after_the_pick() -> None:
    game = at_redeal(["AH KH QH JH 8H 7H 6H 4H 3H", "TH", "9H 5H", "5D 2H JO"], "", bidder=0)
    assert (game.phase, game.to_act) == (Phase.GIVE, 0)  # step 5
    legal = game.legal()
    assert legal.choice is not None
    assert sorted_text(legal.choice.cards) == "QH 8H 7H 6H 4H 3H"
    assert legal.choice.max_count == 3
    game.apply("give 4H 3H", seat=0)
    assert card_set("4H 3H") <= set(game.hands[2])
    assert len(game.hands[0]) == 7 and game.phase is Phase.PLAY
    assert game.given == [(0, 2, tuple(cards("4H 3H")))]


def test_wiki_2010_all_four_discard_give_and_refill_with_the_dealer_last() -> None:
    game = at_redeal(
        ["AH KH QH JH TH 9H 8H", "7H", "6H 5H", "4H 3H"],
        "AD KD QD JD TD 9D 8D 7D 6D 4D 3D 2D AC KC",
        ruleset=WIKI,
        bidder=1,
    )
    discards = [e["seat"] for e in events_of(game, "discard", 1)]
    assert discards == [1, 2, 3, 0]  # the dealer discards its dirt too, last
    assert (game.phase, game.to_act) == (Phase.GIVE, 0)  # seven trumps: the dealer may give
    assert legal_texts(game) == ["give", "give QH", "give 8H"]
    game.apply("give 8H", seat=0)
    assert game.given == [(0, 2, tuple(cards("8H")))]
    draws = [(e["seat"], " ".join(e["cards"])) for e in events_of(game, "draw", 1)]
    assert draws == [
        (1, "AD KD QD JD TD"),
        (2, "9D 8D 7D"),  # three trumps after the dealer's gift
        (3, "6D 4D 3D 2D"),
    ]  # the dealer holds six: it draws nothing
    assert game.phase is Phase.PLAY
    assert len(game.dead) == 17 - 12 and game.stock == []
    assert card_set("AC KC") <= set(game.dead)
    assert events_of(game, "dead", 1)[0]["cards"] == sorted_text(game.dead).split()
    assert not any(e["action"].startswith("keep") for e in events_of(game, "action", 1))
    check_census(game)


def test_wiki_2010_dealer_refills_last_and_the_rest_is_dead() -> None:
    game = at_redeal(
        ["AH KH QH", "JH TH", "9H 8H", "7H 6H"],
        "AD KD QD JD 5H 4H 3H 2H JO 5D TD 9D 8D 7D 6D 4D 3D",
        ruleset=WIKI,
        bidder=1,
    )
    draws = [(e["seat"], " ".join(e["cards"])) for e in events_of(game, "draw", 1)]
    assert draws == [
        (1, "AD KD QD JD"),
        (2, "5H 4H 3H 2H"),
        (3, "TD 9D 5D JO"),
        (0, "8D 7D 6D"),
    ]
    assert sorted_text(game.dead) == "4D 3D"
    assert game.phase is Phase.PLAY and game.stock == []
    check_census(game)


def test_wiki_2010_dead_trumps_score_for_nobody() -> None:
    # KH (25) and 9H (9) stay in the dead stock
    game = at_redeal(
        ["AH QH JH TH 8H 7H", "6H 5H 4H", "3H 2H JO", "5D"],
        "AD KD QD JD TD 9D 8D 7D 6D 4D 3D 2D KH 9H",
        ruleset=WIKI,
        bidder=1,
    )
    assert card_set("KH 9H") <= set(game.dead)
    while game.hand_number == 1:
        game.apply(game.legal().first(), seat=game.to_act)
    end = events_of(game, "hand_end", 1)[0]
    assert sum(end["points"]) == 63 - 25 - 9


def test_draw4_deals_four_more_clockwise_and_uses_the_whole_pack() -> None:
    game = at_redeal(
        ["AH KH", "QH JH", "TH 9H", "8H 7H"],
        "AD KD QD JD TD 9D 8D 7D 6D 4D 3D 2D AC KC QC JC",
        ruleset=SITE,
        bidder=1,
    )
    draws = [(e["seat"], " ".join(e["cards"])) for e in events_of(game, "draw", 1)]
    assert draws == [
        (1, "AD KD QD JD"),
        (2, "TD 9D 8D 7D"),
        (3, "6D 4D 3D 2D"),
        (0, "AC KC QC JC"),
    ]
    assert game.stock == []
    assert all(len(h) == 13 for h in game.hands)
    assert texts(game, "discard", 1) == []  # nobody discards dirt automatically
    assert (game.phase, game.to_act) == (Phase.KEEP, 1)


def test_draw4_keep_six_with_point_trumps_required() -> None:
    game = at_redeal(["AH KH 3H 2H", "QH JH 5D", "TH 9H", "8H 7H 5H"], "", ruleset=SITE, bidder=1)
    order = [1, 2, 3, 0]
    for seat in order:
        assert (game.phase, game.to_act) == (Phase.KEEP, seat)
        legal = game.legal()
        assert legal.choice is not None
        points = {c for c in game.hands[seat] if game.table.points[c]}  # type: ignore[union-attr]
        assert set(legal.choice.required) == points
        assert legal.choice.min_count == legal.choice.max_count == 6
        optional = [c for c in game.hands[seat] if c not in points]
        if points:
            with pytest.raises(IllegalAction) as exc:
                game.apply(f"keep {sorted_text(optional[:6])}", seat=seat)
            assert "point trumps must be kept" in str(exc.value)
        with pytest.raises(IllegalAction):
            game.apply(f"keep {sorted_text(list(points) + optional[: 5 - len(points)])}", seat=seat)
        kept = list(points) + optional[: 6 - len(points)]
        game.apply(f"keep {sorted_text(kept)}", seat=seat)
        assert set(game.hands[seat]) == set(kept)
        assert len(game.discards[seat]) == 7
    assert game.phase is Phase.PLAY
    check_census(game)


def test_draw4_more_than_six_point_trumps_are_all_kept() -> None:
    game = at_redeal(["", "AH KH JH TH 9H 5H 5D 3H", "2H", ""], "", ruleset=SITE, bidder=1)
    legal = game.legal()
    assert game.to_act == 1 and legal.choice is not None
    assert legal.choice.min_count == legal.choice.max_count == 8
    assert legal_texts(game) == ["keep AH KH JH TH 9H 5H 3H 5D"]
    game.apply("keep 5D 3H 5H 9H TH JH KH AH", seat=1)
    assert len(game.hands[1]) == 8


def test_redeal_decision_refused_for_the_wrong_phase_kind() -> None:
    game = at_redeal(*OVERFLOW_DEAL)
    with pytest.raises(IllegalAction) as exc:
        game.apply("keep 8H", seat=1)
    assert "give" in str(exc.value)
