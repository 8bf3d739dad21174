"""Dashboard speed: page response times on a database of 100,000 games between 30 bots.

Fills a SQLite file in a temporary directory with bulk inserts (a few real records, reused),
rates it, serves the app through the real waitress server on 127.0.0.1 (port 0) and times
requests with http.client over one keep-alive connection, every page interleaved with the
trivial /healthz in the same run. Each route's first (cold) request is reported on its own.
Goal: every page under 50 ms median and 150 ms p95.
Run: python bench/dashboard.py [--games 100000] [--bots 30] [--requests 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's directory comes first on sys.path and its name would shadow
# the dashboard package: put the repository root there instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import http.client  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import quote  # noqa: E402

from sqlalchemy import insert  # noqa: E402

from arena.play import play_game  # noqa: E402
from arena.ratings import bradley_terry, elo_ratings  # noqa: E402
from arena.record import game_record  # noqa: E402
from arena.rulesets import STANDARD  # noqa: E402
from arena.storage import Database, open_database, repo  # noqa: E402
from arena.storage.models import Fault, Game, GameSet, RatingHistory, Tournament  # noqa: E402
from arena.storage.repo import RatingRow  # noqa: E402
from sample_agents.greedy_bot import GreedyPlayer  # noqa: E402
from sample_agents.random_bot import RandomPlayer  # noqa: E402

RULESET = "standard"
SETS_PER_PAIR = 10
CHUNK = 5_000
START = datetime(2026, 1, 1, tzinfo=UTC)


def real_records(count: int, max_hands: int) -> list[tuple[bytes, Any]]:
    """`count` real greedy-versus-random games: (compressed record, finished game)."""
    ruleset = dataclasses.replace(STANDARD, max_hands=max_hands)
    out = []
    for seed in range(count):
        players = [GreedyPlayer(), RandomPlayer(seed), GreedyPlayer(), RandomPlayer(seed + 1)]
        game = play_game(ruleset, seed, players)
        text = game_record(game, ["greedy", "random", "greedy", "random"], f"bench-{seed}")
        out.append((zlib.compress(text.encode(), 6), game))
    return out


def fill(db: Database, games: int, bots: int) -> dict[str, Any]:
    """Bulk-insert bots, round-robin tournaments, sets, games, faults, ratings and history."""
    with db.session() as s:
        for b in range(bots):
            repo.add_bot_version(
                s,
                name=f"bot{b:02d}",
                version="1.0",
                author=f"author{b}",
                language="python",
                manifest={"name": f"bot{b:02d}", "version": "1.0", "about": "bench"},
                directory=f"/bots/bot{b:02d}",
                command=["python3", "bot.py"],
            )
        ids = [v.id for v in repo.active_versions(s)]
    pairs = [(ids[i], ids[j]) for i in range(bots) for j in range(i + 1, bots)]
    per_tournament = len(pairs) * SETS_PER_PAIR
    short = real_records(6, max_hands=3)
    sets_needed = games // 2
    tournaments = []
    set_rows: list[dict[str, Any]] = []
    game_rows: list[dict[str, Any]] = []
    fault_rows: list[dict[str, Any]] = []
    results: list[tuple[str, str, float, str]] = []
    n = 0
    t = 0
    while n < sets_needed:
        tid = f"t-bench-{t:02d}"
        planned = per_tournament
        done = min(planned, sets_needed - n)
        tournaments.append(
            {
                "id": tid,
                "format": "round-robin",
                "ruleset": RULESET,
                "seed": t,
                "sets_per_pair": SETS_PER_PAIR,
                "limits": {},
                "state": "finished" if done == planned else "running",
                "created": START + timedelta(days=t),
                "started": START + timedelta(days=t),
                "finished": START + timedelta(days=t, hours=20) if done == planned else None,
                "planned_sets": planned,
                "nightly": True,
            }
        )
        for index in range(planned):
            a, b = pairs[index % len(pairs)]
            set_id = repo.game_set_id(tid, index)
            finished = START + timedelta(days=t, seconds=index * 10)
            is_done = index < done
            score_a = 0.0
            for g in range(2) if is_done else ():
                blob, played = short[(n + g) % len(short)]
                seats = (a, b, a, b) if g == 0 else (b, a, b, a)
                winner = played.winner
                gid = repo.game_id(set_id, g)
                game_rows.append(
                    {
                        "id": gid,
                        "game_set_id": set_id,
                        "game_index": g,
                        "ruleset": RULESET,
                        "seed": index,
                        "first_dealer": index % 4,
                        "seat0_id": seats[0],
                        "seat1_id": seats[1],
                        "seat2_id": seats[2],
                        "seat3_id": seats[3],
                        "score0": played.scores[0],
                        "score1": played.scores[1],
                        "winner": winner,
                        "reason": played.end_reason,
                        "forfeit_seat": None,
                        "hands": played.hand_number,
                        "record_z": blob,
                        "decisions": 70,
                        "think_ms0": 100,
                        "think_ms1": 100,
                        "think_ms2": 100,
                        "think_ms3": 100,
                        "finished": finished + timedelta(seconds=g),
                        # Rated in the order they finished, as the rater would have.
                        "rated_seq": len(game_rows),
                    }
                )
                score0 = 0.5 if winner is None else float(winner == 0)
                results.append((str(seats[0]), str(seats[1]), score0, gid))
                score_a += score0 if g == 0 else 1.0 - score0
                if len(game_rows) % 97 == 0:
                    fault_rows.append(
                        {
                            "game_id": gid,
                            "seat": 1,
                            "bot_version_id": seats[1],
                            "kind": ("timeout", "illegal", "crash")[len(fault_rows) % 3],
                            "hand": 1,
                            "detail": "bench fault",
                            "stderr": "Traceback (most recent call last):\n  ...\nValueError",
                        }
                    )
            set_rows.append(
                {
                    "id": set_id,
                    "tournament_id": tid,
                    "index": index,
                    "bot_a_id": a,
                    "bot_b_id": b,
                    "seed": index,
                    "first_dealer": index % 4,
                    "state": "done" if is_done else "queued",
                    "attempts": 1 if is_done else 0,
                    "score_a": score_a if is_done else None,
                    "started": finished if is_done else None,
                    "finished": finished if is_done else None,
                    "error": None,
                }
            )
        n += done
        t += 1
    table = elo_ratings([(a, b, s) for a, b, s, _ in results])
    fit = bradley_terry([(a, b, s) for a, b, s, _ in results])
    history = []
    for index, (a, b, _s, gid) in enumerate(results):
        for key in (a, b):
            history.append(
                {
                    "bot_version_id": int(key),
                    "ruleset": RULESET,
                    "game_id": gid,
                    "elo": table.history[key][_position(table, key, index)].rating,
                    "recorded": START,
                }
            )
    with db.engine.begin() as conn:
        conn.execute(insert(Tournament.__table__), tournaments)
        for table_, rows in (
            (GameSet.__table__, set_rows),
            (Game.__table__, game_rows),
            (Fault.__table__, fault_rows),
            (RatingHistory.__table__, history),
        ):
            for i in range(0, len(rows), CHUNK):
                conn.execute(insert(table_), rows[i : i + CHUNK])
    counts: dict[str, list[float]] = {}
    for a, b, s, _ in results:
        counts.setdefault(a, [0, 0.0])
        counts.setdefault(b, [0, 0.0])
        counts[a][0] += 1
        counts[a][1] += s
        counts[b][0] += 1
        counts[b][1] += 1 - s
    with db.session() as s:
        repo.replace_ratings(
            s,
            RULESET,
            [
                RatingRow(
                    int(key),
                    table.rating(key),
                    bt=fit.ratings[key].rating,
                    ci_low=fit.ratings[key].lower,
                    ci_high=fit.ratings[key].upper,
                    games=int(games_),
                    score=points / games_,
                    last_played=START + timedelta(days=t),
                )
                for key, (games_, points) in counts.items()
            ],
        )
        # The measured game page shows a full-length game, the longest kind there is.
        long_blob = real_records(1, max_hands=STANDARD.max_hands)[0][0]
        s.execute(
            Game.__table__.update()
            .where(Game.__table__.c.id == game_rows[0]["id"])
            .values(record_z=long_blob)
        )
        s.commit()
    return {
        "games": len(game_rows),
        "sets": len(set_rows),
        "tournaments": [x["id"] for x in tournaments],
        "game": game_rows[0]["id"],
        "faults": len(fault_rows),
        "history": len(history),
    }


_CURSOR: dict[str, int] = {}


def _position(table: Any, key: str, index: int) -> int:
    """Where game `index` is in `key`'s history (histories grow in game order)."""
    pos = _CURSOR.get(key, 0)
    while table.history[key][pos].game != index:
        pos += 1
    _CURSOR[key] = pos + 1
    return pos


