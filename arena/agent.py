"""The Python agent SDK: play one seat on a game master with an ordinary in-process player.

A bot is any object with ``name`` and ``act(observation, legal)`` returning an Action or its
text (or a pair ``(action, note)`` to attach a note). Run it as the platform does::

    from arena.agent import run
    run(MyPlayer())            # reads ARENA_GAME_MASTER and ARENA_SEAT_TOKEN; exits at GameEnd

Authors who prefer plain data write ``fn(observation_dict, legal_dict) -> str`` and call
``play_function(fn)``. Exit codes: 0 the game ended, 2 no token in the environment, 3 the game
master refused the seat, 4 it could not be reached, 5 the connection was lost mid-game.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, TextIO

import grpc

from arena import wire
from arena.actions import Action
from arena.errors import ArenaError
from arena.legal import Legal
from arena.observation import Observation
from arena.wire import pb
from runner.pids import keep_private

DEFAULT_GAME_MASTER = "127.0.0.1:50051"
CONNECT_TIMEOUT_S = 30.0
_RETRY_PAUSE_S = 0.05  # between a failed stream and the next, once the channel is ready
WAIT_NOTICE_S = 2.0  # an agent still waiting for its game master after this says so
EXIT_REFUSED = 3
EXIT_UNREACHABLE = 4
EXIT_LOST = 5
_NOTE_MAX = 200
_ERROR_MAX = 300
# Status codes that mean "this seat will not be played by you", not a transport problem.
REFUSALS = {
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.DEADLINE_EXCEEDED,
}

Answer = Action | str | tuple[Action | str, str]


class Player(Protocol):
    """A bot: the same interface as arena.play's in-process players (notes optional)."""

    name: str

    def act(self, obs: Observation, legal: Legal) -> Answer: ...


class AgentError(ArenaError):
    """The seat could not be played to the end."""


