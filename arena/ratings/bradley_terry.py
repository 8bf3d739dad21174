"""Bradley–Terry maximum-likelihood ratings on the Elo scale with 95% confidence intervals."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from arena.ratings.probability import ELO_PER_NAT, normal_quantile
from arena.ratings.results import PairCounts, RatingError, Score, aggregate

DEFAULT_ANCHOR = 1500.0
DEFAULT_PRIOR_DRAWS = 1.0
DEFAULT_CONFIDENCE = 0.95
_TOLERANCE = 1e-10  # nats; far below anything shown on a leaderboard
_MAX_ITERATIONS = 200


@dataclass(frozen=True)
class BotRating:
    """One bot's fitted rating, its standard error and confidence interval (Elo points)."""

    bot: str
    rating: float
    se: float
    lower: float
    upper: float
    games: int
    score: float


@dataclass(frozen=True)
class BradleyTerryFit:
    """The fit: ratings by bot, and the covariance of the strengths for pairwise questions."""

    bots: tuple[str, ...]
    ratings: dict[str, BotRating]
    covariance: tuple[tuple[float, ...], ...]  # Elo², strengths before anchoring, order of `bots`
    confidence: float
    iterations: int

    def ranked(self) -> list[BotRating]:
        """Ratings from strongest to weakest (ties by bot id)."""
        return sorted(self.ratings.values(), key=lambda r: (-r.rating, r.bot))

    def difference(self, a: str, b: str) -> tuple[float, float, float]:
        """Rating of a minus rating of b with its confidence interval: (diff, lower, upper)."""
        for bot in (a, b):
            if bot not in self.ratings:
                raise RatingError(f"bot {bot!r} is not in this fit")
        i, j = self.bots.index(a), self.bots.index(b)
        cov = self.covariance
        variance = max(cov[i][i] + cov[j][j] - 2.0 * cov[i][j], 0.0)
        diff = self.ratings[a].rating - self.ratings[b].rating
        half = normal_quantile(0.5 + self.confidence / 2.0) * math.sqrt(variance)
        return diff, diff - half, diff + half


def bradley_terry(
    results: Iterable[tuple[str, str, Score]],
    *,
    bots: Iterable[str] = (),
    anchor: float = DEFAULT_ANCHOR,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    confidence: float = DEFAULT_CONFIDENCE,
) -> BradleyTerryFit:
    """Fit P(a beats b) = 1 / (1 + 10^((Rb - Ra)/400)) to all results by maximum likelihood.

    See `bradley_terry_pairs`, which takes the results already counted per pair.
    """
    return bradley_terry_pairs(
        aggregate(results),
        bots=bots,
        anchor=anchor,
        prior_draws=prior_draws,
        confidence=confidence,
    )


