"""Full games over loopback: four agent processes through the SDK, in every ruleset."""

from __future__ import annotations

import pytest

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import RunningGameMaster
from arena.rulesets import RULESETS
from arena.verify import verify_text
from tests.gamemaster.helpers import GREEDY, RANDOM, record_lines, start_match


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_random_and_greedy_processes_finish_a_game_in_every_ruleset(
    gm: RunningGameMaster, client: GameMasterClient, ruleset: str
) -> None:
    match = start_match(
        client,
        gm.address,
        [GREEDY, RANDOM, GREEDY, RANDOM],
        ruleset=ruleset,
        seed=11,
        names=["greedy-a", "random-b", "greedy-c", "random-d"],
    )
    outcome = match.finish(timeout=120)
    codes = match.reap()

    assert outcome.reason in ("target", "max_hands"), outcome.detail
    assert codes == [0, 0, 0, 0], [match.stderr(s) for s in range(4)]
    verified = verify_text(outcome.record, f"{ruleset} record")
    assert verified.faults == 0
    assert (verified.scores, verified.winner, verified.reason) == (
        outcome.scores,
        outcome.winner,
        outcome.reason,
    )
    lines = record_lines(outcome.record)
    head = lines[0]
    assert head["ruleset"] == ruleset
    assert [s["agent"] for s in head["seats"]] == ["greedy-a", "random-b", "greedy-c", "random-d"]
    actions = [line for line in lines if line.get("event") == "action"]
    assert actions and all(isinstance(line["ms"], int) for line in actions)
    assert all(s.connected and s.faults == 0 and s.decisions > 0 for s in outcome.seats)
    assert sum(s.decisions for s in outcome.seats) == len(actions)
    assert [s.hello_name for s in outcome.seats] == ["greedy", "random", "greedy", "random"]
    for seat in range(4):
        assert "game" in match.stderr(seat) and "over" in match.stderr(seat)


def test_custom_ruleset_parameters_are_played_and_written_to_the_header(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    match = start_match(
        client,
        gm.address,
        [RANDOM] * 4,
        ruleset={"name": "inverness", "max_hands": 1, "target": 500},
    )
    outcome = match.finish()
    assert outcome.reason == "max_hands" and outcome.hands == 1
    head = record_lines(outcome.record)[0]
    assert head["ruleset"]["max_hands"] == 1 and head["ruleset"]["joker"] is False
    verify_text(outcome.record)


def test_same_seed_and_decisions_give_the_same_record_but_for_timings(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    def normalised(record: str) -> list[dict[str, object]]:
        lines = record_lines(record)
        lines[0].pop("game_id")
        return [{k: v for k, v in line.items() if k != "ms"} for line in lines]

    records = []
    for _ in range(2):
        match = start_match(
            client, gm.address, [GREEDY, RANDOM, GREEDY, RANDOM], ruleset="queens-county", seed=5
        )
        records.append(match.finish().record)
    assert normalised(records[0]) == normalised(records[1])
