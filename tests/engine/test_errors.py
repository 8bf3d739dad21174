"""Bad input (STYLE.md habit 4): one error kind per mistake, naming action, seat and phase."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from arena.actions import Action, ActionKind
from arena.errors import (
    ArenaError,
    GameOver,
    IllegalAction,
    NotYourTurn,
    UnknownRuleset,
    UnparseableAction,
)
from arena.game import Game
from arena.legal import Phase
from arena.rulesets import STANDARD, get_ruleset

from .builders import auction_for, cards, check_census, fixed_game, run


def new_game() -> Game:
    return Game(STANDARD, seed=3, first_dealer=0)  # seat 1 bids first


def snapshot(game: Game) -> tuple[object, ...]:
    return (game.phase, game.to_act, list(game.events), [list(h) for h in game.hands])


def test_unknown_ruleset() -> None:
    with pytest.raises(UnknownRuleset) as exc:
        get_ruleset("sixty-four")
    assert "'sixty-four'" in str(exc.value)
    assert "standard" in str(exc.value)  # and says what there is


@pytest.mark.parametrize("text", ["bid forty", "bid 64", "play 10H", "Pass", "fold", ""])
def test_unparseable_action_is_its_own_error_and_names_the_text(text: str) -> None:
    game = new_game()
    before = snapshot(game)
    with pytest.raises(UnparseableAction) as exc:
        game.apply(text, seat=1)
    assert repr(text) in str(exc.value)
    assert not isinstance(exc.value, IllegalAction)  # "not an action" vs "not legal here"
    assert snapshot(game) == before


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("bid 64", "bids are 1 to 63"),
        ("bid 0", "bids are 1 to 63"),
        ("bid 040", "leading zeros"),
        (" pass ", "it has white space around it"),  # a JSON stdio reply's "action", say
        ("bid 40\n", "it has white space around it"),
    ],
)
def test_a_bid_out_of_range_leading_zeros_or_spaces_around_say_so(text: str, says: str) -> None:
    with pytest.raises(UnparseableAction, match=says):
        new_game().apply(text, seat=1)


def test_unparseable_action_message_names_the_seat_and_the_phase() -> None:
    game = new_game()
    with pytest.raises(UnparseableAction) as exc:
        game.apply("bid forty", seat=1)
    message = str(exc.value)
    assert "'bid forty'" in message and "seat 1" in message and "auction" in message


@pytest.mark.parametrize(
    ("actions", "bad", "seat", "phase"),
    [
        ([], "bid 30", 1, "auction"),
        ([], "play AS", 1, "auction"),
        (["pass", "pass", "pass"], "pass", 0, "auction"),
        (["bid 40", "pass", "pass", "pass"], "bid 41", 1, "trump"),
        (["bid 40", "pass", "pass", "pass"], "give", 1, "trump"),
    ],
)
def test_illegal_action_names_action_seat_and_phase(
    actions: list[str], bad: str, seat: int, phase: str
) -> None:
    game = run(new_game(), *actions)
    before = snapshot(game)
    with pytest.raises(IllegalAction) as exc:
        game.apply(bad, seat=seat)
    assert type(exc.value) is IllegalAction
    message = str(exc.value)
    assert repr(bad) in message and f"seat {seat}" in message and phase in message
    assert snapshot(game) == before
    assert game.why_illegal(game.legal().first()) is None
    from arena.actions import parse_action

    assert game.why_illegal(parse_action(bad))


def test_illegal_play_names_action_seat_and_phase() -> None:
    game = run(new_game(), "bid 40", "pass", "pass", "pass", "trump S")
    while game.phase is not Phase.PLAY:
        game.apply(game.legal().first(), seat=game.to_act)
    seat = game.to_act
    assert seat is not None
    held = {str(a) for a in game.legal_actions()}
    bad = next(f"play {c}" for c in ["AS", "KS", "QS", "2C", "3D", "JO"] if f"play {c}" not in held)
    with pytest.raises(IllegalAction) as exc:
        game.apply(bad, seat=seat)
    message = str(exc.value)
    assert repr(bad) in message and f"seat {seat}" in message and "play" in message


@pytest.mark.parametrize(
    ("actions", "wrong_seat", "phase"),
    [
        ([], 0, "auction"),
        ([], 2, "auction"),
        (["bid 40"], 1, "auction"),
        (["bid 40", "pass", "pass", "pass"], 3, "trump"),
    ],
)
def test_action_by_the_wrong_seat(actions: list[str], wrong_seat: int, phase: str) -> None:
    game = run(new_game(), *actions)
    before = snapshot(game)
    legal = str(game.legal().first())
    with pytest.raises(NotYourTurn) as exc:
        game.apply(legal, seat=wrong_seat)  # even an action legal for the right seat
    message = str(exc.value)
    assert repr(legal) in message and f"seat {wrong_seat}" in message and phase in message
    assert f"seat {game.to_act}" in message  # and whose turn it is
    assert snapshot(game) == before


def test_action_after_the_game_is_over() -> None:
    game = new_game()
    game.forfeit(1)
    with pytest.raises(GameOver) as exc:
        game.apply("pass", seat=1)
    assert "'pass'" in str(exc.value)
    assert game.legal().phase is Phase.GAME_OVER and game.legal_actions() == []


def test_error_kinds_form_one_hierarchy() -> None:
    for kind in (UnknownRuleset, UnparseableAction, IllegalAction, NotYourTurn, GameOver):
        assert issubclass(kind, ArenaError)
    assert issubclass(NotYourTurn, IllegalAction)
    assert not issubclass(UnparseableAction, IllegalAction)


# A player in process may answer with an Action value instead of text. Such a value can name a
# card twice, which parse_action refuses; the engine must refuse it too.


def _duplicate_give_position() -> tuple[Game, Action]:
    game = fixed_game(
        STANDARD,
        ["5H 2H JO", "AH KH QH 8H 7H 6H 4H 3H", "JH", "TH 9H"],
        "AD KD QD JD TD 9D 8D 7D 6D",
    )
    run(game, *auction_for(STANDARD, 1), "trump H")
    return game, Action(ActionKind.GIVE, None, cards("8H 8H"))


def _duplicate_keep_position() -> tuple[Game, Action]:
    site = get_ruleset("rules-site")
    game = fixed_game(site, ["", "", "", ""])
    run(game, *auction_for(site, 1), "trump S")
    choice = game.legal().choice
    assert choice is not None and game.phase is Phase.KEEP
    chosen = list(choice.required) + [c for c in choice.cards if c not in choice.required]
    chosen = chosen[:6]
    return game, Action(ActionKind.KEEP, None, chosen + chosen[-1:])


@pytest.mark.parametrize("position", [_duplicate_give_position, _duplicate_keep_position])
def test_regression_action_value_naming_a_card_twice_is_refused(
    position: Callable[[], tuple[Game, Action]],
) -> None:
    game, action = position()
    before = snapshot(game)
    try:
        game.apply(action, seat=game.to_act)
    except ArenaError:
        assert snapshot(game) == before
        return
    check_census(game)  # fails: the card is now in two places
    raise AssertionError(f"{action!r} was accepted")
