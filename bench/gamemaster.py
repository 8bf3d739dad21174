"""Game master speed: raw gRPC round trips vs decisions, games per second, the stdio bridge.

(a) a bidirectional-stream ping-pong between two processes (a grpc.aio echo server defined
    here, generic handlers on bytes, the client on grpc's sync API like the Python SDK), with
    the average DecisionRequest's size; (b) full standard games between four Python SDK agent
    processes that answer instantly, one game at a time, per decision, and the ratio to (a);
(c) games per second with 1, 2, 4, 8 games at once (fresh agent processes per game, as the
    platform plays); (d) the same games as (b) with four stdio-bridge bots.
The game master runs in its own process (`arena gamemaster`). Per-decision times run from the
game's first public event (all seats connected) to its last, seen by a Watch stream.
Run: python bench/gamemaster.py [--games N] [--pings N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
PY = sys.executable
ECHO_METHOD = "/bench.Echo/Ping"
LIMITS = {"decision_ms": 10_000, "bank_ms": 60_000, "fault_limit": 5, "connect_ms": 60_000}


# ----------------------------------------------------------------------------- (a) echo


def _echo_server(reply_bytes: int) -> None:
    """Serve the echo method until stdin closes; print the port first."""

    async def main() -> None:
        reply = b"x" * reply_bytes

        async def ping(requests, context):  # type: ignore[no-untyped-def]
            async for _ in requests:
                yield reply

        server = grpc.aio.server()
        handler = grpc.method_handlers_generic_handler(
            "bench.Echo", {"Ping": grpc.stream_stream_rpc_method_handler(ping)}
        )
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(port, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await server.stop(0)

    asyncio.run(main())


def ping_pong(count: int, request_bytes: int, reply_bytes: int) -> float:
    """Seconds per round trip on one bidirectional stream between two processes."""
    server = subprocess.Popen(
        [PY, str(HERE), "--echo-server", str(reply_bytes)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        outgoing: queue.Queue[bytes | None] = queue.Queue()

        def requests() -> Iterator[bytes]:
            while (msg := outgoing.get()) is not None:
                yield msg

        # The same pattern as the SDK: a queue feeds the request iterator, replies are iterated.
        replies = channel.stream_stream(ECHO_METHOD)(requests())
        payload = b"r" * request_bytes
        warmup = max(50, count // 10)
        for i in range(warmup + count):
            if i == warmup:
                start = time.perf_counter()
            outgoing.put(payload)
            next(replies)
        elapsed = time.perf_counter() - start
        outgoing.put(None)
        channel.close()
        return elapsed / count
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)


def decision_sizes() -> tuple[int, int]:
    """Average bytes of a DecisionRequest and of a Reply over one in-process game."""
    from arena import wire
    from arena.game import Game
    from arena.observation import observe
    from arena.rulesets import STANDARD

    game = Game(STANDARD, 1)
    sizes, replies = [], []
    while not game.is_over:
        seat = game.to_act
        assert seat is not None
        legal = game.legal()
        msg = wire.decision_request(1, observe(game, seat), legal, 2000, 20000)
        sizes.append(msg.ByteSize())
        replies.append(wire.reply(1, legal.first()).ByteSize())
        game.apply(legal.first(), seat)
    return round(statistics.mean(sizes)), round(statistics.mean(replies))


# ----------------------------------------------------------------------------- agents


def _first_agent() -> None:
    """An SDK agent that answers instantly: a random legal action (first legal for choices)."""
    from arena.agent import run
    from arena.legal import Legal
    from arena.observation import Observation

    class Instant:
        name = "instant"

        def __init__(self) -> None:
            self.rng = random.Random(os.environ.get("ARENA_SEAT_TOKEN"))

        def act(self, obs: Observation, legal: Legal) -> object:
            if legal.choice is not None:
                return legal.first()
            return self.rng.choice(legal.actions)

    run(Instant())  # type: ignore[arg-type]


_STDIO_BOT = r"""
import json, random, sys
rng = random.Random(0)
for line in sys.stdin:
    if line.startswith('{"type":"decision"'):
        msg = json.loads(line)
        legal = msg["legal"]
        action = rng.choice(legal["actions"]) if legal["actions"] else legal["fallback"]
        sys.stdout.write(json.dumps({"request_id": msg["request_id"], "action": action}) + "\n")
        sys.stdout.flush()
    elif line.startswith('{"type":"game_end"'):
        break
