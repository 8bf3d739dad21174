"""Head-to-head statistics per pair of bots: score, likelihood of superiority, Elo difference."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from arena.ratings.probability import elo_from_score, normal_cdf, normal_quantile
from arena.ratings.results import PairCounts, RatingError, Score, aggregate

DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairStats:
    """Results of `a` against `b`, all from a's side.

    `los` is the likelihood of superiority Φ((wins − losses) / √(wins + losses)), draws
    excluded (0.5 with no decisive game). `elo` is the Elo difference implied by the score
    fraction, −400·log10(1/fraction − 1), and `elo_lower`/`elo_upper` its interval from the
    normal approximation of the mean per-game score (±inf where a bound reaches 0 or 1).
    """

    a: str
    b: str
    wins: int
    draws: int
    losses: int
    score: float
    fraction: float
    los: float
    elo: float
    elo_lower: float
    elo_upper: float

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


def likelihood_of_superiority(wins: int, losses: int) -> float:
    """Φ((wins − losses) / √(wins + losses)): how sure we are that the winner is stronger."""
    if wins + losses == 0:
        return 0.5
    return normal_cdf((wins - losses) / math.sqrt(wins + losses))


def _stats(a: str, b: str, counts: PairCounts, confidence: float) -> PairStats:
    games = counts.games
    fraction = counts.score / games
    # Per-game scores are 1, 0.5 or 0; the interval is on their mean, then mapped to Elo.
    variance = (
        counts.wins * (1.0 - fraction) ** 2
        + counts.draws * (0.5 - fraction) ** 2
        + counts.losses * fraction**2
    ) / games
    half = normal_quantile(0.5 + confidence / 2.0) * math.sqrt(variance / games)
    return PairStats(
        a=a,
        b=b,
        wins=counts.wins,
        draws=counts.draws,
        losses=counts.losses,
        score=counts.score,
        fraction=fraction,
        los=likelihood_of_superiority(counts.wins, counts.losses),
        elo=elo_from_score(fraction),
        elo_lower=elo_from_score(min(max(fraction - half, 0.0), 1.0)),
        elo_upper=elo_from_score(min(max(fraction + half, 0.0), 1.0)),
    )


def _flip(counts: PairCounts) -> PairCounts:
    return PairCounts(wins=counts.losses, draws=counts.draws, losses=counts.wins)


def pair_table(
    results: Iterable[tuple[str, str, Score]], confidence: float = DEFAULT_CONFIDENCE
) -> dict[tuple[str, str], PairStats]:
    """Stats for every pair that met, both ways round: keys (a, b) and (b, a)."""
    if not 0.0 < confidence < 1.0:
        raise RatingError(f"confidence must be between 0 and 1, not {confidence!r}")
    table = {}
    for (a, b), counts in aggregate(results).items():
        table[(a, b)] = _stats(a, b, counts, confidence)
        table[(b, a)] = _stats(b, a, _flip(counts), confidence)
    return table


def head_to_head(
    results: Iterable[tuple[str, str, Score]],
    a: str,
    b: str,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairStats | None:
    """Stats of a against b, or None if they never met."""
    return pair_table(results, confidence).get((a, b))
