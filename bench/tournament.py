"""Tournament throughput: the same small round robin with 1 and with 2 workers.

Prints games per minute for each, the speedup, and the share of the workers' wall time spent
outside games (dequeueing, starting and stopping agents, storing results, ratings). A game
here is the span from OpenGame to its result, agents' start-up included. The worker counts take
turns in rounds (1, 2, 1, 2, ...), each speedup is taken within a round and the median round's
is reported: the load of a shared machine changes from minute to minute.

    .venv/bin/python bench/tournament.py [--sets 40] [--hands 3] [--workers 1,2] [--rounds 3]

Uses ARENA_REDIS_URL if set, else the embedded Redis in a temporary data directory; a game
master is started on a free port; SQLite in the temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ARENA = [sys.executable, "-m", "arena.cli"]
PHASE_TIMEOUT = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_game_master(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    address = f"127.0.0.1:{_free_port()}"
    gm = subprocess.Popen(
        [*ARENA, "gamemaster", "--listen", address, "--log-level", "WARNING"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert gm.stdout is not None
    line = gm.stdout.readline()
    if "listening" not in line:
        raise SystemExit(f"the game master did not start: {line!r}")
    return gm, address


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int, *, reaped_children: bool = True) -> float:
    """CPU time of a live process, plus its reaped children's (from /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / _TICK


def _tree(pid: int) -> list[int]:
    """The process and its descendants (those that end meanwhile are left out)."""
    out = [pid]
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process ended while we looked
        return out
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:  # this thread ended while we looked: the others still count
            continue
        for child in children:
            out += _tree(int(child))
    return out


def _worker_cpu(supervisor: int) -> tuple[float, float]:
    """CPU seconds used so far by the workers (horses included) and by their Python agents.

    Agents are the fork servers' children; agents a horse spawned count as the worker's.
    """
    workers = agents = 0.0
    for pid in _tree(supervisor):
        try:
            is_forkserver = b"runner.launch.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes()
            if is_forkserver:
                agents += _cpu_seconds(pid)
            else:
                workers += _cpu_seconds(pid)
        except (OSError, IndexError):
            continue  # ended meanwhile
    return workers, agents


def _run(
    env: dict[str, str], workers: int, sets: int, ruleset: str, game_master: int, round_: int
) -> dict[str, Any]:
    from arena.storage import open_database, repo
    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_sets, fetch_job
    from runner.tournament import create_tournament

    os.environ.update(env)
    queue_name = f"bench-{workers}-{round_}-{os.getpid()}"
    connection = redis_conn.connect()
    queue = arena_queue(connection, queue_name)
    log = open(Path(env["ARENA_DATA_DIR"]) / f"{queue_name}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [*ARENA, "worker", "--count", str(workers), "--queue", queue_name],
        env=env,
        stdout=log,
        stderr=log,
        cwd=ROOT,
    )
    try:
        time.sleep(2.0)  # let the workers start: the clock measures playing, not booting
        with open_database(env["ARENA_DATABASE_URL"]) as db:
            cpu_before = (_cpu_seconds(game_master), *_worker_cpu(proc.pid))
            started = time.monotonic()
            tournament = create_tournament(
                db,
                format="round-robin",
                bots=None,
                sets=sets,
                ruleset=ruleset,
                seed=63,
                enqueue=lambda ids: enqueue_game_sets(queue, ids),
            )
            while True:
                with db.session() as session:
                    progress = repo.tournament_progress(session, tournament.id)
                if progress.finished:
                    break
                if time.monotonic() - started > PHASE_TIMEOUT:
                    log.flush()
                    tail = Path(log.name).read_text(errors="replace")[-3000:]
                    raise SystemExit(f"{workers} worker(s): not done in {PHASE_TIMEOUT} s\n{tail}")
                time.sleep(0.05)
            wall = time.monotonic() - started
            cpu_after = (_cpu_seconds(game_master), *_worker_cpu(proc.pid))
            with db.session() as session:
                set_ids = [s.id for s in repo.list_game_sets(session, tournament.id)]
                failed = progress.failed
                faults = _fault_kinds(session, set_ids)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    in_game = 0.0
    games = 0
    phases = {"launch_s": 0.0, "play_s": 0.0, "stop_s": 0.0, "job_s": 0.0}
    for set_id in set_ids:
        job = fetch_job(connection, set_id)
        result = job.return_value() if job is not None else None
        if job is None or not isinstance(result, dict):
            continue
        if job.started_at and job.ended_at:
            phases["job_s"] += (job.ended_at - job.started_at).total_seconds()
        for timing in result.get("timings", []):
            in_game += timing["play_s"]
            games += 1
            for key in ("launch_s", "play_s", "stop_s"):
                phases[key] += timing[key]
    capacity = wall * workers
    cpu_s = sum(after - before for before, after in zip(cpu_before, cpu_after, strict=True))
    return {
        "workers": workers,
        "sets": len(set_ids),
        "failed": failed,
        "faults": faults,
        "games": games,
        "wall_s": wall,
        "games_per_min": 60.0 * games / wall,
        "outside_games": max(0.0, 1.0 - in_game / capacity),
        "busy_cpus": cpu_s / wall,  # game master, workers and agents together
        "phases_ms": {k: round(1000 * v / max(games, 1), 1) for k, v in phases.items()},
        "cpu_ms": {
            name: round(1000 * (after - before) / max(games, 1), 1)
            for name, before, after in zip(
                ("game_master", "workers", "agents"), cpu_before, cpu_after, strict=True
            )
        },
    }


