"""Games between agent processes on this machine: a private game master, four commands, a result.

What `arena play --seat ...` runs when a seat is a process, and what the interop tests and the
benchmark use: start a game master on 127.0.0.1 (port 0), open the game(s), launch one process
per seat with ARENA_GAME_MASTER and ARENA_SEAT_TOKEN, await the result, stop everything.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.exit_status import how_it_ended, why_not_started
from arena.gamemaster.client import GameMasterClient, GameOutcome
from arena.gamemaster.early_exit import EarlyExitWatch, gone_before_connecting
from arena.gamemaster.policy import GameLimits
from arena.gamemaster.server import RunningGameMaster, start_in_thread
from arena.interpreter import arena_command
from arena.rulesets import Ruleset
from arena.wire import pb

_NAMED = re.compile(r"^([A-Za-z0-9._:+-]{1,60})=(.*\S.*)$")
# Seconds agents have to exit on their own after their game, before their group is killed.
EXIT_GRACE_S = 5.0


@dataclass(frozen=True)
class SeatSpec:
    """What plays one seat: the name written to the record and the command that starts it."""

    name: str
    argv: tuple[str, ...]


def builtin_seat(name: str) -> SeatSpec:
    """A built-in player as an agent process (sample_agents/<name>_bot.py through the SDK)."""
    return SeatSpec(name, (sys.executable, "-m", f"sample_agents.{name}_bot"))


def command_seat(command: str) -> SeatSpec:
    """A seat from a command line, as a user types it, optionally ``NAME=COMMAND``.

    A leading ``python``/``python3`` becomes this arena's Python and a leading ``arena`` this
    arena's CLI, so `--seat 'python -m sample_agents.greedy_bot'` works without an activated venv.
    Without a NAME, the record names the seat after the script or module it runs.
    """
    name = None
    if named := _NAMED.match(command):
        name, command = named.group(1), named.group(2)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ArenaError(f"cannot read the seat command {command!r}: {exc}") from None
    if not argv:
        raise ArenaError("empty seat command")
    name = name or short_name(argv)
    return SeatSpec(name, tuple(arena_command(argv)))


def short_name(argv: Sequence[str]) -> str:
    """A readable name for a command: the module after -m, else the last file it names."""
    argv = list(argv)
    if "stdio-agent" in argv:
        bot = argv[argv.index("--") + 1 :] if "--" in argv else argv[-1:]
        return "stdio:" + short_name(bot or argv)
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1].rsplit(".", 1)[-1][:90]
    words = [
        w for v, w in itertools.pairwise(argv) if not w.startswith("-") and v not in _CLASS_PATH
    ]
    files = [w for w in words if "/" in w or Path(w).suffix]
    if not files and Path(argv[0]).name == "java":
        files = words[-1:]  # its main class
    return Path(files[-1] if files else argv[0]).name[:90]


# Options whose value is a class path, not the program (java -cp DIR Bot is Bot).
_CLASS_PATH = {"-cp", "-classpath", "--class-path"}


@dataclass(frozen=True)
class GameSpec:
    """One game to play: ruleset (name, Ruleset or parameters), seed, seats 0..3."""

    ruleset: str | Ruleset | Mapping[str, Any]
    seed: int | str
    seats: Sequence[SeatSpec]
    first_dealer: int | None = None
    game_id: str = ""


@dataclass
class MatchResult:
    """A finished game and how its agent processes ended."""

    outcome: GameOutcome
    exit_codes: list[int | None]
    logs: list[Path] = field(default_factory=list)

    def stderr(self, seat: int) -> str:
        try:
            return self.logs[seat].read_text(encoding="utf-8", errors="replace")
        except (IndexError, OSError):
            return ""


class LocalGameMaster:
    """A game master in a background thread plus a client of its admin calls."""

    def __init__(self, limits: GameLimits | None = None, address: str = "127.0.0.1:0") -> None:
        # Its own admin token, known to this process alone: the agents it starts cannot open,
        # end or (while their mirror game runs) read other games.
        token = secrets.token_hex(16)
        self.server: RunningGameMaster = start_in_thread(
            address, limits=limits or GameLimits.from_env(), admin_token=token
        )
        self.address = self.server.address
        self.client = GameMasterClient(self.address, admin_token=token)
        self.client.wait_ready()
        # Seats' logs when the caller names no directory; removed on close.
        self._scratch = tempfile.TemporaryDirectory(prefix="arena-match-")
        self._batches = 0

    def close(self) -> None:
        self.client.close()
        self.server.stop()
        self._scratch.cleanup()

    def __enter__(self) -> LocalGameMaster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def play(
        self, games: Sequence[GameSpec], log_dir: Path | None = None, **options: Any
    ) -> list[MatchResult]:
        """Play the games at once (see play_games); logs live until close() by default."""
        self._batches += 1
        logs = log_dir or Path(self._scratch.name) / str(self._batches)
        return play_games(self.client, self.address, games, log_dir=logs, **options)


def _spawn(
    argv: Sequence[str], address: str, token: str, log: Path, env: Mapping[str, str] | None
) -> subprocess.Popen[bytes]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["ARENA_GAME_MASTER"] = address
    full_env["ARENA_SEAT_TOKEN"] = token
    with log.open("wb") as err:
        try:
            return subprocess.Popen(
                list(argv),
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,  # its own group: killed with its children at the end
            )
        except OSError as exc:
            raise ArenaError(
                f"cannot start {shlex.join(argv)!r}: {why_not_started(argv[0], exc)}"
            ) from None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def play_games(
    client: GameMasterClient,
    address: str,
    games: Sequence[GameSpec],
    *,
    limits: GameLimits | None = None,
    log_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    on_event: Callable[[int, pb.GameEvent], None] | None = None,
) -> list[MatchResult]:
    """Play the games at the same time on the game master at ``address``; results in order.

    Each seat's stdout and stderr go to ``log_dir/<game>-seat<N>.log`` (a fresh temporary
    directory by default). A seat whose process exits before connecting forfeits.
    ``on_event(game_number, event)`` sees each game's public events as they happen, through
    a Watch stream, as a spectator would; it is called from a thread of its own per game.
    """
    logs_at = log_dir or Path(tempfile.mkdtemp(prefix="arena-match-"))
    logs_at.mkdir(parents=True, exist_ok=True)
    opened, procs, logs = [], [], []
    spectators: list[threading.Thread] = []
    try:
        for number, spec in enumerate(games):
            if len(spec.seats) != 4:
                raise ArenaError(f"a game needs 4 seats, got {len(spec.seats)}")
            game = client.open_game(
                spec.ruleset,
                spec.seed,
                first_dealer=spec.first_dealer,
                agents=[s.name for s in spec.seats],
                limits=limits,
                game_id=spec.game_id,
            )
            opened.append(game)
            if on_event is not None:
                spectators.append(_spectate(client, game.game_id, number, on_event))
            seat_logs = [logs_at / f"{spec.game_id or number}-seat{s}.log" for s in range(4)]
            logs.append(seat_logs)
            procs.append(
                [
                    _spawn(seat.argv, address, game.tokens[s], seat_logs[s], env)
                    for s, seat in enumerate(spec.seats)
                ]
            )
        outcomes = _await_all(client, [g.game_id for g in opened], procs, timeout)
    except BaseException:
        for game in opened:
            # The game master may be gone too; the processes die below either way.
            with contextlib.suppress(Exception):
                client.abort_game(game.game_id, timeout=10)
        for group in procs:
            for p in group:
                _kill_group(p)
        raise
    for spectator in spectators:
        spectator.join(timeout=10)  # its stream ends with the game
    results = []
    for outcome, group, seat_logs in zip(outcomes, procs, logs, strict=True):
        results.append(MatchResult(outcome, _reap(group), seat_logs))
    return results


def _spectate(
    client: GameMasterClient,
    game_id: str,
    number: int,
    on_event: Callable[[int, pb.GameEvent], None],
) -> threading.Thread:
    """Follow one game's public events on a thread of their own (started here)."""

    def follow() -> None:
        with contextlib.suppress(ArenaError):  # the game master stopped: the game says why
            for event in client.watch(game_id):
                on_event(number, event)

    thread = threading.Thread(target=follow, name=f"watch {game_id}", daemon=True)
    thread.start()
    return thread


