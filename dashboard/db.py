"""The database of one app and a session per request, closed when the request ends."""

from __future__ import annotations

from flask import Flask, current_app, g
from sqlalchemy.orm import Session

from arena.storage import Database, open_database

_KEY = "arena_database"


def init_app(app: Flask) -> None:
    app.extensions[_KEY] = open_database(app.config["DATABASE_URL"])
    app.teardown_appcontext(_close_session)


def database() -> Database:
    found: Database = current_app.extensions[_KEY]
    return found


def session() -> Session:
    """This request's session, opened on first use."""
    if "arena_session" not in g:
        g.arena_session = database().sessions()
    found: Session = g.arena_session
    return found


def _close_session(_exc: BaseException | None) -> None:
    opened = g.pop("arena_session", None)
    if opened is not None:
        opened.close()
