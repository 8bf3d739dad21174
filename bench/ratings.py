"""Rating fit speed: Bradley–Terry with intervals and Elo over 30 bots and 100,000 games.

Run: python bench/ratings.py
"""

from __future__ import annotations

import random
import time

from arena.ratings import bradley_terry, elo_ratings, score_from_elo


def main() -> None:
    rng = random.Random(11)
    bots = [f"bot{i:02d}" for i in range(30)]
    true = {bot: rng.uniform(-300, 300) for bot in bots}
    results = []
    for _ in range(100_000):
        a, b = rng.sample(bots, 2)
        results.append((a, b, 1.0 if rng.random() < score_from_elo(true[a] - true[b]) else 0.0))
    for name, fit in (("bradley-terry + 95% CI", bradley_terry), ("elo game by game", elo_ratings)):
        times = []
        for _ in range(5):
            started = time.perf_counter()
            fit(results)
            times.append(time.perf_counter() - started)
        print(f"{name:<24} 30 bots, 100,000 games: median {sorted(times)[2] * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
