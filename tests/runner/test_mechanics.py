"""Queue mechanics without worker processes: idempotent re-runs, the reconciler, the scheduler's
single-instance rule, the embedded Redis, status lines."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from arena.gamemaster.client import GameMasterClient
from arena.storage import Database, Progress, open_database, repo
from arena.storage.models import Game, GameSet, Tournament
from tests.runner.conftest import (
    ARENA,
    QUICK,
    ROOT,
    RedisServer,
    Workers,
    arena,
    free_port,
    game_is_open,
    wait_for,
)


def _tournament(env: dict[str, str], sets: int = 1) -> tuple[str, list[str]]:
    from runner.tournament import create_tournament

    with open_database(env["ARENA_DATABASE_URL"]) as db:
        t = create_tournament(db, format="round-robin", bots=None, sets=sets, ruleset=QUICK, seed=3)
        with db.session() as session:
            return t.id, [s.id for s in repo.list_game_sets(session, t.id)]


@contextlib.contextmanager
def _as_a_worker(env: dict[str, str]) -> Iterator[tuple[Database, GameMasterClient]]:
    """What a worker runs game sets with: the database and a game master client."""
    with (
        open_database(env["ARENA_DATABASE_URL"]) as db,
        GameMasterClient(env["ARENA_GAME_MASTER"]) as client,
    ):
        yield db, client


def test_running_a_set_again_records_exactly_one_result(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    from runner.tournament import run_game_set

    register("random", "greedy")
    tid, [set_id] = _tournament(arena_env)
    with _as_a_worker(arena_env) as (db, client):
        first = run_game_set(db, set_id, client)
        again = run_game_set(db, set_id, client)
        assert first.recorded and first.state == "done"
        assert not again.recorded and again.state == "done"
        assert again.score_a == first.score_a
        with db.session() as session:
            assert session.query(Game).filter(Game.game_set_id == set_id).count() == 2
            assert repo.get_tournament(session, tid).state == "finished"
            ratings = repo.get_ratings(session, QUICK)
            assert sorted(r.games for r in ratings) == [2, 2]
            history = repo.rating_history(session, "greedy@1", QUICK)
            assert [h.game_id for h in history] == [f"{set_id}-g0", f"{set_id}-g1"]
            # Each game is stamped when it ended, not when its set was stored.
            ended = [g.finished for g in session.query(Game).filter(Game.game_set_id == set_id)]
            stored = session.get(GameSet, set_id).finished
            assert len(set(ended)) == 2 and max(ended) < stored, (ended, stored)


def test_a_set_played_twice_at_once_records_one_runs_games_never_an_aborted_one(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # After a Redis restart the reconciler queues a set again while its worker still plays it.
    # The second run takes the set's game over (it aborts it): the first must not then record
    # the aborted game as the set's result, nor fail (its job's retry would take the game back,
    # and the two runs went on so until the set was given up): it waits for the second.
    from runner import tournament
    from runner.tournament import run_game_set

    register("slow", "random")
    _tid, [set_id] = _tournament(arena_env)
    first: list[object] = []

    def play_first() -> None:
        with _as_a_worker(arena_env) as (db, client):
            try:
                first.append(run_game_set(db, set_id, client))
            except Exception as exc:
                first.append(exc)

    thread = threading.Thread(target=play_first)
    thread.start()
    with _as_a_worker(arena_env) as (db, client):
        wait_for(lambda: game_is_open(client, repo.game_id(set_id, 0)), 30, "the first game")
        second = run_game_set(db, set_id, client)
        thread.join(60)
        assert second.recorded and second.state == "done" and second.attempts == 2
        [waited] = first
        assert isinstance(waited, tournament.SetOutcome), waited
        assert (waited.recorded, waited.state, waited.score_a) == (False, "done", second.score_a)
        with db.session() as session:
            games = session.query(Game).filter(Game.game_set_id == set_id).all()
            assert sorted(g.game_index for g in games) == [0, 1]
            assert all(g.reason in ("max_hands", "target", "forfeit") for g in games)


def test_a_set_waits_for_a_game_master_that_is_starting(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # A game master restarting is a wait, not a failed attempt (with none there, every set
    # of a tournament failed within seconds).
    from arena.gamemaster.server import start_in_thread
    from runner.stack import free_port
    from runner.tournament import run_game_set

    register("random", "greedy")
    _tid, [set_id] = _tournament(arena_env)
    address = f"127.0.0.1:{free_port()}"
    started = []
    late = threading.Timer(1.0, lambda: started.append(start_in_thread(address)))
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, GameMasterClient(address) as client:
        late.start()
        try:
            outcome = run_game_set(db, set_id, client)
        finally:
            late.join()
            started[0].stop()
    assert outcome.recorded and outcome.state == "done" and outcome.attempts == 1


def _record_without_rating(db: Database, set_id: str) -> None:
    """Store a set's two games as a worker does, then "die": no rating pass, no finishing."""
    from arena.storage.repo import GameResult

    a, b = "greedy@1", "random@1"
    games = [
        GameResult(0, (a, b, a, b), (100, 50), 0, "max_hands", 2, b"{}"),
        GameResult(1, (b, a, b, a), (50, 100), 1, "max_hands", 2, b"{}"),
    ]
    with db.session() as session:
        repo.mark_set_running(session, set_id)
        assert repo.record_game_set_result(session, set_id, games)


