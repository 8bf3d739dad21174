"""arena.wire: engine values survive the round trip; public events hide every hidden card."""

from __future__ import annotations

import re

import pytest
from google.protobuf import text_format

from arena import wire
from arena.game import Game
from arena.gamemaster.policy import GameLimits
from arena.observation import observe
from arena.rulesets import RULESETS
from arena.wire import pb
from sample_agents.random_bot import RandomPlayer

_CARD = re.compile(r"(?<![A-Za-z0-9_])([2-9TJQKA][SHDC]|JO)(?![A-Za-z0-9_])")


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_observations_and_legal_actions_round_trip(ruleset: str) -> None:
    decisions = 0
    for seed in range(3):
        game = Game(RULESETS[ruleset], seed)
        player = RandomPlayer(seed)
        while not game.is_over and game.hand_number <= 3:
            seat = game.to_act
            assert seat is not None
            obs, legal = observe(game, seat), game.legal()
            whole = wire.decision_request(7, obs, legal, 2000, 500)
            # The game master's hand-spliced bytes are the same message once parsed.
            spliced = pb.ServerMessage.FromString(
                wire.decision_request_bytes(7, obs, legal, 2000, 500)
            )
            assert spliced == whole
            msg = pb.ServerMessage.FromString(whole.SerializeToString()).decision
            assert wire.observation_from_pb(msg.observation) == obs
            lazy = wire.lazy_observation(msg.observation)
            assert lazy == obs and lazy.hand == obs.hand and lazy.to_dict() == obs.to_dict()
            back = wire.legal_from_pb(msg.legal, obs.phase, seat)
            assert back.choice == legal.choice and back.actions == legal.actions
            assert back.first() == legal.first() and msg.legal.fallback == str(legal.first())
            assert (msg.request_id, msg.decision_ms_left, msg.bank_ms_left) == (7, 2000, 500)
            game.apply(player.act(obs, legal), seat)
            decisions += 1
    assert decisions > 100


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_public_events_name_no_hidden_card(ruleset: str) -> None:
    for seed in range(3):
        game = Game(RULESETS[ruleset], seed)
        player = RandomPlayer(seed)
        while not game.is_over and game.hand_number <= 2:
            seat = game.to_act
            assert seat is not None
            game.apply(player.act(observe(game, seat), game.legal()), seat, note="I hold AS KS")
        for event in game.events:
            msg = wire.public_event(event, "g", 0, 1)
            assert msg is not None, event
            cards = set(_CARD.findall(text_format.MessageToString(msg)))
            kind = event["event"]
            if kind == "action" and event["action"].startswith(("play ", "give ")):
                assert cards == set(event["action"].split()[1:])
            elif kind in ("give", "trick"):
                assert cards  # face up
            else:
                assert not cards, (event, msg)
            if kind == "action" and event["action"].startswith("keep"):
                assert msg.action.action == "keep"
                assert msg.action.hidden_cards == len(event["action"].split()) - 1


def test_unknown_event_kinds_are_not_published() -> None:
    assert wire.public_event({"event": "secret", "cards": ["AS"]}, "g", 0, 1) is None


def test_limits_round_trip_and_absent_fields_take_defaults() -> None:
    limits = GameLimits(decision_ms=100, bank_ms=0, fault_limit=2, connect_ms=900)
    assert wire.limits_from_pb(wire.limits_to_pb(limits)) == limits
    partial = pb.Limits(bank_ms=0)
    assert wire.limits_from_pb(partial, GameLimits()) == GameLimits(bank_ms=0)
    with pytest.raises(ValueError):
        wire.limits_from_pb(pb.Limits(fault_limit=0))


def test_legal_dict_for_function_bots() -> None:
    game = Game(RULESETS["standard"], 1)
    d = wire.legal_to_dict(game.legal())
    assert d["phase"] == "auction" and d["actions"][0] == "pass" and d["choice"] is None
    assert d["fallback"] == "pass"
