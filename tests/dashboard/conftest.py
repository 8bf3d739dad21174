"""Fixtures: databases filled with real short games, the app, a test client, a live server.

tests/dashboard has no __init__.py on purpose: as a regular package under tests/ (which has
none) pytest would import it as top-level `dashboard`, shadowing the real package.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from arena.storage import open_database
from dashboard import create_app
from tests.dashboard.fill import RUNNING_TOURNAMENT, Site, fill


def _filled_site(url: str) -> Site:
    db = open_database(url)
    try:
        filled = fill(db)
        running = fill(db, rate=False, pending_sets=2, tournament_id=RUNNING_TOURNAMENT)
    finally:
        db.dispose()
    filled.tournaments += running.tournaments
    filled.records.update(running.records)
    return Site(url, create_app({"DATABASE_URL": url, "TESTING": True}), filled)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """One SQLite database per test module: a finished, rated round robin and a running one."""
    path = tmp_path_factory.mktemp("dashboard") / "arena.db"
    found = _filled_site(f"sqlite:///{path}")
    yield found
    found.app.extensions["arena_database"].dispose()


@pytest.fixture
def client(site: Site) -> FlaskClient:
    return site.app.test_client()


@pytest.fixture
def empty_client(tmp_path: Path) -> Iterator[FlaskClient]:
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}", "TESTING": True})
    yield app.test_client()
    app.extensions["arena_database"].dispose()


@dataclass
class LiveServer:
    base: str
    site: Site


@pytest.fixture(scope="module")
def live_server(site: Site) -> Iterator[LiveServer]:
    """The app served by the real waitress server on 127.0.0.1, port 0, in a thread."""
    from waitress.server import create_server

    server = create_server(site.app, host="127.0.0.1", port=0, threads=4)
    thread = threading.Thread(target=server.run, name="waitress", daemon=True)
    thread.start()
    try:
        yield LiveServer(f"http://127.0.0.1:{server.effective_port}", site)  # type: ignore[union-attr]
    finally:
        server.close()
        thread.join(timeout=5)
