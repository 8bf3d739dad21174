"""Storage on SQLite and PostgreSQL: schema, bots, tournaments, exactly-once results, ratings."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import IntegrityError

from arena import cli
from arena.storage import (
    SCHEMA_VERSION,
    AuthorMismatch,
    BadResult,
    Database,
    Game,
    NotFound,
    SchemaTooNew,
    VersionExists,
    open_database,
    repo,
)
from arena.storage import database as database_module
from arena.storage.repo import FaultInfo, GameResult, HistoryEntry, PlannedSet, RatingRow

RECORD = (
    '{"record": "sixty-three/1", "ruleset": "standard", "game_id": "x"}\n'
    '{"event": "action", "hand": 1, "seat": 0, "action": "bid 45", "note": "héllo ♠"}\n'
    '{"event": "game_end", "scores": [255, 120], "winner": 0, "reason": "target"}\n'
).encode()


def _add(db: Database, name: str, version: str = "1", author: str = "alice") -> int:
    with db.session() as s:
        row = repo.add_bot_version(
            s,
            name=name,
            version=version,
            author=author,
            language="python",
            manifest={"name": name, "version": version},
            directory=f"/bots/{name}",
            command=["python3", "bot.py"],
        )
        return row.id


def _tournament(db: Database, sets: int = 2, *, tid: str = "t-20261129-abcd") -> str:
    _add(db, "alpha")
    _add(db, "beta", author="bob")
    plan = [PlannedSet("alpha@1", "beta@1", seed=1000 + i, first_dealer=i % 4) for i in range(sets)]
    with db.session() as s:
        t = repo.create_tournament(
            s,
            format="round-robin",
            ruleset="standard",
            seed=42,
            sets_per_pair=sets,
            sets=plan,
            limits={"decision_ms": 2000},
            tournament_id=tid,
        )
        return t.id


def _games(
    winner0: int | None = 0, winner1: int | None = 1, record: bytes = RECORD
) -> list[GameResult]:
    a, b = "alpha@1", "beta@1"
    return [
        GameResult(
            game_index=0,
            seats=(a, b, a, b),
            scores=(255, 120),
            winner=winner0,
            reason="target",
            hands=12,
            record=record,
            decisions=300,
            think_ms=(10, 20, 30, 40),
            faults=(FaultInfo(seat=1, kind="timeout", hand=3, detail="2000 ms", stderr="slow"),),
        ),
        GameResult(
            game_index=1,
            seats=(b, a, b, a),
            scores=(90, 251),
            winner=winner1,
            reason="target",
            hands=11,
            record=record + b"\n",
        ),
    ]


# --- schema ----------------------------------------------------------------------------


def test_open_creates_every_table_at_the_latest_schema_version(database: Database) -> None:
    tables = set(inspect(database.engine).get_table_names())
    assert {
        "schema_version",
        "bots",
        "bot_versions",
        "tournaments",
        "game_sets",
        "games",
        "faults",
        "ratings",
        "rating_history",
    } <= tables
    assert database.schema_version() == SCHEMA_VERSION


def test_dashboard_query_indexes_exist(database: Database) -> None:
    inspector = inspect(database.engine)
    columns = {ix["name"]: ix["column_names"] for ix in inspector.get_indexes("games")}
    assert columns["ix_games_finished"] == ["finished", "id"]  # a page is read off it, unsorted
    assert columns["ix_games_seat2"] == ["seat2_id", "finished", "id"]
    assert "ix_faults_bot_version" in {ix["name"] for ix in inspector.get_indexes("faults")}


def test_a_new_sqlite_database_is_for_its_user_alone(tmp_path: Path) -> None:
    # A mistyped ARENA_DATABASE_URL made a new directory (0755) and database (0644) that any
    # user could read: the database knows every hand not yet played.
    path = tmp_path / "typo" / "dir" / "arena.db"
    with open_database(f"sqlite:///{path}") as db:
        _add(db, "alpha")  # a write: the journal files are made too
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for made in path.parent.iterdir():
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made.name


def test_opening_twice_keeps_schema_and_data(database_url: str) -> None:
    first = open_database(database_url)
    _add(first, "alpha")
    first.dispose()
    second = open_database(database_url)
    try:
        assert second.schema_version() == SCHEMA_VERSION
        with second.session() as s:
            assert [b.name for b in repo.list_bots(s)] == ["alpha"]
            rows = s.execute(text("SELECT count(*) FROM schema_version")).scalar()
            assert rows == 1
    finally:
        second.dispose()


def test_upgrade_runs_only_the_missing_steps_once(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_database(database_url).dispose()
    calls: list[int] = []

    def add_notes(conn: Connection) -> None:
        calls.append(1)
        conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY)"))

    steps: list[Callable[[Connection], None]] = [*database_module.MIGRATIONS, add_notes]
    monkeypatch.setattr(database_module, "MIGRATIONS", steps)
    monkeypatch.setattr(database_module, "SCHEMA_VERSION", len(steps))
    for _ in range(2):
        db = open_database(database_url)
        assert db.schema_version() == len(steps)
        assert "notes" in inspect(db.engine).get_table_names()
        db.dispose()
    assert calls == [1]


def _upgraded_from(database_url: str, version: int, *undo: str) -> tuple[Database, str]:
    """A database with a tournament, taken back to schema `version` by the `undo` statements
    (as one written then), and opened again: upgraded. Its id too."""
    db = open_database(database_url)
    tid = _tournament(db, sets=1)
    with db.engine.begin() as conn:
        for statement in undo:
            conn.execute(text(statement))
        conn.execute(text(f"UPDATE schema_version SET version = {version}"))
    db.dispose()
    return open_database(database_url), tid


def test_the_upgrade_to_version_3_adds_a_sets_sign_of_life(database_url: str) -> None:
    db, tid = _upgraded_from(database_url, 2, "ALTER TABLE game_sets DROP COLUMN beat")
    try:
        assert db.schema_version() == SCHEMA_VERSION
        columns = {c["name"] for c in inspect(db.engine).get_columns("game_sets")}
        assert "beat" in columns
        with db.session() as s:
            set_id = f"{tid}-set-00000"
            assert repo.mark_set_running(s, set_id)
            first = repo.get_game_set(s, set_id).beat
            assert first is not None and first.tzinfo is not None
            assert repo.beat_set(s, set_id, 1)
            assert not repo.beat_set(s, set_id, 2)  # not the run playing it
            s.expire_all()
            assert repo.get_game_set(s, set_id).beat >= first
    finally:
        db.dispose()


def test_the_upgrade_to_version_6_ends_the_game_list_indexes_with_finished_and_id(
    database_url: str,
) -> None:
    # Game lists are newest first, ties broken by id: without the id in the index every deep
    # page sorted all games (300 ms for page 2000 of 100,000 games, bench/dashboard.py).
    version_5 = [("ix_games_finished", "finished")] + [
        (f"ix_games_seat{i}", f"seat{i}_id") for i in range(4)
    ]
    undo = [f"DROP INDEX {name}" for name, _ in version_5] + ["DROP INDEX ix_game_sets_pairs"]
    undo += [f"CREATE INDEX {name} ON games ({column})" for name, column in version_5]
    db, _tid = _upgraded_from(database_url, 5, *undo)
    try:
        assert db.schema_version() == SCHEMA_VERSION
        indexes = inspect(db.engine).get_indexes("games")
        columns = {ix["name"]: ix["column_names"] for ix in indexes}
        assert columns["ix_games_finished"] == ["finished", "id"]
        assert [columns[f"ix_games_seat{i}"] for i in range(4)] == [
            [f"seat{i}_id", "finished", "id"] for i in range(4)
        ]
        sets = {ix["name"] for ix in inspect(db.engine).get_indexes("game_sets")}
        assert "ix_game_sets_pairs" in sets
    finally:
        db.dispose()


def test_a_newer_schema_is_refused(database: Database) -> None:
    database.check_schema()
    with database.engine.begin() as conn:
        conn.execute(text("UPDATE schema_version SET version = 999"))
    with pytest.raises(SchemaTooNew, match="999"):
        open_database(database.url)
    # A process that opened it before the upgrade finds out as it checks again (workers do,
    # before each game set).
    with pytest.raises(SchemaTooNew, match="upgrade the arena package .or restore the backup"):
        database.check_schema()


@pytest.mark.parametrize("scheme", ["postgres", "postgres+psycopg", "postgresql"])
def test_a_postgres_url_in_any_usual_spelling_opens_postgresql(
    postgres_url: str, scheme: str
) -> None:
    # postgres:// (Heroku's, libpq's) was "not one of the arena's databases"
    url = scheme + postgres_url[postgres_url.index("://") :]
    with open_database(url) as db, db.session() as s:
        assert db.engine.dialect.name == "postgresql" and db.engine.dialect.driver == "psycopg"
        assert s.execute(text("SELECT current_schema()")).scalar_one().startswith("test_")


def test_sqlite_connections_use_wal_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'sub' / 'arena.db'}")
    try:
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    finally:
        db.dispose()


# --- bots ------------------------------------------------------------------------------


def test_bots_are_added_listed_and_disabled(database: Database) -> None:
    _add(database, "beta", author="bob")
    _add(database, "alpha")
    with database.session() as s:
        assert [b.name for b in repo.list_bots(s)] == ["alpha", "beta"]
        repo.set_bot_disabled(s, "beta")
    with database.session() as s:
        assert repo.get_bot(s, "beta").disabled
        assert [b.name for b in repo.list_bots(s, include_disabled=False)] == ["alpha"]
        assert [v.ref for v in repo.active_versions(s)] == ["alpha@1"]
        repo.set_bot_disabled(s, "beta", False)
        assert [v.ref for v in repo.active_versions(s)] == ["alpha@1", "beta@1"]


def test_a_new_version_is_a_new_row_and_the_old_one_stays(database: Database) -> None:
    first = _add(database, "alpha", "1")
    second = _add(database, "alpha", "2")
    assert first != second
    with database.session() as s:
        bot = repo.get_bot(s, "alpha")
        assert [v.version for v in bot.versions] == ["1", "2"]
        assert bot.latest is not None and bot.latest.ref == "alpha@2"
        assert repo.get_version(s, "alpha@1").id == first
        assert repo.get_version(s, second).ref == "alpha@2"
        assert [v.ref for v in repo.active_versions(s, latest_only=False)] == [
            "alpha@1",
            "alpha@2",
        ]


def test_an_existing_version_is_never_overwritten(database: Database) -> None:
    _add(database, "alpha", "1")
    with pytest.raises(VersionExists, match="alpha@1 is already registered.*new version"):
        _add(database, "alpha", "1")


def test_another_authors_bot_name_is_refused(database: Database) -> None:
    _add(database, "alpha", "1", author="alice")
    with pytest.raises(AuthorMismatch, match="belongs to 'alice', not 'mallory'"):
        _add(database, "alpha", "2", author="mallory")


@pytest.mark.parametrize("key", ["ghost@1", "alpha@9", "no-at-sign", 12345])
def test_unknown_versions_are_not_found(database: Database, key: int | str) -> None:
    _add(database, "alpha")
    with database.session() as s, pytest.raises(NotFound):
        repo.get_version(s, key)


@pytest.mark.parametrize(
    ("key", "message", "near"),
    [
        ("Alpha", "no bot named 'Alpha'; did you mean 'alpha'?", True),  # names are case-sensitive
        ("alpah", "no bot named 'alpah'; did you mean 'alpha'?", True),
        ("omega", "no bot named 'omega'", False),
        ("alpha@9", "no bot version 'alpha@9': alpha has version(s) 1, 2", True),
        ("ALPHA@1", "no bot version 'ALPHA@1': no bot named 'ALPHA'; did you mean 'alpha'?", True),
        ("omega@1", "no bot version 'omega@1': no bot named 'omega'", False),
        # A slip in the writing, not a bot missing from this database: the CLI said "write it
        # as name@version in sqlite:///...".
        ("alpha@", "'alpha@' is not a bot version: write it as name@version", True),
    ],
)
def test_a_bot_not_found_names_the_one_likely_meant(
    database: Database, key: str, message: str, near: bool
) -> None:
    _add(database, "alpha", "1")
    _add(database, "alpha", "2")
    _add(database, "beta", author="bob")
    with database.session() as s, pytest.raises(NotFound) as raised:
        repo.get_version(s, key) if "@" in key else repo.get_bot(s, key)
    assert (str(raised.value), raised.value.near) == (message, near)


# --- tournaments -----------------------------------------------------------------------


def test_tournament_sets_get_deterministic_ids_and_are_queued(database: Database) -> None:
    tid = _tournament(database, sets=3)
    with database.session() as s:
        sets = repo.list_game_sets(s, tid)
        assert [g.id for g in sets] == [f"{tid}-set-0000{i}" for i in range(3)]
        assert {g.state for g in sets} == {"queued"}
        assert sets[2].seed == 1002 and sets[2].first_dealer == 2
        assert sets[0].bot_a.ref == "alpha@1" and sets[0].bot_b.ref == "beta@1"
        t = repo.get_tournament(s, tid)
        assert (t.planned_sets, t.state, t.limits) == (3, "queued", {"decision_ms": 2000})


def test_new_tournament_ids_look_like_t_date_suffix() -> None:
    tid = repo.new_tournament_id(datetime(2026, 11, 29, tzinfo=UTC))
    assert tid.startswith("t-20261129-") and len(tid) == len("t-20261129-abcd")


def test_tournament_progress_counts_sets_by_state(database: Database) -> None:
    tid = _tournament(database, sets=4)
    with database.session() as s:
        assert repo.mark_set_running(s, f"{tid}-set-00000")
        assert repo.mark_set_running(s, f"{tid}-set-00001")
        assert repo.mark_set_failed(s, f"{tid}-set-00001", "worker died")
        assert repo.record_game_set_result(s, f"{tid}-set-00000", _games())
        progress = repo.tournament_progress(s, tid)
    assert (progress.total, progress.done, progress.failed, progress.queued) == (4, 1, 1, 2)
    assert not progress.finished


def test_a_running_set_without_a_sign_of_life_for_30_s_counts_as_silent(
    database: Database,
) -> None:
    # Its worker died mid-set (or no worker runs): the set stays "running" until a worker
    # plays it again, and status and dashboard say so instead of an ETA.
    from arena.storage.models import GameSet, utcnow

    tid = _tournament(database, sets=3)
    ids = [f"{tid}-set-{i:05d}" for i in range(3)]
    with database.session() as s:
        assert repo.mark_set_running(s, ids[0])
        assert repo.mark_set_running(s, ids[1])
        assert repo.tournament_progress(s, tid).silent == 0
        s.get(GameSet, ids[1]).beat = utcnow() - timedelta(seconds=31)
        s.commit()
        progress = repo.tournament_progress(s, tid)
        assert (progress.running, progress.silent, progress.queued) == (2, 1, 1)
        assert not progress.stalled  # the other set is being played
        s.get(GameSet, ids[0]).beat = utcnow() - timedelta(seconds=31)
        s.commit()
        progress = repo.tournament_progress(s, tid)
        assert (progress.running, progress.silent) == (2, 2) and progress.stalled
        assert progress.silent_note == (
            "2 running sets with no sign of life for over 30 s: their worker may have died; a "
            "running worker plays them again within a minute (is `arena worker` running?)"
        )
        assert repo.beat_set(s, ids[0], 1)  # its worker was only slow
        assert repo.tournament_progress(s, tid).silent == 1


def test_dropping_unstarted_sets_shrinks_the_plan_and_leaves_started_ones(
    database: Database,
) -> None:
    # A match whose SPRT decided early: the sets it never started leave its plan.
    tid = _tournament(database, sets=4)
    ids = [f"{tid}-set-{i:05d}" for i in range(4)]
    with database.session() as s:
        assert repo.mark_set_running(s, ids[0])
        assert repo.record_game_set_result(s, ids[0], _games())
        assert repo.mark_set_running(s, ids[1])  # a worker has it: it plays on
        assert repo.drop_unstarted_sets(s, tid, ids[1:]) == 2
        assert [g.id for g in repo.list_game_sets(s, tid)] == ids[:2]
        progress = repo.tournament_progress(s, tid)
        assert (progress.total, progress.done, progress.running) == (2, 1, 1)
        assert repo.record_game_set_result(s, ids[1], _games())
        assert repo.tournament_progress(s, tid).finished
        assert repo.drop_unstarted_sets(s, tid, ids) == 0  # done sets stay
        assert repo.get_tournament(s, tid).planned_sets == 2


def test_requeued_failed_sets_start_afresh_and_the_tournament_runs_again(
    database: Database,
) -> None:
    tid = _tournament(database, sets=2)
    ids = [f"{tid}-set-{i:05d}" for i in range(2)]
    with database.session() as s:
        assert repo.mark_set_running(s, ids[0])
        assert repo.record_game_set_result(s, ids[0], _games())
        assert repo.mark_set_running(s, ids[1])
        assert repo.mark_set_failed(s, ids[1], "gave up")
        repo.set_tournament_state(s, tid, "finished")
        assert repo.requeue_failed_sets(s, tid) == [ids[1]]
        again = repo.get_game_set(s, ids[1])
        s.refresh(again)
        assert (again.state, again.attempts, again.error, again.finished) == (
            "queued",
            0,
            None,
            None,
        )
        t = repo.get_tournament(s, tid)
        s.refresh(t)
        assert (t.state, t.finished) == ("running", None)
        assert repo.get_game_set(s, ids[0]).state == "done"
        assert repo.requeue_failed_sets(s, tid) == []


def test_a_done_set_cannot_be_marked_running_or_failed(database: Database) -> None:
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        assert repo.mark_set_running(s, set_id)
        assert repo.mark_set_running(s, set_id)  # a retry after a worker died
        assert repo.record_game_set_result(s, set_id, _games())
        assert not repo.mark_set_running(s, set_id)
        assert not repo.mark_set_failed(s, set_id, "late failure")
        game_set = repo.get_game_set(s, set_id)
        s.refresh(game_set)
        assert (game_set.state, game_set.attempts, game_set.error) == ("done", 2, None)
        with pytest.raises(NotFound):
            repo.mark_set_running(s, "t-nope-set-00000")


def test_a_failed_set_starts_again_only_when_queued_again(database: Database) -> None:
    # A worker paused (SIGSTOP) past its job's heartbeat, resumed after the set was given up
    # on, runs the stale job: it must not start a fourth attempt inside a settled tournament.
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        assert repo.mark_set_running(s, set_id)
        assert repo.mark_set_failed(s, set_id, "gave up after 3 attempts")
        assert not repo.mark_set_running(s, set_id)
        game_set = repo.get_game_set(s, set_id)
        s.refresh(game_set)
        assert (game_set.state, game_set.attempts) == ("failed", 1)
        assert repo.requeue_failed_sets(s, tid) == [set_id]
        assert repo.mark_set_running(s, set_id)


def test_an_attempt_given_back_leaves_the_set_queued_as_before(database: Database) -> None:
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        assert repo.mark_set_running(s, set_id)
        assert repo.mark_set_running(s, set_id)
        assert not repo.give_back_attempt(s, set_id, 1, "stale")  # attempt 2 is under way
        assert repo.give_back_attempt(s, set_id, 2, "the game master went away")
        game_set = repo.get_game_set(s, set_id)
        s.refresh(game_set)
        assert (game_set.state, game_set.attempts, game_set.error) == (
            "queued",
            1,
            "the game master went away",
        )
        assert repo.waiting_reason(s, tid) == "the game master went away"
        assert not repo.give_back_attempt(s, set_id, 1, "twice")  # queued now, not running
        assert repo.mark_set_running(s, set_id)
        assert repo.record_game_set_result(s, set_id, _games())
        assert not repo.give_back_attempt(s, set_id, 2, "after the result")
        assert repo.get_game_set(s, set_id).state == "done"


def test_tournament_state_stamps_start_and_finish(database: Database) -> None:
    tid = _tournament(database, sets=1)
    with database.session() as s:
        t = repo.set_tournament_state(s, tid, "running")
        assert t.started is not None and t.finished is None
        t = repo.set_tournament_state(s, tid, "finished")
        assert t.started is not None and t.finished is not None and t.finished >= t.started


# --- results ---------------------------------------------------------------------------


def test_recording_a_set_twice_records_exactly_one_result(database: Database) -> None:
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        assert repo.record_game_set_result(s, set_id, _games()) is True
    with database.session() as s:
        # A re-run with a different outcome must change nothing.
        assert repo.record_game_set_result(s, set_id, _games(winner0=1, winner1=0)) is False
    with database.session() as s:
        game_set = repo.get_game_set(s, set_id)
        assert game_set.state == "done" and game_set.score_a == 2.0
        games = repo.list_games(s, tournament_id=tid)
        assert sorted(g.id for g in games) == [f"{set_id}-g0", f"{set_id}-g1"]
        assert {g.winner for g in games if g.game_index == 0} == {0}
        assert len(repo.list_faults_for_version(s, "beta@1")) == 1


def test_concurrent_recording_from_two_threads_stores_one_result(database: Database) -> None:
    tid = _tournament(database, sets=3)
    for index in range(3):
        set_id = f"{tid}-set-{index:05d}"
        barrier = threading.Barrier(2)
        outcomes: list[bool | BaseException] = []

        def record(
            set_id: str = set_id,
            barrier: threading.Barrier = barrier,
            outcomes: list[bool | BaseException] = outcomes,
        ) -> None:
            try:
                with database.session() as s:
                    barrier.wait()
                    outcomes.append(repo.record_game_set_result(s, set_id, _games()))
            except BaseException as exc:  # surfaced by the assertion below
                outcomes.append(exc)

        threads = [threading.Thread(target=record) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(outcomes, key=repr) == [False, True], outcomes
    with database.session() as s:
        count = s.execute(text("SELECT count(*) FROM games")).scalar()
        faults = s.execute(text("SELECT count(*) FROM faults")).scalar()
    assert (count, faults) == (6, 3)


def test_the_unique_constraint_backs_up_the_state_check(database: Database) -> None:
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        repo.record_game_set_result(s, set_id, _games())
        game = repo.get_game(s, f"{set_id}-g0")
        s.expunge(game)
        skip = {"id", "record_z"}
        fields = {c.key: getattr(game, c.key) for c in Game.__table__.columns if c.key not in skip}
        fields["record_z"] = zlib.compress(b"x")
        s.add(Game(id="another-id", **fields))
        with pytest.raises(IntegrityError):
            s.commit()


@pytest.mark.parametrize(
    "payload",
    [
        RECORD,
        b"",
        bytes(range(256)) * 50,
        ("\u2660" * 10_000 + "\r\n\n  trailing spaces  ").encode(),
    ],
    ids=["jsonl", "empty", "binary", "unicode-and-whitespace"],
)
def test_records_come_back_byte_for_byte(database: Database, payload: bytes) -> None:
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        assert repo.record_game_set_result(s, set_id, _games(record=payload))
    with database.session() as s:
        assert repo.get_game_record(s, f"{set_id}-g0") == payload
        assert repo.get_game_record(s, f"{set_id}-g1") == payload + b"\n"
        with pytest.raises(NotFound):
            repo.get_game_record(s, f"{set_id}-g7")


def test_stored_games_keep_every_field(database: Database) -> None:
    tid = _tournament(database, sets=1)
    set_id = f"{tid}-set-00000"
    with database.session() as s:
        repo.record_game_set_result(s, set_id, _games(winner1=None))
    with database.session() as s:
        game = repo.get_game(s, f"{set_id}-g0")
        alpha, beta = repo.get_version(s, "alpha@1").id, repo.get_version(s, "beta@1").id
        assert game.seat_ids == (alpha, beta, alpha, beta)
        assert (game.scores, game.winner, game.reason, game.hands) == ((255, 120), 0, "target", 12)
        assert (game.ruleset, game.seed, game.first_dealer) == ("standard", 1000, 0)
        assert (game.decisions, game.think_ms) == (300, (10, 20, 30, 40))
        assert game.finished.tzinfo is not None
        [fault] = game.faults
        assert (fault.seat, fault.bot_version_id, fault.kind, fault.hand) == (1, beta, "timeout", 3)
        assert (fault.detail, fault.stderr) == ("2000 ms", "slow")
        # game 0 won by alpha's team, game 1 without a winner
        assert repo.get_game_set(s, set_id).score_a == 1.5


def test_games_of_a_version_come_newest_first(database: Database) -> None:
    tid = _tournament(database, sets=2)
    _add(database, "gamma", author="carol")
    base = datetime(2026, 1, 1, tzinfo=UTC)
    with database.session() as s:
        for index in range(2):
            games = [
                GameResult(**{**g.__dict__, "finished": base + timedelta(hours=2 * index + n)})
                for n, g in enumerate(_games())
            ]
            repo.record_game_set_result(s, f"{tid}-set-{index:05d}", games)
    with database.session() as s:
        ids = [g.id for g in repo.list_games(s, bot_version="alpha@1")]
        assert ids == [f"{tid}-set-{i:05d}-g{n}" for i in (1, 0) for n in (1, 0)]
        assert len(repo.list_games(s, bot_version="beta@1", limit=3)) == 3
        assert repo.list_games(s, bot_version="gamma@1") == []
        assert [f.kind for f in repo.list_faults_for_version(s, "beta@1")] == ["timeout"] * 2
        assert repo.list_faults_for_version(s, "alpha@1") == []


def test_a_versions_faults_are_counted_by_kind_and_bots_show_gives_them(
    database: Database, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    tid = _tournament(database, sets=2)
    crash = FaultInfo(seat=2, kind="crash", hand=2, detail="exited with code 1", stderr="boom")
    with database.session() as s:
        repo.record_game_set_result(s, f"{tid}-set-00000", _games())
        games = _games()
        games[1] = GameResult(**{**games[1].__dict__, "faults": (crash,)})
        repo.record_game_set_result(s, f"{tid}-set-00001", games)
    with database.session() as s:
        assert repo.fault_kinds(s, "beta@1") == [("timeout", 2), ("crash", 1)]
        assert repo.fault_kinds(s, "alpha@1") == []

    monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
    assert cli.main(["bots", "show", "beta"]) == 0
    out = capsys.readouterr().out
    assert "    faults:    timeout 2, crash 1\n" in out, out
    assert f"latest:    crash in game {tid}-set-00001-g1, seat 2, hand 2: exited with code" in out
    assert "    stderr:    boom\n" in out
    assert cli.main(["bots", "show", "alpha"]) == 0
    assert "faults:" not in capsys.readouterr().out
    assert cli.main(["bots", "show", "beta", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["versions"][0]["faults"] == {"timeout": 2, "crash": 1}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seats": ("alpha@1", "beta@1", "alpha@1")}, "3 seats given"),
        ({"reason": "bored"}, "reason 'bored' is not one of"),
        # An aborted game has no result: stored, it counted as a draw in the set's score.
        ({"reason": "aborted", "winner": None}, "an aborted game has no result to store"),
        ({"winner": 2}, "winner 2 is not a team"),
        ({"game_index": 5}, "game index must be 0 or 1"),
    ],
)
def test_results_that_do_not_fit_the_set_are_refused(
    database: Database, change: dict[str, object], message: str
) -> None:
    tid = _tournament(database, sets=1)
    _add(database, "gamma", author="carol")
    set_id = f"{tid}-set-00000"
    games = _games()
    bad = [GameResult(**{**games[0].__dict__, **change}), games[1]]
    with database.session() as s:
        with pytest.raises(BadResult, match=message):
            repo.record_game_set_result(s, set_id, bad)
        assert repo.get_game_set(s, set_id).state == "queued"


def test_seats_outside_the_set_are_refused(database: Database) -> None:
    tid = _tournament(database, sets=1)
    _add(database, "gamma", author="carol")
    games = _games()
    bad = [GameResult(**{**games[0].__dict__, "seats": ("gamma@1", "beta@1") * 2}), games[1]]
    with database.session() as s, pytest.raises(BadResult, match="not the set's two bots"):
        repo.record_game_set_result(s, f"{tid}-set-00000", bad)


# --- ratings ---------------------------------------------------------------------------


def test_ratings_are_replaced_whole_per_ruleset(database: Database) -> None:
    _add(database, "alpha")
    _add(database, "beta", author="bob")
    with database.session() as s:
        repo.replace_ratings(s, "standard", [RatingRow("alpha@1", 1510.0, games=4)])
        repo.replace_ratings(s, "short", [RatingRow("alpha@1", 1400.0)])
        rows = [
            RatingRow("alpha@1", 1490.0, bt=-10.0, ci_low=-50.0, ci_high=30.0, games=6),
            RatingRow("beta@1", 1530.0, games=6, score=4.0, forfeits=1),
        ]
        assert repo.replace_ratings(s, "standard", rows) == 2
    with database.session() as s:
        table = repo.get_ratings(s, "standard")
        assert [(r.bot_version.ref, r.elo) for r in table] == [
            ("beta@1", 1530.0),
            ("alpha@1", 1490.0),
        ]
        assert (table[1].bt, table[1].ci_low, table[1].ci_high) == (-10.0, -50.0, 30.0)
        assert [r.elo for r in repo.get_ratings(s, "short")] == [1400.0]
        assert repo.rated_rulesets(s) == ["short", "standard"]


def test_rating_history_keeps_append_order(database: Database) -> None:
    tid = _tournament(database, sets=1)
    with database.session() as s:
        repo.record_game_set_result(s, f"{tid}-set-00000", _games())
        g0 = f"{tid}-set-00000-g0"
        repo.append_history(s, "standard", [HistoryEntry("alpha@1", 1508.0, g0)])
        repo.append_history(
            s, "standard", [HistoryEntry("alpha@1", 1499.0), HistoryEntry("beta@1", 1501.0)]
        )
    with database.session() as s:
        history = repo.rating_history(s, "alpha@1", "standard")
        assert [(h.elo, h.game_id) for h in history] == [(1508.0, g0), (1499.0, None)]


def test_a_tournament_exports_its_records_one_file_per_game(
    database: Database, tmp_path: Path
) -> None:
    tid = _tournament(database, sets=2)
    s_ids = [f"{tid}-set-0000{i}" for i in range(2)]
    url = database.url.render_as_string(hide_password=False)
    env = {**os.environ, "ARENA_DATABASE_URL": url, "ARENA_DATA_DIR": str(tmp_path)}
    argv = [sys.executable, "-m", "arena.cli", "tournament", "export"]
    with database.session() as s:
        assert repo.record_game_set_result(s, s_ids[0], _games())
    early = [*argv, tid, str(tmp_path / "early")]
    partial = subprocess.run(early, env=env, capture_output=True, text=True)
    assert partial.returncode == 0, partial.stderr
    assert "2 game records written" in partial.stdout
    assert "1 of its 2 sets not played yet: export it again once" in partial.stdout
    with database.session() as s:
        assert repo.record_game_set_result(s, s_ids[1], _games())
    out = tmp_path / "export" / "records"
    done = subprocess.run([*argv, tid, str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tournament {tid}: 4 game records written to {out}"
    files = sorted(p.name for p in out.iterdir())
    assert files == [f"{set_id}-g{g}.jsonl" for set_id in s_ids for g in (0, 1)]
    assert (out / files[0]).read_bytes() == RECORD and (
        out / files[1]
    ).read_bytes() == RECORD + b"\n"
    missing = subprocess.run([*argv, "t-nope", str(out)], env=env, capture_output=True, text=True)
    assert missing.returncode != 0
    # It names the database it looked in (run from another directory, a command makes an empty
    # one of its own there).
    from arena.config import hide_password

    assert f"no tournament 't-nope' in {hide_password(url)}\n" in missing.stderr
    (tmp_path / "a-file").write_text("")  # it said "a-file: File exists"
    into_file = subprocess.run(
        [*argv, tid, str(tmp_path / "a-file")], env=env, capture_output=True, text=True
    )
    assert (
        f"cannot write records into {tmp_path / 'a-file'}: {tmp_path / 'a-file'} is not a directory"
        in into_file.stderr
    )
    # A damaged record costs only itself: the others are written, and the export says which.
    from arena.storage.models import Game

    damaged = f"{s_ids[0]}-g0"
    with database.session() as s:
        s.get(Game, damaged).record_z = b"not zlib"
        s.commit()
    again = tmp_path / "again"
    partly = subprocess.run([*argv, tid, str(again)], env=env, capture_output=True, text=True)
    assert partly.returncode == 1
    assert f"not written: the stored record of game {damaged} is damaged" in partly.stderr
    assert sorted(p.name for p in again.iterdir()) == files[1:]
