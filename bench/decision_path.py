"""Where one decision's time goes, across the processes: game master → agent → game master.

Plays full standard games between four SDK agents that answer instantly (as bench/gamemaster.py
(b) does) on a game master in its own process, with timestamps taken at four points of every
decision. The clock is CLOCK_MONOTONIC (time.monotonic_ns), one clock for every process on Linux,
so the steps between processes can be timed:
  game master → agent   from the game master's gRPC write call returning to the SDK handing the
                        request to the bot;
  agent                 the SDK decoding the request, the bot, the reply encoded;
  agent → game master   from there to the game master's session getting the reply's bytes;
  game master           from the reply's bytes to the next request written (the gRPC write call
                        included, and shown on its own).
The timestamps are patched into the game master's session and the SDK from outside (nothing in
the arena carries them); the patches cost a few µs per decision. Each game is a round, beside a
raw gRPC ping-pong (bench/gamemaster.py (a)) taken in the same round: rows give the median round.
Run: python bench/decision_path.py [--games N]
"""

from __future__ import annotations

import argparse
import atexit
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gamemaster import LIMITS, PY, REPO, decision_sizes, ping_pong

HERE = Path(__file__).resolve()
PINGS = 2000


def _traced_game_master() -> None:
    """`arena gamemaster` with timestamps: per decision, when its request was written (and how
    long the write call took) and when its reply arrived. Written to BENCH_TRACE at exit."""
    from arena.cli import main
    from arena.gamemaster import server, session

    seat_stream, game_session = server._SeatStream, session.GameSession
    put, ask_, on_message_ = seat_stream.put_nowait, game_session._ask, game_session.on_message
    rows: list[str] = []
    last_write = [0]

    def put_nowait(self: server._SeatStream, item: bytes | None) -> None:
        start = time.monotonic_ns()
        put(self, item)
        last_write[0] = time.monotonic_ns() - start

    def ask(self: session.GameSession) -> None:
        rid = self._next_request
        ask_(self)
        rows.append(f"out {rid} {time.monotonic_ns()} {last_write[0]}")

    def on_message(self: session.GameSession, seat: int, raw: bytes) -> None:
        pending = self.seats[seat].pending
        if pending is not None:
            rows.append(f"in {pending.request_id} {time.monotonic_ns()}")
        on_message_(self, seat, raw)

    seat_stream.put_nowait = put_nowait  # type: ignore[method-assign]
    game_session._ask = ask  # type: ignore[method-assign]
    game_session.on_message = on_message  # type: ignore[method-assign]
    atexit.register(lambda: Path(os.environ["BENCH_TRACE"]).write_text("\n".join(rows)))
    sys.argv = ["arena", "gamemaster", "--listen", "127.0.0.1:0", "--log-level", "ERROR"]
    main()


def _traced_agent() -> None:
    """bench/gamemaster.py's instant SDK agent, with each decision's arrival and reply times."""
    from gamemaster import _first_agent

    import arena.agent

    rows: list[str] = []
    decide_ = arena.agent._decide

    def decide(player, decision, log):  # type: ignore[no-untyped-def]
        start = time.monotonic_ns()
        reply = decide_(player, decision, log)
        rows.append(f"{decision.request_id} {start} {time.monotonic_ns()}")
        return reply

    arena.agent._decide = decide
    os.environ["BENCH_TIMES"] = os.devnull  # _first_agent's own timings: not needed here
    _first_agent()
    Path(os.environ["BENCH_TRACE"]).write_text("\n".join(rows))


@dataclass
class Steps:
    """Medians over one game's decisions, in seconds."""

    to_agent: float
    agent: float
    to_game_master: float
    game_master: float
    write: float
    decisions: int


def _steps(gm_trace: str, agent_traces: list[str]) -> Steps:
    """Join one game's timestamps, the game master's and its agents', by request id."""
    out: dict[int, tuple[int, int]] = {}  # request written at, write call's length
    arrived: dict[int, int] = {}  # its reply's bytes at the session
    for line in gm_trace.splitlines():
        kind, rid, t, *write = line.split()
        if kind == "out":
            out[int(rid)] = (int(t), int(write[0]))
        else:
            arrived[int(rid)] = int(t)
    steps: dict[str, list[int]] = {k: [] for k in ("to_agent", "agent", "back", "gm", "write")}
    for line in agent_traces:
        rid, got, replied = map(int, line.split())
        steps["to_agent"].append(got - out[rid][0])
        steps["agent"].append(replied - got)
        steps["back"].append(arrived[rid] - replied)
        if rid + 1 in out:  # the game master's step from this reply to the next request
            next_sent, write = out[rid + 1]
            steps["gm"].append(next_sent - arrived[rid])
            steps["write"].append(write)
    med = {k: statistics.median(v) / 1e9 for k, v in steps.items()}
    return Steps(
        med["to_agent"], med["agent"], med["back"], med["gm"], med["write"], len(steps["agent"])
    )