def _fault_kinds(session: Any, set_ids: list[str]) -> dict[str, str]:
    """Each fault kind seen in these sets: how many, and the first one's detail and stderr."""
    from sqlalchemy import select

    from arena.storage.models import Fault, Game

    faults = session.scalars(
        select(Fault).join(Game, Fault.game_id == Game.id).where(Game.game_set_id.in_(set_ids))
    ).all()
    kinds: dict[str, str] = {}
    for kind in sorted({f.kind for f in faults}):
        same = [f for f in faults if f.kind == kind]
        kinds[kind] = f"{len(same)}× — {same[0].detail} | stderr: {same[0].stderr[-600:]!r}"
    return kinds


def _print_one(r: dict[str, Any]) -> None:
    print(
        f"  {r['workers']} worker(s): {r['games']} games in {r['wall_s']:.1f} s = "
        f"{r['games_per_min']:.1f} games/min; outside games {100 * r['outside_games']:.1f}% "
        f"of worker time" + (f"; {r['failed']} sets failed" if r["failed"] else ""),
        flush=True,
    )
    if r["faults"]:  # sample bots play cleanly: any fault here is a bug to chase
        print(f"    FAULTS: {r['faults']}", flush=True)
    phases = ", ".join(f"{k} {v}" for k, v in r["phases_ms"].items())
    cpu = ", ".join(f"{k} {v}" for k, v in r["cpu_ms"].items())
    print(f"    per game, wall ms: {phases}; CPU ms: {cpu}", flush=True)
    print(f"    CPUs kept busy on average: {r['busy_cpus']:.2f} of {os.cpu_count()}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=40, help="duplicate sets in the round robin")
    parser.add_argument("--hands", type=int, default=3, help="max_hands of the ruleset")
    parser.add_argument("--workers", default="1,2", help="worker counts to compare")
    parser.add_argument(
        "--bots",
        default="sample_agents/bots/random,sample_agents/bots/greedy",
        help="bot directories (e.g. tests/runner/bots/slow, which thinks 40 ms per decision)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="turns each worker count takes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ruleset = json.dumps({"name": "standard", "max_hands": args.hands})
    try:
        counts = [int(x) for x in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers takes worker counts separated by commas, not {args.workers!r}")
    if min(args.sets, args.hands, args.rounds, *counts) < 1:
        parser.error("--sets, --hands, --rounds and every worker count must be at least 1")
    if not args.json:
        setup = f"{args.sets} sets per pair, max_hands {args.hands}, {os.cpu_count()} CPUs"
        print(f"round robin of {args.bots}, {setup}", flush=True)

    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        env = {
            **os.environ,
            "ARENA_DATA_DIR": tmp,
            "ARENA_DATABASE_URL": f"sqlite:///{tmp}/arena.db",
            "ARENA_REDIS_URL": os.environ.get("ARENA_REDIS_URL", ""),
        }
        os.environ.update(env)
        from arena.registry import register_bot
        from arena.storage import open_database

        with open_database(env["ARENA_DATABASE_URL"]) as db, db.session() as session:
            for directory in args.bots.split(","):
                register_bot(session, ROOT / directory)
        gm, address = _start_game_master(env)
        env["ARENA_GAME_MASTER"] = address
        try:
            rounds: list[list[dict[str, Any]]] = []
            for index in range(args.rounds):
                if not args.json:
                    print(f" round {index + 1} of {args.rounds}", flush=True)
                rounds.append([])
                for n in counts:
                    rounds[-1].append(_run(env, n, args.sets, ruleset, gm.pid, index))
                    if not args.json:
                        _print_one(rounds[-1][-1])
        finally:
            gm.terminate()
            gm.wait(timeout=30)
            from runner import redis_conn

            if not env["ARENA_REDIS_URL"]:
                redis_conn.stop_embedded(Path(tmp))

    if args.json:
        print(json.dumps(rounds, indent=2))
        return 0
    _print_summary(rounds)
    return 0


def _print_summary(rounds: list[list[dict[str, Any]]]) -> None:
    """Medians over the rounds: games per minute, outside games, and each speedup."""
    print(" median of the rounds")
    for column in zip(*rounds, strict=True):
        print(
            f"  {column[0]['workers']} worker(s): "
            f"{statistics.median(r['games_per_min'] for r in column):.1f} games/min; outside "
            f"games {100 * statistics.median(r['outside_games'] for r in column):.1f}%; "
            f"{statistics.median(r['busy_cpus'] for r in column):.2f} CPUs busy"
        )
    base_busy = statistics.median(r[0]["busy_cpus"] for r in rounds)
    if len(rounds[0]) < 2 or not base_busy:
        return
    # The work of a game does not shrink with more workers: k workers can give at most
    # (CPUs / CPUs one worker keeps busy) times one worker, however well they share.
    base = rounds[0][0]["workers"]
    print(
        f"  {base} worker(s) kept {base_busy:.2f} CPUs busy: on this machine, more workers "
        f"can give at most {(os.cpu_count() or 1) / base_busy:.2f}x"
    )
    for k in range(1, len(rounds[0])):
        speedups = sorted(r[k]["games_per_min"] / r[0]["games_per_min"] for r in rounds)
        spread = ", ".join(f"{x:.2f}" for x in speedups)
        print(
            f"  speedup {rounds[0][k]['workers']} vs {base} worker(s): "
            f"{statistics.median(speedups):.2f}x (rounds: {spread})"
        )


if __name__ == "__main__":
    sys.exit(main())
