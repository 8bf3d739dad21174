"""An Elo table that moves game by game, with each bot's rating history."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from arena.ratings.probability import score_from_elo
from arena.ratings.results import RatingError, Score, check_result

DEFAULT_K = 16.0
DEFAULT_INITIAL = 1500.0


def expected_score(rating_a: float, rating_b: float) -> float:
    """Elo's expected score of a against b: 1 / (1 + 10^((Rb - Ra)/400))."""
    return score_from_elo(rating_a - rating_b)


class EloHistoryPoint(NamedTuple):
    """A bot's rating right after the game with this index (0-based, in input order)."""

    game: int
    rating: float


@dataclass
class EloTable:
    """Ratings updated one game at a time: R += K·(score - expected)."""

    k: float = DEFAULT_K
    initial: float = DEFAULT_INITIAL
    ratings: dict[str, float] = field(default_factory=dict)
    history: dict[str, list[EloHistoryPoint]] = field(default_factory=dict)
    games_played: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k) and self.k > 0):
            raise RatingError(f"the K factor must be a positive number, not {self.k!r}")
        if not math.isfinite(self.initial):
            raise RatingError(f"the initial rating must be a number, not {self.initial!r}")

    def rating(self, bot: str) -> float:
        """The bot's current rating (the initial rating if it has not played yet)."""
        return self.ratings.get(bot, self.initial)

    def add(self, a: str, b: str, score_a: Score) -> None:
        """Apply one game's result; both bots move by the same amount in opposite directions."""
        a, b, score_a = check_result((a, b, score_a), self.games_played)
        ra, rb = self.rating(a), self.rating(b)
        delta = self.k * (score_a - expected_score(ra, rb))
        self.ratings[a] = ra + delta
        self.ratings[b] = rb - delta
        game = self.games_played
        self.history.setdefault(a, []).append(EloHistoryPoint(game, ra + delta))
        self.history.setdefault(b, []).append(EloHistoryPoint(game, rb - delta))
        self.games_played += 1


def elo_ratings(
    results: Iterable[tuple[str, str, Score]],
    k: float = DEFAULT_K,
    initial: float = DEFAULT_INITIAL,
) -> EloTable:
    """Play the results through an Elo table in order; see its `.ratings` and `.history`."""
    table = EloTable(k=k, initial=initial)
    for index, raw in enumerate(results):
        table.add(*check_result(raw, index))
    return table