def traced_game(seed: int) -> Steps:
    """One game on a fresh traced game master (its trace holds that game alone)."""
    from arena.gamemaster.client import GameMasterClient

    with tempfile.TemporaryDirectory(prefix="bench-path-") as tmp:
        trace = Path(tmp) / "gm"
        seats = [Path(tmp) / f"seat{s}" for s in range(4)]
        gm = subprocess.Popen(
            [PY, str(HERE), "--game-master"],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, ARENA_ADMIN_TOKEN="", BENCH_TRACE=str(trace)),
        )
        try:
            assert gm.stdout is not None
            address = gm.stdout.readline().strip().rsplit(" ", 1)[-1]
            env = dict(os.environ, ARENA_GAME_MASTER=address, PYTHONPATH=str(REPO))
            with GameMasterClient(address, admin_token="") as client:
                game = client.open_game("standard", seed, limits=LIMITS)
                agents = [
                    subprocess.Popen(
                        [PY, str(HERE), "--agent"],
                        env={**env, "ARENA_SEAT_TOKEN": token, "BENCH_TRACE": str(path)},
                    )
                    for token, path in zip(game.tokens, seats, strict=True)
                ]
                outcome = client.await_game(game.game_id, timeout=600)
                for agent in agents:
                    agent.wait(30)
        finally:
            gm.terminate()  # it writes its trace as it exits
            gm.wait(30)
        if outcome.reason not in ("target", "max_hands"):
            raise RuntimeError(f"game {outcome.game_id} ended {outcome.reason}: {outcome.detail}")
        agent_lines = [line for path in seats for line in path.read_text().splitlines()]
        return _steps(trace.read_text(), agent_lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=3, help="rounds: one game each (default 3)")
    parser.add_argument("--game-master", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--agent", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.game_master:
        _traced_game_master()
        return
    if args.agent:
        _traced_agent()
        return
    if args.games < 1:
        parser.error("--games must be at least 1")

    print(f"decision path: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    sizes = decision_sizes()
    # Each round: (a), then one game, so that each ratio compares times taken seconds apart (a
    # shared machine's load changes within minutes).
    rounds = [(ping_pong(PINGS, *sizes)[0], traced_game(seed)) for seed in range(args.games)]
    rtt = statistics.median(r for r, _ in rounds)
    decisions = sum(s.decisions for _, s in rounds)
    rows = [
        ("game master → agent", "to_agent", "the GM's write call returned → the bot has it"),
        ("agent", "agent", "the SDK decodes the request, the bot answers, the reply is encoded"),
        ("agent → game master", "to_game_master", "→ the GM's session has the reply's bytes"),
        ("game master", "game_master", "the reply's bytes → the next request written"),
        ("    of which the gRPC write call", "write", "context.write, started by the session"),
    ]
    print(f"{'step':<34} {'µs':>6}  {'× (a)':>6}  median of {decisions} decisions, per round")
    print(f"{'(a) raw gRPC ping-pong round trip':<34} {rtt * 1e6:6.0f}  {1:6.2f}  {PINGS} trips")
    total = []
    for label, name, note in rows:
        value = statistics.median(getattr(s, name) for _, s in rounds)
        ratio = statistics.median(getattr(s, name) / r for r, s in rounds)
        print(f"{label:<34} {value * 1e6:6.0f}  {ratio:6.2f}  {note}")
        if name != "write":
            total.append(ratio)
    hops = statistics.median((s.to_agent + s.to_game_master) / r for r, s in rounds)
    note = "(a) is one hop each way, both write calls included"
    print(f"{'the two hops together':<34} {'':6}  {hops:6.2f}  {note}")
    print(f"{'sum of the steps':<34} {'':6}  {sum(total):6.2f}")


if __name__ == "__main__":
    main()
