"""Playing one duplicate game set on a game master with fresh agents, and recording it once."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import grpc

from arena.config import Limits
from arena.errors import ArenaError
from arena.gamemaster.client import (
    GameExists,
    GameMasterClient,
    GameMasterError,
    GameOutcome,
    OpenedGame,
)
from arena.gamemaster.early_exit import EarlyExitWatch, gone_before_connecting
from arena.gamemaster.policy import ABSENT, CONTESTED, DISCONNECTED, GameLimits
from arena.gamemaster.status import SHUTTING_DOWN
from arena.record import dumps, record_lines
from arena.storage import FaultInfo, GameResult
from arena.storage.models import BotVersion, utcnow
from runner.launch import (
    AgentLimits,
    AgentSpec,
    ContainerLauncher,
    LaunchError,
    ProcessLauncher,
    RunningAgent,
    forkserver,
)

log = logging.getLogger(__name__)

# Every seat must have said Hello this long after OpenGame, or it forfeits (agents start
# fresh for each game, so this covers an interpreter's start-up on a busy machine).
CONNECT_MS = 20_000
# A game's wall-clock bound: four seats' time banks and decisions, plus slack.
GAME_TIMEOUT = 15 * 60.0
# How often the agents are checked for an early death while their game runs (os.waitid WNOHANG:
# cheap), so that one that dies before connecting forfeits without waiting out CONNECT_MS.
DEATH_POLL_S = 0.05
# How long a seat that forfeited by disconnecting is given to end, so that its exit code and
# stderr are kept: the game master sees its stream break while the process is still exiting.
EXIT_SETTLE_S = 2.0
# How long an agent whose game ended may take to exit by itself before it is stopped: most do
# at once, and a bot's last words (the SDK's "game ... over", a log it flushes) are kept.
OWN_END_S = 0.5


class GameAborted(ArenaError):
    """A game of the set ended without a result; the set must be played again."""


class GameMasterLost(GameAborted):
    """The game master went away mid-game (killed, restarted, or stopping): no bot's fault, so
    the set is played again without spending one of its attempts."""


# A call's codes when its game master is gone: UNAVAILABLE (no connection, or refusing games
# as it stops), CANCELLED (a call the stopping server cut short: the worker cancels its own
# calls only once they ended) and NOT_FOUND (a game master started again has never heard of
# the game).
_GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.NOT_FOUND)


def refused_admin(exc: BaseException) -> bool:
    """Whether the game master refused a worker's admin call: its ARENA_ADMIN_TOKEN is wrong."""
    return isinstance(exc, GameMasterError) and exc.code() is grpc.StatusCode.UNAUTHENTICATED


def game_master_full(exc: BaseException) -> bool:
    """Whether the game master refused to open a set's game: it has as many open as its
    --max-games allows."""
    return isinstance(exc, GameMasterError) and exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def lost_game_master(exc: BaseException) -> bool:
    """Whether a set's game failed because its game master went away."""
    if isinstance(exc, GameMasterLost):
        return True
    return isinstance(exc, GameMasterError) and exc.code() in _GONE


class Launcher(Protocol):
    def launch(self, spec: AgentSpec) -> RunningAgent: ...


@dataclass(frozen=True)
class SeatBot:
    """How to start the agent of one seat: a registered bot version."""

    version_id: int
    ref: str
    directory: str
    command: tuple[str, ...] | None
    image: str | None

    @classmethod
    def of(cls, version: BotVersion) -> SeatBot:
        return cls(
            version_id=version.id,
            ref=version.ref,
            directory=version.directory,
            command=tuple(version.command) if version.command is not None else None,
            image=version.image,
        )


@dataclass(frozen=True)
class GameTiming:
    """Where one game's wall time went, for the benchmark and the logs."""

    launch_s: float
    play_s: float
    stop_s: float


@dataclass
class Launchers:
    process: Launcher
    container: Launcher

    @classmethod
    def default(cls, log_dir: Path | None = None) -> Launchers:
        process = ProcessLauncher(log_dir=log_dir, forkserver=forkserver.shared)
        return cls(process, ContainerLauncher(log_dir=log_dir))

    def for_bot(self, bot: SeatBot) -> Launcher:
        return self.container if bot.image else self.process