def bradley_terry_pairs(
    pairs: Mapping[tuple[str, str], PairCounts],
    *,
    bots: Iterable[str] = (),
    anchor: float = DEFAULT_ANCHOR,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    confidence: float = DEFAULT_CONFIDENCE,
) -> BradleyTerryFit:
    """The Bradley–Terry fit of `bradley_terry` from counts per pair: (a, b) -> a's wins,
    draws and losses against b. The fit only ever needs these sums, so a rater can count
    them in its database instead of loading every game.

    Draws count as half a win for each side, as in Ordo (BayesElo models them with a
    draw-Elo parameter of its own instead). Each bot also gets
    `prior_draws` virtual draws against a fixed reference opponent: a weak prior that keeps
    an undefeated (or winless) bot's rating finite; with `prior_draws=0` the plain maximum
    likelihood fit is returned, and the results must then let every bot be compared with
    every other (each side of any split of the bots scored against the other) or a
    `RatingError` is raised. Ratings are shifted so their mean is `anchor`; standard errors
    come from the inverse Fisher information and are those of each rating relative to the
    mean. `bots` adds bots that have no games yet (they need the prior).
    """
    if not (math.isfinite(prior_draws) and prior_draws >= 0):
        raise RatingError(f"prior_draws must be 0 or more, not {prior_draws!r}")
    if not 0.0 < confidence < 1.0:
        raise RatingError(f"confidence must be between 0 and 1, not {confidence!r}")
    if not math.isfinite(anchor):
        raise RatingError(f"the anchor must be a rating, not {anchor!r}")
    if isinstance(bots, str):
        raise RatingError(f"bots must be a list of bot ids, not the string {bots!r}")
    names = set(bots)
    for (a, b), counts in pairs.items():
        if a == b:
            raise RatingError(f"bot {a!r} cannot play against itself")
        if min(counts.wins, counts.draws, counts.losses) < 0:
            raise RatingError(f"{a!r} against {b!r}: negative counts {counts}")
        names.update((a, b))
    order = tuple(sorted(names))
    n = len(order)
    index = {bot: i for i, bot in enumerate(order)}
    # Per pair: (i, j, games, score of i), in a fixed order: the sums, and so the fit to the
    # last bit, do not depend on the order the pairs came in.
    edges = [(index[a], index[b], c.games, c.score) for (a, b), c in sorted(pairs.items())]
    if prior_draws == 0 and n > 1:
        _check_comparable(order, edges)

    # Without the prior the strengths are defined only up to a constant: pin bot 0 at zero.
    free = list(range(n)) if prior_draws > 0 else list(range(1, n))
    theta = [0.0] * n
    iterations = 0
    for iterations in range(1, _MAX_ITERATIONS + 1):  # noqa: B007 - reported in the fit
        gradient, information = _derivatives(theta, edges, prior_draws)
        g = [gradient[i] for i in free]
        f = [[information[i][j] for j in free] for i in free]
        step = _solve(_cholesky(f), g)
        # Stop when Newton's decrement, the gain in log-likelihood the full step promises, is
        # nil. (The step's own size is no test: along a direction that only a tiny prior pins
        # down, rounding noise in the gradient makes steps far above any tolerance forever.)
        if sum(gk * sk for gk, sk in zip(g, step, strict=True)) < _TOLERANCE**2:
            break
        # Newton's step on a concave log-likelihood, halved until it does not go downhill.
        before = _log_likelihood(theta, edges, prior_draws)
        scale = 1.0
        while True:
            trial = theta[:]
            for k, i in enumerate(free):
                trial[i] += scale * step[k]
            if _log_likelihood(trial, edges, prior_draws) >= before - 1e-12 or scale < 1e-6:
                break
            scale /= 2.0
        theta = trial
    else:
        raise RatingError(f"Bradley–Terry fit did not converge in {_MAX_ITERATIONS} iterations")

    _, information = _derivatives(theta, edges, prior_draws)
    reduced = [[information[i][j] for j in free] for i in free]
    reduced_cov = _inverse(_cholesky(reduced)) if free else []
    cov = [[0.0] * n for _ in range(n)]
    for a_pos, i in enumerate(free):
        for b_pos, j in enumerate(free):
            cov[i][j] = reduced_cov[a_pos][b_pos] * ELO_PER_NAT**2

    mean = sum(theta) / n if n else 0.0
    total = sum(sum(row) for row in cov)
    z = normal_quantile(0.5 + confidence / 2.0)
    games = [0] * n
    scores = [0.0] * n
    for i, j, count, score in edges:
        games[i] += count
        games[j] += count
        scores[i] += score
        scores[j] += count - score
    ratings = {}
    for i, bot in enumerate(order):
        # Variance of (θ_i - mean θ): the rating is reported relative to the anchored mean.
        variance = cov[i][i] - 2.0 * sum(cov[i]) / n + total / n**2
        se = math.sqrt(max(variance, 0.0))
        rating = anchor + (theta[i] - mean) * ELO_PER_NAT
        lower, upper = rating - z * se, rating + z * se
        ratings[bot] = BotRating(bot, rating, se, lower, upper, games[i], scores[i])
    return BradleyTerryFit(
        bots=order,
        ratings=ratings,
        covariance=tuple(tuple(row) for row in cov),
        confidence=confidence,
        iterations=iterations,
    )


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _log_sigmoid(x: float) -> float:
    if x >= 0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


