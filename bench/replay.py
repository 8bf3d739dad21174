"""Replay speed and size: one long game (greedy bots, rules-site, seed 4: about 4,100 decisions).

Times, best of a few runs: the full re-play that describes every frame of the five views
(what the replay API builds, once per game), the light re-play the replay page makes to find
where the hands start, and encoding the five views as gzipped JSON (what the dashboard's cache
keeps). Also the memory the frames take against the gzipped bodies kept instead.
Run: python bench/replay.py [--seed 4] [--runs 3]
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
import gc  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402

from arena.play import play_game  # noqa: E402
from arena.record import game_record  # noqa: E402
from arena.rulesets import get_ruleset  # noqa: E402
from dashboard.replay import PERSPECTIVES, build_replay, hand_starts  # noqa: E402
from dashboard.views.replay import _gzipped_json  # noqa: E402
from sample_agents.greedy_bot import GreedyPlayer  # noqa: E402


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def frames_memory(record: bytes) -> int:
    """Bytes a built replay's frames hold."""
    gc.collect()
    tracemalloc.start()
    try:
        build_replay("bench", record)  # the peak: every frame, just before it is returned
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    players = [GreedyPlayer(args.seed * 10 + seat) for seat in range(4)]
    game = play_game(get_ruleset("rules-site"), args.seed, players)
    record = game_record(game, ["greedy"] * 4, "bench").encode()
    replay = build_replay("bench", record)
    decisions = replay.frames["full"][-1]["decisions"]
    print(f"rules-site seed {args.seed}: {decisions} decisions, {len(replay.hand_starts)} hands")

    full = best(args.runs, lambda: build_replay("bench", record))
    light = best(args.runs, lambda: hand_starts(record))
    bodies = {p: _gzipped_json(replay.for_perspective(p)) for p in PERSPECTIVES}
    encode = best(
        args.runs, lambda: [_gzipped_json(replay.for_perspective(p)) for p in PERSPECTIVES]
    )
    print(f"full re-play, five views    {full * 1000:8.0f} ms  (the replay API, once per game)")
    print(f"hand starts only            {light * 1000:8.0f} ms  (the replay page)  "
          f"{full / light:.0f}x less")  # fmt: skip
    print(f"five views to gzipped JSON  {encode * 1000:8.0f} ms")

    frames_bytes = frames_memory(record)
    gzipped = sum(len(b) for b in bodies.values())
    print(f"memory of the frames        {frames_bytes / 1e6:8.1f} MB")
    print(f"the five bodies, gzipped    {gzipped / 1e6:8.2f} MB  "
          f"{frames_bytes / gzipped:.0f}x less (what the cache keeps)")  # fmt: skip


if __name__ == "__main__":
    main()
