"""Seeded random play-outs over every ruleset, with invariants checked at every decision:
card conservation, turn order, 63 points per hand, termination, and exact replay of the record."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from arena.game import Game
from arena.observation import observe
from arena.play import play_game
from arena.record import game_record, ruleset_of
from arena.rulesets import RULESETS
from sample_agents.greedy_bot import GreedyPlayer
from sample_agents.random_bot import RandomPlayer

from .builders import Chooser, checked_playout, random_choice, replay

CHUNKS = 8
GAMES_PER_CHUNK = 55  # 5 rulesets x 8 chunks x 55 = 2,200 short games
FULL_GAMES_PER_RULESET = 2  # plus full-length games (max_hands 100 or a target)


def players_chooser(seed: int) -> Chooser:
    """The sample random bot, which sees only its observation and the legal actions."""
    players = [RandomPlayer(f"{seed}/{s}") for s in range(4)]

    def choose(game: Game, _rng: random.Random):  # type: ignore[no-untyped-def]
        seat = game.to_act
        assert seat is not None
        action = players[seat].act(observe(game, seat), game.legal())
        return action

    return choose


def check_replay(game: Game) -> None:
    """RECORD.md's guarantee: re-playing the deal and action lines gives every hand_end and the
    game_end exactly; here through the JSON Lines record itself."""
    text = game_record(game, ["a", "b", "c", "d"], "test-game")
    lines = [json.loads(line) for line in text.splitlines()]
    head, events = lines[0], lines[1:]
    assert head["record"] == "sixty-three/1"
    ruleset = ruleset_of(head)
    assert ruleset == game.ruleset
    again = replay(ruleset, events, head["first_dealer"])
    ends = [e for e in events if e["event"] in ("hand_end", "game_end")]
    assert [e for e in again.events if e["event"] in ("hand_end", "game_end")] == ends
    assert again.events == game.events  # and every derived event too


@pytest.mark.parametrize("chunk", range(CHUNKS))
@pytest.mark.parametrize("name", sorted(RULESETS))
def test_random_playouts_keep_every_invariant(name: str, chunk: int) -> None:
    base = RULESETS[name]
    for k in range(GAMES_PER_CHUNK):
        seed = chunk * GAMES_PER_CHUNK + k
        rs = dataclasses.replace(base, max_hands=1 + seed % 4)
        game = Game(rs, seed=f"playout/{seed}")
        choose = players_chooser(seed) if chunk % 2 else random_choice
        checked_playout(game, random.Random(seed), choose)
        check_replay(game)


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_full_length_random_games_terminate(name: str) -> None:
    rs = RULESETS[name]
    for seed in range(FULL_GAMES_PER_RULESET):
        game = Game(rs, seed=f"full/{seed}")
        checked_playout(game, random.Random(seed))
        assert game.hand_number <= rs.max_hands
        assert game.end_reason in ("target", "max_hands")
        check_replay(game)


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_play_game_with_sample_bots_gives_a_replayable_record(name: str) -> None:
    rs = dataclasses.replace(RULESETS[name], max_hands=5)
    game = play_game(rs, 17, [GreedyPlayer(), RandomPlayer(1), GreedyPlayer(), RandomPlayer(3)])
    assert game.is_over
    check_replay(game)
    again = play_game(rs, 17, [GreedyPlayer(), RandomPlayer(1), GreedyPlayer(), RandomPlayer(3)])
    assert again.events == game.events  # same seed, same decisions: same record


def test_clone_is_independent_of_the_original() -> None:
    game = Game(RULESETS["standard"], seed=4)
    rng = random.Random(4)
    for _ in range(40):
        game.apply(random_choice(game, rng), seat=game.to_act)
    before = (list(game.events), [list(h) for h in game.hands], list(game.stock))
    copy = game.clone()
    checked_playout(copy, random.Random(9))
    assert (game.events, game.hands, game.stock) == before
    assert not game.is_over


def test_greedy_beats_random() -> None:
    wins = games = 0
    for seed in range(200):
        greedy_team = seed % 2  # half the games with greedy on seats 0 and 2, half on 1 and 3
        players = [
            GreedyPlayer(seed) if s % 2 == greedy_team else RandomPlayer(f"{seed}/{s}")
            for s in range(4)
        ]
        name = sorted(RULESETS)[seed % 5]
        game = play_game(RULESETS[name], f"greedy/{seed}", players)
        games += 1
        wins += game.winner == greedy_team
    assert games >= 200
    assert wins / games > 0.8, f"greedy won {wins} of {games}"
