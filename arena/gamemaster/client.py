"""What a worker uses to talk to a game master: open a game, hand out tokens, await the result;
and what a spectator uses to watch one."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from arena import wire
from arena.errors import ArenaError
from arena.gamemaster.policy import GameLimits
from arena.rulesets import Ruleset
from arena.wire import pb

T = TypeVar("T")

# How long one AwaitGame call may block: short, so that a caller's signals (a job timeout, its
# parent worker dying) are handled between calls rather than after the whole game.
AWAIT_SLICE_S = 2.0


class GameMasterError(ArenaError, grpc.RpcError):
    """The game master refused a call or could not be reached; ``code()`` is the call's status."""

    def __init__(self, message: str, code: grpc.StatusCode, details: str = "") -> None:
        super().__init__(message)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class GameExists(GameMasterError):
    """OpenGame with a game id the game master already has (an earlier attempt's game)."""

    def __init__(self, game_id: str, details: str = "") -> None:
        super().__init__(
            f"the game master already has a game {game_id!r}",
            grpc.StatusCode.ALREADY_EXISTS,
            details,
        )
        self.game_id = game_id


@dataclass(frozen=True)
class OpenedGame:
    """A game the game master has created: give ``tokens[seat]`` to the agent of that seat."""

    game_id: str
    tokens: tuple[str, str, str, str]
    limits: GameLimits


@dataclass(frozen=True)
class SeatReport:
    """How one seat behaved (SeatStats)."""

    seat: int
    agent: str
    connected: bool
    decisions: int
    faults: int
    faults_by_kind: dict[str, int]
    total_ms: int
    max_ms: int
    bank_ms_left: int
    late_replies: int
    hello_name: str
    hello_version: str


@dataclass(frozen=True)
class GameOutcome:
    """A finished game: result, record (RECORD.md JSON Lines) and per-seat statistics."""

    game_id: str
    scores: tuple[int, int]
    winner: int | None
    reason: str  # target | max_hands | forfeit | aborted
    forfeit_seat: int | None
    detail: str
    hands: int
    record: str
    seats: tuple[SeatReport, ...]

    @classmethod
    def from_pb(cls, msg: pb.GameResult) -> GameOutcome:
        scores = tuple(msg.scores) if len(msg.scores) == 2 else (0, 0)
        return cls(
            game_id=msg.game_id,
            scores=(scores[0], scores[1]),
            winner=msg.winner if msg.HasField("winner") else None,
            reason=msg.reason,
            forfeit_seat=msg.forfeit_seat if msg.HasField("forfeit_seat") else None,
            detail=msg.detail,
            hands=msg.hands,
            record=msg.record_jsonl,
            seats=tuple(
                SeatReport(
                    seat=s.seat,
                    agent=s.agent,
                    connected=s.connected,
                    decisions=s.decisions,
                    faults=s.faults,
                    faults_by_kind={
                        "timeout": s.timeouts,
                        "crash": s.crashes,
                        "illegal": s.illegal,
                        "malformed": s.malformed,
                    },
                    total_ms=s.total_ms,
                    max_ms=s.max_ms,
                    bank_ms_left=s.bank_ms_left,
                    late_replies=s.late_replies,
                    hello_name=s.hello_name,
                    hello_version=s.hello_version,
                )
                for s in msg.seats
            ),
        )


# gRPC waits ever longer between attempts to reach a game master that is down (up to two
# minutes): a restarted one would go unnoticed that long. Every two seconds at most instead.
# (Not grpc.min_reconnect_backoff_ms: that is also the shortest connect timeout.)
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


# The pause before asking again: a game master not serving yet, or an AwaitGame refused while
# another game dealing the same cards is being played.
ASK_AGAIN_S = 0.2


