"""A worker's client of the game master's admin calls: OpenGame, AwaitGame, AbortGame,
ForfeitSeat."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from arena.config import Limits, env
from arena.errors import ArenaError

# How long one AwaitGame call may block: short, so that signals (a job timeout, the parent
# worker dying) are handled between calls rather than after the whole game.
_AWAIT_SLICE = 2.0
_CALL_TIMEOUT = 15.0
ADMIN_TOKEN_HEADER = "x-arena-admin-token"


class GameMasterError(ArenaError, RuntimeError):
    """The game master refused a call or could not be reached."""


@dataclass(frozen=True)
class OpenedGame:
    game_id: str
    seat_tokens: tuple[str, str, str, str] = field(repr=False)


def _pb() -> tuple[Any, Any]:
    from arena._proto.sixtythree.v1 import arena_pb2, arena_pb2_grpc

    return arena_pb2, arena_pb2_grpc


def ruleset_fields(ruleset: str) -> dict[str, str]:
    """OpenGameRequest fields for a ruleset given as a name or as a JSON object of parameters."""
    text = ruleset.strip()
    return {"ruleset_json": text} if text.startswith("{") else {"ruleset": text}


class GameMasterClient:
    """One channel to one game master; cheap to keep for the life of a worker process."""

    def __init__(self, address: str | None = None, *, admin_token: str | None = None) -> None:
        self.address = address or env("ARENA_GAME_MASTER")
        token = env("ARENA_ADMIN_TOKEN") if admin_token is None else admin_token
        self._metadata = ((ADMIN_TOKEN_HEADER, token),) if token else ()
        self._channel = grpc.insecure_channel(self.address)
        pb2, pb2_grpc = _pb()
        self._pb2 = pb2
        self._stub = pb2_grpc.GameMasterStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> GameMasterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, what: str, error: grpc.RpcError) -> GameMasterError:
        code = error.code() if hasattr(error, "code") else None
        detail = error.details() if hasattr(error, "details") else str(error)
        if code == grpc.StatusCode.UNAVAILABLE:
            return GameMasterError(
                f"cannot reach the game master at {self.address} ({detail}): start it with "
                "`arena gamemaster` or set ARENA_GAME_MASTER"
            )
        name = code.name if code is not None else "error"
        return GameMasterError(f"game master {self.address}: {what} failed: {name}: {detail}")

    def open_game(
        self,
        *,
        game_id: str,
        ruleset: str,
        seed: int,
        first_dealer: int,
        agents: Sequence[str],
        limits: Limits,
        connect_ms: int | None = None,
    ) -> OpenedGame:
        pb2 = self._pb2
        wire_limits = pb2.Limits(
            decision_ms=limits.decision_ms,
            bank_ms=limits.bank_ms,
            fault_limit=limits.fault_limit,
        )
        if connect_ms is not None:
            wire_limits.connect_ms = connect_ms
        request = pb2.OpenGameRequest(
            seed=seed,
            first_dealer=first_dealer,
            agents=list(agents),
            limits=wire_limits,
            game_id=game_id,
            **ruleset_fields(ruleset),
        )
        try:
            reply = self._stub.OpenGame(
                request, timeout=_CALL_TIMEOUT, metadata=self._metadata, wait_for_ready=False
            )
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.ALREADY_EXISTS:
                raise GameExists(game_id) from None
            raise self._fail("OpenGame", error) from None
        tokens = tuple(reply.seat_tokens)
        if len(tokens) != 4:
            raise GameMasterError(f"OpenGame gave {len(tokens)} seat tokens, not 4")
        return OpenedGame(reply.game_id, (tokens[0], tokens[1], tokens[2], tokens[3]))

    def await_game(self, game_id: str, timeout: float | None = None) -> Any:
        """Block until the game ends and return its GameResult message."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ref = self._pb2.GameRef(game_id=game_id)
        while True:
            slice_ = _AWAIT_SLICE
            if deadline is not None:
                slice_ = max(0.05, min(slice_, deadline - time.monotonic()))
            try:
                return self._stub.AwaitGame(ref, timeout=slice_, metadata=self._metadata)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise self._fail("AwaitGame", error) from None
            if deadline is not None and time.monotonic() >= deadline:
                raise GameMasterError(f"game {game_id} did not end within {timeout:.0f} s")

    def abort_game(self, game_id: str, reason: str = "") -> Any | None:
        """End a game with no result; None if the game master does not know it (any more)."""
        try:
            return self._stub.AbortGame(
                self._pb2.AbortGameRequest(game_id=game_id, reason=reason),
                timeout=_CALL_TIMEOUT,
                metadata=self._metadata,
            )
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise self._fail("AbortGame", error) from None

    def forfeit_seat(self, game_id: str, seat: int, detail: str) -> Any | None:
        """End a game as a forfeit by ``seat``, whose agent is gone before it connected, and
        return its GameResult; None if the seat's agent has connected (the game master sees
        that one go by itself) or the game is unknown."""
        try:
            return self._stub.ForfeitSeat(
                self._pb2.ForfeitSeatRequest(game_id=game_id, seat=seat, detail=detail),
                timeout=_CALL_TIMEOUT,
                metadata=self._metadata,
            )
        except grpc.RpcError as error:
            if error.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return None
            raise self._fail("ForfeitSeat", error) from None


class GameExists(GameMasterError):
    """OpenGame with a game id the game master already has (an earlier attempt's game)."""

    def __init__(self, game_id: str) -> None:
        super().__init__(f"the game master already has a game {game_id!r}")
        self.game_id = game_id
