"""Seat tokens: random, single use, bound to one seat of one game, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from arena.gamemaster.status import Refusal, Refused

TOKEN_BYTES = 32


class TokenUsed(Refused):
    """A token whose seat is taken: the seat it names, for the game to record the attempt."""

    def __init__(self, game_id: str, seat: int) -> None:
        super().__init__(
            Refusal.TOKEN_USED,
            f"this seat token was already used: seat {seat} of game {game_id} is taken",
        )
        self.game_id = game_id
        self.seat = seat


@dataclass
class _Entry:
    token: str
    game_id: str
    seat: int
    used: bool = False
    ended: bool = False


class SeatTokens:
    """The tokens of every open game.

    Entries are found by a SHA-256 of the token (so the lookup's timing says nothing useful
    about the secret) and then confirmed with hmac.compare_digest.
    """

    def __init__(self) -> None:
        self._by_digest: dict[bytes, _Entry] = {}
        self._by_game: dict[str, list[bytes]] = {}

    @staticmethod
    def _digest(token: str) -> bytes:
        return hashlib.sha256(token.encode("utf-8", "replace")).digest()

    def issue(self, game_id: str) -> list[str]:
        """Four fresh tokens, seats 0..3."""
        tokens = [secrets.token_urlsafe(TOKEN_BYTES) for _ in range(4)]
        digests = []
        for seat, token in enumerate(tokens):
            d = self._digest(token)
            self._by_digest[d] = _Entry(token, game_id, seat)
            digests.append(d)
        self._by_game[game_id] = digests
        return tokens

    def check(self, token: str) -> tuple[str, int]:
        """The (game id, seat) an unused token opens; Refused (bad or used token) otherwise."""
        entry = self._find(token)
        if entry.ended:
            raise Refused(
                Refusal.BAD_TOKEN, f"the game of this seat token ({entry.game_id}) has ended"
            )
        if entry.used:
            raise TokenUsed(entry.game_id, entry.seat)
        return entry.game_id, entry.seat

    def claim(self, token: str) -> tuple[str, int]:
        """Like check, and mark the token used: it opens its seat once."""
        found = self.check(token)
        self._find(token).used = True
        return found

    def _find(self, token: str) -> _Entry:
        entry = self._by_digest.get(self._digest(token))
        if entry is None or not hmac.compare_digest(entry.token.encode(), token.encode()):
            raise Refused(Refusal.BAD_TOKEN, "unknown seat token (or its game has ended)")
        return entry

    def revoke(self, game_id: str) -> None:
        """A game has ended: its tokens open nothing, and say so while the game is kept."""
        for d in self._by_game.get(game_id, []):
            self._by_digest[d].ended = True

    def forget(self, game_id: str) -> None:
        """Forget a game's tokens (the game master forgets the game)."""
        for d in self._by_game.pop(game_id, []):
            self._by_digest.pop(d, None)
