"""Rating speed: the pure fits over 100,000 games, and the workers' rating pass after a set.

The pure fits: Bradley–Terry with intervals and Elo game by game, 30 bots, 100,000 games.
The pass (runner/ratings_update.py) runs after every recorded set: it is timed with a
database of --stored games (30 bots, SQLite; --database for another), side by side with a
replay of every stored game (`arena ratings --recompute`), which is what each pass cost when
every set recomputed the whole table.

Run: python bench/ratings.py [--stored 100000] [--passes 6] [--database URL]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.ratings import bradley_terry, elo_ratings, score_from_elo
from arena.storage import Database, open_database, repo
from arena.storage.repo import GameResult, PlannedSet
from runner.ratings_update import update_ratings

HERE = Path(__file__).resolve().parent


def pure_fits() -> None:
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


def _dashboard_bench() -> Any:
    """bench/dashboard.py's fill: real records, tournaments, faults, a rated table."""
    spec = importlib.util.spec_from_file_location("dashboard_bench", HERE / "dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record_a_set(db: Database, set_id: str, index: int) -> None:
    a, b = "bot00@1.0", "bot01@1.0"
    games = [
        GameResult(i, seats, (255, 100), (index + i) % 2, "target", 10, b"{}")
        for i, seats in enumerate(((a, b, a, b), (b, a, b, a)))
    ]
    with db.session() as s:
        repo.mark_set_running(s, set_id)
        repo.record_game_set_result(s, set_id, games)


def rating_passes(stored: int, passes: int, url: str | None) -> None:
    bench = _dashboard_bench()
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        db = open_database(url or f"sqlite:///{tmp}/arena.db")
        started = time.perf_counter()
        bench.fill(db, stored, 30)
        print(f"filled {stored} games in {time.perf_counter() - started:.0f} s ({db.dialect})")
        plan = [PlannedSet("bot00@1.0", "bot01@1.0", seed=i, first_dealer=0) for i in range(passes)]
        with db.session() as s:
            tournament = repo.create_tournament(
                s,
                format="round-robin",
                ruleset=bench.RULESET,
                seed=1,
                sets_per_pair=passes,
                sets=plan,
                limits={},
            )
        timings: dict[str, list[float]] = {"one set's pass": [], "replay of every game": []}
        for index in range(passes):
            _record_a_set(db, repo.game_set_id(tournament.id, index), index)
            # Alternate, so a burst of load on a shared machine hits both alike.
            for name, scratch in (("one set's pass", False), ("replay of every game", True)):
                with db.session() as s:
                    started = time.perf_counter()
                    update_ratings(s, bench.RULESET, from_scratch=scratch)
                    timings[name].append(time.perf_counter() - started)
        db.dispose()
    medians = {name: statistics.median(t) for name, t in timings.items()}
    for name, median in medians.items():
        print(f"rating pass, {name:<22} {stored} games stored: median {1000 * median:7.1f} ms")
    ratio = medians["replay of every game"] / medians["one set's pass"]
    print(f"  a set's pass is {ratio:.0f}x cheaper than replaying every game")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=100_000, help="games in the database")
    parser.add_argument("--passes", type=int, default=6, help="timed passes each way")
    parser.add_argument("--database", help="database URL (default: SQLite in a temp directory)")
    args = parser.parse_args()
    pure_fits()
    rating_passes(args.stored, args.passes, args.database)


if __name__ == "__main__":
    main()
