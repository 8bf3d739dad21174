"""Every way the game master refuses a call, and the gRPC status code each one gets."""

from __future__ import annotations

from enum import StrEnum

import grpc

from arena.errors import ArenaError

# The detail of a game the game master ended as aborted because it is stopping: a worker reads
# it to tell a set the bots did not lose from one they did (runner/gameset.py).
SHUTTING_DOWN = "the game master is shutting down"


class Refusal(StrEnum):
    """Why a call is refused."""

    BAD_TOKEN = "bad-token"
    TOKEN_USED = "token-used"
    VERSION = "protocol-version"
    NOT_HELLO = "not-hello"
    NO_HELLO = "no-hello"
    SHUTTING_DOWN = "shutting-down"
    UNKNOWN_GAME = "unknown-game"
    GAME_EXISTS = "game-exists"
    BAD_REQUEST = "bad-request"
    ADMIN_ONLY = "admin-only"
    TOO_MANY_GAMES = "too-many-games"
    SEAT_CONNECTED = "seat-connected"
    DEALS_IN_PLAY = "deals-in-play"


# The one table (STYLE.md habit 6); proto/sixtythree/v1/arena.proto documents it for agents.
STATUS_CODES: dict[Refusal, grpc.StatusCode] = {
    Refusal.BAD_TOKEN: grpc.StatusCode.UNAUTHENTICATED,  # unknown token, or its game ended
    Refusal.TOKEN_USED: grpc.StatusCode.ALREADY_EXISTS,  # each seat token works once
    Refusal.VERSION: grpc.StatusCode.FAILED_PRECONDITION,  # protocol version not spoken here
    Refusal.NOT_HELLO: grpc.StatusCode.INVALID_ARGUMENT,  # first message on Play not a Hello
    Refusal.NO_HELLO: grpc.StatusCode.DEADLINE_EXCEEDED,  # no Hello in time after opening
    Refusal.SHUTTING_DOWN: grpc.StatusCode.UNAVAILABLE,  # the game master is stopping
    Refusal.UNKNOWN_GAME: grpc.StatusCode.NOT_FOUND,  # Watch and admin calls: no such game
    Refusal.GAME_EXISTS: grpc.StatusCode.ALREADY_EXISTS,  # OpenGame with a game id in use
    Refusal.BAD_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,  # OpenGame: bad ruleset, limits, id
    Refusal.ADMIN_ONLY: grpc.StatusCode.UNAUTHENTICATED,  # admin call without the admin token
    Refusal.TOO_MANY_GAMES: grpc.StatusCode.RESOURCE_EXHAUSTED,  # the open-games cap is hit
    Refusal.SEAT_CONNECTED: grpc.StatusCode.FAILED_PRECONDITION,  # ForfeitSeat: its agent is here
    # Watch, AwaitGame: another game being played deals the same cards (a duplicate set's mirror)
    Refusal.DEALS_IN_PLAY: grpc.StatusCode.FAILED_PRECONDITION,
}


class Refused(ArenaError):
    """A refused call: its Refusal (hence status code) and a message for the caller."""

    def __init__(self, refusal: Refusal, detail: str) -> None:
        super().__init__(detail)
        self.refusal = refusal
        self.detail = detail

    @property
    def code(self) -> grpc.StatusCode:
        return STATUS_CODES[self.refusal]
