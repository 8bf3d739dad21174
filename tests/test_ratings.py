"""Rating statistics: Elo, Bradley–Terry, head-to-head and the SPRT against worked examples."""

from __future__ import annotations

import math
import random

import pytest

from arena.errors import ArenaError
from arena.ratings import (
    RatingError,
    Sprt,
    bradley_terry,
    elo_from_score,
    elo_ratings,
    expected_score,
    head_to_head,
    normal_cdf,
    normal_quantile,
    pair_table,
    score_from_elo,
)
from arena.ratings.bradley_terry import bradley_terry_pairs
from arena.ratings.pairs import likelihood_of_superiority
from arena.ratings.results import PairCounts

Z95 = 1.959963984540054


def games(
    a: str, b: str, wins: int, draws: int = 0, losses: int = 0
) -> list[tuple[str, str, float]]:
    return [(a, b, 1.0)] * wins + [(a, b, 0.5)] * draws + [(a, b, 0.0)] * losses


# --- probability helpers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "phi"),
    [(0.0, 0.5), (1.0, 0.8413447460685429), (-2.0, 0.02275013194817922), (Z95, 0.975)],
)
def test_normal_cdf_matches_tables(x: float, phi: float) -> None:
    assert normal_cdf(x) == pytest.approx(phi, abs=1e-12)


@pytest.mark.parametrize(
    ("p", "z"), [(0.5, 0.0), (0.975, Z95), (0.025, -Z95), (0.8413447460685429, 1.0)]
)
def test_normal_quantile_matches_tables(p: float, z: float) -> None:
    assert normal_quantile(p) == pytest.approx(z, abs=1e-9)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1])
def test_normal_quantile_rejects_probabilities_outside_zero_one(p: float) -> None:
    with pytest.raises(ValueError):
        normal_quantile(p)


@pytest.mark.parametrize(
    ("elo", "score"),
    [(0.0, 0.5), (400 * math.log10(3), 0.75), (-400 * math.log10(3), 0.25), (400.0, 10 / 11)],
)
def test_logistic_elo_and_score_are_inverse(elo: float, score: float) -> None:
    assert score_from_elo(elo) == pytest.approx(score)
    assert elo_from_score(score) == pytest.approx(elo)


def test_elo_of_a_perfect_score_is_infinite() -> None:
    assert elo_from_score(1.0) == math.inf
    assert elo_from_score(0.0) == -math.inf


# --- Elo -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "a", "b"),
    [(1.0, 1508.0, 1492.0), (0.5, 1500.0, 1500.0), (0.0, 1492.0, 1508.0)],
)
def test_elo_after_one_game_from_equal_ratings(score: float, a: float, b: float) -> None:
    table = elo_ratings([("a", "b", score)])
    assert table.ratings == {"a": a, "b": b}


def test_elo_with_other_k_and_initial_rating() -> None:
    table = elo_ratings([("a", "b", 1.0)], k=32, initial=1000)
    assert table.ratings == {"a": 1016.0, "b": 984.0}


def test_elo_moves_game_by_game_with_history() -> None:
    table = elo_ratings([("a", "b", 1.0), ("a", "b", 1.0), ("b", "c", 0.5)])
    # Game 1: a 1508 vs b 1492, E = 1/(1+10^(-16/400)) = 0.523020, a gains 16·0.476980.
    second = 16 * (1 - 1 / (1 + 10 ** (-16 / 400)))
    assert second == pytest.approx(7.631847, abs=1e-6)
    # Game 2: b (1492 - 7.631847) draws c (1500): b gains 16·(0.5 - E_b).
    b_rating = 1492 - second
    third = 16 * (0.5 - 1 / (1 + 10 ** ((1500 - b_rating) / 400)))
    assert table.ratings["a"] == pytest.approx(1508 + second)
    assert table.ratings["b"] == pytest.approx(b_rating + third)
    assert table.ratings["c"] == pytest.approx(1500 - third)
    assert [(p.game, p.rating) for p in table.history["a"]] == [
        (0, 1508.0),
        (1, pytest.approx(1508 + second)),
    ]
    assert [p.game for p in table.history["b"]] == [0, 1, 2]
    assert [p.game for p in table.history["c"]] == [2]