def _await_all(
    client: GameMasterClient,
    game_ids: Sequence[str],
    procs: Sequence[Sequence[subprocess.Popen[bytes]]],
    timeout: float | None,
) -> list[GameOutcome]:
    """Wait for every game; a seat whose process exits before it connects forfeits without
    waiting out the connect time, as in a tournament (a typo in a command, say): EarlyExitWatch."""
    deadline = None if timeout is None else time.monotonic() + timeout
    watches = [
        EarlyExitWatch(client, game_id, functools.partial(_exited, group))
        for game_id, group in zip(game_ids, procs, strict=True)
    ]
    with ThreadPoolExecutor(max_workers=max(1, len(game_ids))) as pool:
        futures: list[Future[GameOutcome]] = [
            pool.submit(client.await_game, gid, timeout) for gid in game_ids
        ]
        while not all(f.done() for f in futures):
            if deadline is not None and time.monotonic() > deadline:
                raise ArenaError(f"the games did not end within {timeout:g} s")
            for future, watch in zip(futures, watches, strict=True):
                if not future.done():
                    watch.check()
            time.sleep(0.02)
        return [f.result() for f in futures]


def _exited(group: Sequence[subprocess.Popen[bytes]], seat: int) -> str | None:
    code = group[seat].poll()
    if code is None:
        return None
    return gone_before_connecting(how_it_ended(code), code)


def _reap(group: Sequence[subprocess.Popen[bytes]]) -> list[int | None]:
    deadline = time.monotonic() + EXIT_GRACE_S
    codes: list[int | None] = []
    for p in group:
        try:
            codes.append(p.wait(max(0.05, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
        _kill_group(p)  # children it left behind (a bridge's bot, say)
    return codes