def measure(port: int, routes: dict[str, str], requests: int) -> dict[str, dict[str, float]]:
    """Interleave the routes, `requests` times each, after one cold and a few warm-up calls."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(path: str) -> float:
        start = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status} {body[:200]!r}")
        return elapsed

    cold = {name: get(path) for name, path in routes.items()}
    for _ in range(5):
        for path in routes.values():
            get(path)
    times: dict[str, list[float]] = {name: [] for name in routes}
    for _ in range(requests):
        for name, path in routes.items():
            times[name].append(get(path))
    conn.close()
    out = {}
    for name, samples in times.items():
        samples.sort()
        out[name] = {
            "cold": cold[name],
            "median": statistics.median(samples),
            "p95": samples[min(len(samples) - 1, int(0.95 * len(samples)))],
            "max": samples[-1],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=100_000, help="games to store")
    parser.add_argument("--bots", type=int, default=30, help="bots (one version each)")
    parser.add_argument("--requests", type=int, default=200, help="timed requests per route")
    parser.add_argument("--keep", action="store_true", help="keep the database file")
    args = parser.parse_args()

    from waitress.server import create_server

    from dashboard import create_app

    directory = tempfile.mkdtemp(prefix="arena-bench-")
    url = f"sqlite:///{directory}/arena.db"
    start = time.perf_counter()
    db = open_database(url)
    info = fill(db, args.games, args.bots)
    db.dispose()
    size = Path(directory, "arena.db").stat().st_size / 1e6
    print(
        f"filled {url} in {time.perf_counter() - start:.1f} s: {info['games']} games, "
        f"{info['sets']} sets, {len(info['tournaments'])} tournaments, {args.bots} bots, "
        f"{info['faults']} faults, {info['history']} history rows, {size:.0f} MB"
    )
    app = create_app({"DATABASE_URL": url})
    server = create_server(app, host="127.0.0.1", port=0, threads=4)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    port = server.effective_port  # type: ignore[union-attr]
    game = info["game"]
    tournament = info["tournaments"][0]
    routes = {
        "/healthz (baseline)": "/healthz",
        "leaderboard /": "/",
        "bot page": f"/bots/{quote('bot07')}",
        "tournament page": f"/tournaments/{tournament}",
        "game page": f"/games/{game}",
        "api leaderboard": "/api/leaderboard",
        "api bot": "/api/bots/bot07",
        "api tournament": f"/api/tournaments/{tournament}",
        "api tournament status": f"/api/tournaments/{tournament}/status",
        "tournaments list": "/tournaments",
        "games list (page 50)": "/games?page=50",
        "games list (page 2000)": "/games?page=2000",
        "games of a bot (page 50)": "/games?bot=bot07&page=50",
        "games a bot faulted in": "/games?bot=bot07&fault=any",
        "replay page": f"/games/{game}/replay",
        "api replay (seat 2)": f"/api/games/{game}/replay?perspective=2",
    }
    print(
        f"server: waitress on 127.0.0.1:{port} (4 threads); client: http.client, one "
        f"keep-alive connection, {args.requests} requests per route, interleaved"
    )
    results = measure(port, routes, args.requests)
    time.sleep(0.2)  # let waitress finish with the closed connection before it shuts down
    server.close()
    thread.join(timeout=5)
    base = results["/healthz (baseline)"]
    print(f"\n{'route':<26}{'cold ms':>9}{'median':>9}{'p95':>9}{'max':>9}{'-healthz':>10}  goal")
    pages = {name for name in routes if not name.startswith(("/healthz", "api", "replay"))}
    for name, r in results.items():
        goal = ""
        if name in pages:
            goal = "ok" if r["median"] < 50 and r["p95"] < 150 else "MISSED"
        print(
            f"{name:<26}{r['cold']:>9.1f}{r['median']:>9.1f}{r['p95']:>9.1f}{r['max']:>9.1f}"
            f"{r['median'] - base['median']:>10.1f}  {goal}"
        )
    if not args.keep:
        Path(directory, "arena.db").unlink()
    else:
        print(f"\nkept {url}")


if __name__ == "__main__":
    main()