def _log_likelihood(
    theta: list[float], edges: list[tuple[int, int, int, float]], prior: float
) -> float:
    total = 0.0
    for i, j, games, score in edges:
        d = theta[i] - theta[j]
        total += score * _log_sigmoid(d) + (games - score) * _log_sigmoid(-d)
    if prior:
        for t in theta:
            total += 0.5 * prior * (_log_sigmoid(t) + _log_sigmoid(-t))
    return total


def _derivatives(
    theta: list[float], edges: list[tuple[int, int, int, float]], prior: float
) -> tuple[list[float], list[list[float]]]:
    """Gradient of the log-likelihood and the Fisher information (minus its Hessian)."""
    n = len(theta)
    gradient = [0.0] * n
    information = [[0.0] * n for _ in range(n)]
    for i, j, games, score in edges:
        p = _sigmoid(theta[i] - theta[j])
        residual = score - games * p
        gradient[i] += residual
        gradient[j] -= residual
        w = games * p * (1.0 - p)
        information[i][i] += w
        information[j][j] += w
        information[i][j] -= w
        information[j][i] -= w
    if prior:
        for i, t in enumerate(theta):
            p = _sigmoid(t)
            gradient[i] += prior * (0.5 - p)
            information[i][i] += prior * p * (1.0 - p)
    return gradient, information


def _check_comparable(order: tuple[str, ...], edges: list[tuple[int, int, int, float]]) -> None:
    """Without a prior the maximum exists only if 'scored against' links every bot both ways."""
    n = len(order)
    forward: list[set[int]] = [set() for _ in range(n)]
    backward: list[set[int]] = [set() for _ in range(n)]
    for i, j, games, score in edges:
        if score > 0:  # i scored against j
            forward[i].add(j)
            backward[j].add(i)
        if games - score > 0:
            forward[j].add(i)
            backward[i].add(j)
    for links, direction in ((forward, "scored against"), (backward, "conceded to")):
        seen = {0}
        todo = [0]
        while todo:
            for k in links[todo.pop()]:
                if k not in seen:
                    seen.add(k)
                    todo.append(k)
        if len(seen) < n:
            missing = sorted(order[k] for k in range(n) if k not in seen)
            raise RatingError(
                f"without a prior the ratings are infinite or undefined: {order[0]!r} never "
                f"{direction} (even indirectly) {missing!r}; use prior_draws > 0"
            )


def _cholesky(matrix: list[list[float]]) -> list[list[float]]:
    """Lower triangular L with L·Lᵀ = matrix, for a symmetric positive definite matrix."""
    n = len(matrix)
    lower = [[0.0] * n for _ in range(n)]
    for i in range(n):
        row_i = lower[i]
        for j in range(i + 1):
            row_j = lower[j]
            s = matrix[i][j] - sum(row_i[k] * row_j[k] for k in range(j))
            if i == j:
                if s <= 0.0:
                    raise RatingError("the results do not determine the ratings (singular fit)")
                row_i[i] = math.sqrt(s)
            else:
                row_i[j] = s / row_j[j]
    return lower


def _solve(lower: list[list[float]], rhs: list[float]) -> list[float]:
    """x with L·Lᵀ·x = rhs, by forward then back substitution."""
    n = len(lower)
    y = [0.0] * n
    for i in range(n):
        y[i] = (rhs[i] - sum(lower[i][k] * y[k] for k in range(i))) / lower[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(lower[k][i] * x[k] for k in range(i + 1, n))) / lower[i][i]
    return x


def _inverse(lower: list[list[float]]) -> list[list[float]]:
    n = len(lower)
    columns = [_solve(lower, [1.0 if r == c else 0.0 for r in range(n)]) for c in range(n)]
    return [[columns[c][r] for c in range(n)] for r in range(n)]
