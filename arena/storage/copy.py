"""Copying a whole arena database into an empty one (SQLite to PostgreSQL, say), in one go."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, LargeBinary, Table, func, insert, make_url, select, text
from sqlalchemy.exc import ArgumentError, DBAPIError

from arena.config import why_no_directory
from arena.storage.database import (
    Database,
    create_private_file,
    driver_reason,
    open_database,
    shown_url,
)
from arena.storage.errors import SchemaTooNew, StorageError
from arena.storage.models import Base, SchemaVersion

# Rows per insert: games carry their compressed record (up to a few MB for 1,000 hands), so
# their batches are kept small (the copy holds some five copies of a batch at its peak: 130 MB
# with 1 MB records, measured); the other tables' rows are a few hundred bytes.
BATCH_ROWS = 1000
BATCH_ROWS_WITH_BLOBS = 20

# Every arena table, parents before children; the target has its own schema_version row.
TABLES: tuple[Table, ...] = tuple(
    t for t in Base.metadata.sorted_tables if t.name != SchemaVersion.__tablename__
)


class TargetNotEmpty(StorageError):
    """The database to copy into already holds arena rows."""


class NothingToCopy(StorageError):
    """The database to copy from holds no arena rows (most likely not the one meant)."""


class CopyFailed(StorageError):
    """A row the target refused, or a connection lost mid-copy; nothing was kept."""


@dataclass
class CopyReport:
    """What was copied: rows per table, in the order copied, and how long it took."""

    target: str
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def copy_database(
    source: Database,
    target_url: str,
    *,
    on_table: Callable[[str, int], object] = lambda _name, _rows: None,
) -> CopyReport:
    """Copy every arena row of `source` into the database at `target_url`, which must hold none.

    The target's schema is made (or upgraded) as any arena process makes it, so it ends at this
    arena's version, as `source` (opened by `open_database`) is. The rows go in one transaction
    on the target, read in batches from one snapshot of the source: a failure leaves the target
    without a row. `on_table(name, rows)` is told of each table once it is copied.
    """
    started = time.monotonic()
    _prepare_sqlite_target(target_url)
    try:
        target = open_database(target_url, setting="--to")
    except SchemaTooNew as exc:
        raise SchemaTooNew(f"cannot copy into {shown_url(target_url)}: its {exc}") from None
    report = CopyReport(target.shown_url)
    if target.shown_url == source.shown_url:
        target.dispose()
        raise CopyFailed(
            f"--to {target.shown_url} is the database being copied (ARENA_DATABASE_URL, or the "
            "data directory's SQLite file): give another one, empty"
        )
    try:
        with _snapshot(source) as reading, target.engine.connect() as writing:
            if not _tables_with_rows(reading):  # "copied 0 rows" read as a success
                raise NothingToCopy(
                    f"{source.shown_url} holds no arena data: is it the database you meant "
                    "(ARENA_DATABASE_URL, or ARENA_DATA_DIR for the default SQLite)? nothing "
                    "was copied"
                )
            _begin_writing(writing)
            _refuse_rows(writing, target.shown_url)
            for table in TABLES:
                report.rows[table.name] = _copy_table(reading, writing, table, target.shown_url)
                on_table(table.name, report.rows[table.name])
            if writing.dialect.name == "postgresql":
                _reset_sequences(writing)
            writing.commit()
    except DBAPIError as exc:
        raise CopyFailed(
            f"cannot copy into {target.shown_url} ({driver_reason(exc)}); nothing was kept there"
        ) from None
    finally:
        target.dispose()
    report.seconds = time.monotonic() - started
    return report


def _prepare_sqlite_target(url: str) -> None:
    """Refuse an in-memory SQLite target (the copy would end with the command). A new SQLite
    file is its user's only, as the data directory is: it knows every hand of every game not
    yet played (SQLite gives its -wal and -shm files the same mode)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return  # open_database says what is wrong with it
    name = parsed.database
    if parsed.get_backend_name() != "sqlite":
        return
    if not name or name == ":memory:" or "mode=memory" in name:
        raise CopyFailed(
            f"cannot copy into {shown_url(url)}: a database in memory is gone when the copy "
            "ends; give a file, e.g. --to sqlite:///arena-copy.db"
        )
    if name.startswith("file:"):
        return
    path = Path(name)
    try:
        create_private_file(path)
    except OSError as exc:
        why = f"cannot create {path}: {why_no_directory(path, exc)}"
        raise CopyFailed(f"cannot copy into {shown_url(url)}: {why}") from None


@contextmanager
def _snapshot(db: Database) -> Iterator[Connection]:
    """A connection that sees the source as it was at its first read, whatever the arena's
    processes write meanwhile: a game stored mid-copy must not arrive without its set."""
    with db.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
            conn.begin()
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN")  # the driver would read each batch on its own
        try:
            yield conn
        finally:
            conn.rollback()


def _begin_writing(conn: Connection) -> None:
    """Hold the target's tables against other writers from the emptiness check to the commit."""
    if conn.dialect.name == "postgresql":
        names = ", ".join(conn.dialect.identifier_preparer.quote(t.name) for t in TABLES)
        conn.execute(text(f"LOCK TABLE {names} IN EXCLUSIVE MODE"))
    elif conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _tables_with_rows(conn: Connection) -> list[str]:
    return [t.name for t in TABLES if conn.execute(select(1).select_from(t).limit(1)).first()]


def _refuse_rows(conn: Connection, shown: str) -> None:
    held = _tables_with_rows(conn)
    if held:
        raise TargetNotEmpty(
            f"{shown} already holds arena data (rows in {', '.join(held)}): copy only into an "
            "empty database; nothing was changed there"
        )


def _copy_table(reading: Connection, writing: Connection, table: Table, shown: str) -> int:
    batch = BATCH_ROWS
    if any(isinstance(c.type, LargeBinary) for c in table.columns):
        batch = BATCH_ROWS_WITH_BLOBS
    # In key order, so ids go in as they were made (rating history's id is its order).
    rows = reading.execution_options(yield_per=batch).execute(
        select(table).order_by(*table.primary_key.columns)
    )
    copied = 0
    for part in rows.partitions():
        try:
            writing.execute(insert(table), [row._asdict() for row in part])
        except DBAPIError as exc:
            raise CopyFailed(
                f"{shown} refused a row of table {table.name} after {copied} of its rows were "
                f"copied ({driver_reason(exc)}); nothing was kept there"
            ) from None
        copied += len(part)
    return copied


def _reset_sequences(conn: Connection) -> None:
    """PostgreSQL's id sequences do not move for explicit ids: point each past the largest
    copied, so the next bot, version, fault or history point takes a fresh id."""
    for table in TABLES:
        column = table.autoincrement_column
        if column is None:
            continue
        sequence = conn.execute(
            select(func.pg_get_serial_sequence(table.name, column.name))
        ).scalar()
        if sequence is None:
            continue
        largest = conn.execute(select(func.max(column))).scalar() or 0
        # is_called false: the next value is exactly largest + 1 (1 for an empty table).
        conn.execute(select(func.setval(sequence, largest + 1, False)))
