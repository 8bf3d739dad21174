"""Opening a database by URL: engine, sessions, SQLite pragmas and schema migrations."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    bindparam,
    create_engine,
    event,
    insert,
    inspect,
    make_url,
    select,
    text,
    update,
)
from sqlalchemy.engine import URL
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    NoSuchModuleError,
    OperationalError,
)
from sqlalchemy.orm import Session, sessionmaker

from arena.config import hide_password, why_no_directory
from arena.storage.errors import DatabaseUnavailable, SchemaTooNew
from arena.storage.models import RATER_INDEXES, Base, GameSet, SchemaVersion

log = logging.getLogger(__name__)

# How long a SQLite writer waits for another one before giving up; workers share one file.
SQLITE_BUSY_TIMEOUT_MS = 30_000

# Any constant will do: it only has to be the same for every arena process on one server.
_PG_MIGRATION_LOCK = 0x63_A2E4A


def _create_all(conn: Connection) -> None:
    Base.metadata.create_all(conn)


def _add_rated_seq(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE games ADD COLUMN rated_seq INTEGER"))
    for index in RATER_INDEXES:
        index.create(conn)
    # Until now every stored table rated all its ruleset's games, in the order they finished:
    # that is their place, and the next pass goes on from the table instead of rating them
    # (and adding their history points) again.
    rated = conn.execute(
        text(
            "SELECT id, ruleset FROM games WHERE ruleset IN (SELECT ruleset FROM ratings) "
            "ORDER BY ruleset, finished, id"
        )
    )
    places: list[dict[str, Any]] = []
    seq: dict[str, int] = {}
    for game_id, ruleset in rated:
        places.append({"id": game_id, "seq": seq.setdefault(ruleset, 0)})
        seq[ruleset] += 1
    if places:
        conn.execute(text("UPDATE games SET rated_seq = :seq WHERE id = :id"), places)


def _add_set_beat(conn: Connection) -> None:
    column_type = GameSet.__table__.c.beat.type.compile(dialect=conn.dialect)
    conn.execute(text(f"ALTER TABLE game_sets ADD COLUMN beat {column_type}"))


_RULESET_TABLES = ("tournaments", "games", "ratings", "rating_history")


def _respell_rulesets(conn: Connection) -> None:
    """Custom rulesets stored as they were typed ('{"name": "standard", "max_hands": 2}')
    take their one spelling (arena.rulesets.ruleset_key), so that the same rules are one rating
    pool. A pool that gathers more than one spelling is rated again, from its first game."""
    from arena.errors import ArenaError
    from arena.rulesets import ruleset_key

    spellings: dict[str, set[str]] = {}
    for table in _RULESET_TABLES:
        for (stored,) in conn.execute(text(f"SELECT DISTINCT ruleset FROM {table}")):
            try:
                key = ruleset_key(stored)
            except ArenaError:  # no ruleset this arena knows: left as it is
                continue
            spellings.setdefault(key, set()).add(stored)
    for key, stored in spellings.items():
        if stored == {key}:
            continue
        every = {"key": key, "stored": list(stored)}
        if len(stored) > 1:
            _rate_again(conn, stored, f"ruleset {key} was stored {len(stored)} ways")
        for table in _RULESET_TABLES:
            conn.execute(
                text(f"UPDATE {table} SET ruleset = :key WHERE ruleset IN :stored").bindparams(
                    bindparam("stored", expanding=True)
                ),
                every,
            )


def _rate_aborted_games_no_more(conn: Connection) -> None:
    """Games the game master aborted, stored before 2026-11-30, were rated as draws until
    2026-12-01: the rulesets with such a game in their rating order are rated again."""
    query = "SELECT DISTINCT ruleset FROM games WHERE reason = 'aborted' AND rated_seq IS NOT NULL"
    for (ruleset,) in conn.execute(text(query)).all():
        _rate_again(conn, {ruleset}, f"ruleset {ruleset} counted aborted games as draws")


def _index_what_lists_read(conn: Connection) -> None:
    """Lists read their rows off an index. Game lists, newest first, once their indexes hold
    the finish time and the id that breaks ties: page 2000 of 100,000 games took 340 ms to sort
    them all, and takes 20 ms; a bot's games, 23 ms of SQL for page 50, take 9. And the bots
    of each tournament on the list: 44 ms for 12 round robins of 30 bots, 19 ms."""
    tables = Base.metadata.tables
    for index in [*tables["games"].indexes, *tables["game_sets"].indexes]:
        if str(index.name).startswith(("ix_games_finished", "ix_games_seat", "ix_game_sets_pairs")):
            conn.execute(text(f"DROP INDEX IF EXISTS {index.name}"))
            index.create(conn)


def _rate_again(conn: Connection, rulesets: set[str], why: str) -> None:
    """Unrate every game of these rulesets, and drop their tables and history: the next rating
    pass (a worker's reconciler runs one) rates them all again, in the order they finished."""
    log.warning("%s: its games are rated again by the next rating pass", why)
    stored = {"stored": list(rulesets)}
    for statement in (
        "UPDATE games SET rated_seq = NULL WHERE ruleset IN :stored",
        "DELETE FROM ratings WHERE ruleset IN :stored",
        "DELETE FROM rating_history WHERE ruleset IN :stored",
    ):
        conn.execute(text(statement).bindparams(bindparam("stored", expanding=True)), stored)


# MIGRATIONS[i] takes a database from version i to version i + 1. A fresh database gets
# Base.metadata.create_all and is stamped with the latest version directly, so every later
# step must leave the schema exactly as the models in models.py describe it.
MIGRATIONS: list[Callable[[Connection], None]] = [
    _create_all,  # version 1
    _add_rated_seq,  # version 2: games are rated once, in a stored order
    _add_set_beat,  # version 3: a running set's last sign of life
    _respell_rulesets,  # version 4: one spelling per custom ruleset
    _rate_aborted_games_no_more,  # version 5: aborted games are no draws
    _index_what_lists_read,  # version 6: indexes that game and tournament lists read
]
SCHEMA_VERSION = len(MIGRATIONS)


class Database:
    """An engine and a session factory for one database URL."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)

    @property
    def url(self) -> URL:
        return self.engine.url

    @property
    def shown_url(self) -> str:
        """The URL without its password, for messages."""
        return shown_url(self.engine.url)

    @property
    def dialect(self) -> str:
        """'sqlite' or 'postgresql'."""
        return self.engine.dialect.name

    def session(self) -> Session:
        """A new session, closed on leaving its `with`; repository write functions commit
        themselves."""
        return self.sessions()

    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return _current_version(conn) or 0

    def check_schema(self) -> None:
        """SchemaTooNew if a newer arena has upgraded the database since it was opened: a
        long-running process must not go on writing what the new schema means otherwise."""
        with self.engine.connect() as conn:  # one query per game set: the table is there
            version = conn.execute(select(SchemaVersion.version)).scalar_one()
        if version > SCHEMA_VERSION:
            raise _too_new(version)

    def dispose(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def __repr__(self) -> str:
        return f"<Database {self.shown_url}>"


def open_database(
    url: str | URL, *, setting: str = "ARENA_DATABASE_URL", **engine_kwargs: Any
) -> Database:
    """Connect to `url`, creating or upgrading the schema, and return the Database.

    SQLite files get WAL mode, foreign keys and a busy timeout on every connection;
    their parent directory is created. PostgreSQL URLs may carry libpq parameters such
    as `?options=-csearch_path%3Dmyschema`. `setting` is where the URL was given, for the
    messages that say how to fix it.
    """
    engine = _engine(url, engine_kwargs, setting)
    try:
        _migrate(engine)
    except OperationalError as exc:
        engine.dispose()
        raise DatabaseUnavailable(
            f"cannot reach the database at {shown_url(url)} ({driver_reason(exc)}): start it, "
            + _advice(
                setting,
                "fix ARENA_DATABASE_URL, or unset it to use SQLite in the data directory",
                f"or fix {setting}",
            )
        ) from None
    except DatabaseError as exc:  # reached, but not a database (e.g. some other file)
        engine.dispose()
        raise DatabaseUnavailable(
            f"cannot use the database at {shown_url(url)} ({driver_reason(exc)}): point "
            + _advice(
                setting,
                "ARENA_DATABASE_URL at an arena database, or unset it to use SQLite in the data "
                "directory",
                f"{setting} at an arena database or an empty one",
            )
        ) from None
    return Database(engine)


def check_url(url: str | URL) -> None:
    """DatabaseUnavailable if no driver here can use `url` (a setting to fix, not a database
    to wait for); nothing is connected to."""
    _engine(url, {}).dispose()


def _engine(
    url: str | URL, engine_kwargs: dict[str, Any], setting: str = "ARENA_DATABASE_URL"
) -> Engine:
    try:
        parsed = make_url(url)
        if parsed.get_backend_name() == "postgres":  # as Heroku and libpq's users write it
            parsed = parsed.set(drivername="postgresql" + parsed.drivername[len("postgres") :])
        if parsed.get_backend_name() not in ("sqlite", "postgresql"):
            # Not whichever driver happens to be missing ("No module named 'MySQLdb'").
            raise ArgumentError(
                f"{parsed.get_backend_name()}:// is not one of the arena's databases, SQLite and "
                "PostgreSQL"
            )
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed, engine_kwargs, setting)
        engine_kwargs.setdefault("pool_pre_ping", True)
        return create_engine(parsed, **engine_kwargs)
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise DatabaseUnavailable(
            f"cannot use database URL {shown_url(url)}: {exc}. Use sqlite:///PATH or "
            "postgresql+psycopg://USER@HOST:PORT/DB"
            + _advice(
                setting,
                ", or unset ARENA_DATABASE_URL for SQLite in the data directory",
                f" (given as {setting})",
            )
        ) from None


def _advice(setting: str, for_variable: str, elsewhere: str) -> str:
    """How to fix a URL: ARENA_DATABASE_URL may also be unset; a URL given elsewhere (a
    command's --to) can only be fixed where it was given."""
    return for_variable if setting == "ARENA_DATABASE_URL" else elsewhere


def driver_reason(exc: DBAPIError) -> str:
    """The driver's own words, first line only."""
    return str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)


def shown_url(url: str | URL) -> str:
    """The URL without its password, for messages; a string as the user wrote it."""
    return hide_password(url if isinstance(url, str) else url.render_as_string(hide_password=False))


def create_private_file(path: Path) -> None:
    """Create the file (empty: SQLite takes it for a new database), and the directories it
    needs, for this user alone, unless it is there: the database knows every hand not yet
    played. SQLite's journal files take the file's permissions."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _sqlite_engine(url: URL, engine_kwargs: dict[str, Any], setting: str) -> Engine:
    if url.database and url.database != ":memory:" and not url.database.startswith("file:"):
        folder = Path(url.database).parent
        try:
            create_private_file(Path(url.database))
        except OSError as exc:
            # The directory is made first: there, it is the file that could not be.
            made = folder.is_dir()
            what = (
                f"cannot create it in {folder}" if made else f"cannot create its directory {folder}"
            )
            raise DatabaseUnavailable(
                f"cannot use the database at {shown_url(url)}: {what} "
                f"({why_no_directory(folder, exc)}): "
                + _advice(
                    setting,
                    "fix ARENA_DATABASE_URL, or unset it to use SQLite in the data directory",
                    f"fix {setting}",
                )
            ) from None
    connect_args = dict(engine_kwargs.pop("connect_args", {}))
    connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_MS / 1000)
    connect_args.setdefault("check_same_thread", False)
    engine = create_engine(url, connect_args=connect_args, **engine_kwargs)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        cursor = dbapi_conn.cursor()
        try:
            # WAL lets the dashboard read while a worker writes; NORMAL is safe under WAL.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    return engine


def _too_new(version: int) -> SchemaTooNew:
    return SchemaTooNew(
        f"database schema is version {version}, newer than this arena's {SCHEMA_VERSION}: "
        "upgrade the arena package (or restore the backup taken before the upgrade)"
    )


def _current_version(conn: Connection) -> int | None:
    if not inspect(conn).has_table(SchemaVersion.__tablename__):
        return None
    return conn.execute(select(SchemaVersion.version).where(SchemaVersion.id == 1)).scalar()


def _migrate(engine: Engine) -> None:
    """Bring the schema to SCHEMA_VERSION, one process at a time."""
    with engine.connect() as conn:
        # Take the lock before looking, so two workers starting together do not both
        # create tables: an advisory lock on PostgreSQL, the write lock on SQLite.
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        version = _current_version(conn)
        if version is None:
            _create_all(conn)
            conn.execute(insert(SchemaVersion).values(id=1, version=SCHEMA_VERSION))
        elif version > SCHEMA_VERSION:
            raise _too_new(version)
        elif version < SCHEMA_VERSION:
            # Said, because the processes of the older arena must not run on (running.md).
            log.warning(
                "upgrading the database schema from version %d to %d", version, SCHEMA_VERSION
            )
            for step in MIGRATIONS[version:]:
                step(conn)
            conn.execute(
                update(SchemaVersion).where(SchemaVersion.id == 1).values(version=SCHEMA_VERSION)
            )
        conn.commit()