class SeatRefused(AgentError):
    """The game master refused the Hello (bad or used token, wrong protocol version, ...)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class GameMasterUnreachable(AgentError):
    """No game master answered at the address."""


class ConnectionLost(AgentError):
    """The stream ended before the game did."""


@dataclass(frozen=True)
class SeatResult:
    """How the game ended, seen from one seat."""

    game_id: str
    seat: int
    team: int
    end: pb.GameEnd
    faults: int

    @property
    def won(self) -> bool:
        return self.end.HasField("winner") and self.end.winner == self.team


def play(
    player: Player,
    address: str,
    token: str,
    *,
    agent_name: str | None = None,
    agent_version: str = "",
    connect_timeout: float | None = None,
    on_message: Callable[[pb.ServerMessage], None] | None = None,
    on_event: Callable[[pb.GameEvent], None] | None = None,
    live_events: bool = False,
    log: TextIO | None = None,
) -> SeatResult:
    """Play the seat ``token`` opens, to the end of the game. Raises AgentError subclasses.

    ``on_message`` sees every ServerMessage before the SDK handles it; ``on_event`` every
    public event, in order, before the message it came with (a decision, say) is handled.
    ``live_events`` asks the game master to send each event as it happens, in its own message,
    instead of with the seat's next message: only for bots that must watch others' moves live.
    It runs an asyncio loop of its own: call it from plain code, not from a running loop.
    """
    name = agent_name or getattr(player, "name", "") or type(player).__name__
    hello = pb.AgentMessage(
        hello=pb.Hello(
            seat_token=token,
            protocol_version=wire.PROTOCOL_VERSION,
            agent_name=name,
            agent_version=agent_version,
            live_events=live_events,
        )
    )
    seat = _Seat(player, name, hello, on_message, on_event, log or sys.stderr)
    if connect_timeout is None:
        connect_timeout = CONNECT_TIMEOUT_S
    return asyncio.run(_play(seat, address, connect_timeout))


@dataclass(frozen=True)
class _Seat:
    """What playing the seat needs, the same from the first stream to the last."""

    player: Player
    name: str
    hello: pb.AgentMessage
    on_message: Callable[[pb.ServerMessage], None] | None
    on_event: Callable[[pb.GameEvent], None] | None
    log: TextIO


async def _play(seat: _Seat, address: str, connect_timeout: float) -> SeatResult:
    # grpc.aio rather than the synchronous API: a synchronous stream hands every message
    # between three threads (the channel's, the reader's, the request iterator's); here one
    # thread, the loop's, reads each request and writes its reply. bench/gamemaster.py: about
    # 15% less time per decision, and less CPU per agent.
    async with grpc.aio.insecure_channel(address) as channel:
        stub = channel.stream_stream(
            wire.PLAY,
            request_serializer=pb.AgentMessage.SerializeToString,
            response_deserializer=pb.ServerMessage.FromString,
        )
        deadline = time.monotonic() + connect_timeout

        def say_waiting() -> None:
            print(
                f"[agent {seat.name}] no game master at {address} yet; waiting up to "
                f"{connect_timeout:g} s",
                file=seat.log,
                flush=True,
            )

        waiting: Callable[[], None] | None = say_waiting

        while True:
            try:
                return await _play_stream(stub, seat)
            except GameMasterUnreachable as exc:
                # The stream is opened at once, without first waiting for the channel to be
                # ready (a game master is almost always there); only when that finds none does
                # the agent wait for one, up to the connect timeout.
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not await channel_ready_within(channel, remaining, waiting):
                    raise GameMasterUnreachable(
                        f"no game master at {address} (waited {connect_timeout:g} s: {exc})"
                    ) from None
                waiting = None  # said once is enough
                await asyncio.sleep(min(_RETRY_PAUSE_S, max(0.0, deadline - time.monotonic())))


async def channel_ready_within(
    channel: grpc.aio.Channel, timeout: float, waiting: Callable[[], None] | None
) -> bool:
    """True once the channel is ready, False if `timeout` seconds pass first. Calls `waiting()`
    if it is not ready within WAIT_NOTICE_S, so that a waiting agent does not look hung."""
    ready = asyncio.ensure_future(channel.channel_ready())
    try:
        notice = min(WAIT_NOTICE_S, timeout)
        done, _ = await asyncio.wait({ready}, timeout=notice)
        if not done and timeout > notice:
            if waiting is not None:
                waiting()
            done, _ = await asyncio.wait({ready}, timeout=timeout - notice)
        return bool(done)
    finally:
        ready.cancel()


async def _play_stream(stub: grpc.aio.StreamStreamMultiCallable, seat: _Seat) -> SeatResult:
    """One Play stream, from Hello to GameEnd."""
    call = stub()
    welcome: pb.Welcome | None = None
    hello_sent = False
    faults = 0
    on_event = seat.on_event
    try:
        await call.write(seat.hello)
        hello_sent = True
        while (msg := await call.read()) is not grpc.aio.EOF:
            if seat.on_message is not None:
                seat.on_message(msg)
            if on_event is not None:
                for event in msg.events:
                    on_event(event)
            kind = msg.WhichOneof("kind")
            if kind == "event" and on_event is not None:
                on_event(msg.event)
            elif kind == "welcome":
                welcome = msg.welcome
            elif kind == "decision":
                reply = _decide(seat.player, msg.decision, seat.log)
                try:  # noqa: SIM105 (free in Python 3.11; suppress() costs a call per decision)
                    await call.write(reply)
                except (grpc.RpcError, asyncio.InvalidStateError):
                    # The game ended while the bot thought (a forfeit, say): the GameEnd is
                    # there to be read. If the stream broke instead, the next read says so.
                    pass
            elif kind == "fault":
                faults = msg.fault.faults
                print(f"[agent {seat.name}] {fault_text(msg.fault)}", file=seat.log)
            elif kind == "game_end":
                assert welcome is not None
                return SeatResult(welcome.game_id, welcome.seat, welcome.team, msg.game_end, faults)
    except grpc.RpcError as exc:
        raise stream_failure(exc, hello_sent=hello_sent, welcomed=welcome is not None) from None
    finally:
        call.cancel()
    raise ConnectionLost("the game master ended the stream before the game ended")


def stream_failure(exc: grpc.RpcError, *, hello_sent: bool, welcomed: bool) -> AgentError:
    """What a Play stream that failed with ``exc`` means for the seat: no game master answered
    (UNAVAILABLE before the Hello could be sent: nothing to connect to), the seat was refused
    (before the Welcome), or else the game master was lost. A Hello sent means a connection was
    made: a game master killed before the agent read its Welcome (a reset drops what was not
    read) is lost, not a game master to wait for."""
    code, details = exc.code(), exc.details() or ""
    if not hello_sent and code is grpc.StatusCode.UNAVAILABLE:
        return GameMasterUnreachable(details)
    if not welcomed and code in REFUSALS:
        return SeatRefused(code, details)
    return ConnectionLost(f"{code.name}: {details}")


def fault_text(notice: pb.FaultNotice) -> str:
    """What a FaultNotice says, in one line for an agent's log."""
    text = f"fault {notice.faults}/{notice.fault_limit} ({notice.kind}): {notice.detail}"
    return text + (f"; the game master played {notice.fallback!r}" if notice.fallback else "")


