"""A database that goes away while a set's games are played costs neither the games nor an
attempt: storing them waits for it (real PostgreSQL, its role refused logins for a while)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine, create_engine, make_url, text

from arena.gamemaster.client import GameMasterClient
from arena.storage import open_database, repo
from runner.tournament import SetOutcome, create_tournament, run_game_set
from tests.conftest import POSTGRES_URL, _require_postgres
from tests.runner.conftest import QUICK, game_is_open, wait_for


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


def test_played_games_wait_for_a_database_that_went_away(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    own_role: tuple[Engine, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin, role = own_role
    url = (
        make_url(POSTGRES_URL)
        .set(username=role)
        .update_query_dict({"options": f"-csearch_path={role}"})
        .render_as_string(hide_password=False)
    )
    sqlite_url = arena_env["ARENA_DATABASE_URL"]
    arena_env["ARENA_DATABASE_URL"] = url
    monkeypatch.setenv("ARENA_DATABASE_URL", url)
    try:
        register("slow", "random")
        with open_database(url) as db, GameMasterClient(arena_env["ARENA_GAME_MASTER"]) as client:
            t = create_tournament(
                db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1
            )
            with db.session() as session:
                [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
            played: list[SetOutcome] = []
            worker = threading.Thread(
                target=lambda: played.append(run_game_set(db, set_id, client))
            )
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
    finally:
        arena_env["ARENA_DATABASE_URL"] = sqlite_url  # for the fixture's clean-up
