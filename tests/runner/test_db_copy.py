"""`arena db copy --to URL` on databases a real tournament filled (its games played by real
agents through the game master): SQLite to PostgreSQL and back, row for row."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from arena.gamemaster.client import GameMasterClient
from arena.registry import register_bot
from arena.storage import SCHEMA_VERSION, Database, open_database, repo
from arena.storage.copy import TABLES
from arena.storage.models import Fault, RatingHistory
from tests.runner.conftest import QUICK, SAMPLE_BOTS, Workers, arena, free_port, wait_for


def _play(db: Database, env: dict[str, str], bots: list[str], sets: int = 1) -> str:
    """A round robin of `bots`, every set played here as a worker plays it."""
    from runner.tournament import create_tournament, run_game_set

    t = create_tournament(db, format="round-robin", bots=bots, sets=sets, ruleset=QUICK, seed=5)
    with db.session() as session:
        set_ids = [s.id for s in repo.list_game_sets(session, t.id)]
    with GameMasterClient(env["ARENA_GAME_MASTER"]) as client:
        for set_id in set_ids:
            assert run_game_set(db, set_id, client).state == "done"
    return t.id


@pytest.fixture
def played(arena_env: dict[str, str], register: Callable[..., list[str]]) -> str:
    """The arena's SQLite database after a round robin of three bots, one of which crashes
    (faults, forfeits), all rated; returns its URL."""
    register("random", "greedy", "crasher")
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db:
        _play(db, arena_env, ["random@1", "greedy@1", "crasher@1"])
        with db.session() as session:
            assert session.query(Fault).count() > 0
            assert session.query(RatingHistory).count() == 12  # 6 games, 2 versions each
    return arena_env["ARENA_DATABASE_URL"]


def _rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with open_database(url) as db, db.engine.connect() as conn:
        return {
            t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in TABLES
        }


def _copy(env: dict[str, str], source: str, target: str) -> Any:
    return arena({**env, "ARENA_DATABASE_URL": source}, "db", "copy", "--to", target)


def _shown(env: dict[str, str], url: str, *args: str) -> str:
    done = arena({**env, "ARENA_DATABASE_URL": url}, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_played_tournament_goes_to_postgresql_and_back_row_for_row(
    played: str, arena_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> None:
    back = f"sqlite:///{tmp_path / 'back' / 'arena.db'}"
    there = _copy(arena_env, played, postgres_url)
    assert there.returncode == 0, there.stderr
    assert "  games                   6 rows" in there.stdout
    assert "  rating_history         12 rows" in there.stdout
    assert f"copied {sum(len(r) for r in _rows(played).values())} rows into " in there.stdout
    again = _copy(arena_env, postgres_url, back)
    assert again.returncode == 0, again.stderr
    source = _rows(played)
    assert all(source[t.name] for t in TABLES), "every table has rows to compare"
    assert _rows(postgres_url) == source
    assert _rows(back) == source
    for command in (("ratings", "--ruleset", QUICK), ("tournament", "list")):
        shown = _shown(arena_env, played, *command)
        assert _shown(arena_env, postgres_url, *command) == shown
        assert _shown(arena_env, back, *command) == shown
    with open_database(postgres_url) as db:
        assert db.schema_version() == SCHEMA_VERSION


def test_after_a_copy_to_postgresql_new_bots_games_and_faults_take_fresh_ids(
    played: str, arena_env: dict[str, str], postgres_url: str
) -> None:
    assert _copy(arena_env, played, postgres_url).returncode == 0
    before = _rows(postgres_url)
    with open_database(postgres_url) as db:
        with db.session() as session:
            stdio = register_bot(session, SAMPLE_BOTS / "stdio")
            assert stdio.id == max(r[0] for r in before["bot_versions"]) + 1
            assert stdio.bot_id == max(r[0] for r in before["bots"]) + 1
        _play(db, arena_env, [stdio.ref, "crasher@1"])
    after = _rows(postgres_url)
    for table in ("faults", "rating_history"):  # ids from their sequence, after the copied
        assert after[table][: len(before[table])] == before[table]
        assert after[table][len(before[table])][0] == before[table][-1][0] + 1
    for table in ("tournaments", "game_sets", "games"):
        assert all(row in after[table] for row in before[table]), table
        assert len(after[table]) > len(before[table]), table


def test_a_target_holding_arena_rows_is_refused_and_left_as_it_was(
    played: str, arena_env: dict[str, str], tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    assert _copy(arena_env, played, target).returncode == 0  # SQLite to SQLite
    assert (tmp_path / "copy.db").stat().st_mode & 0o777 == 0o600
    copied = _rows(target)
    refused = _copy(arena_env, played, target)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"arena db: {target} already holds arena data (rows in bots, tournaments, bot_versions, "
        "game_sets, ratings, games, faults, rating_history): copy only into an empty database; "
        "nothing was changed there\n"
    )
    assert _rows(target) == copied


def test_a_copy_into_the_database_copied_is_refused_saying_so(
    played: str, arena_env: dict[str, str]
) -> None:
    before = _rows(played)
    refused = _copy(arena_env, played, played)
    assert refused.returncode == 2
    assert f"arena db: --to {played} is the database being copied" in refused.stderr
    assert _rows(played) == before


def test_an_empty_source_is_refused_naming_it(arena_env: dict[str, str], tmp_path: Path) -> None:
    # Run from another directory, the command copied the empty database it made there:
    # "copied 0 rows", exit 0.
    source = arena_env["ARENA_DATABASE_URL"]
    done = _copy(arena_env, source, f"sqlite:///{tmp_path / 'copy.db'}")
    assert done.returncode == 2
    assert f"arena db: {source} holds no arena data: is it the database you meant" in done.stderr


def test_a_copy_while_workers_run_is_refused(
    arena_env: dict[str, str], workers: Workers, tmp_path: Path
) -> None:
    # What they recorded once the copy had begun was not in it: lost, once the arena moved.
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    workers.start(count=1)
    said: list[str] = []

    def refused() -> bool:  # the check comes first; until the worker is up, the empty source
        done = _copy(arena_env, arena_env["ARENA_DATABASE_URL"], target)
        said[:] = [done.stderr]
        return done.returncode == 2 and "worker(s) take sets" in done.stderr

    wait_for(refused, 60, "the worker to be seen")
    queue = arena_env["ARENA_QUEUE"]
    assert said[0].startswith(f"arena db: 1 worker(s) take sets from queue {queue!r} on "), said
    assert "stop them first" in said[0]
    workers.stop()
    done = _copy(arena_env, arena_env["ARENA_DATABASE_URL"], target)
    assert "holds no arena data" in done.stderr, done.stderr  # no longer refused for workers


def test_a_row_postgresql_refuses_midway_leaves_it_without_a_row(
    played: str, arena_env: dict[str, str], postgres_url: str
) -> None:
    # SQLite keeps a string longer than its column allows; PostgreSQL refuses it, after the
    # bots, tournaments, sets and games have gone in.
    with sqlite3.connect(played.removeprefix("sqlite:///")) as conn:
        conn.execute(
            "UPDATE faults SET kind = ? WHERE id = (SELECT max(id) FROM faults)", ["x" * 40]
        )
    failed = _copy(arena_env, played, postgres_url)
    assert failed.returncode == 2
    assert "refused a row of table faults after" in failed.stderr
    assert "value too long for type character varying(32)" in failed.stderr
    assert failed.stderr.endswith("nothing was kept there\n") and failed.stderr.count("\n") == 1
    assert all(rows == [] for rows in _rows(postgres_url).values())
    with open_database(postgres_url) as db, db.engine.begin() as conn:
        conn.execute(text("ALTER TABLE faults ALTER COLUMN kind TYPE varchar(64)"))
    assert _copy(arena_env, played, postgres_url).returncode == 0  # the same target, again


def test_a_row_sqlite_refuses_midway_leaves_it_without_a_row(
    played: str, arena_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> None:
    assert _copy(arena_env, played, postgres_url).returncode == 0
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    with open_database(target) as db, db.engine.begin() as conn:  # the last table copied
        conn.execute(
            text(
                "CREATE TRIGGER no_history BEFORE INSERT ON rating_history "
                "BEGIN SELECT RAISE(ABORT, 'no history here'); END"
            )
        )
    failed = _copy(arena_env, postgres_url, target)
    assert failed.returncode == 2
    assert "refused a row of table rating_history after 0 of its rows" in failed.stderr
    assert "(no history here)" in failed.stderr
    assert all(rows == [] for rows in _rows(target).values())


def test_a_source_newer_than_this_arena_is_refused(
    played: str, arena_env: dict[str, str], tmp_path: Path
) -> None:
    def stamp(version: int) -> None:
        with sqlite3.connect(played.removeprefix("sqlite:///")) as conn:
            conn.execute("UPDATE schema_version SET version = ?", [version])

    target = tmp_path / "copy.db"
    stamp(SCHEMA_VERSION + 1)
    try:
        refused = _copy(arena_env, played, f"sqlite:///{target}")
    finally:
        stamp(SCHEMA_VERSION)  # for the teardown, which opens it
    assert refused.returncode == 2
    assert f"newer than this arena's {SCHEMA_VERSION}" in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert not target.exists()


def test_a_target_newer_than_this_arena_is_refused(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    with open_database(target) as db, db.engine.begin() as conn:
        conn.execute(text("UPDATE schema_version SET version = :v"), {"v": SCHEMA_VERSION + 1})
    refused = _copy(arena_env, arena_env["ARENA_DATABASE_URL"], target)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"arena db: cannot copy into {target}: its database schema is version "
        f"{SCHEMA_VERSION + 1}, newer than this arena's {SCHEMA_VERSION}: upgrade the arena "
        "package (or restore the backup taken before the upgrade)\n"
    )


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("nonsense://x", "cannot use database URL nonsense://x: "),
        ("postgresql+psycopg://u:secret@127.0.0.1:{port}/db", "cannot reach the database at "),
        ("sqlite://", "cannot copy into sqlite://: a database in memory is gone when the copy"),
        ("sqlite:///:memory:", "cannot copy into sqlite:///:memory:: a database in memory is"),
    ],
)
def test_a_target_that_cannot_be_used_is_one_line_naming_it(
    arena_env: dict[str, str], target: str, said: str
) -> None:
    done = _copy(arena_env, arena_env["ARENA_DATABASE_URL"], target.format(port=free_port()))
    assert done.returncode == 2
    assert done.stderr.startswith(f"arena db: {said}") and done.stderr.count("\n") == 1
    assert "secret" not in done.stderr
    assert "--to" in done.stderr and "ARENA_DATABASE_URL" not in done.stderr


def test_a_source_of_an_older_schema_is_upgraded_first_then_copied(
    played: str, arena_env: dict[str, str], tmp_path: Path
) -> None:
    with sqlite3.connect(played.removeprefix("sqlite:///")) as conn:  # as version 2 left it
        conn.execute("ALTER TABLE game_sets DROP COLUMN beat")
        conn.execute("UPDATE schema_version SET version = 2")
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    done = _copy(arena_env, played, target)
    assert done.returncode == 0, done.stderr
    assert f"upgrading the database schema from version 2 to {SCHEMA_VERSION}" in done.stderr
    assert _rows(target) == _rows(played)
    with open_database(target) as db:
        assert db.schema_version() == SCHEMA_VERSION
