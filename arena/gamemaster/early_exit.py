"""Forfeit a seat whose agent is gone before it connected, at once (ARCHITECTURE §4).

The game master cannot see an agent that never dialled in: without this, its seat would wait
out the connect time. Whoever started the agents (a worker, `arena play`) knows it is gone and
says so through ForfeitSeat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from arena.gamemaster.client import GameMasterClient, GameMasterError

log = logging.getLogger(__name__)

# ForfeitSeat refuses a seat whose agent connected (the game master watches it by itself) and a
# game it does not know: nothing to report either way.
_REFUSALS = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND)


def gone_before_connecting(how: str, code: int | None) -> str:
    """The forfeit's words for an agent that ended (`how`: "exited with code 3") before it
    connected. One that exited of itself with code 0 never dialled the game master: most likely
    a bot that reads JSON lines on stdin, started without the stdio bridge."""
    said = f"crash: the agent {how} before connecting"
    if code == 0:
        said += (
            " (it never dialled ARENA_GAME_MASTER: a bot that reads JSON lines on stdin runs "
            "behind the stdio bridge, `arena stdio-agent -- COMMAND`)"
        )
    return said


class EarlyExitWatch:
    """While a game runs, `check` (called every few ms) tells the game master of each seat
    whose agent `gone(seat)` says is gone, in its words ("crash: …"): the game is then a
    forfeit by the first such seat once the other team is all here, or aborted if a seat of
    each team is gone."""

    def __init__(
        self, client: GameMasterClient, game_id: str, gone: Callable[[int], str | None]
    ) -> None:
        self._client = client
        self._game_id = game_id
        self._gone = gone
        self._watched = set(range(4))

    def check(self) -> None:
        for seat in sorted(self._watched):
            gone = self._gone(seat)
            if gone is None:
                continue
            self._watched.discard(seat)
            try:
                outcome = self._client.forfeit_seat(self._game_id, seat, gone)
            except Exception as exc:  # the connect deadline still ends the game
                if not (isinstance(exc, GameMasterError) and exc.code() in _REFUSALS):
                    log.warning("game %s: ForfeitSeat(%d) failed: %s", self._game_id, seat, exc)
                continue
            if not outcome.reason:  # not over: the other team is not all here yet
                log.info("game %s: seat %d is gone: %s", self._game_id, seat, gone)
                continue
            # The game may have ended by itself just before (an agent exits once it has its
            # GameEnd): then ForfeitSeat returns that result and nobody forfeited.
            if outcome.reason == "forfeit" and outcome.forfeit_seat == seat:
                log.info("game %s: seat %d forfeited: %s", self._game_id, seat, gone)
            self._watched.clear()  # the game is over
            return
