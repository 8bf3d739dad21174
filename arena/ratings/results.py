"""The game result value the rating statistics consume, its validation and per-pair aggregation."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from arena.errors import ArenaError

# A result is (a, b, score_a): bot a's partnership against bot b's; 1 win, 0.5 draw, 0 loss.
Score = float
_SCORES = (0.0, 0.5, 1.0)


class RatingError(ArenaError, ValueError):
    """Results or parameters the rating statistics cannot work with."""


class GameResult(NamedTuple):
    """One game between two bot versions; a plain (a, b, score_a) tuple works just as well."""

    a: str
    b: str
    score_a: Score


def check_result(result: tuple[str, str, Score], index: int) -> GameResult:
    """The result as a `GameResult`, or a `RatingError` naming the game and what is wrong."""
    try:
        a, b, score = result
    except (TypeError, ValueError):
        raise RatingError(f"game {index}: expected (a, b, score_a), got {result!r}") from None
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b:
        raise RatingError(f"game {index}: bot ids must be non-empty strings, got {a!r}, {b!r}")
    if a == b:
        raise RatingError(f"game {index}: bot {a!r} cannot play against itself")
    if score not in _SCORES:
        raise RatingError(f"game {index}: score_a must be 1, 0.5 or 0, not {score!r}")
    return GameResult(a, b, float(score))


@dataclass
class PairCounts:
    """Wins, draws and losses of `a` against `b` (a listed first in the pair key)."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return self.wins + 0.5 * self.draws


def count_result(
    pairs: dict[tuple[str, str], PairCounts], a: str, b: str, score_a: Score, games: int = 1
) -> None:
    """Add `games` games of `a` against `b`, each scoring `score_a` for `a`, to `pairs`: keyed
    (lower id, higher id) and counted for the lower id."""
    if b < a:
        a, b, score_a = b, a, 1.0 - score_a
    counts = pairs.get((a, b))
    if counts is None:
        counts = pairs[(a, b)] = PairCounts()
    if score_a == 1.0:
        counts.wins += games
    elif score_a == 0.0:
        counts.losses += games
    else:
        counts.draws += games


def aggregate(results: Iterable[tuple[str, str, Score]]) -> dict[tuple[str, str], PairCounts]:
    """Counts per unordered pair, keyed (lower id, higher id) and counted for the lower id."""
    pairs: dict[tuple[str, str], PairCounts] = {}
    for index, raw in enumerate(results):
        count_result(pairs, *check_result(raw, index))
    return pairs


def rank_key(
    bt: float | None, elo: float, bot: str, version: str
) -> tuple[bool, float, float, str, str]:
    """Where a row goes in a rating table: best rating first (none last), then best Elo, then
    by name and version, so that tied rows rank alike in `arena ratings` and the dashboard."""
    return (bt is None, -(bt or 0.0), -elo, bot, version)