def test_elo_conserves_the_rating_total() -> None:
    rng = random.Random(3)
    results = [(*rng.sample("abcde", 2), rng.choice((0.0, 0.5, 1.0))) for _ in range(500)]
    table = elo_ratings(results)  # type: ignore[arg-type]
    assert sum(table.ratings.values()) == pytest.approx(1500 * len(table.ratings))


def test_expected_score_of_a_400_point_favourite() -> None:
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)


@pytest.mark.parametrize(
    "bad",
    [("a", "a", 1.0), ("a", "b", 0.7), ("a", "", 1.0), ("a", "b"), (1, "b", 1.0)],
)
def test_bad_results_raise_rating_errors(bad: tuple[object, ...]) -> None:
    for fn in (elo_ratings, bradley_terry, pair_table):
        with pytest.raises(RatingError, match="game 1") as info:
            fn([("x", "y", 1.0), bad])  # type: ignore[operator, list-item]
        assert isinstance(info.value, ArenaError)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "K factor"),
        ({"k": math.inf}, "K factor"),
        ({"k": math.nan}, "K factor"),
        ({"initial": math.nan}, "initial rating"),
    ],
)
def test_elo_rejects_parameters_that_are_no_numbers_it_can_use(
    kwargs: dict[str, float], message: str
) -> None:
    # Before, inf and nan gave a table of nan or inf ratings without a word.
    with pytest.raises(RatingError, match=message):
        elo_ratings([("a", "b", 1.0)], **kwargs)


def test_elo_with_a_huge_k_saturates_instead_of_overflowing() -> None:
    # 10^(Δ/400) overflowed (OverflowError) once the ratings were 10^5 points apart.
    table = elo_ratings([("a", "b", 1.0), ("b", "a", 1.0)], k=1e6)
    # Game 1 from equal ratings: ±500,000; game 2: b was expected to score 0 and won.
    assert (table.rating("a"), table.rating("b")) == (1500 - 5e5, 1500 + 5e5)
    assert expected_score(1e6, 0) == 1.0 and expected_score(0, 1e6) == 0.0


# --- Bradley–Terry -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "draws", "losses"),
    [(30, 0, 10), (10, 10, 0), (7, 0, 3), (1, 0, 1), (2, 5, 9)],
)
def test_two_bot_fit_without_prior_is_400_log10_of_score_ratio(
    wins: int, draws: int, losses: int
) -> None:
    # Draws count as half a win each: the ML difference is 400·log10(score / (games - score)).
    n = wins + draws + losses
    score = wins + draws / 2
    fit = bradley_terry(games("a", "b", wins, draws, losses), prior_draws=0)
    diff = 400 * math.log10(score / (n - score))
    assert fit.ratings["a"].rating == pytest.approx(1500 + diff / 2)
    assert fit.ratings["b"].rating == pytest.approx(1500 - diff / 2)


def test_two_bot_standard_errors_from_fisher_information() -> None:
    # 30-10: p = 0.75, Var(d) = 1/(n·p·(1-p)) = 1/7.5 nat², so SE(d) = 0.365148·400/ln10 =
    # 63.4328 Elo; each rating is d/2 from the mean, so its SE is half: 31.7164.
    fit = bradley_terry(games("a", "b", 30, 0, 10), prior_draws=0)
    a = fit.ratings["a"]
    assert a.rating == pytest.approx(1595.4243, abs=1e-4)
    assert a.se == pytest.approx(31.7164, abs=1e-4)
    assert (a.lower, a.upper) == (
        pytest.approx(1595.4243 - Z95 * 31.7164, abs=1e-3),
        pytest.approx(1595.4243 + Z95 * 31.7164, abs=1e-3),
    )
    assert (a.games, a.score, fit.ratings["b"].score) == (40, 30.0, 10.0)
    assert fit.ratings["b"].se == pytest.approx(a.se)  # symmetric, whichever bot is pinned
    diff, lower, upper = fit.difference("a", "b")
    assert diff == pytest.approx(190.8485, abs=1e-4)
    assert upper - diff == pytest.approx(Z95 * 63.4328, abs=1e-3)
    assert diff - lower == pytest.approx(Z95 * 63.4328, abs=1e-3)


