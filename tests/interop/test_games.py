"""Python, JavaScript and stdio agents play whole games against each other over loopback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import start_in_thread
from arena.local_match import GameSpec, LocalGameMaster, MatchResult, SeatSpec, play_games
from arena.rulesets import RULESETS
from arena.verify import verify_text
from tests.interop.agents import JS, PY_GREEDY, PY_RANDOM, STDIO_AWK, STDIO_PY, needs_node
from tests.interop.conftest import LIMITS

HELLO_NAMES = {
    "py-greedy": "greedy",
    "py-random": "random",
    "js": "js-sample",
    "stdio-py": "stdio:",
    "stdio-awk": "stdio:",
}


def _check_clean_game(result: MatchResult, seats: list[SeatSpec]) -> None:
    outcome = result.outcome
    logs = {s: result.stderr(s)[-2000:] for s in range(4)}
    assert outcome.reason in ("target", "max_hands"), (outcome.detail, logs)
    assert result.exit_codes == [0, 0, 0, 0], logs
    verified = verify_text(outcome.record, f"{outcome.game_id} record")
    assert verified.faults == 0, logs
    assert (verified.scores, verified.winner, verified.reason) == (
        outcome.scores,
        outcome.winner,
        outcome.reason,
    )
    head = json.loads(outcome.record.splitlines()[0])
    assert [s["agent"] for s in head["seats"]] == [s.name for s in seats]
    for report, seat in zip(outcome.seats, seats, strict=True):
        assert report.connected and report.faults == 0 and report.decisions > 0
        assert report.hello_name.startswith(HELLO_NAMES[seat.name])


# Each ruleset puts the three kinds of agent in different seats.
_LINEUPS = [
    [PY_GREEDY, JS, STDIO_PY, STDIO_AWK],
    [JS, STDIO_PY, PY_RANDOM, JS],
    [STDIO_PY, PY_GREEDY, JS, STDIO_AWK],
    [STDIO_AWK, JS, PY_GREEDY, STDIO_PY],
    [JS, PY_RANDOM, STDIO_AWK, STDIO_PY],
]


@needs_node
@pytest.mark.usefixtures("js_ready")
@pytest.mark.parametrize(
    ("ruleset", "seats"), list(zip(sorted(RULESETS), _LINEUPS, strict=True)), ids=sorted(RULESETS)
)
def test_python_javascript_and_stdio_agents_finish_a_short_game_in_every_ruleset(
    local_gm: LocalGameMaster, ruleset: str, seats: list[SeatSpec]
) -> None:
    spec = GameSpec({"name": ruleset, "max_hands": 2}, 21, seats, first_dealer=1)
    (result,) = local_gm.play([spec], timeout=120)
    _check_clean_game(result, seats)
    assert result.outcome.hands <= 2
    head = json.loads(result.outcome.record.splitlines()[0])
    assert head["ruleset"]["name"] == ruleset and head["ruleset"]["max_hands"] == 2


@needs_node
@pytest.mark.usefixtures("js_ready")
def test_mixed_agents_play_full_standard_games_and_their_mirror_at_once(
    local_gm: LocalGameMaster,
) -> None:
    seats = [JS, PY_GREEDY, STDIO_PY, PY_RANDOM]
    mirror = [seats[1], seats[0], seats[3], seats[2]]
    results = local_gm.play(
        [GameSpec("standard", 5, seats, game_id="interop-full"), GameSpec("standard", 5, mirror)],
        timeout=300,
    )
    for result, lineup in zip(results, [seats, mirror], strict=True):
        _check_clean_game(result, lineup)
        assert result.outcome.reason == "target"
    first = [json.loads(line) for line in results[0].outcome.record.splitlines()]
    second = [json.loads(line) for line in results[1].outcome.record.splitlines()]
    deals = [[e for e in lines if e.get("event") == "deal"] for lines in (first, second)]
    common = min(len(deals[0]), len(deals[1]))
    assert deals[0][:common] == deals[1][:common]  # the same seed deals the same cards
    assert first[0]["game_id"] == "interop-full"


def test_stdio_bots_alone_finish_a_full_game(local_gm: LocalGameMaster) -> None:
    seats = [STDIO_PY, STDIO_AWK, STDIO_PY, STDIO_AWK]
    (result,) = local_gm.play([GameSpec("rules-site", 8, seats)], timeout=300)
    _check_clean_game(result, seats)
    notes = [
        json.loads(line).get("note")
        for line in result.outcome.record.splitlines()
        if '"seat":1' in line and '"action"' in line
    ]
    assert "awk" in notes  # the bot's note reaches the record through the bridge


@needs_node
@pytest.mark.usefixtures("js_ready")
def test_python_javascript_and_stdio_agents_play_through_the_game_masters_unix_socket(
    tmp_path: Path,
) -> None:
    # How container agents, which have no network, dial in (runner/launch/container.py).
    seats = [JS, PY_GREEDY, STDIO_PY, PY_RANDOM]
    with tempfile.TemporaryDirectory(prefix="gm-", dir="/tmp") as short:  # 107 bytes at most
        sock = f"{short}/gamemaster.sock"
        with (
            start_in_thread(limits=LIMITS, admin_token="t0ken", socket_path=sock) as gm,
            GameMasterClient(gm.address, admin_token="t0ken") as client,
        ):
            spec = GameSpec({"name": "standard", "max_hands": 3}, 8, seats)
            (result,) = play_games(client, f"unix:{sock}", [spec], log_dir=tmp_path, timeout=120)
            _check_clean_game(result, seats)
