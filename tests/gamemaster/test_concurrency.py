"""Many games at once on one game master: all finish, each record re-plays."""

from __future__ import annotations

import itertools

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import RunningGameMaster
from arena.rulesets import RULESETS
from arena.verify import verify_text
from tests.gamemaster.helpers import GREEDY, RANDOM, start_match

GAMES = 20


def test_twenty_games_at_once_finish_correctly(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    rulesets = itertools.cycle(sorted(RULESETS))
    matches = [
        start_match(
            client,
            gm.address,
            [GREEDY, RANDOM, RANDOM, GREEDY] if i % 2 else [RANDOM] * 4,
            ruleset={"name": next(rulesets), "max_hands": 3},
            seed=1000 + i,
            # Generous: 80 agent processes share the machine; this test is about the server.
            limits={"decision_ms": 30_000, "bank_ms": 60_000, "connect_ms": 120_000},
        )
        for i in range(GAMES)
    ]
    outcomes = [m.finish(timeout=120) for m in matches]
    for match, outcome in zip(matches, outcomes, strict=True):
        assert outcome.game_id == match.game_id
        assert outcome.reason in ("target", "max_hands"), (outcome.reason, outcome.detail)
        assert all(s.faults == 0 for s in outcome.seats), outcome.seats
        verified = verify_text(outcome.record, match.game_id)
        assert verified.game_id == match.game_id
        assert match.reap() == [0, 0, 0, 0]
    assert len({o.record for o in outcomes}) == GAMES