def test_three_bot_fit_recovers_consistent_ratios() -> None:
    # a:b = 2:1, b:c = 2:1, a:c = 4:1 fit the model exactly, so the ML ratings are
    # a - b = b - c = 400·log10(2) = 120.412, centred on b.
    results = games("a", "b", 20, 0, 10) + games("b", "c", 20, 0, 10) + games("c", "a", 10, 0, 40)
    fit = bradley_terry(results, prior_draws=0, anchor=2000)
    step = 400 * math.log10(2)
    assert fit.ratings["a"].rating == pytest.approx(2000 + step)
    assert fit.ratings["b"].rating == pytest.approx(2000)
    assert fit.ratings["c"].rating == pytest.approx(2000 - step)
    assert [r.bot for r in fit.ranked()] == ["a", "b", "c"]


def test_prior_keeps_an_undefeated_bot_finite_and_shrinks_towards_the_mean() -> None:
    fit = bradley_terry(games("a", "b", 5))
    a, b = fit.ratings["a"], fit.ratings["b"]
    assert math.isfinite(a.rating) and math.isfinite(a.se)
    assert a.rating > 1500 > b.rating
    assert a.rating + b.rating == pytest.approx(3000)
    plain = 400 * math.log10(30 / 10)
    assert bradley_terry(games("a", "b", 30, 0, 10)).difference("a", "b")[0] < plain


def test_prior_is_one_virtual_draw_against_a_reference_at_the_mean() -> None:
    # a beats b 3-1, each also draws once with a reference at 0 nats; by symmetry the
    # strengths are ±t, and t solves 3·σ(-2t) - 1·σ(2t) + (0.5 - σ(t)) = 0.
    def slope(t: float) -> float:
        def sigma(x: float) -> float:
            return 1 / (1 + math.exp(-x))

        return 3 * sigma(-2 * t) - sigma(2 * t) + 0.5 - sigma(t)

    low, high = 0.0, 5.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if slope(mid) > 0 else (low, mid)
    fit = bradley_terry(games("a", "b", 3, 0, 1))
    assert fit.ratings["a"].rating == pytest.approx(1500 + low * 400 / math.log(10))
    assert fit.ratings["b"].rating == pytest.approx(1500 - low * 400 / math.log(10))


