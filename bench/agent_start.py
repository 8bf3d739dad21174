"""Python agent start-up: forked from the fork server against a fresh process, in one run.

Each agent is the greedy sample bot through the SDK; it dials a local game master with an
unknown seat token, says hello, is refused and exits: start-up, connection and exit, nothing
else. Prints the CPU seconds per agent (the agent's own, from its exit status) and the wall
time from launch to exit, for each way, and their ratio.

    .venv/bin/python bench/agent_start.py [--agents 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from arena.gamemaster.server import start_in_thread
from runner.launch import AgentSpec, ProcessLauncher
from runner.launch.forkserver import ForkServer

ROOT = Path(__file__).resolve().parents[1]


def measure(launcher: ProcessLauncher, address: str, count: int) -> tuple[float, float]:
    """Median CPU seconds and median wall seconds per agent."""
    cpu, wall = [], []
    for index in range(count):
        spec = AgentSpec(
            command=("python", "-m", "sample_agents.greedy_bot"),
            directory=ROOT,
            game_master=address,
            seat_token="not-a-seat",
            label=f"bench-{index}",
        )
        started = time.perf_counter()
        agent = launcher.launch(spec)
        code = agent.wait(timeout=60)
        wall.append(time.perf_counter() - started)
        agent.stop()
        if code != 3:  # the SDK's exit status for a refused seat
            raise SystemExit(f"agent ended with {code}: {agent.stderr_text()[-500:]}")
        cpu.append(agent._cpu_used or 0.0)
    return statistics.median(cpu), statistics.median(wall)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=30, help="agents started each way")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="gm-", dir="/tmp") as short,  # a socket's path is short
        start_in_thread(socket_path=f"{short}/gamemaster.sock") as gm,
    ):
        sock = f"unix:{short}/gamemaster.sock"
        isolated, shared = ForkServer(), ForkServer(pid_namespaces=False)
        rows = {}
        for _ in range(2):  # alternate, so a burst of load hits every way alike
            for name, launcher, address in (
                ("forked", ProcessLauncher(forkserver=isolated), gm.address),
                ("forked, sealed", ProcessLauncher(forkserver=isolated), sock),
                ("forked, no namespace", ProcessLauncher(forkserver=shared), gm.address),
                ("spawned", ProcessLauncher(), gm.address),
            ):
                cpu, wall = measure(launcher, address, args.agents // 2)
                old = rows.get(name, (0.0, 0.0))
                rows[name] = (old[0] + cpu / 2, old[1] + wall / 2)
        for server in (isolated, shared):
            server.control.close()
            server.process.wait(timeout=10)
    print(f"Python agent start-up (greedy bot via the SDK, hello refused), {args.agents} each")
    print("  (forked: in a PID namespace of its own where this process may make one, as root;")
    print("   sealed: dialling the game master's socket, so also no network and a read-only view)")
    for name, (cpu, wall) in rows.items():
        print(
            f"  {name:<20} CPU {1000 * cpu:6.1f} ms per agent, launch to exit {1000 * wall:6.1f} ms"
        )
    forked, bare, spawned = rows["forked"], rows["forked, no namespace"], rows["spawned"]
    sealed = rows["forked, sealed"]
    print(
        f"  spawned / forked: CPU {spawned[0] / forked[0]:.1f}x, wall {spawned[1] / forked[1]:.1f}x"
    )
    print(
        f"  forked / forked without a namespace: CPU {forked[0] / bare[0]:.2f}x, "
        f"wall {forked[1] / bare[1]:.2f}x"
    )
    print(f"  sealed / forked: CPU {sealed[0] / forked[0]:.2f}x, wall {sealed[1] / forked[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