# Threads that stop finished games' agents (each stop may wait out a grace period), kept from one
# game to the next: starting a thread takes a millisecond or more on a busy machine.
_chores = futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="agent-chores")


def _spec(bot: SeatBot, token: str, game_master: str, label: str, limits: AgentLimits) -> AgentSpec:
    return AgentSpec(
        command=bot.command or (),
        directory=Path(bot.directory),
        game_master=game_master,
        seat_token=token,
        limits=limits,
        label=label,
        image=bot.image or "",
    )


class AgentStopper:
    """Stops finished games' agents on worker threads, each stop may wait out a grace period.

    What the game needs of its agents (exit reasons, stderr) is read before they are stopped,
    so a game set goes on to its next game, or to storing its results, while this runs;
    `join()` before the set ends, so no agent outlives its job.
    """

    def __init__(self) -> None:
        self._stops: list[Future[None]] = []

    def stop(self, agents: Sequence[RunningAgent | None]) -> None:
        self._stops += [_chores.submit(_end, agent) for agent in agents if agent is not None]

    def join(self) -> None:
        futures.wait(self._stops)
        for stop in self._stops:
            if stop.exception() is not None:
                log.error("stopping an agent failed", exc_info=stop.exception())
        self._stops.clear()

    def __enter__(self) -> AgentStopper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.join()


def _end(agent: RunningAgent) -> None:
    """Stop the agent of a game that ended, once it had OWN_END_S to end by itself."""
    agent.wait(OWN_END_S)
    agent.stop()


def _record_faults(record: str) -> list[FaultInfo]:
    """The faults of the record (RECORD.md: `fault` on a decided action, or on a line of its
    own), and its contested seats (a second Hello with a seat's token), as kind `contested`."""
    faults: list[FaultInfo] = []
    for line in record_lines(record):
        if '"fault"' not in line and '"contested"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = CONTESTED if event.get("event") == CONTESTED else event.get("fault")
        seat = event.get("seat")
        if not kind or seat not in (0, 1, 2, 3):
            continue
        faults.append(
            FaultInfo(
                seat=seat,
                kind=str(kind),
                hand=event.get("hand"),
                detail=str(event.get("detail", "")),
            )
        )
    return faults


def _with_deaths(faults: list[FaultInfo], deaths: dict[int, tuple[str, str]]) -> list[FaultInfo]:
    """Attach each dead agent's exit reason and stderr to its seat's first fault (or add one)."""
    out = list(faults)
    for seat, (reason, stderr) in sorted(deaths.items()):
        index = next((i for i, f in enumerate(out) if f.seat == seat), None)
        if index is None:
            out.append(FaultInfo(seat=seat, kind="crash", detail=reason, stderr=stderr))
            continue
        fault = out[index]
        detail = f"{fault.detail}; agent {reason}" if fault.detail else f"agent {reason}"
        out[index] = FaultInfo(fault.seat, fault.kind, fault.hand, detail, stderr)
    return out


def _forfeiter_stderr(
    agents: Sequence[RunningAgent | None], seat: int | None, deaths: dict[int, tuple[str, str]]
) -> dict[int, str]:
    """The stderr of the seat that forfeited while its agent still ran (at the fault limit,
    say), read before it is stopped: it may say why (the stdio bridge's hint that the bot never
    flushed its stdout). A dead agent's comes with its death."""
    agent = agents[seat] if seat is not None else None
    if seat is None or agent is None or seat in deaths:
        return {}
    return {seat: agent.stderr_text()}


def _with_stderr(faults: list[FaultInfo], stderr: dict[int, str]) -> list[FaultInfo]:
    """`stderr` on the last fault of its seat, where none of the seat's faults has any."""
    out = list(faults)
    for seat, text in stderr.items():
        theirs = [i for i, f in enumerate(out) if f.seat == seat]
        if text and theirs and not any(out[i].stderr for i in theirs):
            out[theirs[-1]] = dataclasses.replace(out[theirs[-1]], stderr=text)
    return out