class GameMasterClient:
    """A synchronous client of the admin calls. Thread-safe (one gRPC channel).

    Every failed call raises GameMasterError, an ArenaError that is also the grpc.RpcError.
    """

    def __init__(self, address: str, admin_token: str | None = None) -> None:
        self.address = address
        if admin_token is None:
            admin_token = os.environ.get("ARENA_ADMIN_TOKEN", "")
        self._metadata = ((wire.ADMIN_HEADER, admin_token),) if admin_token else ()
        self._channel = grpc.insecure_channel(address, options=RECONNECT_OPTIONS)
        self._open = self._channel.unary_unary(
            wire.OPEN_GAME,
            request_serializer=pb.OpenGameRequest.SerializeToString,
            response_deserializer=pb.OpenGameReply.FromString,
        )
        self._await = self._channel.unary_unary(
            wire.AWAIT_GAME,
            request_serializer=pb.GameRef.SerializeToString,
            response_deserializer=pb.GameResult.FromString,
        )
        self._abort = self._channel.unary_unary(
            wire.ABORT_GAME,
            request_serializer=pb.AbortGameRequest.SerializeToString,
            response_deserializer=pb.GameResult.FromString,
        )
        self._forfeit = self._channel.unary_unary(
            wire.FORFEIT_SEAT,
            request_serializer=pb.ForfeitSeatRequest.SerializeToString,
            response_deserializer=pb.GameResult.FromString,
        )
        self._watch = self._channel.unary_stream(
            wire.WATCH,
            request_serializer=pb.WatchRequest.SerializeToString,
            response_deserializer=pb.GameEvent.FromString,
        )

    def _call(self, what: str, method: Callable[..., T], request: Any, timeout: float | None) -> T:
        """One admin call; a failure is raised as a GameMasterError saying what went wrong."""
        try:
            return method(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise self._failure(what, error) from None

    def _failure(self, what: str, error: grpc.RpcError) -> GameMasterError:
        code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = (error.details() if isinstance(error, grpc.Call) else "") or str(error)
        if code == grpc.StatusCode.UNAVAILABLE:
            message = (
                f"cannot reach the game master at {self.address} ({details}): start it with "
                "`arena gamemaster` or set ARENA_GAME_MASTER"
            )
        else:
            message = f"game master {self.address}: {what} failed: {code.name}: {details}"
        return GameMasterError(message, code, details)

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the game master serves (grpc.FutureTimeoutError otherwise): one that is
        shutting down says NOT_SERVING, and is waited out like one that is not there.

        Health checks that wait for the channel, rather than grpc.channel_ready_future: its
        connectivity-polling thread could outlive the channel and fail when it was closed.
        """
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        check = health_pb2_grpc.HealthStub(self._channel).Check
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                reply = check(health_pb2.HealthCheckRequest(), timeout=left, wait_for_ready=True)
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                    return  # a server without health checks: its own calls will say more
                if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    break
            else:
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            time.sleep(min(ASK_AGAIN_S, max(0.0, deadline - time.monotonic())))
        raise grpc.FutureTimeoutError()

    def open_game(
        self,
        ruleset: str | Ruleset | Mapping[str, Any] = "standard",
        seed: int | str = 0,
        *,
        first_dealer: int | None = None,
        agents: Sequence[str] = (),
        limits: GameLimits | Mapping[str, int] | None = None,
        game_id: str = "",
        timeout: float = 30.0,
    ) -> OpenedGame:
        """Create a game. ``ruleset``: a name, a JSON object of parameters, a Ruleset, or a dict
        of parameters. GameExists if the game master already has ``game_id``."""
        request = pb.OpenGameRequest(agents=list(agents), game_id=game_id)
        if isinstance(ruleset, str) and ruleset.strip().startswith("{"):
            request.ruleset_json = ruleset.strip()
        elif isinstance(ruleset, str):
            request.ruleset = ruleset
        else:
            params = ruleset.parameters() if isinstance(ruleset, Ruleset) else dict(ruleset)
            request.ruleset_json = json.dumps(params)
        if isinstance(seed, int) and not isinstance(seed, bool):
            request.seed = seed
        else:
            request.seed_text = str(seed)
        if first_dealer is not None:
            request.first_dealer = first_dealer
        if limits is not None:
            values = limits.to_dict() if isinstance(limits, GameLimits) else dict(limits)
            for name, value in values.items():
                setattr(request.limits, name, value)
        try:
            reply = self._call("OpenGame", self._open, request, timeout)
        except GameMasterError as error:
            if error.code() == grpc.StatusCode.ALREADY_EXISTS:
                raise GameExists(game_id, error.details()) from None
            raise
        tokens = tuple(reply.seat_tokens)
        if len(tokens) != 4:
            raise GameMasterError(
                f"OpenGame gave {len(tokens)} seat tokens, not 4", grpc.StatusCode.INTERNAL
            )
        return OpenedGame(
            reply.game_id,
            (tokens[0], tokens[1], tokens[2], tokens[3]),
            wire.limits_from_pb(reply.limits),
        )

    def await_game(
        self,
        game_id: str,
        timeout: float | None = None,
        *,
        while_waiting: Callable[[], object] | None = None,
        every: float = AWAIT_SLICE_S,
    ) -> GameOutcome:
        """Block until the game ends; GameMasterError DEADLINE_EXCEEDED after ``timeout``.

        Waits in calls of at most AWAIT_SLICE_S, so the calling thread handles signals promptly;
        calls ``while_waiting`` every ``every`` seconds until the game ends, on this thread.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        ref = pb.GameRef(game_id=game_id)
        poll = every if while_waiting is not None else None
        while True:
            slice_s = AWAIT_SLICE_S
            if deadline is not None:
                slice_s = max(0.05, min(slice_s, deadline - time.monotonic()))
            call = self._await.future(ref, timeout=slice_s, metadata=self._metadata)
            try:
                while True:
                    try:
                        return GameOutcome.from_pb(call.result(timeout=poll))
                    except grpc.FutureTimeoutError:
                        assert while_waiting is not None
                        while_waiting()
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    # Another game dealing the same cards is being played (an earlier attempt's
                    # mirror game, about to end): the result can be read once it has.
                    time.sleep(ASK_AGAIN_S)
                    if while_waiting is not None:
                        while_waiting()
                elif error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise self._failure("AwaitGame", error) from None
            finally:
                call.cancel()  # a no-op once it ended; ends it if this thread was interrupted
            if deadline is not None and time.monotonic() >= deadline:
                raise GameMasterError(
                    f"game {game_id} did not end within {timeout:g} s",
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                )

    def admin_refusal(self, timeout: float = 3.0) -> str | None:
        """Why the game master refuses this client's admin calls (a wrong admin token), or
        None: it takes them, or does not answer now (whoever needs it waits for it later)."""
        request = pb.AbortGameRequest(game_id="arena-admin-token-check")  # no such game
        try:
            self._abort(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            if error.code() is grpc.StatusCode.UNAUTHENTICATED:
                return str(error.details())
        return None

    def abort_game(self, game_id: str, reason: str = "", timeout: float = 30.0) -> GameOutcome:
        """End the game with no result; ``reason`` goes to the result's and record's detail."""
        request = pb.AbortGameRequest(game_id=game_id, reason=reason)
        return GameOutcome.from_pb(self._call("AbortGame", self._abort, request, timeout))

    def forfeit_seat(
        self, game_id: str, seat: int, detail: str = "", timeout: float = 30.0
    ) -> GameOutcome:
        """End the game as a forfeit by ``seat``, whose agent never connected (it is gone).

        GameMasterError FAILED_PRECONDITION if the seat's agent has connected.
        """
        request = pb.ForfeitSeatRequest(game_id=game_id, seat=seat, detail=detail)
        return GameOutcome.from_pb(self._call("ForfeitSeat", self._forfeit, request, timeout))

    def watch(self, game_id: str) -> Iterator[pb.GameEvent]:
        """The game's public events, as a spectator sees them: those so far, then each as it
        happens, until the game ends. GameMasterError NOT_FOUND for a game the game master
        does not have (never opened, or forgotten an hour after it ended)."""
        call = self._watch(pb.WatchRequest(game_id=game_id), metadata=self._metadata)
        try:
            yield from call
        except grpc.RpcError as error:
            raise self._failure("Watch", error) from None
        finally:
            call.cancel()

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> GameMasterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