@pytest.mark.parametrize(("wins", "prior"), [(10, 1e-6), (1000, 1e-4), (10_000, 1e-3), (5, 1.0)])
def test_a_tiny_prior_still_gives_the_fit_it_defines(wins: int, prior: float) -> None:
    # a beats b every time; the strengths are ±t with wins·σ(-2t) + prior·(0.5 - σ(t)) = 0,
    # t in the tens of nats (a rating gap near 3,000) when the prior is tiny. The fit said "did
    # not converge" here: its step, along the direction only the prior pins down, stayed noise.
    def slope(t: float) -> float:
        return wins / (1 + math.exp(2 * t)) + prior * (0.5 - 1 / (1 + math.exp(-t)))

    low, high = 0.0, 50.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if slope(mid) > 0 else (low, mid)
    fit = bradley_terry(games("a", "b", wins), prior_draws=prior)
    assert fit.ratings["a"].rating == pytest.approx(1500 + low * 400 / math.log(10), abs=1e-3)
    assert fit.ratings["b"].rating == pytest.approx(1500 - low * 400 / math.log(10), abs=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"anchor": math.nan}, "anchor"),
        ({"anchor": math.inf}, "anchor"),
        ({"prior_draws": math.nan}, "prior_draws"),
        ({"bots": "xyz"}, "not the string 'xyz'"),
    ],
)
def test_bradley_terry_rejects_parameters_it_cannot_use(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(RatingError, match=message):
        bradley_terry(games("a", "b", 3, 1, 2), **kwargs)  # type: ignore[arg-type]


def test_bradley_terry_rejects_negative_counts() -> None:
    # They read as "the results do not determine the ratings (singular fit)".
    with pytest.raises(RatingError, match="negative counts"):
        bradley_terry_pairs({("a", "b"): PairCounts(-5, 0, 1)})


def test_without_prior_an_undefeated_bot_is_an_error() -> None:
    with pytest.raises(RatingError, match="prior_draws"):
        bradley_terry(games("a", "b", 5) + games("b", "c", 1, 0, 1), prior_draws=0)


def test_mean_rating_is_the_anchor() -> None:
    rng = random.Random(5)
    results = [(*rng.sample("abcdef", 2), rng.choice((0.0, 0.5, 1.0))) for _ in range(300)]
    fit = bradley_terry(results, anchor=1234)  # type: ignore[arg-type]
    assert sum(r.rating for r in fit.ratings.values()) / 6 == pytest.approx(1234)


def test_bot_without_games_gets_a_rating_from_the_prior() -> None:
    fit = bradley_terry(games("a", "b", 3, 0, 3), bots=["newcomer"])
    assert set(fit.ratings) == {"a", "b", "newcomer"}
    assert fit.ratings["newcomer"].games == 0
    assert fit.ratings["newcomer"].rating == pytest.approx(1500)


def test_fit_recovers_true_ratings_of_30_bots_from_100000_games() -> None:
    rng = random.Random(11)
    bots = [f"bot{i:02d}" for i in range(30)]
    true = {bot: rng.uniform(-300, 300) for bot in bots}
    results = []
    for _ in range(100_000):
        a, b = rng.sample(bots, 2)
        results.append((a, b, 1.0 if rng.random() < score_from_elo(true[a] - true[b]) else 0.0))
    fit = bradley_terry(results)  # its speed is measured by bench/ratings.py, not here
    mean = sum(true.values()) / len(true)
    misses = 0
    for bot in bots:
        rating = fit.ratings[bot]
        assert rating.rating - 1500 == pytest.approx(true[bot] - mean, abs=25)
        misses += not rating.lower <= 1500 + true[bot] - mean <= rating.upper
    assert misses <= 5  # about 1.5 expected at 95% coverage


# --- head to head --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "losses", "los"),
    [(10, 5, 0.9016471987705266), (1, 0, 0.8413447460685429), (0, 4, 0.02275013194817922),
     (7, 7, 0.5), (0, 0, 0.5)],
)  # fmt: skip
def test_likelihood_of_superiority(wins: int, losses: int, los: float) -> None:
    assert likelihood_of_superiority(wins, losses) == pytest.approx(los, abs=1e-12)


def test_pair_stats_count_both_directions_and_exclude_draws_from_los() -> None:
    results = games("a", "b", 6, 4, 2) + games("b", "a", 3, 0, 2)  # a: 8 W, 4 D, 5 L
    stats = pair_table(results)[("a", "b")]
    assert (stats.wins, stats.draws, stats.losses, stats.games) == (8, 4, 5, 17)
    assert stats.score == 10.0
    assert stats.fraction == pytest.approx(10 / 17)
    assert stats.los == pytest.approx(normal_cdf(3 / math.sqrt(13)))
    mirror = head_to_head(results, "b", "a")
    assert mirror is not None
    assert (mirror.wins, mirror.draws, mirror.losses, mirror.score) == (5, 4, 8, 7.0)
    assert mirror.elo == pytest.approx(-stats.elo)


def test_pair_elo_interval_from_the_score_fraction() -> None:
    # 30-10: fraction 0.75 (190.85 Elo); per-game variance 0.75·0.25, SE of the mean
    # √(0.1875/40) = 0.068465, so the fraction interval is 0.615810..0.884190.
    stats = head_to_head(games("a", "b", 30, 0, 10), "a", "b")
    assert stats is not None
    assert stats.elo == pytest.approx(190.8485, abs=1e-4)
    assert stats.elo_lower == pytest.approx(-400 * math.log10(1 / 0.6158104392 - 1), abs=1e-6)
    assert stats.elo_upper == pytest.approx(-400 * math.log10(1 / 0.8841895608 - 1), abs=1e-6)
    assert stats.los == pytest.approx(normal_cdf(20 / math.sqrt(40)))