def _absent(
    agents: Sequence[RunningAgent | None],
    result: GameOutcome,
    deaths: dict[int, tuple[str, str]],
    connect_ms: int,
) -> list[FaultInfo]:
    """A fault of kind `absent` for each seat whose agent ran but never connected, when the
    game was forfeited for it: the record says so only in its end's detail, and the bot's
    page showed no fault at all. What the agent wrote to stderr may say why.

    Only when the seat that forfeited is itself absent was every seat given the whole connect
    window: a game forfeited at once for a crash leaves a slower partner unconnected, not absent.
    """
    if result.reason != "forfeit":
        return []
    absent = [
        seat
        for seat, report in enumerate(result.seats)
        if not report.connected and seat not in deaths
    ]
    if result.forfeit_seat not in absent:
        return []
    return [
        FaultInfo(
            seat=seat,
            kind=ABSENT,
            detail=f"the agent did not connect within {connect_ms} ms",
            stderr=agent.stderr_text() if (agent := agents[seat]) is not None else "",
        )
        for seat in absent
    ]


def _gone(
    agents: Sequence[RunningAgent | None], launch_errors: dict[int, str], seat: int
) -> str | None:
    """Why the seat's agent is gone, or None while it runs (for EarlyExitWatch)."""
    if seat in launch_errors:
        return f"crash: the agent could not be started: {launch_errors[seat]}"
    agent = agents[seat]
    code = None if agent is None else agent.poll()
    if agent is None or code is None:
        return None
    return gone_before_connecting(agent.exit_reason() or f"exited with code {code}", code)


def _orphaned(agents: Sequence[RunningAgent | None]) -> bool:
    """Whether the fork server died under an agent (each is polled: that is how it shows)."""
    running = [agent for agent in agents if agent is not None]
    for agent in running:
        agent.poll()
    return any(agent.orphaned for agent in running)


def _open_afresh(
    client: GameMasterClient, open_game: Callable[..., OpenedGame], game_id: str
) -> OpenedGame:
    """Open the game as `game_id` or, where an earlier attempt's game holds that id (its worker
    died), end that one and open the next free id: game_id.2, .3, ... (the game master keeps an
    ended game's id for its spectators). The bots are told that id; the record is filed under
    `game_id` (_filed_as)."""
    tried, attempt = game_id, 1
    while True:
        try:
            return open_game(game_id=tried)
        except GameExists:
            try:
                client.abort_game(tried)
            except GameMasterError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:  # gone by itself meanwhile
                    raise
        attempt += 1
        tried = f"{game_id}.{attempt}"


def _filed_as(record: str, game_id: str) -> str:
    """The record with the set's `game_id` in its header, where the game master played it as
    game_id.2, .3, ... (an earlier attempt's game held the id): the stored game is `game_id`,
    and a set played again must give the same record as one played once (RECORD.md)."""
    head, newline, rest = record.partition("\n")
    try:
        header = json.loads(head)
    except ValueError:
        return record  # no record to speak of (an aborted game's is empty)
    if not isinstance(header, dict):
        return record
    header["game_id"] = game_id
    return dumps(header) + newline + rest


