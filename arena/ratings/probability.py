"""Normal distribution and logistic Elo helpers shared by the rating statistics."""

from __future__ import annotations

import math
from statistics import NormalDist

# Elo points per natural-log unit of strength: 400 / ln 10 (the Elo scale is 400·log10).
ELO_PER_NAT = 400.0 / math.log(10.0)

_STANDARD_NORMAL = NormalDist()


def normal_cdf(x: float) -> float:
    """Φ(x), the standard normal cumulative distribution function."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    """Φ⁻¹(p) for 0 < p < 1 (e.g. 0.975 -> 1.95996...)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a normal quantile needs 0 < p < 1, not {p!r}")
    # The standard library's inverse (Wichura's AS241) is exact to double precision.
    return _STANDARD_NORMAL.inv_cdf(p)


def score_from_elo(elo: float) -> float:
    """Expected score of a player `elo` points stronger: 1 / (1 + 10^(-elo/400))."""
    exponent = -elo / 400.0
    # 10^309 overflows a float; the score is 0 to double precision long before that.
    return 0.0 if exponent > 300.0 else 1.0 / (1.0 + 10.0**exponent)


def elo_from_score(score: float) -> float:
    """Inverse of `score_from_elo`: -400·log10(1/score - 1); ±inf at a score of 1 or 0."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a score fraction must be between 0 and 1, not {score!r}")
    if score == 0.0:
        return -math.inf
    if score == 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)
