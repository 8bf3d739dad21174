"""`arena match A B --sprt elo0,elo1` end to end: it stops when the test decides, and says why a
bot forfeited."""

from __future__ import annotations

import re
from collections.abc import Callable

from arena.storage import open_database, repo
from tests.runner.conftest import QUICK, arena


def test_a_match_stops_as_soon_as_the_sprt_decides(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("greedy", "random")
    done = arena(
        arena_env,
        *("match", "greedy", "random", "--sprt", "0,200", "--sets", "20", "--ruleset", QUICK),
        *("--alpha", "0.2", "--beta", "0.2", "--seed", "1"),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    verdict = re.search(
        r"H1 accepted: greedy@1 is stronger by at least 200 Elo after (\d+) sets", done.stdout
    )
    assert verdict is not None, done.stdout
    played = int(verdict.group(1))
    assert 1 <= played < 20
    assert re.findall(r"^set (\d+)/20: ", done.stdout, re.M) == [
        str(i) for i in range(1, played + 1)
    ]
    tournament_id = re.search(r"^match (\S+):", done.stdout, re.M)
    assert tournament_id is not None
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        t = repo.get_tournament(session, tournament_id.group(1))
        states = [s.state for s in repo.list_game_sets(session, t.id)]
        assert t.state == "finished"
    assert states == ["done"] * played + ["failed"] * (20 - played)  # the rest were not played


def test_a_match_says_why_a_bot_forfeited(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("crasher", "greedy")
    done = arena(
        arena_env, "match", "crasher", "greedy", "--sets", "1", "--ruleset", QUICK, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "set 1/1: A 0/2" in done.stdout
    forfeits = re.findall(
        r"seat \d \(crasher@1\) forfeited: crash: the agent exited with code 3 "
        r"before connecting\n    crasher: segmentation fault \(pretend\)",
        done.stdout,
    )
    assert len(forfeits) == 2, done.stdout  # both games of the set