"""

SDK_AGENT = (PY, str(HERE), "--agent")
STDIO_AGENT = (PY, "-m", "arena.cli", "stdio-agent", "--", PY, "-c", _STDIO_BOT)


# ----------------------------------------------------------------------------- games


@dataclass
class GameTiming:
    decisions: int
    seen_ms: float  # round trips as the game master timed them (request sent to reply read)
    play_s: float  # first public event to the last
    total_s: float  # OpenGame to the result, agent start-up included


class GameMasterProcess:
    """`arena gamemaster` on a free port, in its own process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [
                PY,
                "-m",
                "arena.cli",
                "gamemaster",
                "--listen",
                "127.0.0.1:0",
                "--log-level",
                "ERROR",
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, ARENA_ADMIN_TOKEN=""),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.address = line.strip().rsplit(" ", 1)[-1]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def play_one(address: str, agent: Sequence[str], seed: int) -> GameTiming:
    from arena import wire
    from arena.gamemaster.client import GameMasterClient
    from arena.wire import pb

    start = time.perf_counter()
    with GameMasterClient(address, admin_token="") as client:
        game = client.open_game("standard", seed, limits=LIMITS)
        channel = grpc.insecure_channel(address)
        watch = channel.unary_stream(
            wire.WATCH,
            request_serializer=pb.WatchRequest.SerializeToString,
            response_deserializer=pb.GameEvent.FromString,
        )(pb.WatchRequest(game_id=game.game_id))
        env = dict(os.environ, ARENA_GAME_MASTER=address, PYTHONPATH=str(REPO))
        procs = [
            subprocess.Popen(
                list(agent),
                env={**env, "ARENA_SEAT_TOKEN": token},
                stderr=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
            for token in game.tokens
        ]
        first = last = 0.0
        for _event in watch:
            last = time.perf_counter()
            first = first or last
        outcome = client.await_game(game.game_id, timeout=600)
        total = time.perf_counter() - start
        for p in procs:
            p.wait(30)
        channel.close()
    if outcome.reason not in ("target", "max_hands"):
        raise RuntimeError(f"game {outcome.game_id} ended {outcome.reason}: {outcome.detail}")
    decisions = sum(s.decisions for s in outcome.seats)
    seen = float(sum(s.total_ms for s in outcome.seats))
    return GameTiming(decisions, seen, last - first, total)


def per_decision(address: str, agent: Sequence[str], games: int) -> tuple[float, float, int]:
    """Seconds per decision over ``games`` sequential games, of which the game master saw
    as the agent's round trip; and the decisions played."""
    timings = [play_one(address, agent, seed) for seed in range(games)]
    decisions = sum(t.decisions for t in timings)
    seen = sum(t.seen_ms for t in timings) / 1000 / decisions
    return sum(t.play_s for t in timings) / decisions, seen, decisions


def throughput(address: str, concurrency: int, games: int) -> tuple[float, float]:
    """Games per second and decisions per second with ``concurrency`` games in flight."""
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        timings = list(pool.map(lambda s: play_one(address, SDK_AGENT, 1000 + s), range(games)))
    elapsed = time.perf_counter() - start
    return games / elapsed, sum(t.decisions for t in timings) / elapsed


# ----------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=6, help="games per measurement (default 6)")
    parser.add_argument("--pings", type=int, default=3000, help="round trips for (a)")
    parser.add_argument("--quick", action="store_true", help="fewer games and round trips")
    parser.add_argument("--echo-server", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--agent", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server is not None:
        _echo_server(args.echo_server)
        return
    if args.agent:
        _first_agent()
        return
    games = 2 if args.quick else args.games
    pings = 500 if args.quick else args.pings

    print(
        f"game master benchmark: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"grpcio {grpc.__version__}"
    )
    request_bytes, reply_bytes = decision_sizes()
    rtt = ping_pong(pings, reply_bytes, request_bytes)
    rows: list[tuple[str, str, str]] = [
        (
            "(a) raw gRPC ping-pong, 2 processes",
            f"{rtt * 1e6:8.0f} µs/round trip",
            f"{pings} trips, {request_bytes} B down / {reply_bytes} B up",
        )
    ]
    gm = GameMasterProcess()
    try:
        sdk, sdk_seen, sdk_n = per_decision(gm.address, SDK_AGENT, games)
        rows.append(
            (
                "(b) SDK agents, 1 game at a time",
                f"{sdk * 1e6:8.0f} µs/decision",
                f"{sdk / rtt:.2f}× (a) [goal ≤ 1.5], {sdk_n} decisions",
            )
        )
        rows.append(
            (
                "    of which request→reply (GM clock)",
                f"{sdk_seen * 1e6:8.0f} µs/decision",
                f"{sdk_seen / rtt:.2f}× (a); the rest, {(sdk - sdk_seen) * 1e6:.0f} µs, is the "
                "GM between a reply and the next request",
            )
        )
        for c in (1, 2, 4, 8):
            gps, dps = throughput(gm.address, c, max(games, 2 * c))
            rows.append(
                (
                    f"(c) {c} game(s) at once",
                    f"{gps:8.2f} games/s",
                    f"{dps:.0f} decisions/s, agent start-up included",
                )
            )
        stdio, _, stdio_n = per_decision(gm.address, STDIO_AGENT, games)
        rows.append(
            (
                "(d) stdio-bridge bots, 1 game at a time",
                f"{stdio * 1e6:8.0f} µs/decision",
                f"+{(stdio - sdk) * 1e6:.0f} µs over (b), {stdio / rtt:.2f}× (a), "
                f"{stdio_n} decisions",
            )
        )
    finally:
        gm.stop()
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'result':>20}  notes")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>20}  {note}")


if __name__ == "__main__":
    main()
