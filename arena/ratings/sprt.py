"""Sequential probability ratio test on duplicate game sets: "is A stronger than B?"."""

from __future__ import annotations

import math
from typing import Literal

from arena.ratings.probability import score_from_elo
from arena.ratings.results import RatingError

Decision = Literal["H0", "H1"]
Method = Literal["exact", "normal"]

# A's points in one duplicate set (two games, one per partnership) and its normalized score.
SET_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)
_OUTCOMES = (0.0, 0.25, 0.5, 0.75, 1.0)
# Fishtest's regularization: an empty outcome counts as 1e-3 of a set, so that the
# empirical distribution has full support and the variance is never exactly zero.
_EPSILON = 1e-3


# Far beyond any difference a match could test (a 99.7% expected score is ±1000).
MAX_ELO = 2000.0


class Sprt:
    """Generalized SPRT (GSPRT) as fishtest runs it, on pentanomial duplicate-set results.

    Each duplicate set gives A a normalized score x in {0, 1/4, 1/2, 3/4, 1} (points out of 2,
    halved). H0: A's expected set score is s0 = 1/(1 + 10^(-elo0/400)); H1: it is s1, likewise
    from elo1 (logistic Elo on the set score). After N sets with empirical mean μ and variance
    σ² (per set), the log-likelihood ratio is

        normal (the classic GSPRT approximation):  LLR = N·(s1 − s0)·(2μ − s0 − s1) / (2σ²)
        exact (the default):  LLR = N·Σᵢ pᵢ·log(q1ᵢ / q0ᵢ)

    where pᵢ is the empirical frequency of outcome xᵢ and q_s is the distribution on the same
    five outcomes that is most likely given the data among those with mean s:
    q_sᵢ = pᵢ / (1 + λ(xᵢ − s)), with λ solving Σᵢ q_sᵢ = 1. For small Elo differences the
    two agree, but the normal formula divides by σ², which is almost zero when every set so
    far had the same result (one 2/2 set would accept H1 at once), so "exact" is the default.
    Empty outcomes count as 0.001 sets (fishtest does the same) so σ² > 0 and the
    maximum exists.

    The test stops at the first crossing of a bound, Wald's log(β/(1−α)) below and
    log((1−β)/α) above: `decision` is "H1" (accepted: A is more than elo0 stronger) or "H0"
    (accepted: A is not elo1 stronger; see `verdict`) from then on, even if more sets are
    added; None until then.
    """

    def __init__(
        self,
        elo0: float,
        elo1: float,
        alpha: float = 0.05,
        beta: float = 0.05,
        method: Method = "exact",
    ) -> None:
        if not (-MAX_ELO <= elo0 <= MAX_ELO and -MAX_ELO <= elo1 <= MAX_ELO):  # NaN too
            # Beyond this an expected score rounds to 0 or 1, and the test divides by zero.
            raise RatingError(
                f"elo0 and elo1 must be within ±{MAX_ELO:g} Elo, got {elo0!r}, {elo1!r}"
            )
        if not elo0 < elo1:
            raise RatingError(f"elo0 must be below elo1, got elo0={elo0!r}, elo1={elo1!r}")
        if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
            raise RatingError(f"alpha and beta must be in (0, 1) with sum < 1: {alpha!r}, {beta!r}")
        if method not in ("exact", "normal"):
            raise RatingError(f"method must be 'exact' or 'normal', not {method!r}")
        self.elo0 = elo0
        self.elo1 = elo1
        self.alpha = alpha
        self.beta = beta
        self.method: Method = method
        self.lower_bound = math.log(beta / (1.0 - alpha))
        self.upper_bound = math.log((1.0 - beta) / alpha)
        self._s0 = score_from_elo(elo0)
        self._s1 = score_from_elo(elo1)
        self._counts = [0, 0, 0, 0, 0]
        self._llr = 0.0
        self._decision: Decision | None = None

    def __repr__(self) -> str:
        return (
            f"Sprt(elo0={self.elo0!r}, elo1={self.elo1!r}, alpha={self.alpha!r}, "
            f"beta={self.beta!r}, method={self.method!r}, counts={self.counts!r})"
        )

    def add(self, set_score: float) -> None:
        """Record one duplicate set: A's points out of 2 (0, 0.5, 1, 1.5 or 2)."""
        if set_score not in SET_SCORES:
            raise RatingError(
                f"a duplicate set score is A's points out of 2 (0, 0.5, 1, 1.5 or 2), "
                f"not {set_score!r}"
            )
        self._counts[SET_SCORES.index(set_score)] += 1
        self._update()

    def add_games(self, score_game0: float, score_game1: float) -> None:
        """Record one duplicate set from A's score (1, 0.5, 0) in each of its two games."""
        for score in (score_game0, score_game1):
            if score not in (0.0, 0.5, 1.0):
                raise RatingError(f"a game score must be 1, 0.5 or 0, not {score!r}")
        self.add(score_game0 + score_game1)

    @property
    def counts(self) -> tuple[int, ...]:
        """How many sets A scored 0, 0.5, 1, 1.5 and 2 points in (the pentanomial counts)."""
        return tuple(self._counts)

    @property
    def sets(self) -> int:
        return sum(self._counts)

    @property
    def llr(self) -> float:
        return self._llr

    @property
    def decision(self) -> Decision | None:
        return self._decision

    def verdict(self, a: str, b: str) -> str:
        """What the decision says about `a` against `b`, and no more.

        Accepting H1 bounds the chance of a wrong call only when A is at most elo0 stronger
        (alpha), and accepting H0 only when A is at least elo1 stronger (beta): between the two
        either may be accepted. So H1 says "more than elo0", not "at least elo1", and H0 says
        "not elo1 stronger", not "at most elo0".
        """
        if self._decision == "H1":
            return f"H1 accepted: {a} is {_above(self.elo0, b)}"
        if self._decision == "H0":
            return f"H0 accepted: {a} is {_below(self.elo1, b)}"
        return "no decision within the sets allowed"

    def _update(self) -> None:
        self._llr = _llr(self._counts, self._s0, self._s1, self.method)
        if self._decision is None:
            if self._llr >= self.upper_bound:
                self._decision = "H1"
            elif self._llr <= self.lower_bound:
                self._decision = "H0"


