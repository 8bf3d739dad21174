"""gRPC's settings as the arena makes them (arena/grpc_tuning.py) against gRPC's own defaults.

Each round measures both ways, in turn, each in fresh processes (gRPC reads its settings once,
when imported): (a) the raw ping-pong of bench/gamemaster.py, and (b) one full standard game
between four SDK agents on a game master in its own process, per decision: wall time, the game
master's CPU and the agents'. Rows give the median round, and the ratio arena / defaults is
taken within each round (a shared machine's load changes from minute to minute).

    .venv/bin/python bench/grpc_tuning.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from arena import grpc_tuning

HERE = Path(__file__).resolve().parent
ROUND = """
import json, sys
sys.path.insert(0, sys.argv[2])
import gamemaster as g
rtt, server_cpu, client_cpu = g.ping_pong(2000, *g.decision_sizes())
gm = g.GameMasterProcess()
try:
    before = g.cpu_seconds(gm.proc.pid)
    b = g.per_decision(gm.address, g.SDK_AGENT, [int(sys.argv[1])])
    gm_cpu = (g.cpu_seconds(gm.proc.pid) - before) / b.decisions
finally:
    gm.stop()
print(json.dumps({"a": rtt, "a_cpu": server_cpu + client_cpu, "b": b.wall, "gm_cpu": gm_cpu,
                  "agents_cpu": b.agents_cpu}))
"""
ROWS = {
    "a": "(a) raw ping-pong, per round trip",
    "a_cpu": "    its CPU, both processes",
    "b": "(b) SDK agents' game, per decision",
    "gm_cpu": "    the game master's CPU",
    "agents_cpu": "    the four agents' CPU",
}
OTHERS = {k: v for k, v in os.environ.items() if k != grpc_tuning.VARIABLE}
WAYS = {
    "gRPC's defaults": {**OTHERS, grpc_tuning.VARIABLE: ""},  # set, even empty, it is kept
    "the arena's": OTHERS,  # unset: the arena sets it
}


def measure(env: dict[str, str], seed: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", ROUND, str(seed), str(HERE)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"a round failed:\n{done.stderr[-2000:]}")
    values: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    version = grpc_tuning.grpcio_version()
    shown = ".".join(map(str, version)) if version else "not installed"
    print(f"gRPC settings: {os.cpu_count()} CPUs, grpcio {shown}")
    if not grpc_tuning.measured(grpc_tuning.grpcio_version()):
        print("  this grpcio is not one the arena tunes: both ways are gRPC's defaults")
    else:
        print(f"  the arena's: {grpc_tuning.VARIABLE}={grpc_tuning.OLD_POLLER}")
    results: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for seed in range(args.rounds):
        for way, env in WAYS.items():
            results[way].append(measure(env, seed))
        print(f"  round {seed + 1} of {args.rounds} done", flush=True)
    ours, theirs = results["the arena's"], results["gRPC's defaults"]
    print(f"{'':38}{'defaults':>10}{'arena':>10}  arena / defaults (per round)")
    for key, label in ROWS.items():
        ratios = [o[key] / t[key] for o, t in zip(ours, theirs, strict=True)]
        print(
            f"{label:38}{statistics.median(t[key] for t in theirs) * 1e6:8.0f}µs"
            f"{statistics.median(o[key] for o in ours) * 1e6:8.0f}µs"
            f"  {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