def _decide(player: Player, decision: pb.DecisionRequest, log: TextIO) -> pb.AgentMessage:
    rid = decision.request_id
    try:
        # Converted when the player first reads it: a bot that decides from `legal` alone
        # pays nothing for the hand, auction and tricks.
        obs = wire.lazy_observation(decision.observation)
        phase = wire.phase_from_pb(decision.observation.phase)
        legal = wire.legal_from_pb(decision.legal, phase, decision.observation.seat)
        answer = player.act(obs, legal)
        note = ""
        if isinstance(answer, tuple):
            answer, note = answer
        return pb.AgentMessage(
            reply=pb.Reply(request_id=rid, action=str(answer), note=str(note)[:_NOTE_MAX])
        )
    except Exception as exc:  # the bot's bug: report it, the game master plays the fallback
        traceback.print_exc(file=log)
        error = f"{exc.__class__.__name__}: {exc}"[:_ERROR_MAX]
        return pb.AgentMessage(reply=pb.Reply(request_id=rid, error=error))


def run(player: Player, *, agent_version: str = "") -> NoReturn:
    """Play the seat in ARENA_SEAT_TOKEN on ARENA_GAME_MASTER, then exit (see module doc)."""
    keep_private()  # the seat token, from other seats' agents where they share a process table
    token = os.environ.get("ARENA_SEAT_TOKEN", "")
    address = os.environ.get("ARENA_GAME_MASTER") or DEFAULT_GAME_MASTER
    if not token:
        print("ARENA_SEAT_TOKEN is not set: the platform starts agents with it", file=sys.stderr)
        sys.exit(2)
    try:
        result = play(player, address, token, agent_version=agent_version)
    except SeatRefused as exc:
        print(f"game master refused the seat token: {exc}", file=sys.stderr)
        sys.exit(EXIT_REFUSED)
    except GameMasterUnreachable as exc:
        print(f"cannot reach the game master: {exc}", file=sys.stderr)
        sys.exit(EXIT_UNREACHABLE)
    except ConnectionLost as exc:
        print(f"lost the game master mid-game: {exc}", file=sys.stderr)
        sys.exit(EXIT_LOST)
    except KeyboardInterrupt:
        sys.exit(130)
    end = result.end
    print(
        f"game {result.game_id} over ({end.reason}): scores {list(end.scores)}, "
        f"{'won' if result.won else 'draw' if not end.HasField('winner') else 'lost'}"
        + (f" ({end.detail})" if end.detail else ""),
        file=sys.stderr,
    )
    sys.exit(0)


class FunctionPlayer:
    """A player made of ``fn(observation_dict, legal_dict) -> action text``."""

    def __init__(self, fn: Callable[[dict[str, Any], dict[str, Any]], Any], name: str) -> None:
        self.fn = fn
        self.name = name

    def act(self, obs: Observation, legal: Legal) -> Answer:
        legal_dict = wire.legal_to_dict(legal)
        answer = self.fn(obs.to_dict(), legal_dict)
        if isinstance(answer, tuple):
            return str(answer[0]), str(answer[1])
        return str(answer)


def play_function(
    fn: Callable[[dict[str, Any], dict[str, Any]], Any], name: str | None = None
) -> NoReturn:
    """Run ``fn(observation_dict, legal_dict) -> str`` as this process's agent.

    observation_dict is Observation.to_dict() (cards as text); legal_dict holds "phase",
    "actions" (texts, for auction/trump/play), "choice" (for give/keep: verb, cards, required,
    min_count, max_count, else None) and "fallback". Return the action text, or (text, note).
    """
    run(FunctionPlayer(fn, name or str(getattr(fn, "__name__", "function"))))