def _above(elo: float, b: str) -> str:
    """A's Elo over b is above `elo`, in words."""
    if elo > 0:
        return f"more than {elo:g} Elo stronger than {b}"
    if elo < 0:
        return f"less than {-elo:g} Elo weaker than {b}"
    return f"stronger than {b}"


def _below(elo: float, b: str) -> str:
    """A's Elo over b is below `elo`, in words."""
    if elo > 0:
        return f"not {elo:g} Elo stronger than {b}"
    if elo < 0:
        return f"more than {-elo:g} Elo weaker than {b}"
    return f"not stronger than {b}"


def _llr(counts: list[int], s0: float, s1: float, method: Method) -> float:
    if not any(counts):
        return 0.0
    regularized = [c if c > 0 else _EPSILON for c in counts]
    n = sum(regularized)
    pdf = [c / n for c in regularized]
    if method == "normal":
        mean = sum(p * x for p, x in zip(pdf, _OUTCOMES, strict=True))
        variance = sum(p * (x - mean) ** 2 for p, x in zip(pdf, _OUTCOMES, strict=True))
        return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance)
    lambda0 = _lagrange_multiplier(pdf, s0)
    lambda1 = _lagrange_multiplier(pdf, s1)
    return n * sum(
        p * (math.log1p(lambda0 * (x - s0)) - math.log1p(lambda1 * (x - s1)))
        for p, x in zip(pdf, _OUTCOMES, strict=True)
    )


def _lagrange_multiplier(pdf: list[float], s: float) -> float:
    """λ with Σ pᵢ(xᵢ − s)/(1 + λ(xᵢ − s)) = 0, so q = p/(1 + λ(x − s)) has mean s."""
    # The sum falls from +inf to -inf across the λ keeping every 1 + λ(xᵢ − s) > 0.
    low, high = -1.0 / (1.0 - s), 1.0 / s
    for _ in range(200):
        mid = (low + high) / 2.0
        total = sum(
            p * (x - s) / (1.0 + mid * (x - s)) for p, x in zip(pdf, _OUTCOMES, strict=True)
        )
        if total > 0:
            low = mid
        else:
            high = mid
        if high - low < 1e-15 * max(1.0, abs(mid)):
            break
    return (low + high) / 2.0
