"""A database that goes away while a set's games are played costs neither the games nor an
attempt: storing them waits for it; one that is away as a worker takes a set costs the set a
wait, not RQ's retries (real PostgreSQL, its role refused logins for a while)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine, create_engine, make_url, text

from arena.gamemaster.client import GameMasterClient
from arena.storage import open_database, repo
from runner.tournament import SetOutcome, create_tournament, run_game_set
from tests.conftest import POSTGRES_URL, _require_postgres
from tests.runner.conftest import ARENA, QUICK, ROOT, Workers, game_is_open, wait_for


@pytest.fixture
def own_role() -> Iterator[tuple[Engine, str]]:
    """A PostgreSQL role of the test's own with a schema of its own, and an admin engine."""
    _require_postgres()
    role = f"arena_outage_{uuid.uuid4().hex[:8]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
        conn.execute(text(f'CREATE SCHEMA "{role}" AUTHORIZATION "{role}"'))
    try:
        yield admin, role
    finally:
        _logins(admin, role, allowed=True)
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{role}" CASCADE'))
        _logins(admin, role, allowed=False)  # ends the test's sessions: a role with some stays
        with admin.connect() as conn:
            conn.execute(text(f'DROP ROLE "{role}"'))
        admin.dispose()


def _logins(admin: Engine, role: str, *, allowed: bool) -> None:
    """Let the role log in again, or refuse it and end its sessions (the database "went away")."""
    with admin.connect() as conn:
        conn.execute(text(f'ALTER ROLE "{role}" {"LOGIN" if allowed else "NOLOGIN"}'))
        if not allowed:
            conn.execute(
                text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :r"),
                {"r": role},
            )


def _own_url(role: str) -> str:
    """The test's PostgreSQL URL as `role`, in the role's own schema."""
    return (
        make_url(POSTGRES_URL)
        .set(username=role)
        .update_query_dict({"options": f"-csearch_path={role}"})
        .render_as_string(hide_password=False)
    )


@pytest.fixture
def on_own_role(
    own_role: tuple[Engine, str], arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Engine, str, str]]:
    """The test's arena on PostgreSQL as its own role, whose logins the test can refuse:
    (admin engine, role, URL). The other fixtures clean up the SQLite database they made."""
    admin, role = own_role
    url = _own_url(role)
    sqlite_url = arena_env["ARENA_DATABASE_URL"]
    arena_env["ARENA_DATABASE_URL"] = url
    monkeypatch.setenv("ARENA_DATABASE_URL", url)
    yield admin, role, url
    arena_env["ARENA_DATABASE_URL"] = sqlite_url


def test_played_games_wait_for_a_database_that_went_away(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    on_own_role: tuple[Engine, str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin, role, url = on_own_role
    register("slow", "random")
    with open_database(url) as db, GameMasterClient(arena_env["ARENA_GAME_MASTER"]) as client:
        t = create_tournament(db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1)
        with db.session() as session:
            [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
        played: list[SetOutcome] = []
        worker = threading.Thread(target=lambda: played.append(run_game_set(db, set_id, client)))
        worker.start()
        last_game = repo.game_id(set_id, 1)
        wait_for(lambda: game_is_open(client, last_game), 60, "the set's second game")
        _logins(admin, role, allowed=False)
        client.await_game(last_game, timeout=120)
        wait_for(lambda: "storing again" in caplog.text, 60, "a try at storing the games")
        _logins(admin, role, allowed=True)
        worker.join(120)
        [outcome] = played
        assert outcome.recorded and outcome.state == "done" and outcome.attempts == 1
        with db.session() as session:
            assert len(repo.list_games(session, tournament_id=t.id)) == 2


def test_a_set_taken_while_the_database_is_away_waits_for_it(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    on_own_role: tuple[Engine, str, str],
    workers: Workers,
) -> None:
    # A worker that found the database away as it took a set failed the job at once, and RQ's
    # retries with it: a tournament's whole queue went to RQ's failed jobs within a second, a
    # page of traceback per try, until the database answered and the reconciler queued it all
    # again. Now the set waits for the database, queued and its attempts untouched.
    from runner import redis_conn
    from runner.queue import LIVE_STATES, arena_queue, enqueue_game_sets, fetch_job

    admin, role, url = on_own_role
    register("greedy", "random")
    with open_database(url) as db:
        connection = redis_conn.connect()
        workers.env["ARENA_DATABASE_URL"] = url
        # Its reconciler passes once, at start: the sets are queued here, not by it.
        workers.start(count=1, reconcile_every=3600)
        wait_for(lambda: "Listening on" in workers.log(), 60, "a worker on the queue")
        t = create_tournament(db, format="round-robin", bots=None, sets=2, ruleset=QUICK, seed=1)
        with db.session() as session:
            set_ids = [s.id for s in repo.list_game_sets(session, t.id)]
        _logins(admin, role, allowed=False)
        enqueue_game_sets(arena_queue(connection), set_ids)
        time.sleep(4)  # the worker takes a set
        for set_id in set_ids:
            job = fetch_job(connection, set_id)
            assert job is not None and job.get_status() in LIVE_STATES, set_id
        assert "Traceback" not in workers.log()
        assert "waits: the database" in workers.log()
        _logins(admin, role, allowed=True)

        def settled() -> bool:
            with db.session() as session:
                sets = repo.list_game_sets(session, t.id)
                return all(s.state == "done" for s in sets)

        wait_for(settled, 120, "both sets played once the database answers")
        with db.session() as session:
            assert [s.attempts for s in repo.list_game_sets(session, t.id)] == [1, 1]
            assert len(repo.list_games(session, tournament_id=t.id)) == 4
        assert "the database answers again" in workers.log()


def test_a_command_whose_database_goes_away_says_so_in_a_line(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    on_own_role: tuple[Engine, str, str],
) -> None:
    # `arena tournament status --follow` across a database restart (or its connection ended)
    # died with a page of SQLAlchemy traceback, the SQL of its query in it.
    admin, role, url = on_own_role
    register("greedy", "random")
    with open_database(url) as db:
        t = create_tournament(db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1)
    follow = subprocess.Popen(
        [*ARENA, "tournament", "status", t.id, "--follow", "--interval", "0.2"],
        env={**os.environ, **arena_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline().startswith(f"tournament {t.id}:")
        _logins(admin, role, allowed=False)
        out, err = follow.communicate(timeout=60)
    finally:
        follow.kill()
    assert follow.returncode == 2, err
    assert "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith("arena tournament: the database at postgresql+psycopg://")
    assert "did not answer (" in line  # the driver's reason: its connection ended, say
    assert line.endswith("try again once it answers")