def test_pair_elo_of_a_clean_sweep_is_infinite() -> None:
    stats = head_to_head(games("a", "b", 4), "a", "b")
    assert stats is not None
    assert (stats.elo, stats.elo_upper) == (math.inf, math.inf)
    assert stats.elo_lower == math.inf  # zero variance: no interval to speak of


def test_head_to_head_of_bots_that_never_met_is_none() -> None:
    assert head_to_head(games("a", "b", 1), "a", "c") is None


# --- SPRT ----------------------------------------------------------------------------------


def sprt_from_counts(counts: list[int], **kwargs: object) -> Sprt:
    test = Sprt(**kwargs)  # type: ignore[arg-type]
    for count, points in zip(counts, (0.0, 0.5, 1.0, 1.5, 2.0), strict=True):
        for _ in range(count):
            test.add(points)
    return test


def test_sprt_bounds_are_walds() -> None:
    test = Sprt(0, 5)
    assert test.lower_bound == pytest.approx(-math.log(19))
    assert test.upper_bound == pytest.approx(math.log(19))
    other = Sprt(0, 5, alpha=0.01, beta=0.1)
    assert other.lower_bound == pytest.approx(math.log(0.1 / 0.99))
    assert other.upper_bound == pytest.approx(math.log(0.9 / 0.01))


def test_sprt_normal_llr_from_mean_and_variance() -> None:
    # Counts 1,2,3,2,2 of 0, ¼, ½, ¾, 1: μ = 0.55, σ² = 0.0975. With s0 = 0.5, s1 = 0.55,
    # LLR = N(s1 - s0)(2μ - s0 - s1)/(2σ²) = 10·0.05·0.05/0.195 = 0.128205.
    elo1 = 400 * math.log10(0.55 / 0.45)
    test = sprt_from_counts([1, 2, 3, 2, 2], elo0=0, elo1=elo1, method="normal")
    assert test.llr == pytest.approx(0.05 * 0.05 * 10 / 0.195)
    assert test.counts == (1, 2, 3, 2, 2)
    assert test.sets == 10


def test_sprt_exact_llr_of_win_or_lose_sets_is_the_bernoulli_llr() -> None:
    # Only 0 and 2 points: the best distribution with mean s is Bernoulli(s), so
    # LLR = N[μ·ln(s1/s0) + (1-μ)·ln((1-s1)/(1-s0))] = 20[0.75 ln 1.2 + 0.25 ln 0.8] = 1.61911
    # (up to the 0.001-set regularization of the empty outcomes).
    elo1 = 400 * math.log10(0.6 / 0.4)
    test = sprt_from_counts([5, 0, 0, 0, 15], elo0=0, elo1=elo1)
    assert test.llr == pytest.approx(1.619106, abs=1e-3)


def test_sprt_exact_and_normal_agree_on_a_long_mixed_stream() -> None:
    counts = [90, 210, 400, 230, 110]
    exact = sprt_from_counts(counts, elo0=0, elo1=10)
    normal = sprt_from_counts(counts, elo0=0, elo1=10, method="normal")
    assert exact.llr == pytest.approx(normal.llr, rel=0.01)


def test_sprt_is_undecided_after_a_few_perfect_sets() -> None:
    test = sprt_from_counts([0, 0, 0, 0, 3], elo0=0, elo1=10)
    assert 0 < test.llr < test.upper_bound
    assert test.decision is None


def test_normal_sprt_would_accept_after_one_perfect_set() -> None:
    # Why "exact" is the default: σ² ≈ 0 makes the normal formula's LLR explode.
    assert sprt_from_counts([0, 0, 0, 0, 1], elo0=0, elo1=10, method="normal").decision == "H1"
    assert sprt_from_counts([0, 0, 0, 0, 1], elo0=0, elo1=10).decision is None


