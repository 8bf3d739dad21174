"""The five named rulesets (RULES.md §6): each differs from standard in exactly what §6 lists."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from typing import Any

import pytest

from arena.cards import deck
from arena.errors import ArenaError, BadRuleset, UnknownRuleset
from arena.game import Game, seeded_deal
from arena.rulesets import (
    RULESETS,
    STANDARD,
    STANDARD_POINTS,
    DirtFollow,
    Redeal,
    Ruleset,
    TwoScoresFor,
    get_ruleset,
    ruleset_from_header,
)

from .builders import cards


def effective(rs: Ruleset) -> dict[str, Any]:
    params = rs.parameters()
    params["points"] = {k: v for k, v in params["points"].items() if v and (k != "JO" or rs.joker)}
    del params["name"]
    return params


# ruleset -> exactly the parameters RULES.md §6 says differ from standard
DIFFERENCES: dict[str, dict[str, Any]] = {
    "standard": {},
    "wiki-2010": {"min_bid": 25, "dealer_picks": False},
    "inverness": {
        "joker": False,
        "points": {"A": 1, "K": 25, "J": 1, "T": 1, "9": 9, "5": 5, "O": 5, "3": 15, "2": 1},
    },
    "queens-county": {
        "points": {"A": 1, "K": 25, "J": 1, "9": 9, "5": 5, "O": 5, "2": 2, "JO": 15},
        "target": 225,
    },
    "rules-site": {
        "joker": False,
        "points": {"A": 1, "K": 25, "J": 1, "T": 1, "9": 9, "5": 5, "O": 5, "3": 15, "2": 1},
        "target": 152,
        "min_bid": 1,
        "dealer_default": None,
        "redeal": "draw4",
        "out_of_trumps": False,
        "first_lead_trump": False,
        "dirt_follow": "suit",
        "two_scores_for": "trick",
    },
}


def test_there_are_exactly_five_named_rulesets() -> None:
    assert sorted(RULESETS) == sorted(DIFFERENCES)
    for name, rs in RULESETS.items():
        assert rs.name == name and get_ruleset(name) is rs


def test_standard_parameters() -> None:
    p = effective(STANDARD)
    assert p == {
        "joker": True,
        "min_bid": 40,
        "dealer_default": 25,
        "points": {"A": 1, "K": 25, "J": 1, "T": 1, "9": 9, "5": 5, "O": 5, "2": 1, "JO": 15},
        "target": 250,
        "max_hands": 100,
        "redeal": "refill",
        "dealer_picks": True,
        "out_of_trumps": True,
        "first_lead_trump": True,
        "dirt_follow": "any",
        "two_scores_for": "player",
    }


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_ruleset_differs_from_standard_only_where_rules_say(name: str) -> None:
    base, rs = effective(STANDARD), effective(RULESETS[name])
    differing = {k: rs[k] for k in rs if rs[k] != base[k]}
    assert differing == DIFFERENCES[name]


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_points_add_up_to_63(name: str) -> None:
    rs = RULESETS[name]
    assert sum(effective(rs)["points"].values()) == 63


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_parameters_round_trip_through_a_record_header(name: str) -> None:
    rs = RULESETS[name]
    assert ruleset_from_header(name) is rs
    again = ruleset_from_header(rs.parameters())
    assert again == rs and hash(again) == hash(rs)
    custom = dataclasses.replace(rs, max_hands=3, target=77)
    assert ruleset_from_header(custom.parameters()) == custom


def test_rulesets_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        STANDARD.min_bid = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        STANDARD.points["K"] = 30  # type: ignore[index]


@pytest.mark.parametrize("name", ["", "Standard", "wiki", "nope", "rules_site"])
def test_unknown_ruleset_names_the_name(name: str) -> None:
    with pytest.raises(UnknownRuleset) as exc:
        get_ruleset(name)
    assert repr(name) in str(exc.value)
    assert isinstance(exc.value, ArenaError)


@pytest.mark.parametrize(
    "changes",
    [
        {"points": {"K": 62}},
        {"points": {"K": 63, "Z": 0}},
        {"min_bid": 0},
        {"min_bid": 64},
        {"dealer_default": 0},
        {"target": 0},
        {"max_hands": 0},
        {"redeal": "shuffle"},
        {"dirt_follow": "colour"},
        {"two_scores_for": "nobody"},
        {"redeal": Redeal.DRAW4, "dealer_picks": False},
        {"name": 5},
    ],
)
def test_bad_custom_rulesets_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(BadRuleset):
        dataclasses.replace(STANDARD, **changes)


def test_unknown_parameter_in_a_header_is_refused() -> None:
    with pytest.raises(BadRuleset):
        ruleset_from_header({**STANDARD.parameters(), "jokers": 2})


def test_enum_parameters_accept_their_text() -> None:
    text: dict[str, Any] = {"redeal": "draw4", "dirt_follow": "suit", "two_scores_for": "trick"}
    rs = dataclasses.replace(STANDARD, **text)
    assert (rs.redeal, rs.dirt_follow, rs.two_scores_for) == (
        Redeal.DRAW4,
        DirtFollow.SUIT,
        TwoScoresFor.TRICK,
    )


@pytest.mark.parametrize("name", sorted(RULESETS))
@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_deal_nine_each_three_at_a_time_from_dealers_left(name: str, dealer: int) -> None:
    rs = RULESETS[name]
    hands, stock = seeded_deal(rs, "deal-test", 1, dealer)
    pack = deck(rs.joker)
    shuffled = list(pack)
    random.Random("sixty-three/deal-test/1").shuffle(shuffled)
    assert sorted([c for h in hands for c in h] + stock) == sorted(pack)
    assert [len(h) for h in hands] == [9, 9, 9, 9]
    assert len(stock) == (17 if rs.joker else 16)
    for k in range(1, 5):  # the k-th player from the dealer's left gets packets k, k+4, k+8
        seat = (dealer + k) % 4
        packets = [shuffled[3 * (k - 1 + 4 * r) : 3 * (k - 1 + 4 * r) + 3] for r in range(3)]
        assert hands[seat] == [c for p in packets for c in p]
    assert stock == shuffled[36:]


def test_deal_depends_only_on_seed_and_hand_number() -> None:
    a = seeded_deal(STANDARD, 5, 3, 0)
    b = seeded_deal(STANDARD, 5, 3, 0)
    assert a == b
    assert seeded_deal(STANDARD, 5, 4, 0) != a
    assert seeded_deal(STANDARD, 6, 3, 0) != a


def test_first_dealer_comes_from_the_seed_and_the_deal_passes_clockwise() -> None:
    dealers = {Game(STANDARD, seed).first_dealer for seed in range(40)}
    assert dealers == {0, 1, 2, 3}
    assert Game(STANDARD, 11).first_dealer == Game(STANDARD, 11).first_dealer
    game = Game(STANDARD, 11, first_dealer=2)
    assert game.dealer == 2 and game.to_act == 3
    with pytest.raises(ValueError):
        Game(STANDARD, 0, first_dealer=4)


def test_custom_deal_provider_is_used_as_given() -> None:
    hands = [
        cards("AS KS QS JS TS 9S 8S 7S 6S"),
        cards("5S 4S 3S 2S AH KH QH JH TH"),
        cards("9H 8H 7H 6H 5H 4H 3H 2H AD"),
        cards("KD QD JD TD 9D 8D 7D 6D 5D"),
    ]
    stock = cards("4D 3D 2D AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C JO")
    game = Game(STANDARD, 0, first_dealer=0, deal_provider=lambda h, d: (hands, stock))
    assert game.events[0] == {
        "event": "deal",
        "hand": 1,
        "dealer": 0,
        "hands": [[str(c) for c in h] for h in hands],
        "stock": [str(c) for c in stock],
    }
    assert [set(h) for h in game.hands] == [set(h) for h in hands]
    assert game.stock == stock


@pytest.mark.parametrize(
    ("given", "key"),
    [
        ("standard", "standard"),
        ("rules-site", "rules-site"),
        ('{"name": "standard"}', "standard"),  # nothing changed: the name
        ('{"name":"inverness","target":63}', '{"name":"inverness","target":63}'),
        ('{"max_hands": 3}', '{"max_hands":3,"name":"standard"}'),
        ('{"name": "standard", "max_hands": 3}', '{"max_hands":3,"name":"standard"}'),
        ('{"max_hands":3,"name":"standard"}', '{"max_hands":3,"name":"standard"}'),
        (
            '{"name": "standard", "target": 250, "max_hands": 3}',
            '{"max_hands":3,"name":"standard"}',
        ),
    ],
)
def test_a_ruleset_has_one_spelling_however_it_is_written(given: str, key: str) -> None:
    from arena.rulesets import ruleset_key

    assert ruleset_key(given) == key
    assert _rules(key) == _rules(given)  # the same rules


def _rules(text: str) -> Ruleset:
    import json

    return Ruleset.from_parameters(json.loads(text)) if text[0] == "{" else RULESETS[text]


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ("no-such-rules", "unknown ruleset 'no-such-rules'"),
        ('{"name": "standard"', "is not valid JSON"),
        ("[1]", "unknown ruleset"),
        ('{"max_hand": 3}', "unknown ruleset parameters \\['max_hand'\\]"),
        # a name that is no base made a new rating pool of standard's rules
        ('{"name": "mine", "max_hands": 3}', 'name must be one of standard, .*, not "mine"'),
        ('{"name": 5}', "name must be one of standard, wiki-2010, .*, not 5$"),
        ("{" + '"a":{' * 3000 + "}" * 3001, "is not valid JSON: maximum recursion depth"),
    ],
)
def test_a_ruleset_that_is_none_says_why(given: str, error: str) -> None:
    from arena.rulesets import ruleset_key

    with pytest.raises(ArenaError, match=error):
        ruleset_key(given)


# Each parameter refused for its type or range, with the one-line message naming it, the value
# as given (in JSON) and what is allowed. Before, Python's own errors escaped (TypeError on 40.5,
# None, [1, 2]) or nonsense played ("no" as a true joker, 1.5 hands, 2.7 points to win).
WHOLE_1_63 = "a whole number from 1 to 63"
POINTS_OBJECT = re.escape("an object of trump points by card (A, K, J, T, 9, 5, O, 3, 2, JO)")
REFUSED_PARAMETERS: list[tuple[dict[str, Any], str]] = [
    ({"min_bid": 40.5}, f"min_bid must be {WHOLE_1_63}, not 40.5"),
    ({"min_bid": 40.0}, f"min_bid must be {WHOLE_1_63}, not 40.0"),
    ({"min_bid": True}, f"min_bid must be {WHOLE_1_63}, not true"),
    ({"min_bid": "40"}, f'min_bid must be {WHOLE_1_63}, not "40"'),
    ({"min_bid": 0}, f"min_bid must be {WHOLE_1_63}, not 0"),
    ({"min_bid": 64}, f"min_bid must be {WHOLE_1_63}, not 64"),
    ({"dealer_default": 25.5}, f"dealer_default must be {WHOLE_1_63} or null, not 25.5"),
    ({"dealer_default": False}, f"dealer_default must be {WHOLE_1_63} or null, not false"),
    ({"target": float("inf")}, "target must be a whole number from 1 to 10000, not Infinity"),
    ({"target": 2.7}, "target must be a whole number from 1 to 10000, not 2.7"),
    ({"target": 10**400}, "target must be a whole number from 1 to 10000, not 1000000"),
    ({"max_hands": 1.5}, "max_hands must be a whole number from 1 to 1000, not 1.5"),
    ({"max_hands": "x"}, 'max_hands must be a whole number from 1 to 1000, not "x"'),
    ({"max_hands": 1001}, "max_hands must be a whole number from 1 to 1000, not 1001"),
    ({"joker": "no"}, 'joker must be true or false, not "no"'),
    ({"joker": 0}, "joker must be true or false, not 0"),
    ({"dealer_picks": None}, "dealer_picks must be true or false, not null"),
    ({"out_of_trumps": "false"}, 'out_of_trumps must be true or false, not "false"'),
    ({"first_lead_trump": 1}, "first_lead_trump must be true or false, not 1"),
    ({"points": None}, f"points must be {POINTS_OBJECT}, not null"),
    ({"points": [1, 2]}, f"points must be {POINTS_OBJECT}, not \\[1, 2\\]"),
    ({"points": {"A": "x"}}, 'points.A must be a whole number from 0 to 63, not "x"'),
    ({"points": {**STANDARD_POINTS, "A": 0.5, "2": 1.5}}, "points.A must be .*, not 0.5"),
    # adds up to 63, but a card worth less than nothing is no card of RULES.md §2
    ({"points": {**STANDARD_POINTS, "A": -24, "3": 40, "JO": 15}}, "points.A .*, not -24"),
    ({"redeal": ["x"]}, 'redeal must be one of "refill", "draw4", not \\["x"\\]'),
    ({"dirt_follow": None}, 'dirt_follow must be one of "any", "suit", not null'),
    ({"two_scores_for": 1}, 'two_scores_for must be one of "player", "trick", not 1'),
    ({"name": None}, "name must be one of standard, .*, not null"),
]


@pytest.mark.parametrize(("changes", "message"), REFUSED_PARAMETERS)
def test_each_parameter_is_refused_naming_its_type_or_range(
    changes: dict[str, Any], message: str
) -> None:
    from arena.rulesets import ruleset_key

    with pytest.raises(BadRuleset, match=f"^ruleset: {message}"):
        Ruleset.from_parameters(changes)
    text = json.dumps(changes)
    with pytest.raises(BadRuleset, match=f"^ruleset: {message}"):
        ruleset_key(text)


def test_a_refused_value_is_shown_cut_short() -> None:
    with pytest.raises(BadRuleset) as exc:
        Ruleset.from_parameters({"points": list(range(1000))})
    assert len(str(exc.value)) < 200 and str(exc.value).endswith("…")


def test_a_stored_form_longer_than_the_database_holds_is_refused() -> None:
    # PostgreSQL's ratings.ruleset holds 200 characters: a longer key was accepted, its games
    # played and stored, and then rating them failed with a DataError.
    from arena.rulesets import MAX_STORED_CHARS, parse_ruleset, ruleset_key

    points = {"A": 2, "K": 24, "J": 2, "T": 2, "9": 8, "5": 4, "O": 4, "3": 1, "2": 2, "JO": 14}
    changes = {"points": points, "min_bid": 30, "dealer_default": 20, "target": 300}
    changes |= {"out_of_trumps": False, "first_lead_trump": False}
    fits = json.dumps({**changes, "max_hands": 2})
    assert len(ruleset_key(fits)) == MAX_STORED_CHARS
    too_long = json.dumps({**changes, "max_hands": 20})
    for check in (parse_ruleset, ruleset_key):
        with pytest.raises(BadRuleset, match="is 201 characters long; the database holds 200"):
            check(too_long)
    # The game master takes every parameter (records and ruleset_json carry them all).
    assert Ruleset.from_parameters(json.loads(too_long)).max_hands == 20
