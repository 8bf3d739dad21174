"""`arena match A B --sprt elo0,elo1` end to end: it stops when the test decides, and says why a
bot forfeited."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from arena.commands.tournament import count_sets
from arena.storage import open_database, repo
from tests.runner.conftest import ARENA, BOTS, QUICK, ROOT, SAMPLE_BOTS, arena


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
        r"H1 accepted: greedy@1 is stronger than random@1 after (\d+) sets? \(LLR (\S+)\)",
        done.stdout,
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
        assert (t.state, t.planned_sets) == ("finished", played)
    assert states == ["done"] * played  # the sets it did not need left the plan, not failed
    status = arena(arena_env, "tournament", "status", t.id).stdout
    assert f"match greedy@1 vs random@1, ruleset {QUICK}" in status, status
    assert f"{played} sets (20 per pair, the rest unplayed: stopped early)" in status, status
    assert f"SPRT: H1 accepted: greedy@1 is stronger than random@1 after {played} set" in status
    # Its page shows the test as it ran: the same verdict, after as many sets, the same LLR.
    from dashboard import create_app

    client = create_app({"DATABASE_URL": arena_env["ARENA_DATABASE_URL"]}).test_client()
    sprt = client.get(f"/api/tournaments/{t.id}").get_json()["sprt"]
    assert (sprt["elo0"], sprt["elo1"], sprt["alpha"], sprt["beta"]) == (0, 200, 0.2, 0.2)
    assert (sprt["decision"], sprt["sets"]) == ("H1", played)
    assert f"{sprt['llr']:.3f}" == verdict.group(2)
    page = client.get(f"/tournaments/{t.id}").get_data(as_text=True)
    assert (
        f"<strong>H1 accepted: greedy@1 is stronger than random@1</strong> after {played} set"
        in page
    )


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
        r"before connecting\n      crasher: segmentation fault \(pretend\)",
        done.stdout,
    )
    assert len(forfeits) == 2, done.stdout  # both games of the set


def test_a_match_says_which_bot_faulted_without_forfeiting(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # The faults showed only in the records: the set's line looked like a plain loss.
    register("sloppy", "greedy")
    done = arena(
        arena_env, "match", "sloppy", "greedy", "--sets", "1", "--ruleset", QUICK, timeout=300
    )
    assert done.returncode == 0, done.stderr
    said = re.findall(
        r"seat \d \(sloppy@1\): 1 fault\(s\), the first malformed: 'debug: thinking' is not",
        done.stdout,
    )
    assert len(said) == 4, done.stdout  # its two seats in each of the set's two games


def test_a_match_between_two_bots_that_cannot_start_fails_their_sets_saying_why(
    arena_env: dict[str, str], register: Callable[..., list[str]], tmp_path: Path
) -> None:
    # Neither can win (the game is aborted): the set is played again, as workers would, and
    # then fails naming both seats, not "the match was stopped".
    import shutil

    other = tmp_path / "crasher2"
    shutil.copytree(BOTS / "crasher", other)
    manifest = other / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "crasher"', 'name = "crasher2"'))
    register("crasher", str(other))
    done = arena(arena_env, "match", "crasher", "crasher2", "--sets", "1", "--ruleset", QUICK)
    assert done.returncode == 1, done.stderr  # nothing decided, and nothing played: a failure
    assert "was played to a result; see the failures above" in done.stderr
    assert done.stdout.count("; playing the set again") == 2, done.stdout
    assert "up to 1 set, SPRT" in done.stdout and "after 0 sets" in done.stdout
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        [tournament] = repo.list_tournaments(session)
        [game_set] = repo.list_game_sets(session, tournament.id)
    assert (game_set.state, game_set.attempts) == ("failed", 3)
    # A seat of each team, whichever of its two the worker saw gone first.
    crashed = "crash: the agent exited with code 3 before connecting"
    for team in ("[02]", "[13]"):
        assert re.search(rf"seat {team}: {crashed}", game_set.error), game_set.error


def _read_until(stream: IO[str], start: str) -> str:
    """The lines read from `stream` up to and including the first that begins with `start`."""
    lines = []
    while line := stream.readline():
        lines.append(line)
        if line.startswith(start):
            return "".join(lines)
    raise AssertionError(f"no line starting {start!r} in:\n{''.join(lines)}")


def test_a_match_stopped_by_sigterm_settles_its_sets(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # As `kill` or a closing terminal stops it: the match finishes, with what it did not play
    # marked failed, not "running" forever with nobody to play it.
    register("greedy", "random")
    match = subprocess.Popen(
        [*ARENA, "match", "greedy", "random", "--sprt", "0,5", "--sets", "40", "--ruleset", QUICK],
        env={**os.environ, **arena_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    assert match.stdout is not None
    # Other lines may come first: the fork server's warning that it cannot give agents a PID
    # namespace, on a machine that does not allow one.
    head = _read_until(match.stdout, "match ")
    tournament_id = head.splitlines()[-1].split()[1].rstrip(":")
    head += _read_until(match.stdout, "set 1/40: ")
    match.send_signal(signal.SIGTERM)
    out = head + match.stdout.read()
    assert match.wait(timeout=60) == 130, out
    assert "arena match: interrupted" in out
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        t = repo.get_tournament(session, tournament_id)
        sets = repo.list_game_sets(session, tournament_id)
        assert t.state == "finished" and t.planned_sets == 40
    states = [s.state for s in sets]
    assert states.count("done") >= 1 and set(states) == {"done", "failed"}, states
    failed = [s.error for s in sets if s.state == "failed"]
    assert set(failed) == {"not played: the match was stopped"}
    assert f"stopped with {len(failed)} of 40 sets unplayed" in out
    assert f"`arena tournament status {tournament_id}`" in out
    status = arena(arena_env, "tournament", "status", tournament_id).stdout
    # It said to run the match again, which plays a new match, not these sets.
    assert (
        f"{count_sets(len(failed))} failed: a match's sets are not played again: run a new "
        in status
    )
    from dashboard import create_app

    client = create_app({"DATABASE_URL": arena_env["ARENA_DATABASE_URL"]}).test_client()
    page = client.get(f"/tournaments/{tournament_id}").get_data(as_text=True)
    assert "A match's sets are not played again" in page  # it said to run the match again
    assert "<strong>No decision within the sets allowed</strong> after" in page
    retried = arena(arena_env, "tournament", "retry", tournament_id)
    assert retried.returncode == 2 and "is an `arena match`" in retried.stderr  # not for workers


def test_a_set_dropped_from_its_match_is_not_played(
    arena_env: dict[str, str], game_master: str, register: Callable[..., list[str]]
) -> None:
    # Its job may have been queued (arena match --queue) before the SPRT decided.
    from arena.gamemaster.client import GameMasterClient
    from runner.tournament import create_tournament, run_game_set

    register("greedy", "random")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, GameMasterClient(game_master) as c:
        t = create_tournament(db, format="round-robin", bots=None, sets=2, ruleset=QUICK, seed=1)
        with db.session() as session:
            dropped = repo.list_game_sets(session, t.id)[1].id
            assert repo.drop_unstarted_sets(session, t.id, [dropped]) == 1
        outcome = run_game_set(db, dropped, c)
    assert (outcome.recorded, outcome.state) == (False, "dropped")


def test_sets_already_started_when_the_test_decided_are_said_to_play_on(
    arena_env: dict[str, str], register: Callable[..., list[str]], capsys: Any
) -> None:
    # `arena match --queue`: "H1 accepted after 12 sets", and 14 played and rated, unexplained.
    from arena.commands.match import _settle
    from runner.tournament import create_tournament

    register("greedy", "random")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        t = create_tournament(
            db, format="gauntlet", bots=["greedy", "random"], sets=4, ruleset=QUICK, seed=1
        )
        with db.session() as session:
            set_ids = [s.id for s in repo.list_game_sets(session, t.id)]
            assert repo.mark_set_running(session, set_ids[2])  # a worker took it
        _settle(db, t.id, set_ids, 1, queued=False)  # decided after the first set
        with db.session() as session:
            assert [s.id for s in repo.list_game_sets(session, t.id)] == set_ids[:1] + set_ids[2:3]
    assert capsys.readouterr().out == (
        "note: 1 set more had started on the workers when the test decided: they are played "
        "to the end and count in the ratings, not in the test\n"
    )


def test_a_set_of_a_tournament_in_another_database_says_so(
    arena_env: dict[str, str], game_master: str
) -> None:
    # A shell without the workers' ARENA_DATABASE_URL stored it in SQLite, queued it on their
    # Redis: the workers dropped it without a word, and its status waited for good.
    from arena.gamemaster.client import GameMasterClient
    from runner.tournament import OtherDatabase, run_game_set

    with (
        open_database(arena_env["ARENA_DATABASE_URL"]) as db,
        GameMasterClient(game_master) as c,
        pytest.raises(OtherDatabase) as raised,
    ):
        run_game_set(db, "t-20261130-else-set-00003", c)
    assert "tournament t-20261130-else is not in this worker's database" in str(raised.value)
    assert "created with another ARENA_DATABASE_URL" in str(raised.value)


def test_queueing_with_the_default_sqlite_on_a_named_redis_notes_it(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("greedy", "random")
    made = arena(arena_env, "tournament", "create", "--sets", "1", "--ruleset", QUICK)
    assert made.returncode == 0 and "ARENA_DATABASE_URL is not set" not in made.stderr
    assert ": round-robin, 1 game set queued (ruleset " in made.stdout, made.stdout
    data_dir = {**arena_env, "ARENA_DATABASE_URL": ""}  # empty: the default, SQLite
    elsewhere = arena(data_dir, "tournament", "create", "--sets", "1", "--no-enqueue")
    assert "ARENA_DATABASE_URL is not set" not in elsewhere.stderr  # nothing queued
    refused = arena(data_dir, "tournament", "create", "--sets", "1")  # no bot there
    assert refused.returncode == 2 and "is not set" not in refused.stderr  # nothing stored
    for bot in ("greedy", "random"):
        assert arena(data_dir, "bots", "add", str(SAMPLE_BOTS / bot)).returncode == 0
    queued = arena(data_dir, "tournament", "create", "--sets", "1")
    assert queued.returncode == 0, queued.stderr
    assert "note: ARENA_DATABASE_URL is not set, so this is stored in sqlite:///" in queued.stderr