def play_game(
    client: GameMasterClient,
    *,
    game_id: str,
    game_index: int,
    seats: Sequence[SeatBot],
    ruleset: str,
    seed: int,
    first_dealer: int,
    limits: Limits,
    agent_limits: AgentLimits,
    launchers: Launchers,
    agent_game_master: str | None = None,
    connect_ms: int = CONNECT_MS,
    timings: Callable[[GameTiming], None] | None = None,
    stopper: AgentStopper | None = None,
) -> GameResult:
    """Open one game, start its four agents, wait for the end, stop them, return the result.

    With a `stopper` the agents are stopped in the background and the caller joins it.
    """
    started = time.monotonic()
    names = [bot.ref for bot in seats]
    game_limits = GameLimits(limits.decision_ms, limits.bank_ms, limits.fault_limit, connect_ms)
    open_game = functools.partial(
        client.open_game, ruleset, seed, first_dealer=first_dealer, agents=names, limits=game_limits
    )
    opened = _open_afresh(client, open_game, game_id)
    address = agent_game_master or client.address
    agents: list[RunningAgent | None] = [None, None, None, None]
    launch_errors: dict[int, str] = {}
    launched = played = time.monotonic()
    try:
        for seat, bot in enumerate(seats):
            label = f"{opened.game_id}-s{seat}-{bot.ref}"  # names its log, its container
            spec = _spec(bot, opened.tokens[seat], address, label, agent_limits)
            try:
                agents[seat] = launchers.for_bot(bot).launch(spec)
            except LaunchError as exc:
                # The seat never connects and forfeits; the fault says why.
                launch_errors[seat] = str(exc)
                log.warning("game %s seat %d: %s", opened.game_id, seat, exc)
        launched = time.monotonic()
        watch = EarlyExitWatch(
            client, opened.game_id, functools.partial(_gone, agents, launch_errors)
        )
        watch.check()  # an agent that could not be started forfeits before any waiting
        result = client.await_game(
            opened.game_id, timeout=GAME_TIMEOUT, while_waiting=watch.check, every=DEATH_POLL_S
        )
        if result.reason in ("", "aborted"):
            # Not a result to record: the game master is shutting down, or another attempt at
            # this set (its job queued again after a Redis restart) took the game over.
            aborted = GameMasterLost if result.detail == SHUTTING_DOWN else GameAborted
            raise aborted(f"game {opened.game_id} was aborted: {result.detail or 'no reason'}")
        if _orphaned(agents):
            # The fork server died mid-game (a bot can kill it) and took every agent with it:
            # whichever seat the game master missed first would forfeit, guilty or not.
            raise GameAborted(
                f"game {opened.game_id}: the fork server died mid-game, ending every agent; "
                "played again"
            )
        played = time.monotonic()
        finished = utcnow()  # the game's end, not its set's: a set's games end minutes apart
        deaths = _deaths(agents, result.forfeit_seat, result.detail)
        forfeiter = _forfeiter_stderr(agents, result.forfeit_seat, deaths)
    except BaseException:
        # Whatever went wrong here (timeout, shutdown), the game must not outlive the job.
        try:
            client.abort_game(opened.game_id)
        except Exception as exc:  # the original error matters more
            log.warning("could not abort game %s: %s", opened.game_id, exc)
        raise
    finally:
        if stopper is not None:
            stopper.stop(agents)  # the caller joins
        else:
            with AgentStopper() as now:
                now.stop(agents)
    stopped = time.monotonic()
    if timings is not None:
        timings(GameTiming(launched - started, played - launched, stopped - played))
    for seat, error in launch_errors.items():
        deaths[seat] = (f"could not be started: {error}", "")
    record = result.record
    if opened.game_id != game_id:
        record = _filed_as(record, game_id)
    stats = result.seats
    return GameResult(
        game_index=game_index,
        seats=[bot.version_id for bot in seats],
        scores=result.scores,
        winner=result.winner,
        reason=result.reason,
        hands=result.hands,
        record=record.encode("utf-8"),
        decisions=sum(s.decisions for s in stats),
        think_ms=[s.total_ms for s in stats] if len(stats) == 4 else (0, 0, 0, 0),
        forfeit_seat=result.forfeit_seat,
        faults=_with_stderr(
            _with_deaths(_record_faults(record), deaths)
            + _absent(agents, result, deaths, connect_ms),
            forfeiter,
        ),
        seed=seed,
        first_dealer=first_dealer,
        ruleset=ruleset,
        finished=finished,
    )


def _deaths(
    agents: Sequence[RunningAgent | None], forfeit_seat: int | None, detail: str
) -> dict[int, tuple[str, str]]:
    """Seats whose agent already ended badly by itself: exit reason and capped stderr. Exit
    code 0 is bad too for the seat that forfeited: it left before the game ended.

    The seat that forfeited by disconnecting is given EXIT_SETTLE_S to end: its stream broke as
    it died, and the news of its exit (the fork server's report, the zombie) may come a moment
    later. Any other agent still running is simply stopped.
    """
    out: dict[int, tuple[str, str]] = {}
    for seat, agent in enumerate(agents):
        if agent is None:
            continue
        if seat == forfeit_seat and detail == DISCONNECTED:
            code = agent.wait(EXIT_SETTLE_S)
        else:
            code = agent.poll()
        if code is not None and (code != 0 or seat == forfeit_seat):
            out[seat] = (agent.exit_reason() or f"exited with code {code}", agent.stderr_text())
    return out
