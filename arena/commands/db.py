"""`arena db`: the database as a whole (copy it into another one, SQLite to PostgreSQL, say)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = subparsers.add_parser("db", help="copy the whole database into another one")
    sub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    copy = sub.add_parser(
        "copy",
        help="copy every bot, tournament, game, rating and history point into an empty database",
        description="Copy everything in the arena's database (ARENA_DATABASE_URL, default the "
        "SQLite file in the data directory) into the empty database at --to, in one "
        "transaction: on any failure the target keeps no row. Stop the arena's processes first.",
    )
    copy.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="the database to fill, e.g. postgresql+psycopg://arena:secret@db:5432/arena",
    )
    copy.set_defaults(func=_copy)


def _copy(args: argparse.Namespace) -> int:
    from arena.config import database_url
    from arena.storage import open_database
    from arena.storage.copy import copy_database
    from arena.storage.database import shown_url

    with open_database(database_url()) as source:
        _refuse_while_workers_run(source.shown_url)
        print(f"copying {source.shown_url} into {shown_url(args.to)}", flush=True)

        def copied(table: str, rows: int) -> None:
            print(f"  {table:<15} {rows:>9,} rows", flush=True)

        report = copy_database(source, args.to, on_table=copied)
    print(f"copied {report.total:,} rows into {report.target} in {report.seconds:.1f} s")
    return 0


def _refuse_while_workers_run(source: str) -> None:
    """What workers record in `source` once the copy has begun is not in it: they must be
    stopped first (workers that say they store sets in another database need not be)."""
    from arena.errors import ArenaError
    from runner import queue, redis_conn

    connection = redis_conn.answering()
    if connection is None:
        return  # no Redis, no worker
    try:
        running = queue.workers_on(connection)
        elsewhere = queue.foreign_databases(connection, source)
    except redis_conn.REDIS_DOWN:
        return
    if running and not elsewhere:
        raise ArenaError(
            f"{running} worker(s) take sets from queue {queue.queue_name()!r} on "
            f"{redis_conn.describe()}: what they record once the copy has begun would not be "
            "in it; stop them first (Ctrl-C, or SIGTERM to `arena worker`)"
        )
