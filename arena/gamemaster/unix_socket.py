"""The game master's Unix socket: how agents with no network of their own reach it.

A container agent runs with `--network none` and finds the socket in a directory mounted into
it (runner/launch/container.py); a process agent of a worker given the socket's path runs in a
network namespace of its own (runner/launch/pidns.py). Either reaches the game master and
nothing else, not even the other agents of its game.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from arena.config import data_dir, env, why_no_directory

# The file name container agents dial in the mounted directory (unix:/run/arena/gamemaster.sock).
SOCKET_NAME = "gamemaster.sock"
# sun_path holds 108 bytes with its terminating zero.
MAX_PATH_BYTES = 107


class SocketUnusable(OSError):
    """The game master cannot serve at this socket path; the message says why and what to do."""


def prepare(path: str) -> str:
    """Check that the game master may listen at path and return its gRPC address (unix:PATH).

    Its directory is made if need be (inside the data directory, as every command makes that),
    and a socket file that nothing listens on any more (a game master that was killed) is
    removed; a live one is left alone: two game masters on one socket would each get some of
    the agents."""
    where = Path(path)
    if not where.is_absolute():
        raise SocketUnusable(f"the socket path {path!r} must be absolute")
    if too_long(path):
        raise SocketUnusable(f"the socket path {path!r} is longer than {MAX_PATH_BYTES} bytes")
    if where.parent.resolve().is_relative_to(Path(env("ARENA_DATA_DIR")).resolve()):
        data_dir()  # made as every command makes it, its user's only: the database goes there
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SocketUnusable(
            f"cannot make the socket's directory {where.parent}: "
            f"{why_no_directory(where.parent, exc)}"
        ) from None
    try:
        mode = where.lstat().st_mode
    except FileNotFoundError:
        return f"unix:{path}"
    if not stat.S_ISSOCK(mode):
        raise SocketUnusable(f"{path} exists and is not a socket: remove it or choose another path")
    why = unanswered(path)
    if why is None:
        raise SocketUnusable(
            f"something already listens on {path} (another game master?): stop it or choose "
            "another path"
        )
    if not isinstance(why, ConnectionRefusedError):
        raise why
    where.unlink()  # left behind by a game master that is gone
    return f"unix:{path}"


def too_long(path: str) -> bool:
    """Whether a socket cannot have this path (sun_path's bytes)."""
    return len(os.fsencode(path)) > MAX_PATH_BYTES


def unanswered(path: str) -> OSError | None:
    """Why nothing answers on the socket at path (the error of a connect), or None if it does."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(path)
        except OSError as error:
            return error
    return None


def is_peer(peer: str) -> bool:
    """Whether a call (grpc's context.peer()) came over a Unix socket: from an agent with no
    network. Such agents get no admin call (OpenGame, AbortGame, ...), token or none: workers
    make theirs over TCP."""
    return peer.startswith("unix:")


def open_to_agents(path: str) -> None:
    """Let any user connect: container agents run as nobody (connecting needs write access)."""
    os.chmod(path, 0o666)


def remove(path: str) -> None:
    """Remove the socket file of a game master that stopped."""
    Path(path).unlink(missing_ok=True)