def test_a_set_recorded_by_a_worker_that_died_is_rated_and_finished_by_its_retry(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    from runner.tournament import run_game_set

    register("random", "greedy")
    tid, [set_id] = _tournament(arena_env)
    with _as_a_worker(arena_env) as (db, client):
        _record_without_rating(db, set_id)
        with db.session() as session:
            assert repo.get_tournament(session, tid).state == "queued"
            assert repo.get_ratings(session, QUICK) == []
        retry = run_game_set(db, set_id, client)  # RQ runs the job again
        assert not retry.recorded and retry.state == "done" and retry.score_a == 2.0
        with db.session() as session:
            assert repo.get_tournament(session, tid).state == "finished"
            assert sorted(r.games for r in repo.get_ratings(session, QUICK)) == [2, 2]


def test_workers_end_when_their_supervisor_is_killed(workers: Workers) -> None:
    # Each worker asks, as it starts, to end with the supervisor that started it.
    workers.start(count=2)
    wait_for(lambda: workers.log().count("started (pid") == 2, 60, "two workers")
    pids = [int(pid) for pid in re.findall(r"worker \d started \(pid (\d+)\)", workers.log())]
    assert workers.process is not None
    workers.process.kill()
    workers.process.wait()
    wait_for(lambda: not any(_alive(pid) for pid in pids), 20, "the workers to end")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended (its parent, now init, reaps it)


def test_the_reconciler_finishes_a_tournament_whose_last_worker_died(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    from runner import redis_conn
    from runner.reconcile import reconcile

    register("random", "greedy")
    tid, [set_id] = _tournament(arena_env)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        _record_without_rating(db, set_id)  # and its job is gone from Redis too
        report = reconcile(db, redis_conn.connect())
        assert report.finished == [tid] and report.enqueued == [] and report.rated == [QUICK]
        with db.session() as session:
            assert repo.get_tournament(session, tid).state == "finished"
            # No later set of this ruleset may come to rate the dead worker's games.
            assert sorted(r.games for r in repo.get_ratings(session, QUICK)) == [2, 2]
        again = reconcile(db, redis_conn.connect())
        assert (again.finished, again.rated) == ([], [])


def test_the_reconciler_rates_games_an_upgrade_left_unrated(
    arena_env: dict[str, str], register: Callable[..., list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    # An upgrade that asks for a ruleset to be rated again unrates its games and drops its
    # table; with no set of that ruleset left to play, nothing rated them again.
    from sqlalchemy import text

    from runner import redis_conn
    from runner.reconcile import reconcile
    from runner.tournament import run_game_set

    register("random", "greedy")
    _tid, [set_id] = _tournament(arena_env)
    with _as_a_worker(arena_env) as (db, client):
        assert run_game_set(db, set_id, client).recorded
        with db.session() as session:
            rated = sorted(
                (r.bot_version_id, r.elo, r.games) for r in repo.get_ratings(session, QUICK)
            )
        with db.engine.begin() as conn:  # as database._rate_again leaves a ruleset
            conn.execute(text("UPDATE games SET rated_seq = NULL"))
            conn.execute(text("DELETE FROM ratings"))
            conn.execute(text("DELETE FROM rating_history"))
        with caplog.at_level("INFO", logger="runner.reconcile"):
            assert reconcile(db, redis_conn.connect()).rated == [QUICK]
        assert f"reconciler: rated the games of {QUICK} that no rating pass had" in caplog.text
        with db.session() as session:
            again = sorted(
                (r.bot_version_id, r.elo, r.games) for r in repo.get_ratings(session, QUICK)
            )
        assert again == rated and len(rated) == 2


def test_a_ruleset_that_cannot_be_rated_does_not_stop_the_reconciler(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    postgres_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # PostgreSQL refused a ruleset name longer than its column in the rating pass, and the
    # pass stopped there: no set of any tournament was queued again after a Redis restart.
    from sqlalchemy import text

    from runner import redis_conn
    from runner.reconcile import reconcile
    from runner.tournament import run_game_set

    arena_env["ARENA_DATABASE_URL"] = postgres_url
    register("random", "greedy")
    _tid, [played] = _tournament(arena_env)
    with _as_a_worker(arena_env) as (db, client):
        assert run_game_set(db, played, client).recorded
        too_long = "x" * 250
        with db.engine.begin() as conn:  # as stored by an arena that let such a name through
            conn.execute(text("UPDATE games SET ruleset = :r, rated_seq = NULL"), {"r": too_long})
        _tid, [waiting] = _tournament(arena_env)  # not queued: as after a Redis restart
        with caplog.at_level("INFO", logger="runner.reconcile"):
            report = reconcile(db, redis_conn.connect())
    assert report.enqueued == [waiting] and report.rated == []
    assert f"reconciler: cannot rate the games of {too_long}; they stay unrated: " in caplog.text


def test_the_reconciler_logs_a_ruleset_it_cannot_rate_once_not_every_pass(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    postgres_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The same "cannot rate" error came on every pass, every few seconds, for as long as the
    # games stayed: the rest of the worker's log was buried under it.
    from sqlalchemy import text

    from runner import redis_conn
    from runner.reconcile import reconcile
    from runner.tournament import run_game_set

    def said(ruleset: str) -> int:
        start = f"reconciler: cannot rate the games of {ruleset}; they stay unrated: "
        return sum(r.getMessage().startswith(start) for r in caplog.records)

    arena_env["ARENA_DATABASE_URL"] = postgres_url
    register("random", "greedy")
    _tid, [played] = _tournament(arena_env)
    x, y = "x" * 250, "y" * 250  # longer than PostgreSQL's ratings.ruleset holds
    with _as_a_worker(arena_env) as (db, client), caplog.at_level("INFO", "runner.reconcile"):
        assert run_game_set(db, played, client).recorded
        with db.session() as session:
            one = session.query(Game.id).limit(1).scalar()
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE games SET ruleset = :r, rated_seq = NULL"), {"r": x})
        for _ in range(3):
            assert reconcile(db, redis_conn.connect()).rated == []
        assert said(x) == 1
        with db.engine.begin() as conn:  # a new failure is news
            conn.execute(text("UPDATE games SET ruleset = :r WHERE id = :g"), {"r": y, "g": one})
        reconcile(db, redis_conn.connect())
        reconcile(db, redis_conn.connect())
        assert (said(x), said(y)) == (1, 1)
        with db.engine.begin() as conn:  # resolved: they are rated
            conn.execute(text("UPDATE games SET ruleset = :r"), {"r": QUICK})
        assert reconcile(db, redis_conn.connect()).rated == [QUICK]
        with db.engine.begin() as conn:  # and back again: news again
            conn.execute(text("UPDATE games SET ruleset = :r, rated_seq = NULL"), {"r": x})
        reconcile(db, redis_conn.connect())
        reconcile(db, redis_conn.connect())
        assert (said(x), said(y)) == (2, 1)


def test_a_set_given_up_on_then_recorded_by_a_run_still_going_finishes_its_tournament(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    from runner.tournament import finish_if_done

    register("random", "greedy")
    tid, [set_id] = _tournament(arena_env)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        with db.session() as session:
            repo.mark_set_failed(session, set_id, "gave up after 3 attempts (last job: lost)")
            assert finish_if_done(session, tid)
            assert repo.get_tournament(session, tid).state == "failed"
        _record_without_rating(db, set_id)  # the run that was still going records its games
        with db.session() as session:
            assert finish_if_done(session, tid)
            assert repo.get_tournament(session, tid).state == "finished"


def test_a_reconciler_pass_while_a_tournament_is_enqueued_queues_no_set_twice(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # create_tournament stores the sets, then enqueues them: a reconciler pass in between
    # finds them without jobs and enqueues them too. RQ would queue each id twice.
    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_sets
    from runner.reconcile import reconcile
    from runner.tournament import create_tournament

    register("random", "greedy")
    connection = redis_conn.connect()
    queue = arena_queue(connection)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:

        def enqueue(set_ids: list[str]) -> int:
            assert reconcile(db, connection).enqueued == set_ids  # the pass lands here
            return enqueue_game_sets(queue, set_ids)

        t = create_tournament(
            db, format="round-robin", bots=None, sets=2, ruleset=QUICK, seed=3, enqueue=enqueue
        )
        with db.session() as session:
            set_ids = [s.id for s in repo.list_game_sets(session, t.id)]
    assert queue.job_ids == set_ids


def test_the_reconciler_leaves_the_sets_of_an_in_process_match_alone(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # `arena match` without --queue plays its sets itself: running workers must not play
    # them too (they did: sets played and rated after the SPRT had stopped the match).
    from runner import redis_conn
    from runner.reconcile import reconcile
    from runner.tournament import create_tournament

    register("random", "greedy")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        create_tournament(
            db, format="gauntlet", bots=None, sets=2, ruleset=QUICK, seed=3, in_process=True
        )
        assert reconcile(db, redis_conn.connect()).enqueued == []
        _tid, set_ids = _tournament(arena_env, sets=1)  # one for the workers: queued
        assert reconcile(db, redis_conn.connect()).enqueued == set_ids


@pytest.mark.parametrize("last_job", ["lost", "failed"])
def test_the_reconciler_gives_up_on_a_set_out_of_attempts_and_says_how_to_retry(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    caplog: pytest.LogCaptureFixture,
    last_job: str,
) -> None:
    from rq.job import JobStatus

    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_set
    from runner.reconcile import reconcile
    from runner.tournament import MAX_ATTEMPTS

    register("random", "greedy")
    tid, [set_id] = _tournament(arena_env)
    connection = redis_conn.connect()
    if last_job == "failed":  # out of RQ's retries too
        queue = arena_queue(connection)
        enqueue_game_set(queue, set_id).set_status(JobStatus.FAILED)
        queue.remove(set_id)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        with db.session() as session:
            for _ in range(MAX_ATTEMPTS):  # three workers died playing it
                assert repo.mark_set_running(session, set_id)
        _outlive_its_run(db, set_id)
        with caplog.at_level("WARNING", logger="runner.reconcile"):
            assert reconcile(db, connection).failed == [set_id]
        with db.session() as session:
            game_set = repo.get_game_set(session, set_id)
            assert game_set.state == "failed"
            # What an operator can act on: it said no more than "(last job: failed)".
            assert game_set.error == (
                f"gave up after {MAX_ATTEMPTS} attempts (last job: {last_job}): the worker of "
                "the last one stopped mid-set without recording why (killed, out of memory, its "
                "host down?); see the workers' logs"
            )
            assert repo.get_tournament(session, tid).state == "failed"
    assert f"`arena tournament retry {tid}` queues them again" in caplog.text


def test_reconciler_enqueues_sets_missing_from_redis_once(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    from runner import redis_conn
    from runner.queue import arena_queue
    from runner.reconcile import reconcile

    register("random", "greedy")
    _tid, set_ids = _tournament(arena_env, sets=3)  # stored, never enqueued
    connection = redis_conn.connect()
    queue = arena_queue(connection)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        first = reconcile(db, connection)
        assert first.enqueued == set_ids
        assert reconcile(db, connection).enqueued == []
        assert queue.job_ids == set_ids
        connection.delete(f"rq:job:{set_ids[1]}")  # as if Redis lost it
        queue.remove(set_ids[1])
        assert reconcile(db, connection).enqueued == [set_ids[1]]


def _burst_worker(env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`arena worker --burst` run to its end, its output kept."""
    return subprocess.run(
        [*ARENA, "worker", "--burst"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_a_burst_worker_first_queues_again_the_sets_redis_lost(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # After a Redis restart lost the queue, `arena worker --burst` said "done, quitting" and
    # played nothing: only the supervisor of `arena worker` reconciled.
    register("random", "greedy")
    tid, set_ids = _tournament(arena_env, sets=2)  # stored, never enqueued
    burst = _burst_worker(arena_env, timeout=300)
    assert burst.returncode == 0, burst.stderr[-2000:]
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        states = {s.id: (s.state, len(s.games)) for s in repo.list_game_sets(session, tid)}
    assert states == {set_id: ("done", 2) for set_id in set_ids}, burst.stderr[-2000:]


def _scheduler(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*ARENA, "scheduler"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )


def test_only_one_scheduler_runs(arena_env: dict[str, str]) -> None:
    from runner import redis_conn
    from runner.scheduler import LOCK_KEY

    connection = redis_conn.connect()
    if connection.exists(LOCK_KEY):
        pytest.skip("a scheduler is running on this Redis")
    first = _scheduler(arena_env)
    try:
        wait_for(lambda: connection.exists(LOCK_KEY), 15, "the first scheduler's lock")
        second = _scheduler(arena_env)
        out, _ = second.communicate(timeout=30)
        assert second.returncode == 2
        assert "a scheduler holds the lock" in out and "only one may run" in out
        assert "its lock expires in " in out
        assert first.poll() is None
    finally:
        first.terminate()
        first.wait(timeout=15)
    assert not connection.exists(LOCK_KEY), "a stopped scheduler frees the lock"


def test_the_scheduler_finds_the_embedded_redis_after_it_is_killed(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # The restarted server listens on a new socket; the scheduler knocked on the old one forever.
    from runner import redis_conn
    from runner.scheduler import LOCK_KEY

    env = {**arena_env, "ARENA_REDIS_URL": ""}
    data = Path(arena_env["ARENA_DATA_DIR"])
    settings = data / f"{redis_conn.EMBEDDED_RDB}.settings"
    scheduler = _scheduler(env)
    try:
        wait_for(settings.exists, 30, "the scheduler to start the embedded Redis")
        first = json.loads(settings.read_text())
        wait_for(lambda: redis_conn.embedded(data).exists(LOCK_KEY), 30, "the scheduler's lock")
        os.kill(int(Path(first["pidfile"]).read_text()), signal.SIGKILL)

        def locked_on_a_new_server() -> bool:
            socket_path = redis_conn.embedded_socket(data)
            if socket_path in (None, first["unixsocket"]):
                return False
            return bool(redis_conn.embedded(data).exists(LOCK_KEY))

        wait_for(locked_on_a_new_server, 60, "the scheduler on a new embedded server")
        assert scheduler.poll() is None
        # The killed server's temporary directory (socket, pid file, log) was left in /tmp.
        assert not Path(first["unixsocket"]).parent.exists()
    finally:
        scheduler.terminate()
        out, _ = scheduler.communicate(timeout=30)
    assert "reconnected to Redis" in out, out


def test_the_nightly_cron_is_read_in_utc_and_enqueues_a_json_job(arena_env: dict[str, str]) -> None:
    from runner import redis_conn
    from runner.queue import arena_queue, fetch_job
    from runner.scheduler import NIGHTLY_JOB, UtcCronJob

    job = UtcCronJob(queue_name=arena_env["ARENA_QUEUE"], func_name=NIGHTLY_JOB, cron="0 2 * * *")
    when = job.next_enqueue_time
    assert when is not None and when.tzinfo is not None
    assert (when.astimezone(UTC).hour, when.minute) == (2, 0)
    assert timedelta(0) < when - datetime.now(UTC) <= timedelta(days=1)
    connection = redis_conn.connect()
    enqueued = job.enqueue(connection)
    try:
        fetched = fetch_job(connection, enqueued.id)  # readable with the JSON serializer
        assert fetched is not None and fetched.func_name == NIGHTLY_JOB
        assert fetched.kwargs == {
            "night": f"{when.astimezone(UTC):%Y%m%d-%H%M}",
            "cron": "0 2 * * *",
        }
        assert enqueued.id in arena_queue(connection).job_ids
    finally:
        enqueued.delete()


def test_a_night_is_overdue_once_the_next_one_is_due() -> None:
    from runner.scheduler import overdue

    at = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    assert overdue("20261201-0200", "0 2 * * *", now=at) is None  # today's, an hour late
    assert overdue("20261130-0200", "0 2 * * *", now=at) == "20261201-0200"
    assert overdue("20261201-0240", "*/20 * * * *", now=at) == "20261201-0300"


def test_the_last_night_due_is_never_one_still_to_come() -> None:
    # Asked a moment before a time, it answered that time: a scheduler started at 16:49:59.5
    # caught up the night of 16:50 half a second early, then enqueued it again at 16:50.
    from runner.scheduler import NIGHTLY_JOB, UtcCronJob

    job = UtcCronJob(queue_name="nightly-test", func_name=NIGHTLY_JOB, cron="* * * * *")
    due = datetime(2026, 12, 3, 16, 49, tzinfo=UTC)
    assert job.last_due(now=due) == due  # due this very instant
    assert job.last_due(now=due + timedelta(seconds=59.5)) == due


@pytest.fixture
def own_redis() -> Iterator[redis.Redis]:
    """A Redis of the test's own: the scheduler's lock and last night are one per Redis."""
    server = RedisServer()
    server.start()
    try:
        yield redis.Redis.from_url(server.url)
    finally:
        server.kill()


def _nightly_scheduler(connection: redis.Redis, cron: str) -> Any:
    from runner.scheduler import ArenaScheduler

    scheduler = ArenaScheduler(connection)
    scheduler.add_nightly("nightly-test", cron, {"sets": 1})
    return scheduler


def _nights_queued(connection: redis.Redis) -> list[str]:
    from runner.queue import arena_queue

    return [job.kwargs["night"] for job in arena_queue(connection, "nightly-test").get_jobs()]


def test_a_scheduler_starting_after_a_missed_night_catches_it_up(own_redis: redis.Redis) -> None:
    # One killed just before its time: the night was lost, with no word in any log.
    from runner.scheduler import LAST_NIGHT_KEY, night_of

    scheduler = _nightly_scheduler(own_redis, "*/5 * * * *")
    due = night_of(scheduler.nightly.last_due())
    scheduler.catch_up()
    assert _nights_queued(own_redis) == [], "a first start catches nothing up"
    own_redis.set(LAST_NIGHT_KEY, due)
    scheduler.catch_up()
    assert _nights_queued(own_redis) == [], "the latest night was enqueued: nothing missed"
    own_redis.set(LAST_NIGHT_KEY, "20261130-0200")
    scheduler.catch_up()
    assert _nights_queued(own_redis) == [due]
    assert own_redis.get(LAST_NIGHT_KEY) == due.encode()


def test_a_scheduler_that_slept_through_nights_enqueues_the_latest_one(
    own_redis: redis.Redis,
) -> None:
    # Paused past two of its times (the host asleep, Redis away), it enqueued the first night it
    # had been waiting for: skipped as overdue ("the night of ... is played instead"), while the
    # night said to be played instead was never enqueued, and was lost.
    from runner.scheduler import night_of, overdue

    scheduler = _nightly_scheduler(own_redis, "*/5 * * * *")
    latest = scheduler.nightly.last_due()
    scheduler.nightly.next_enqueue_time = latest - timedelta(minutes=15)  # as before the pause
    scheduler.enqueue_jobs()
    assert _nights_queued(own_redis) == [night_of(latest)]
    assert overdue(night_of(latest), "*/5 * * * *") is None  # played, not skipped
    assert scheduler.nightly.next_enqueue_time > latest


def test_a_scheduler_enqueues_the_last_night_again_when_redis_comes_back_empty(
    own_redis: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    # Its job was the night's only trace: lost with the queue, had no worker run it yet.
    from runner.scheduler import LOCK_KEY, night_of

    scheduler = _nightly_scheduler(own_redis, "0 2 * * *")
    scheduler.acquire()
    scheduler.register_birth()
    own_redis.flushall()
    scheduler.heartbeat()
    assert _nights_queued(own_redis) == [], "it had enqueued no night: none was lost"
    scheduler.nightly.enqueue_night(own_redis, scheduler.nightly.last_due())  # as at 02:00
    night = night_of(scheduler.nightly.last_due())
    scheduler.heartbeat()
    assert _nights_queued(own_redis) == [night], "the lock was there: nothing lost"
    own_redis.flushall()  # as a Redis restarted without its data
    with caplog.at_level("WARNING", logger="arena.scheduler"):
        scheduler.heartbeat()
    assert _nights_queued(own_redis) == [night]
    # Not "Redis came back empty" alone: a scheduler paused past the lock's time said so too.
    assert (
        "the scheduler's lock was gone (Redis came back empty, or this scheduler was paused "
        f"for over 30 s): enqueuing the night of {night} again"
    ) in caplog.text
    assert own_redis.get(LOCK_KEY) == scheduler.token.encode()


def test_the_nights_job_goes_to_the_front_of_the_queue(own_redis: redis.Redis) -> None:
    # Behind a backlog of sets it waited its turn: its tournament was created late, or the
    # night skipped as overdue.
    from runner.queue import arena_queue
    from runner.scheduler import night_of

    scheduler = _nightly_scheduler(own_redis, "0 2 * * *")
    backlog = arena_queue(own_redis, "nightly-test")
    for index in range(3):
        backlog.enqueue("builtins.print", args=[index], job_id=f"backlog-{index}")
    scheduler.nightly.enqueue_night(own_redis, scheduler.nightly.last_due())
    first = backlog.get_jobs()[0]
    assert first.kwargs["night"] == night_of(scheduler.nightly.last_due())
    assert len(backlog) == 4


def test_an_overdue_night_is_left_to_the_latest(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # Workers down for days: each night's job waited, then all ran one after another.
    from runner import jobs

    register("random", "greedy")
    jobs.database.cache_clear()
    try:
        old = jobs.nightly_round_robin(
            sets=1, ruleset=QUICK, night="20261101-0200", cron="0 2 * * *"
        )
    finally:
        jobs.database().dispose()
        jobs.database.cache_clear()
    assert old["tournament"] is None
    assert old["skipped"].startswith("overdue: the night of 20261102-0200 was due before it ran")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        assert [t.id for t in repo.list_tournaments(session) if t.nightly] == []


def _ghost(arena_env: dict[str, str], tmp_path: Path) -> Path:
    """A bot ghost@1, registered, whose directory has been deleted since."""
    from arena.registry import register_bot

    ghost = tmp_path / "ghost"
    ghost.mkdir()
    (ghost / "bot.toml").write_text(
        'name = "ghost"\nversion = "1"\nauthor = "t"\nlanguage = "python"\n'
        'command = ["python", "bot.py"]\n'
    )
    (ghost / "bot.py").write_text("")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        register_bot(session, ghost)
    shutil.rmtree(ghost)
    return ghost


def test_a_tournament_of_a_bot_that_cannot_start_here_is_created_with_a_warning(
    arena_env: dict[str, str], register: Callable[..., list[str]], tmp_path: Path
) -> None:
    # Every game a forfeit, counted against the bot, and nothing said when it was created.
    # (A warning, not a refusal: workers on other machines may have its directory.)
    register("random")
    ghost = _ghost(arena_env, tmp_path)
    made = arena(arena_env, "tournament", "create", "--bots", "ghost,random", "--no-enqueue")
    assert made.returncode == 0, made.stderr
    assert (
        f"warning: ghost@1 cannot start on this machine: its directory {ghost} does not exist; "
        "on workers where it cannot either, it forfeits every game (register it again, or "
        "`arena bots disable ghost`)"
    ) in made.stderr


def test_a_nightly_job_queued_with_an_odd_night_creates_no_tournament(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # Queued by hand (or by a bot that reached Redis): its tournament's id held an escape and a
    # line break, no job id could be made of it, and every reconciler pass failed from then on.
    from runner import jobs

    register("random", "greedy")
    jobs.database.cache_clear()
    try:
        made = jobs.nightly_round_robin(sets=1, ruleset=QUICK, night="x\x1b[31m\nINFO fake")
    finally:
        jobs.database().dispose()
        jobs.database.cache_clear()
    assert made["tournament"] is None
    assert made["skipped"] == (
        "night 'x\\x1b[31m\\nINFO fake' is not a time YYYYmmdd-HHMM (UTC); no tournament made"
    )
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        assert repo.list_tournaments(session) == []


def test_a_set_whose_id_rq_refuses_does_not_stop_the_reconciler(
    arena_env: dict[str, str], register: Callable[..., list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    # Stored by an older arena that let such a tournament id through.
    from arena.storage.repo import PlannedSet
    from runner import redis_conn
    from runner.reconcile import reconcile

    a, b = register("random", "greedy")
    _tid, [waiting] = _tournament(arena_env)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        with db.session() as session:
            repo.create_tournament(
                session,
                format="round-robin",
                ruleset=QUICK,
                seed=1,
                sets_per_pair=1,
                sets=[PlannedSet(a, b, seed=1)],
                tournament_id="nightly-x\nbad",
            )
        with caplog.at_level("ERROR", logger="runner.reconcile"):
            report = reconcile(db, redis_conn.connect())
    assert report.enqueued == [waiting]
    assert (
        "reconciler: set 'nightly-x\\nbad-set-00000' cannot be queued: its id is not a job id"
    ) in caplog.text


def test_a_nightly_round_robin_leaves_out_a_bot_that_cannot_start(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Its directory deleted after it was registered: it forfeited every game of every night.
    from runner import jobs

    register("random", "greedy")
    ghost = _ghost(arena_env, tmp_path)
    jobs.database.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="runner.jobs"):
            made = jobs.nightly_round_robin(sets=1, ruleset=QUICK, night="20261201-0200")
    finally:
        jobs.database().dispose()
        jobs.database.cache_clear()
    assert made == {"tournament": "nightly-20261201-0200", "sets": 1}  # greedy and random
    assert f"leaving out ghost@1: its directory {ghost} does not exist" in caplog.text
    assert "`arena bots disable ghost`" in caplog.text


def test_one_night_gets_one_nightly_tournament_however_often_its_job_runs(
    arena_env: dict[str, str], register: Callable[..., list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    # A retried job (its worker died), or one enqueued twice (a paused scheduler woke after
    # another took over), must not start a second round robin that night.
    from runner import jobs, redis_conn
    from runner.queue import arena_queue

    register("random", "greedy")
    jobs.database.cache_clear()  # this test's database, not an earlier test's
    queue = arena_queue(redis_conn.connect())
    try:
        with caplog.at_level("INFO", logger="runner.jobs"):
            first = jobs.nightly_round_robin(sets=1, ruleset=QUICK, night="20261130-0200")
        queued = set(queue.job_ids)
        again = jobs.nightly_round_robin(sets=1, ruleset=QUICK, night="20261130-0200")
        other_night = jobs.nightly_round_robin(sets=1, ruleset=QUICK, night="20261201-0200")
    finally:
        jobs.database().dispose()
        jobs.database.cache_clear()
    assert first == {"tournament": "nightly-20261130-0200", "sets": 1}
    # What the night plays, in the worker's log (which said only why a night was skipped).
    assert (
        "nightly round robin nightly-20261130-0200: 1 game set queued, of greedy@1, random@1"
    ) in caplog.text
    assert again == {"tournament": "nightly-20261130-0200", "skipped": "exists already"}
    assert other_night["tournament"] == "nightly-20261201-0200"
    assert [j for j in queued if "nightly-20261130-0200" in j], queued
    assert [j for j in queue.job_ids if j not in queued and "20261130" in j] == []  # no second

    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        nightly = [t.id for t in repo.list_tournaments(session) if t.nightly]
    assert sorted(nightly) == ["nightly-20261130-0200", "nightly-20261201-0200"]


def test_a_tournament_of_one_set_is_not_said_to_have_1_sets() -> None:
    from arena.commands.tournament import _sets

    assert _sets(Tournament(format="gauntlet", planned_sets=1, sets_per_pair=1)) == (
        "1 set (1 per pair)"
    )
    assert _sets(Tournament(format="round-robin", planned_sets=3, sets_per_pair=1)) == (
        "3 sets (1 per pair)"
    )


def test_status_line_shows_a_bar_counts_and_eta() -> None:
    from arena.commands.tournament import progress_bar, status_line

    assert progress_bar(1, 1, 4, width=8) == "[##xx....]"
    assert progress_bar(891, 0, 900) == "[" + "#" * 29 + ".]"  # not full before the end
    assert progress_bar(900, 0, 900) == "[" + "#" * 30 + "]"
    almost = status_line(Tournament(state="running"), Progress(total=900, done=899), now=None)
    assert " 99%" in almost
    ended = status_line(Tournament(state="finished"), Progress(total=60, done=56, failed=4))
    assert "56/60 sets   93%  4 failed" in ended  # as `tournament list` counts: 56 +4 failed
    stranded = Progress(total=30, done=19, queued=11)  # running, but no worker plays a set
    assert status_line(Tournament(state="running"), stranded).endswith("waiting for a free worker")
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    t = Tournament(id="t-x", state="running", started=now - timedelta(seconds=60), finished=None)
    line = status_line(t, Progress(total=4, done=1, running=1, queued=2), now=now)
    assert line.startswith("[" + "#" * 7 + "." * 23 + "]")
    assert "1/4 sets" in line and "25%" in line and "1 running" in line
    assert "elapsed 1m00s" in line and "ETA 3m00s" in line
    queued = Tournament(id="t-y", state="queued", started=None, finished=None)
    idle = Progress(total=4, queued=4)
    assert status_line(queued, idle, now=now).endswith("waiting for a free worker")
    why = "no game master at 127.0.0.1:50051 for 60 s"
    assert status_line(queued, idle, now=now, waiting=why).endswith(f"waiting: {why}")
    # The only set being played has not been heard from: no ETA, and what that means.
    silent = Progress(total=4, done=1, running=1, queued=2, silent=1)
    line = status_line(t, silent, now=now)
    assert "ETA" not in line and "1 running" in line
    assert line.endswith(
        "1 running set with no sign of life for over 30 s: its worker may have died; a running "
        "worker plays it again within a minute (is `arena worker` running?)"
    )


def test_unreachable_redis_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner import redis_conn

    monkeypatch.setenv("ARENA_REDIS_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(redis_conn.RedisUnavailable) as caught:
        redis_conn.connect()
    message = str(caught.value)
    assert "cannot reach Redis at redis://127.0.0.1:1/0" in message
    assert "start redis-server or unset ARENA_REDIS_URL to use the embedded one" in message


@pytest.mark.parametrize("spelling", ["{base}/{db}", "{base}/{db}?db={db}", "{base}?db={db}"])
def test_a_redis_url_reaches_the_database_it_names(redis_url: str, spelling: str) -> None:
    # What the refusal of '/x' and '/1/2' (tests/test_config_errors.py) still lets through.
    from urllib.parse import urlsplit

    from runner import redis_conn

    parts = urlsplit(redis_url)
    base = f"{parts.scheme}://{parts.netloc}"
    db = int(parts.path.strip("/") or 0)
    client = redis_conn.connect(spelling.format(base=base, db=db))
    try:
        assert client.client_info()["db"] == db
    finally:
        client.close()


_EMBEDDED = """
import os, sys, time
from runner import redis_conn
client = redis_conn.connect()
client.incr("hits")
print(client.connection_pool.connection_kwargs["path"], flush=True)
if sys.argv[1] == "stdin":  # until the test closes it
    sys.stdin.read()
else:
    time.sleep(float(sys.argv[1]))
"""


def test_embedded_redis_is_shared_by_processes_and_stops_with_the_last(tmp_path: Path) -> None:
    from runner import redis_conn

    env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path), "ARENA_REDIS_URL": ""}

    def start(until: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", _EMBEDDED, until],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip

    # The first runs until told: with a fixed 3 s, a loaded machine saw it end before the
    # second had started (and the failed test left the server running).
    long = start("stdin")
    assert long.stdin is not None and long.stdout is not None
    try:
        socket_path = long.stdout.readline().strip()
        short = start("0")
        out, _ = short.communicate(timeout=60)
        assert out.strip() == socket_path, "the second process used the same server"
        assert redis_conn.embedded_socket(tmp_path) == socket_path, "still running for the first"
    finally:
        long.stdin.close()
        long.wait(timeout=30)
    deadline = time.monotonic() + 5
    while os.path.exists(socket_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(socket_path), "the last process out stopped it"
    assert (tmp_path / redis_conn.EMBEDDED_RDB).exists(), "its data was saved"


def test_releasing_the_embedded_redis_leaves_it_to_another_process_still_using_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As `arena demo` does on its way out while a worker of the same data directory runs on.
    from runner import redis_conn

    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ARENA_REDIS_URL", "")
    mine = redis_conn.connect()
    socket_path = mine.connection_pool.connection_kwargs["path"]
    other = subprocess.Popen(
        [sys.executable, "-c", _EMBEDDED, "60"],
        env={**os.environ}, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert other.stdout is not None
        assert other.stdout.readline().strip() == socket_path
        redis_conn.release_embedded(tmp_path)
        assert mine.get("hits") == b"1", "still serving the other process"
    finally:
        other.kill()
        other.wait()
    redis_conn.release_embedded(tmp_path)  # the last one out now
    assert not os.path.exists(socket_path)


_RELEASING = """
import sys, time
from pathlib import Path
from runner import redis_conn
client = redis_conn.connect()
client.incr("hits")
print(client.connection_pool.connection_kwargs["path"], flush=True)
sys.stdin.readline()
redis_conn.release_embedded(Path(sys.argv[1]))  # as at exit, with this process still alive
print("released", flush=True)
time.sleep(60)
"""


def test_two_processes_leaving_at_once_still_stop_the_embedded_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each saw the other still connected and left the server to it: `arena demo` stopped by
    # SIGTERM mid-tournament left its embedded Redis running, with no process of its own.
    from runner import redis_conn

    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ARENA_REDIS_URL", "")
    first = subprocess.Popen(
        [sys.executable, "-c", _RELEASING, str(tmp_path)],
        env={**os.environ}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert first.stdin is not None and first.stdout is not None
        socket_path = first.stdout.readline().strip()
        mine = redis_conn.connect()  # held: connected while the other one releases
        assert mine.get("hits") == b"1"
        first.stdin.write("go\n")
        first.stdin.flush()
        assert first.stdout.readline().strip() == "released"
        redis_conn.release_embedded(tmp_path)  # the other one is still exiting
        assert not os.path.exists(socket_path), "the last one out stopped it"
    finally:
        first.kill()
        first.wait()
        redis_conn.stop_embedded(tmp_path)


_DIED_LEAVING_A_CHILD_CONNECTED = """
import os, time
from runner import redis_conn
client = redis_conn.connect()
client.incr("hits")
child = os.fork()  # holds the connection's socket on, as an agent forked by a worker does
if child == 0:
    os.closerange(0, 3)  # not the test's pipes: it waits for their end
    time.sleep(60)
    os._exit(0)
print(client.connection_pool.connection_kwargs["path"], child, flush=True)
os._exit(0)  # killed, say: no release at exit
"""


def test_a_connection_left_by_a_dead_process_does_not_keep_the_embedded_redis_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `arena demo` stopped by SIGTERM: its last check, after its workers had gone, still saw
    # their connections and left the server running with nobody to stop it.
    from runner import redis_conn

    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ARENA_REDIS_URL", "")
    dead = subprocess.run(
        [sys.executable, "-c", _DIED_LEAVING_A_CHILD_CONNECTED],
        env={**os.environ}, capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    socket_path, child = dead.stdout.split()
    try:
        mine = redis_conn.connect()
        names = [c["name"] for c in mine.client_list()]
        assert any(n.startswith("arena:") and n != f"arena:{os.getpid()}" for n in names), names
        redis_conn.release_embedded(tmp_path)
        assert not os.path.exists(socket_path), "stopped: nobody alive is using it"
    finally:
        os.kill(int(child), signal.SIGKILL)
        redis_conn.stop_embedded(tmp_path)


@pytest.mark.parametrize("exclusive", [True, False])
def test_an_exclusive_tournament_waits_for_a_bot_busy_elsewhere(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    exclusive: bool,
    tmp_path: Path,
) -> None:
    import threading

    import redis

    from arena.registry import register_bot
    from runner import jobs
    from runner.tournament import create_tournament, run_game_set

    # The random bot under a name of this test's own: bot locks are shared by all queues, and
    # other tests run tournaments of the sample bots at the same time.
    lone = tmp_path / "lone"
    lone.mkdir()
    name = f"lone-{arena_env['ARENA_QUEUE']}"
    manifest = (ROOT / "sample_agents" / "bots" / "random" / "bot.toml").read_text()
    (lone / "bot.toml").write_text(manifest.replace('name = "random"', f'name = "{name}"'))
    register("greedy")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        with db.session() as session:
            register_bot(session, lone)
        t = create_tournament(
            db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=5, exclusive=exclusive
        )
        with db.session() as session:
            [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
        busy = redis.Redis.from_url(arena_env["ARENA_REDIS_URL"]).lock(
            f"arena:lock:bot:{name}@1", timeout=60
        )
        assert busy.acquire(blocking=False)
        outcomes = []
        with GameMasterClient(arena_env["ARENA_GAME_MASTER"]) as client:
            runner = threading.Thread(
                target=lambda: outcomes.append(
                    run_game_set(db, set_id, client, bot_lock=jobs._bot_lock)
                )
            )
            runner.start()
            try:
                time.sleep(1.5)
                with db.session() as session:
                    state = repo.get_game_set(session, set_id).state
                assert state == ("queued" if exclusive else "running") or (
                    not exclusive and state == "done"
                )
            finally:
                busy.release()
            runner.join(timeout=120)
        assert outcomes and outcomes[0].recorded


def _started_worker(
    env: dict[str, str], queue: str, log: Path, test_job: str = ""
) -> subprocess.Popen[bytes]:
    """One `runner.worker` process on `queue`, its output in `log`, once it listens; one that
    runs the function `test_job` too, if given (workers run only the arena's own jobs)."""
    argv = [sys.executable, "-m", "runner.worker", "--queue", queue]
    if test_job:
        argv[1:] = [
            "-c",
            "import sys, runner.queue as q\n"
            f"q.JOB_FUNCTIONS = q.JOB_FUNCTIONS | {{{test_job!r}}}\n"
            "from runner.worker import main\n"
            f"sys.exit(main(['--queue', {queue!r}]))",
        ]
    with log.open("w") as out:
        worker = subprocess.Popen(
            argv,
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: "Listening on" in log.read_text(), 30, "the worker to start")
    except BaseException:
        worker.kill()
        worker.wait()
        raise
    return worker


def test_a_worker_reconnects_after_the_embedded_redis_is_killed(
    arena_env: dict[str, str], register: Callable[..., list[str]], tmp_path: Path
) -> None:
    # A new embedded server listens on a new socket: RQ's own retries kept knocking on the old
    # one, and sets queued afterwards were never played.
    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_sets
    from runner.tournament import create_tournament

    register("random", "greedy")
    env = {**os.environ, **arena_env, "ARENA_REDIS_URL": ""}
    os.environ["ARENA_REDIS_URL"] = ""  # this process too (arena_env's monkeypatch restores it)
    data = Path(arena_env["ARENA_DATA_DIR"])
    redis_conn.connect()  # the embedded server, shared with the worker
    log = tmp_path / "worker.log"
    worker = _started_worker(env, arena_env["ARENA_QUEUE"], log)
    try:
        pidfile = json.loads((data / f"{redis_conn.EMBEDDED_RDB}.settings").read_text())["pidfile"]
        os.kill(int(Path(pidfile).read_text()), signal.SIGKILL)
        time.sleep(1)
        queue = arena_queue(redis_conn.connect())  # starts a new server, on a new socket
        assert not Path(pidfile).parent.exists()  # the killed one's temporary directory is gone
        with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
            t = create_tournament(
                db,
                format="round-robin",
                bots=None,
                sets=1,
                ruleset=QUICK,
                seed=3,
                enqueue=lambda ids: enqueue_game_sets(queue, ids),
            )

            def done() -> bool:
                with db.session() as session:
                    return repo.tournament_progress(session, t.id).done == 1

            wait_for(done, 90, "the set to be played after the restart")
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert "reconnected to Redis" in log.read_text()


def test_a_set_retried_goes_before_the_sets_still_queued(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    from rq.job import JobStatus

    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_set, enqueue_game_sets, fetch_job
    from runner.reconcile import reconcile

    register("random", "greedy")
    _tid, set_ids = _tournament(arena_env, sets=3)
    queue = arena_queue(redis_conn.connect())
    assert enqueue_game_sets(queue, set_ids[:2]) == 2
    enqueue_game_set(queue, set_ids[2])  # the reconciler's way
    for set_id in (set_ids[2], set_ids[1]):
        job = fetch_job(queue.connection, set_id)
        assert job is not None
        queue.remove(set_id)  # taken by a worker, which failed (or died)
        with queue.connection.pipeline() as pipe:
            job.retry(queue, pipe)  # what RQ does then, with the set's retry options
            pipe.execute()
        assert queue.job_ids[0] == set_id
    # Out of RQ's retries, the job fails; the reconciler queues the set again, first too.
    job = fetch_job(queue.connection, set_ids[2])
    assert job is not None
    queue.remove(set_ids[2])
    job.set_status(JobStatus.FAILED)
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        assert reconcile(db, queue.connection).enqueued == [set_ids[2]]
    assert queue.job_ids[0] == set_ids[2]


def _left_by_a_killed_worker(connection: redis.Redis, set_id: str) -> None:
    """The set's job as a worker SIGKILLed mid-game leaves it, once RQ has failed it: its
    execution's data expired, while RQ 3 lists the execution for 60 s more."""
    from rq.executions import Execution
    from rq.job import JobStatus

    from runner.queue import arena_queue, fetch_job

    job = fetch_job(connection, set_id)
    assert job is not None
    arena_queue(connection).remove(set_id)
    with connection.pipeline() as pipe:
        execution = Execution.create(job, ttl=1, pipeline=pipe)
        job.set_status(JobStatus.FAILED, pipeline=pipe)
        pipe.execute()
    job.started_job_registry.remove_execution(execution)  # RQ's own clean-up has run
    wait_for(lambda: not connection.exists(execution.key), 10, "the execution's data to expire")


@pytest.mark.parametrize("who", ["the reconciler", "tournament retry"])
def test_a_job_failed_by_a_killed_worker_is_replaced_within_the_minute(
    arena_env: dict[str, str], register: Callable[..., list[str]], who: str
) -> None:
    # job.delete() raised "Execution ... not found in Redis" then: `arena tournament retry`
    # died with a traceback, and reconciler passes failed until the minute was over.
    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_sets, fetch_job
    from runner.reconcile import reconcile

    register("random", "greedy")
    _tid, [set_id] = _tournament(arena_env)
    connection = redis_conn.connect()
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        assert reconcile(db, connection).enqueued == [set_id]
        _left_by_a_killed_worker(connection, set_id)
        if who == "the reconciler":
            assert reconcile(db, connection).enqueued == [set_id]
        else:
            assert enqueue_game_sets(arena_queue(connection), [set_id], replace_ended=True) == 1
    job = fetch_job(connection, set_id)
    assert job is not None and job.get_status() == "queued"


@contextlib.contextmanager
def _worker_on_its_own_redis(
    arena_env: dict[str, str], tmp_path: Path, test_job: str = ""
) -> Iterator[tuple[RedisServer, subprocess.Popen[bytes], Path]]:
    """A worker process on a redis-server of the test's own (to kill and start again), and its
    log; both ended afterwards."""
    server = RedisServer()
    server.start()
    env = {**os.environ, **arena_env, "ARENA_REDIS_URL": server.url}
    log = tmp_path / "worker.log"
    worker = _started_worker(env, arena_env["ARENA_QUEUE"], log, test_job)
    try:
        yield server, worker, log
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        server.kill()


def test_a_worker_told_to_stop_while_it_waits_to_reconnect_stops(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # SIGTERM in the pause before a reconnect went to the old RQ worker object; the loop then
    # started a new one that never heard it, and kept taking sets with no supervisor.
    with _worker_on_its_own_redis(arena_env, tmp_path) as (server, worker, log):
        server.kill()
        wait_for(lambda: "reconnecting in 4 s" in log.read_text(), 60, "a 4 s reconnect pause")
        server.start()  # back, while the worker still pauses
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, log.read_text()
        assert "reconnected to Redis" not in log.read_text()


def test_a_worker_that_reconnects_leaves_no_listener_behind(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # Each reconnect left the old worker's command listener running: a thread and a Redis
    # connection more, subscribed again once Redis was back, per restart.
    with _worker_on_its_own_redis(arena_env, tmp_path) as (server, _, log):
        for restart in (1, 2):
            server.kill()
            wait_for(lambda n=restart: _count(log, "lost Redis") >= n, 60, "the worker to notice")
            server.start()
            wait_for(
                lambda n=restart: _count(log, "reconnected to") == n, 60, f"reconnect {restart}"
            )
        time.sleep(5)  # a leaked listener retries every 2 s
        listeners = [c for c in redis.Redis.from_url(server.url).client_list() if int(c["sub"]) > 0]
        assert len(listeners) == 1, listeners


def test_redis_lost_while_a_worker_starts_leaves_no_listener_behind(
    arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # RQ subscribes its command listener before the loop whose end stops it: Redis lost in
    # between (here, at the first write after subscribing) left that listener retrying for
    # good, subscribed again beside the next worker's once Redis was back.
    from runner import worker as worker_module

    server = RedisServer()
    server.start()
    monkeypatch.setenv("ARENA_REDIS_URL", server.url)
    made = []

    class LosesRedisAsItStarts(worker_module.ArenaWorker):
        def set_state(self, *args: Any, **kwargs: Any) -> None:
            if len(made) == 1:  # the first worker: Redis goes, and comes back a moment later
                server.kill()
                threading.Timer(0.5, server.start).start()
            super().set_state(*args, **kwargs)

    def make_worker(connection: redis.Redis, queue: str) -> worker_module.ArenaWorker:
        made.append(LosesRedisAsItStarts([queue], connection=connection))
        return made[-1]

    monkeypatch.setattr(worker_module, "make_worker", make_worker)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert worker_module.work_forever(arena_env["ARENA_QUEUE"], burst=True) == 0
        assert len(made) == 2  # the first lost Redis as it started; the second worked
        time.sleep(3)  # a listener left behind retries every 2 s
        listeners = [c for c in redis.Redis.from_url(server.url).client_list() if int(c["sub"])]
        assert listeners == [], listeners  # the burst worker's own ended with it
    finally:
        server.kill()
        for sig, handler in handlers.items():  # RQ's, installed in this process
            signal.signal(sig, handler)


def shut_down_redis_and_fail(port: int) -> None:
    """A job (run by the worker below) that ends as a set whose rating pass found no Redis."""
    from runner.jobs import RatingsDeferred

    with contextlib.suppress(redis.ConnectionError):
        redis.Redis(port=port).shutdown(nosave=True)
    raise RatingsDeferred("no rating pass of standard: Redis did not answer (pretend)")


def test_a_worker_that_loses_redis_as_a_job_ends_says_so_in_a_line(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # RQ, storing the job's failure, met the dead Redis: its loop quit with about 80 lines of
    # chained tracebacks; stopped while Redis was still down, the worker died with another.
    from rq import Queue
    from rq.serializers import JSONSerializer

    job = "tests.runner.test_mechanics.shut_down_redis_and_fail"
    with _worker_on_its_own_redis(arena_env, tmp_path, job) as (server, worker, log):
        connection = redis.Redis.from_url(server.url)
        queue = Queue(arena_env["ARENA_QUEUE"], connection=connection, serializer=JSONSerializer)
        queue.enqueue(job, server.port)
        wait_for(lambda: "reconnecting in 2 s" in log.read_text(), 60, "a second reconnect pause")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, log.read_text()
    text = log.read_text()
    assert "Traceback" not in text, text
    [lost] = [line for line in text.splitlines() if "lost Redis ending job" in line]
    # Not "which failed": the set was recorded, only its rating pass waits for Redis.
    assert "its set is recorded; the next rating pass, once Redis is back, rates it" in lost
    assert "failed" not in lost and "(pretend)" not in lost, lost


def _count(log: Path, text: str) -> int:
    return log.read_text().count(text)


def _worker_and_job(queue: str) -> tuple[Any, Any]:
    """A worker on the queue and a game set's job, for its handle_exception to be shown."""
    from rq.job import Job
    from rq.serializers import JSONSerializer

    from runner import redis_conn
    from runner.worker import make_worker

    connection = redis_conn.connect()
    job = Job.create(
        "runner.jobs.run_game_set", args=("t-x-set-00000",), connection=connection,
        serializer=JSONSerializer,
    )  # fmt: skip
    return make_worker(connection, queue), job


def test_a_set_failing_with_the_arenas_own_error_logs_its_message_not_a_traceback(
    arena_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    from runner.gameset import GameAborted

    worker, job = _worker_and_job(arena_env["ARENA_QUEUE"])
    for error in (GameAborted("game g0 was aborted: no reason"), KeyError("a bug")):
        caplog.clear()
        try:
            raise error
        except Exception:
            with caplog.at_level("ERROR", logger="rq.worker"):
                worker.handle_exception(job, *sys.exc_info())
        [logged] = caplog.records
        if isinstance(error, GameAborted):
            assert logged.getMessage().endswith(
                f"job {job.id} failed: game g0 was aborted: no reason"
            )
            assert "Traceback" not in caplog.text
        else:
            assert "Traceback" in caplog.text and "KeyError: 'a bug'" in caplog.text


def test_a_set_failing_as_the_database_goes_away_logs_a_line_not_a_traceback(
    arena_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    # A database connection ended mid-set (a restart, a failover) failed the job with RQ's page
    # of traceback, the SQL statement and SQLAlchemy's link in it, the driver's reason in the
    # middle; killing the connections of a running tournament logged a dozen of them.
    from sqlalchemy import create_engine
    from sqlalchemy.exc import OperationalError

    worker, job = _worker_and_job(arena_env["ARENA_QUEUE"])
    nowhere = create_engine(f"postgresql+psycopg://arena@127.0.0.1:{free_port()}/arena")
    try:
        with nowhere.connect():
            pass
    except OperationalError:
        with caplog.at_level("ERROR", logger="rq.worker"):
            worker.handle_exception(job, *sys.exc_info())
    [logged] = caplog.records
    message = logged.getMessage()
    assert f"job {job.id} failed: the database did not answer (connection failed:" in message
    assert "Connection refused" in message and "not recorded twice" in message
    assert "Traceback" not in caplog.text and "sqlalche.me" not in caplog.text


def test_the_ratings_lock_of_a_killed_worker_holds_the_others_up_seconds_not_minutes(
    arena_env: dict[str, str],
) -> None:
    # A worker SIGKILLed in its rating pass left the lock for 120 s, and every worker's next
    # set waited for it: tournaments stood still for two minutes with nothing in any log.
    from runner import redis_conn
    from runner.jobs import RATINGS_LOCK_TTL, ratings_lock

    ruleset = f"test-{arena_env['ARENA_QUEUE']}"  # a lock of this test's own
    key = f"arena:lock:ratings:{ruleset}"
    holder = (
        "import os, sys\n"
        "from runner import redis_conn\n"
        "from runner.jobs import ratings_lock\n"
        "held = ratings_lock(redis_conn.connect(), sys.argv[1])\n"
        "held.__enter__()\n"
        "os.kill(os.getpid(), 9)\n"
    )
    killed = subprocess.run([sys.executable, "-c", holder, ruleset], cwd=ROOT)
    assert killed.returncode == -signal.SIGKILL
    connection = redis_conn.connect()
    assert 0 < connection.pttl(key) <= RATINGS_LOCK_TTL * 1000 <= 15_000
    with ratings_lock(connection, ruleset):  # waits out the dead holder's lock
        connection.delete(key)  # as if this pass outlasted the lock: it ends quietly still
    assert not connection.exists(key)


def test_a_bot_lock_lives_while_its_set_plays_and_briefly_after_its_holder_dies(
    arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its time to live was 30 minutes, so that it would outlast any set: a worker killed mid-set
    # kept the bot's other sets of an exclusive tournament waiting that long.
    from runner import jobs, redis_conn

    connection = redis_conn.connect()
    ref = f"test-{arena_env['ARENA_QUEUE']}@1"  # a lock of this test's own
    key = f"arena:lock:bot:{ref}"
    monkeypatch.setattr(jobs, "BOT_LOCK_TTL", 1.5)
    with jobs._bot_lock([ref]):
        time.sleep(3)  # twice its time to live: renewed meanwhile
        assert 0 < connection.pttl(key) <= 1500
    assert not connection.exists(key)
    monkeypatch.undo()
    assert jobs.BOT_LOCK_TTL <= 60  # what a killed holder leaves behind expires that soon


def test_workers_say_in_one_line_that_the_database_does_not_answer(tmp_path: Path) -> None:
    # The reconciler's pass and each worker process printed a traceback, every few seconds.
    from tests.runner.conftest import free_port

    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/arena"
    env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path), "ARENA_DATABASE_URL": url}
    log = tmp_path / "workers.log"
    with log.open("w") as out:
        argv = [*ARENA, "worker", "--count", "1", "--reconcile-every", "1"]
        workers = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "worker 0 exited (code 1)" in log.read_text(), 30, "a worker to exit")
    finally:
        workers.send_signal(signal.SIGTERM)
        workers.wait(30)
    text = log.read_text()
    assert f"reconciler: cannot reach the database at {url}" in text
    assert f"] arena.worker: cannot reach the database at {url}" in text  # the worker itself
    assert "Traceback" not in text, text


def test_a_rating_pass_without_redis_is_deferred_in_words() -> None:
    # After its set was recorded: the job failed with a traceback; now with the arena's own
    # error (one line in the worker's log), and its retry rates the games.
    from runner.jobs import RatingsDeferred, ratings_lock
    from tests.runner.conftest import free_port

    gone = redis.Redis(port=free_port(), socket_connect_timeout=1)
    deferred = pytest.raises(RatingsDeferred, match="no rating pass of standard: Redis did not")
    with deferred, ratings_lock(gone, "standard"):
        pass


def test_the_reconciler_leaves_a_set_to_the_run_that_still_plays_it(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # Redis restarted without its data: the job of a set being played is gone. Queued again, a
    # second run took the game over and played the whole set again.
    from runner import redis_conn
    from runner.reconcile import reconcile

    register("random", "greedy")
    _tid, [set_id] = _tournament(arena_env)
    connection = redis_conn.connect()
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        with db.session() as session:
            assert repo.mark_set_running(session, set_id)  # a sign of life now
        report = reconcile(db, connection)
        assert (report.enqueued, report.playing) == ([], [set_id])
        _outlive_its_run(db, set_id)  # that run died as well
        assert reconcile(db, connection).enqueued == [set_id]


def _outlive_its_run(db: Database, set_id: str) -> None:
    """Make the last sign of life of the set's run as old as a dead run's."""
    from sqlalchemy import update

    from arena.storage.models import GameSet
    from arena.storage.values import SET_BEAT_FRESH

    old = datetime.now(UTC) - SET_BEAT_FRESH - timedelta(seconds=1)
    with db.session() as session:
        session.execute(update(GameSet).where(GameSet.id == set_id).values(beat=old))
        session.commit()


def test_the_run_playing_a_set_gives_signs_of_life(
    arena_env: dict[str, str], register: Callable[..., list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner import tournament
    from runner.tournament import run_game_set

    monkeypatch.setattr(tournament, "SET_BEAT_S", 0.2)
    register("slow", "random")
    _tid, [set_id] = _tournament(arena_env)
    played: list[object] = []

    def beat() -> datetime | None:
        with db.session() as session:
            return repo.get_game_set(session, set_id).beat

    with _as_a_worker(arena_env) as (db, client):
        thread = threading.Thread(target=lambda: played.append(run_game_set(db, set_id, client)))
        thread.start()
        wait_for(lambda: game_is_open(client, repo.game_id(set_id, 0)), 30, "the first game")
        first = beat()
        assert first is not None
        wait_for(lambda: (beat() or first) > first, 10, "a later sign of life")
        thread.join(60)
    assert played and getattr(played[0], "recorded", False)


def test_a_worker_busy_through_a_redis_restart_is_listed_again_at_its_next_heartbeat(
    arena_env: dict[str, str],
) -> None:
    # RQ registers a worker only as it starts: the operator's `rq info` lost a worker busy
    # while Redis restarted, for as long as it ran.
    from rq import Worker
    from rq.worker import WorkerStatus

    from runner import redis_conn
    from runner.worker import make_worker

    server = RedisServer()
    server.start()
    try:
        connection = redis_conn.connect(server.url)
        worker = make_worker(connection, arena_env["ARENA_QUEUE"])
        worker.register_birth()
        worker.set_state(WorkerStatus.BUSY)
        assert [w.name for w in Worker.all(connection=connection)] == [worker.name]
        server.kill()  # no persistence: it comes back empty
        server.start()
        assert Worker.all(connection=connection) == []
        with connection.pipeline() as pipeline:  # as RQ's heartbeats mid-job send it
            worker.heartbeat(pipeline=pipeline)
            pipeline.execute()
        [listed] = Worker.all(connection=connection)
        assert (listed.name, listed.get_state()) == (worker.name, WorkerStatus.BUSY)
        assert listed.queue_names() == [arena_env["ARENA_QUEUE"]]
    finally:
        server.kill()


def test_workers_stop_for_good_once_a_newer_arena_upgrades_the_database(
    arena_env: dict[str, str], register: Callable[..., list[str]], workers: Any
) -> None:
    # A worker of schema 1 went on after an upgrade to 2 and rated every game it stored again.
    # A worker now checks the schema before each set: it leaves the set untouched and stops,
    # and its supervisor stops too (starting it again would not help).
    import sqlite3

    from arena.storage import SCHEMA_VERSION
    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_set

    register("random", "greedy")
    workers.start(count=1, reconcile_every=3600)  # the reconciler enqueues nothing after this
    wait_for(lambda: "Listening on" in workers.log(), 30, "the worker to start")
    _tid, [set_id] = _tournament(arena_env)
    path = arena_env["ARENA_DATABASE_URL"].removeprefix("sqlite:///")
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = 999")  # a newer arena's upgrade
    enqueue_game_set(arena_queue(redis_conn.connect(), arena_env["ARENA_QUEUE"]), set_id)
    assert workers.process.wait(timeout=60) == 2
    log = workers.log()
    assert "database schema is version 999, newer than this arena's" in log
    assert "a newer arena has upgraded the database; stopping this arena's workers" in log
    with contextlib.closing(sqlite3.connect(path)) as conn:
        row = conn.execute("SELECT state, attempts FROM game_sets WHERE id = ?", (set_id,))
        assert row.fetchone() == ("queued", 0)  # left as it was, for the new arena's workers
    # Started again, the worker refuses at once, saying why.
    again = subprocess.run(
        [*ARENA, "worker"],
        env={**os.environ, **arena_env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert again.returncode == 2
    assert "newer than this arena's" in again.stderr and "restore the backup" in again.stderr
    # A burst worker (no supervisor) refuses the same way, before it takes the set off the
    # queue (it took it, to leave it queued in the database only).
    queue = arena_queue(redis_conn.connect(), arena_env["ARENA_QUEUE"])
    enqueue_game_set(queue, set_id)
    burst = _burst_worker(arena_env, timeout=60)
    assert burst.returncode == 2 and "restore the backup" in burst.stderr, burst.stderr[-2000:]
    assert queue.job_ids == [set_id]
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:  # for the fixtures' clean-up
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


def test_a_worker_refuses_a_job_that_is_not_an_arena_job(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # A process bot that finds Redis can queue a job; RQ would import and run what it names.
    from rq import Callback, Retry
    from rq.job import JobStatus

    from runner import redis_conn
    from runner.queue import arena_queue

    planted = tmp_path / "planted"
    queue = arena_queue(redis_conn.connect())
    job = queue.enqueue(
        "os.system", f"touch {planted}", on_failure=Callback("os.system"), retry=Retry(max=3)
    )
    # An arena job's function, with a callback RQ would import and call after it.
    hooked = queue.enqueue(
        "runner.jobs.run_game_set", "no-such-set", on_failure=Callback("builtins.print")
    )
    burst = _burst_worker(arena_env, timeout=120)
    assert burst.returncode == 0, burst.stderr[-2000:]
    assert not planted.exists()
    assert job.get_status(refresh=True) == JobStatus.FAILED
    assert (
        f"job {job.id} calls os.system, which is not an arena job; refused without running it"
        in burst.stderr
    ), burst.stderr[-2000:]
    assert hooked.get_status(refresh=True) == JobStatus.FAILED
    assert f"job {hooked.id} calls builtins.print (as a callback), which is not" in burst.stderr
    assert "<Job " not in burst.stderr  # print was not called with the job
