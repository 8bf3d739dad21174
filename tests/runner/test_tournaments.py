"""Tournaments end to end: CLI, Redis, real worker processes, the game master, agents."""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from arena.gamemaster.server import start_in_thread
from arena.storage import open_database, repo
from arena.storage.models import BotVersion, Fault, Game, GameSet, RatingHistory
from tests.runner.conftest import QUICK, RedisServer, Workers, arena, free_port, wait_for

ID = re.compile(r"tournament (t-\S+):")


def _create(env: dict[str, str], *args: str) -> str:
    done = arena(env, "tournament", "create", "--ruleset", QUICK, "--seed", "7", *args)
    assert done.returncode == 0, done.stderr
    found = ID.search(done.stdout)
    assert found, done.stdout
    return found.group(1)


def _state(env: dict[str, str], tid: str) -> str:
    with open_database(env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        return repo.get_tournament(session, tid).state


def _sets(env: dict[str, str], tid: str) -> list[tuple[str, str, int, int]]:
    """(set id, state, attempts, games stored) per set."""
    with open_database(env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        out = []
        for s in repo.list_game_sets(session, tid):
            games = session.query(Game).filter(Game.game_set_id == s.id).count()
            out.append((s.id, s.state, s.attempts, games))
        return out


def test_status_and_list_give_json_for_scripts(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("random", "greedy")
    tid = _create(arena_env, "--sets", "3", "--no-enqueue")
    status = json.loads(arena(arena_env, "tournament", "status", tid, "--json").stdout)
    assert (status["id"], status["state"], status["format"]) == (tid, "queued", "round-robin")
    assert status["seed"] is None  # not before every set is played: it derives their deals
    assert (status["progress"]["total"], status["progress"]["done"]) == (3, 0)
    listed = json.loads(arena(arena_env, "tournament", "list", "--json").stdout)
    assert [(t["id"], t["bots"]) for t in listed] == [(tid, ["greedy@1", "random@1"])]
    assert (
        "no tournament 'nosuch'"
        in arena(arena_env, "tournament", "status", "nosuch", "--json").stderr
    )


def test_sets_queued_for_workers_of_another_database_are_refused_and_status_says_why(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers, tmp_path: Path
) -> None:
    # After a move to PostgreSQL, a shell without the workers' ARENA_DATABASE_URL stored its
    # tournament in SQLite, where no worker looks: its sets stayed queued for good, "waiting
    # for a free worker", with the embedded Redis not a word said.
    from runner import redis_conn
    from runner.queue import workers_databases

    register("random", "greedy")
    workers.start(count=1)
    theirs = arena_env["ARENA_DATABASE_URL"]
    said = lambda: workers_databases(redis_conn.connect()) == [theirs]  # noqa: E731
    wait_for(said, 60, "the workers to say which database they use")
    shell = {**arena_env, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"}
    for bot in ("random", "greedy"):
        added = arena(shell, "bots", "add", f"sample_agents/bots/{bot}")
        assert added.returncode == 0, added.stderr
    queue = arena_env["ARENA_QUEUE"]
    for command in (
        ("tournament", "create", "--sets", "1"),
        ("match", "random", "greedy", "--queue"),
    ):
        refused = arena(shell, *command)
        assert refused.returncode == 2, refused.stdout
        assert (
            f"the workers on queue {queue!r} store game sets in {theirs}, and this command in "
            f"{shell['ARENA_DATABASE_URL']}: none of them could play what it queued"
        ) in refused.stderr
    assert "no tournaments yet" in arena(shell, "tournament", "list").stdout  # nothing stored

    stored = _create(shell, "--sets", "1", "--no-enqueue")  # a shell may store without queuing
    status = arena(shell, "tournament", "status", stored)
    assert (
        f"the workers on queue {queue!r} store game sets in {theirs}, not in this tournament's "
        "database: start workers on this one"
    ) in status.stdout, status.stdout
    # Workers of another database need not stop for a copy of this one.
    copied = arena(shell, "db", "copy", "--to", f"sqlite:///{tmp_path / 'copy.db'}")
    assert copied.returncode == 0, copied.stderr


def test_round_robin_plays_to_the_end_and_status_shows_it(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    register("random", "greedy")
    spaced = '{"name": "standard", "max_hands": 2}'  # QUICK, written another way
    tid = _create(arena_env, "--sets", "2", "--ruleset", spaced)
    workers.start(count=2)
    status = arena(arena_env, "tournament", "status", tid, "--follow", "--interval", "0.3",
                   timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert "[##############################]" in status.stdout
    assert "2/2 sets" in status.stdout and "finished" in status.stdout
    assert "greedy@1" in status.stdout  # the results table
    assert [s[1:] for s in _sets(arena_env, tid)] == [("done", 1, 2), ("done", 1, 2)]
    listing = arena(arena_env, "tournament", "list")
    assert tid in listing.stdout and "finished" in listing.stdout
    # --json, as the dashboard's API gives it; following a finished one prints it once
    [line] = arena(arena_env, "tournament", "status", tid, "--json", "--follow").stdout.splitlines()
    followed = json.loads(line)
    assert (followed["id"], followed["state"], followed["seed"]) == (tid, "finished", 7)
    assert followed["progress"]["done"] == followed["progress"]["total"] == 2
    ratings = arena(arena_env, "ratings", "--ruleset", QUICK)
    assert ratings.returncode == 0, ratings.stderr
    assert "greedy@1" in ratings.stdout and "random@1" in ratings.stdout
    assert "±" in ratings.stdout
    assert arena(arena_env, "ratings", "--ruleset", spaced).stdout == ratings.stdout  # one pool
    assert "(disabled)" not in ratings.stdout
    assert arena(arena_env, "bots", "disable", "random").returncode == 0
    assert "random@1 (disabled)" in arena(arena_env, "ratings", "--ruleset", QUICK).stdout
    rows = json.loads(arena(arena_env, "ratings", "--ruleset", QUICK, "--json").stdout)
    assert {r["bot"]: r["disabled"] for r in rows} == {"greedy@1": False, "random@1": True}
    elsewhere = arena(arena_env, "ratings", "--ruleset", "standard")
    database = arena_env["ARENA_DATABASE_URL"]
    assert (
        f"no rated games under ruleset 'standard' in {database} yet; rulesets with ratings: {QUICK}"
        in elsewhere.stdout
    )
    # The workers rated each set as it came; a replay of every game agrees to the last bit.
    stored = arena(arena_env, "ratings", "--ruleset", QUICK, "--json")
    replayed = arena(arena_env, "ratings", "--ruleset", QUICK, "--json", "--recompute")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(stored.stdout) == json.loads(replayed.stdout)
    assert [row["games"] for row in json.loads(stored.stdout)] == [4, 4]
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        history = session.query(RatingHistory.game_id).all()
        assert sorted(history) == sorted([(g.id,) for g in session.query(Game)] * 2)


def test_sigkill_of_a_worker_mid_game_reruns_the_set_and_records_it_once(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    from rq import Worker
    from rq.serializers import JSONSerializer
    from rq.worker import BaseWorker

    from runner.queue import arena_queue
    from runner.redis_conn import connect

    register("slow", "random")
    tid = _create(arena_env, "--sets", "1")
    workers.start(count=1)
    connection = connect(arena_env["ARENA_REDIS_URL"])
    queue = arena_queue(connection, arena_env["ARENA_QUEUE"])
    busy: list[BaseWorker] = []

    def playing() -> bool:
        busy[:] = [
            w for w in Worker.all(queue=queue, serializer=JSONSerializer) if w.get_current_job_id()
        ]
        return bool(busy)

    wait_for(playing, 30, "a worker to start the set")
    wait_for(lambda: _sets(arena_env, tid)[0][1] == "running", 10, "the set to run")
    pid = busy[0].pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _state(arena_env, tid) == "finished", 90, "the tournament to finish")
    [(set_id, state, attempts, games)] = _sets(arena_env, tid)
    assert (state, games) == ("done", 2)
    assert attempts >= 2, "the killed attempt and the one that finished"
    assert "WorkerLost" in workers.log() or "exited" in workers.log()
    # Played again as game_id.2 on the game master (the killed attempt's game held the id),
    # each game is stored with a record naming it, as a set played once would be.
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        for game in session.query(Game).filter(Game.game_set_id == set_id):
            head = repo.get_game_record(session, game.id).decode().splitlines()[0]
            assert json.loads(head)["game_id"] == game.id


def test_a_redis_restart_mid_tournament_loses_nothing(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    server = RedisServer()
    server.start()
    env = {**arena_env, "ARENA_REDIS_URL": server.url}
    workers.env.update(env)
    try:
        register("slow", "random", "greedy")
        # 3 pairs, 6 sets: some still queued (in Redis only) when it goes, however late this
        # test sees the first one start (3 sets, on a loaded machine, were all taken already).
        tid = _create(env, "--sets", "2")
        workers.start(count=2, reconcile_every=1.0)
        wait_for(lambda: any(s[1] == "running" for s in _sets(env, tid)), 30, "a set to start")
        server.kill()  # no persistence: the queue and every job are gone
        server.start()
        wait_for(lambda: _state(env, tid) == "finished", 120, "the tournament to finish")
        sets = _sets(env, tid)
        assert [(s[1], s[3]) for s in sets] == [("done", 2)] * 6, sets
        assert "enqueued again" in workers.log()
    finally:
        workers.stop()
        server.kill()


def test_a_bot_that_crashes_every_game_forfeits_and_the_tournament_ends(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    register("crasher", "random")
    tid = _create(arena_env, "--sets", "1", "--connect-ms", "4000")
    workers.start(count=1)
    wait_for(lambda: _state(arena_env, tid) == "finished", 60, "the tournament to finish")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        games = session.query(Game).join(GameSet).filter(GameSet.tournament_id == tid).all()
        assert [g.reason for g in games] == ["forfeit", "forfeit"]
        crasher = repo.get_version(session, "crasher@1").id
        for g in games:
            assert g.forfeit_seat is not None
            assert g.seat_ids[g.forfeit_seat] == crasher
            assert g.winner == 1 - g.forfeit_seat % 2
        faults = session.query(Fault).filter(Fault.bot_version_id == crasher).all()
        assert faults and all(f.kind == "crash" for f in faults)
        assert any("segmentation fault (pretend)" in f.stderr for f in faults)
        assert any("exited with code 3" in f.detail for f in faults)


def test_retry_queues_failed_sets_again_and_the_tournament_finishes(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    # Sets given up on (three worker deaths, say) are not lost for good: retry plays them.
    from runner.tournament import finish_if_done

    register("random", "greedy")
    tid = _create(arena_env, "--sets", "2")  # queued, with no worker yet
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        for set_id, *_ in _sets(arena_env, tid):
            for _ in range(3):
                assert repo.mark_set_running(session, set_id)
            assert repo.mark_set_failed(session, set_id, "gave up after 3 attempts")
        assert finish_if_done(session, tid)
    assert _state(arena_env, tid) == "failed"
    status = arena(arena_env, "tournament", "status", tid)
    assert (
        f"2 sets failed: `arena tournament retry {tid}` queues them again, once what failed "
        "them is fixed\n  2 sets: gave up after 3 attempts\n"
    ) in status.stdout, status.stdout
    retried = arena(arena_env, "tournament", "retry", tid)
    assert retried.returncode == 0, retried.stderr
    assert f"tournament {tid}: queued again 2 sets that had failed" in retried.stdout
    assert _state(arena_env, tid) == "running"
    workers.start(count=1)
    wait_for(lambda: _state(arena_env, tid) == "finished", 120, "the retried sets")
    assert [s[1:] for s in _sets(arena_env, tid)] == [("done", 1, 2), ("done", 1, 2)]
    again = arena(arena_env, "tournament", "retry", tid)
    assert again.returncode == 0 and "has no failed sets" in again.stdout


def test_a_disabled_bot_named_for_a_tournament_plays_and_is_noted(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("random", "greedy")
    assert arena(arena_env, "bots", "disable", "random").returncode == 0
    unnamed = arena(arena_env, "tournament", "create", "--ruleset", QUICK, "--no-enqueue")
    assert unnamed.returncode == 2 and "1 active bot(s) registered" in unnamed.stderr
    # Told to register bots, an organiser who had disabled the others would add them again.
    assert "1 disabled (random): `arena bots enable NAME`, or register" in unnamed.stderr
    named = arena(arena_env, "tournament", "create", "--ruleset", QUICK, "--no-enqueue",
                  "--bots", "random,greedy")  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert "note: bot 'random' is disabled, and plays here because it is named" in named.stderr
    assert "greedy" not in named.stderr


def test_the_status_of_a_tournament_no_worker_can_play_says_why(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("random", "greedy")
    tid = _create(arena_env, "--sets", "1")  # queued, with no worker
    status = arena(arena_env, "tournament", "status", tid)
    queue = arena_env["ARENA_QUEUE"]
    assert status.stdout.rstrip().endswith(
        f"no worker listens on queue {queue!r}: start one with `arena worker`"
    ), status.stdout
    no_redis = {**arena_env, "ARENA_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    status = arena(no_redis, "tournament", "status", tid)
    assert "no worker can take a set: Redis (redis://127.0.0.1:" in status.stdout, status.stdout


def test_the_status_of_sets_without_a_job_does_not_blame_busy_workers(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    # Sets stored with no job on the queue (`--no-enqueue`, or jobs Redis lost as it came back
    # empty, or all failed while the database was away) were said to be "waiting for a free
    # worker" with every worker idle: it is the reconciler they wait for.
    register("random", "greedy")
    workers.start(count=1, reconcile_every=3600)  # passes once, at start: before the tournament
    wait_for(lambda: "Listening on" in workers.log(), 60, "a worker on the queue")
    tid = _create(arena_env, "--sets", "1", "--no-enqueue")
    status = arena(arena_env, "tournament", "status", tid)
    queue = arena_env["ARENA_QUEUE"]
    assert "waiting for a free worker" not in status.stdout, status.stdout
    assert status.stdout.rstrip().endswith(
        f"no job on queue {queue!r} for its 1 queued set (stored with --no-enqueue, lost by "
        "Redis, or ended): a worker's reconciler queues it within --reconcile-every (15 s "
        "unless set)"
    ), status.stdout


def test_the_status_of_a_gauntlet_names_its_champion(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("greedy", "random", "slow")
    tid = _create(arena_env, "--format", "gauntlet", "--bots", "random,greedy,slow", "--no-enqueue")
    status = arena(arena_env, "tournament", "status", tid)
    assert f"tournament {tid}: gauntlet of random@1, ruleset {QUICK}" in status.stdout
    listed = arena(arena_env, "tournament", "list").stdout
    assert f"{tid}  gauntlet of random@1  " in listed
    # One opponent is what `arena match` plays: a match of the two.
    match = _create(arena_env, "--format", "gauntlet", "--bots", "random,greedy", "--no-enqueue")
    status = arena(arena_env, "tournament", "status", match)
    assert f"tournament {match}: match random@1 vs greedy@1, ruleset {QUICK}" in status.stdout
    assert "2 sets (2 per pair)" in status.stdout
    # Named alone, against the field: every other enabled bot's latest version (it had to name
    # each one).
    field = _create(arena_env, "--format", "gauntlet", "--bots", "random", "--no-enqueue")
    status = arena(arena_env, "tournament", "status", field).stdout
    assert f"tournament {field}: gauntlet of random@1, ruleset {QUICK}" in status, status
    assert "4 sets (2 per pair)" in status, status
    assert arena(arena_env, "bots", "disable", "slow").returncode == 0
    field = _create(arena_env, "--format", "gauntlet", "--bots", "random", "--no-enqueue")
    status = arena(arena_env, "tournament", "status", field).stdout
    assert f"tournament {field}: match random@1 vs greedy@1, ruleset {QUICK}" in status
    assert arena(arena_env, "bots", "disable", "greedy").returncode == 0
    alone = arena(arena_env, "tournament", "create", "--format", "gauntlet", "--bots", "random")
    assert alone.returncode == 2 and "no other bot is enabled" in alone.stderr, alone.stderr


def test_a_worker_given_agent_logs_keeps_every_seats_stderr(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers, tmp_path: Path
) -> None:
    # Without it a bot's stderr is kept only with a fault: its author, debugging, saw nothing.
    register("chatty", "greedy")
    tid = _create(arena_env, "--sets", "1")
    workers.env["ARENA_AGENT_LOGS"] = str(tmp_path / "agent-logs")
    workers.start(count=1)
    status = arena(arena_env, "tournament", "status", tid, "--follow", "--interval", "0.3",
                   timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        refs = {v.id: v.ref.replace("@", "-") for v in session.query(BotVersion)}
        games = {  # each seat's log, by name: the game it was of
            f"{game.id}-s{seat}-{refs[getattr(game, f'seat{seat}_id')]}.stderr.log": game.id
            for game in session.query(Game)
            for seat in range(4)
        }
    logs = tmp_path / "agent-logs" / tid
    assert f"keeping every seat's stderr in {tmp_path / 'agent-logs'}" in workers.log()
    assert len(games) == 8 and {log.name for log in logs.iterdir()} == set(games)
    for log in logs.iterdir():
        said = log.read_text()
        assert ("chatty plays" in said) == ("-chatty-1." in log.name), log
        # The SDK's last line, as its game ended: the agent was not stopped before it.
        assert f"game {games[log.name]} over" in said, log


def test_status_counts_each_bots_faults(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers
) -> None:
    # Faults short of a forfeit showed only in the records: the results read as plain losses.
    register("sloppy", "greedy")
    tid = _create(arena_env, "--sets", "1")
    workers.start(count=1)
    status = arena(arena_env, "tournament", "status", tid, "--follow", "--interval", "0.3",
                   timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    results = status.stdout.split("results (points out of games played):\n")[1]
    rows = {line.split()[0]: line for line in results.splitlines()}
    assert rows["sloppy@1"].endswith("  4 fault(s)"), status.stdout  # 2 seats in each of 2 games
    assert "fault" not in rows["greedy@1"], status.stdout


def test_agent_logs_that_cannot_be_written_cost_the_logs_not_the_games(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers, tmp_path: Path
) -> None:
    # Every set failed on it, retried and failed again: the directory went bad after the
    # worker checked it (here: a file where the tournament's directory goes).
    register("chatty", "greedy")
    tid = _create(arena_env, "--sets", "1")
    (tmp_path / "agent-logs").mkdir()
    (tmp_path / "agent-logs" / tid).write_text("in the way\n")
    workers.env["ARENA_AGENT_LOGS"] = str(tmp_path / "agent-logs")
    workers.start(count=1)
    status = arena(arena_env, "tournament", "status", tid, "--follow", "--interval", "0.3",
                   timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert [s[1:] for s in _sets(arena_env, tid)] == [("done", 1, 2)], workers.log()
    assert "playing without agents' logs" in workers.log()
    assert (tmp_path / "agent-logs" / tid).read_text() == "in the way\n"


def test_agents_of_a_worker_given_the_game_masters_socket_dial_it_with_no_network_of_the_host(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Workers, tmp_path: Path
) -> None:
    # Nothing on the host's network (Redis, the database, the other agents) is theirs to reach.
    with tempfile.TemporaryDirectory(prefix="gm-", dir="/tmp") as short:  # 107 bytes at most
        sock = f"{short}/gamemaster.sock"
        with start_in_thread("127.0.0.1:0", socket_path=sock) as gm:
            register("netprobe", "random")
            tid = _create(arena_env, "--sets", "1")
            workers.env.update(
                ARENA_GAME_MASTER=gm.address,  # the worker's own calls still go over TCP
                ARENA_GAME_MASTER_SOCKET=sock,
                ARENA_AGENT_LOGS=str(tmp_path / "agent-logs"),
            )
            workers.start(count=1)
            status = arena(arena_env, "tournament", "status", tid, "--follow", "--interval",
                           "0.3", timeout=120)  # fmt: skip
            assert status.returncode == 0, status.stderr
    assert f"process agents dial unix:{sock}, with no network of their own" in workers.log()
    logs = list((tmp_path / "agent-logs" / tid).glob("*-netprobe-1.*"))
    said = [log.read_text() for log in logs]
    assert len(said) == 4  # two seats in each of the two games
    probes = [re.findall(r"network (\S+) dials (\S+)", text) for text in said]
    assert all(dials == f"unix:{sock}" for ((_, dials),) in probes), said
    # Each in a network of its own: not the host's, nor its partner's. Only within a game: a
    # namespace's id may be given again once the one before is gone (the first game's agents
    # are, when the second's start), and the check said 3 of 4 ids were distinct once.
    games: dict[str, set[str]] = {}
    for log, ((network, _),) in zip(logs, probes, strict=True):
        game = re.match(r"(.+-g\d+)-s\d", log.name)
        assert game is not None, log.name
        games.setdefault(game[1], set()).add(network)
    assert [len(networks) for networks in games.values()] == [2, 2], games
    assert os.readlink("/proc/self/ns/net") not in set().union(*games.values())
    assert _sets(arena_env, tid)[0][1] == "done"
