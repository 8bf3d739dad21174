"""The same pages on SQLite and the real PostgreSQL, and `arena dashboard` serving for real."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from arena.config import ConfigError, parse_listen
from arena.storage import open_database, repo
from dashboard import create_app
from tests.dashboard.fill import FINISHED_TOURNAMENT, XSS_NAME, fill


def test_every_route_on_each_backend(database_url: str) -> None:
    db = open_database(database_url)
    try:
        filled = fill(db, bots=("greedy", XSS_NAME))
    finally:
        db.dispose()
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    client = app.test_client()
    game = filled.game_ids[0]
    bot = quote(XSS_NAME, safe="")
    for path in (
        "/",
        f"/bots/{bot}",
        "/bots",
        "/tournaments",
        f"/tournaments/{FINISHED_TOURNAMENT}",
        "/games",
        f"/games/{game}",
        f"/games/{game}/replay",
    ):
        assert client.get(path).status_code == 200, path
        if path != "/":
            assert client.get("/api" + path).status_code == 200, path
    assert client.get("/api/leaderboard").get_json()["rows"][0]["games"] == 2
    head = client.get(f"/api/bots/{bot}").get_json()["head_to_head"]
    assert [(h["opponent"]["bot"], h["games"], h["sets"]) for h in head] == [("greedy", 2, 1)]
    table = client.get(f"/api/tournaments/{FINISHED_TOURNAMENT}").get_json()
    assert table["game_count"] == 2 and len(table["crosstable"]) == 2
    for game_id, record in filled.records.items():
        assert client.get(f"/games/{game_id}/record.jsonl").data == record
    assert client.get("/api/games/nope").status_code == 404
    # Hostile addresses: a 4xx on both backends, never a 500 (PostgreSQL refuses NUL in text,
    # both refuse an OFFSET beyond 64 bits).
    for path in ("/api/games/%00", "/games/%00/replay", "/api/bots/%00", "/?ruleset=%00"):
        assert client.get(path).status_code == 400, path
    for path in ("/api/games?page=200000000000000000", f"/tournaments?page={10**30}"):
        assert client.get(path).status_code == 200, path
    health = client.get("/healthz").get_json()
    assert health == {"status": "ok", "database": open_database(database_url).dialect}
    app.extensions["arena_database"].dispose()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8063", ("127.0.0.1", 8063)),
        ("[::1]:80", ("::1", 80)),
        (":9000", ("127.0.0.1", 9000)),
    ],
)
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["8063", "host:", "host:port", "h:70000"])
def test_bad_listen_addresses_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="HOST:PORT"):
        parse_listen(text)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_arena_dashboard_serves_through_waitress(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    db = open_database(url)
    fill(db, bots=("greedy", "random"))
    db.dispose()
    port = _free_port()
    env = {**os.environ, "ARENA_DATABASE_URL": url}
    arena = Path(sys.executable).with_name("arena")
    proc = subprocess.Popen(
        [str(arena), "dashboard", "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200
                    assert r.headers["Server"] == "sixty-three-arena"  # waitress, not Werkzeug
                    break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or proc.poll() is not None:
                    out = proc.stdout.read().decode() if proc.stdout and proc.poll() else ""
                    pytest.fail(f"arena dashboard did not start: {out}")
                time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            assert b"greedy" in r.read()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_computed_leaderboard_shows_a_bot_disabled_after_it_was_cached(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    db = open_database(url)
    fill(db, bots=("greedy", "random"), rate=False)  # no rating table: the computed board
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    client = app.test_client()
    before = client.get("/api/leaderboard").get_json()
    assert before["source"] == "computed"
    assert {r["bot"]: r["disabled"] for r in before["rows"]} == {"greedy": False, "random": False}
    with db.session() as session:
        repo.set_bot_disabled(session, "random")
    rows = client.get("/api/leaderboard").get_json()["rows"]
    assert {r["bot"]: r["disabled"] for r in rows} == {"greedy": False, "random": True}
    db.dispose()
    app.extensions["arena_database"].dispose()


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("127.0.0.1", "Address already in use (another dashboard there? choose another port"),
        ("no-such-host.invalid", "the host name 'no-such-host.invalid' is not known"),
    ],
)
def test_arena_dashboard_on_an_address_it_cannot_use_says_so(
    tmp_path: Path, host: str, why: str
) -> None:
    env = {**os.environ, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'arena.db'}"}
    arena = Path(sys.executable).with_name("arena")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(arena), "dashboard", "--listen", f"{host}:{port}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2
    # One line: waitress said "Invalid host/port specified." of a name that does not resolve
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"arena dashboard: cannot listen on {host}:{port}: {why}"), line
    assert "with --listen" in line, line