@pytest.mark.parametrize("method", ["exact", "normal"])
@pytest.mark.parametrize(
    ("true_elo", "decision"), [(60.0, "H1"), (-40.0, "H0"), (-5.0, "H0"), (25.0, "H1")]
)
def test_sprt_decides_strong_and_weak_streams(method: str, true_elo: float, decision: str) -> None:
    rng = random.Random(f"{method}/{true_elo}")
    game_score = score_from_elo(true_elo / 2)  # two games per set
    test = Sprt(0, 10, method=method)  # type: ignore[arg-type]
    for _ in range(50_000):
        if test.decision:
            break
        test.add_games(*(float(rng.random() < game_score) for _ in range(2)))
    assert test.decision == decision
    assert test.sets < 50_000


@pytest.mark.parametrize(
    ("elo0", "elo1", "counts", "said"),
    [
        # H1 licenses "more than elo0", never "at least elo1": it said "stronger by at
        # least 50 Elo", which a true difference of 25 makes about as likely as H0.
        (0, 50, [0, 0, 0, 0, 30], "H1 accepted: a is stronger than b"),
        (10, 50, [0, 0, 0, 0, 30], "H1 accepted: a is more than 10 Elo stronger than b"),
        (-10, 5, [0, 0, 0, 0, 80], "H1 accepted: a is less than 10 Elo weaker than b"),
        # H0 licenses "not elo1 stronger", never "at most elo0": it added "(at most 0)".
        (0, 50, [30, 0, 0, 0, 0], "H0 accepted: a is not 50 Elo stronger than b"),
        (-50, 0, [60, 0, 2, 0, 0], "H0 accepted: a is not stronger than b"),
        (-80, -20, [80, 0, 0, 0, 0], "H0 accepted: a is more than 20 Elo weaker than b"),
        (0, 50, [0, 0, 1, 0, 0], "no decision within the sets allowed"),
    ],
)
def test_sprt_verdict_says_only_what_the_test_shows(
    elo0: float, elo1: float, counts: list[int], said: str
) -> None:
    test = Sprt(elo0, elo1)
    for points, n in zip((0.0, 0.5, 1.0, 1.5, 2.0), counts, strict=True):
        for _ in range(n):
            test.add(points)
    assert test.verdict("a", "b") == said


def test_sprt_decision_stays_after_the_first_crossing() -> None:
    # Perfect sets are evidence at ln(s1/s0) = 0.0288 each: about 103 of them reach ln 19.
    test = sprt_from_counts([0, 0, 0, 0, 150], elo0=0, elo1=10)
    assert test.decision == "H1"
    for _ in range(400):
        test.add(0)
    assert test.llr < 0
    assert test.decision == "H1"


def test_sprt_with_no_sets_has_zero_llr() -> None:
    assert Sprt(0, 5).llr == 0.0
    assert Sprt(0, 5).decision is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"elo0": 5, "elo1": 0}, "elo0 must be below elo1"),
        # an expected score of exactly 1 (or an overflow) once the first set is added
        ({"elo0": 0, "elo1": 7000}, "within ±2000 Elo"),
        ({"elo0": -200_000, "elo1": 0}, "within ±2000 Elo"),
        # not a number: it was told that elo0 must be below elo1
        ({"elo0": math.nan, "elo1": 5}, "within ±2000 Elo"),
        ({"elo0": 0, "elo1": math.nan}, "within ±2000 Elo"),
        ({"elo0": 0, "elo1": 5, "alpha": 0}, "alpha and beta"),
        ({"elo0": 0, "elo1": 5, "beta": 0.6, "alpha": 0.5}, "alpha and beta"),
        ({"elo0": 0, "elo1": 5, "method": "bayes"}, "method"),
    ],
)
def test_sprt_rejects_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(RatingError, match=message):
        Sprt(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("points", [0.25, 3.0, -0.5])
def test_sprt_rejects_set_scores_that_are_not_points_out_of_two(points: float) -> None:
    with pytest.raises(RatingError, match="out of 2"):
        Sprt(0, 5).add(points)
