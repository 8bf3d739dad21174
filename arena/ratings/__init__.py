"""Rating statistics over game results between bot versions: Elo, Bradley–Terry, pairs, SPRT."""

from __future__ import annotations

from arena.ratings.bradley_terry import (
    BotRating,
    BradleyTerryFit,
    bradley_terry,
    bradley_terry_pairs,
)
from arena.ratings.elo import EloHistoryPoint, EloTable, elo_ratings, expected_score
from arena.ratings.pairs import PairStats, head_to_head, pair_table
from arena.ratings.probability import (
    ELO_PER_NAT,
    elo_from_score,
    normal_cdf,
    normal_quantile,
    score_from_elo,
)
from arena.ratings.results import (
    GameResult,
    PairCounts,
    RatingError,
    Score,
    count_result,
    rank_key,
)
from arena.ratings.sprt import Sprt

__all__ = [
    "ELO_PER_NAT",
    "BotRating",
    "BradleyTerryFit",
    "EloHistoryPoint",
    "EloTable",
    "GameResult",
    "PairCounts",
    "PairStats",
    "RatingError",
    "Score",
    "Sprt",
    "bradley_terry",
    "bradley_terry_pairs",
    "count_result",
    "elo_from_score",
    "elo_ratings",
    "expected_score",
    "head_to_head",
    "normal_cdf",
    "normal_quantile",
    "pair_table",
    "rank_key",
    "score_from_elo",
]
