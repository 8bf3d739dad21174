"""Game master memory: what an ended game keeps while it is retained for AwaitGame and Watch.

Plays N games of random legal actions on in-process GameSessions (no gRPC: the game master's
own bookkeeping), keeps every ended session as the server does (RETAIN_MAX of them, for up to
RETAIN_S), and prints the growth of this process's resident memory per game.
Run: python bench/retained.py [--games 100]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import random  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from arena.game import Game  # noqa: E402
from arena.gamemaster.policy import GameLimits  # noqa: E402
from arena.gamemaster.session import GameSession  # noqa: E402
from arena.rulesets import STANDARD  # noqa: E402
from arena.wire import pb  # noqa: E402


def resident_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def play(seed: int) -> tuple[GameSession, int]:
    """One game to its end, every seat answering at once with a random legal action."""
    session = GameSession(f"g{seed}", Game(STANDARD, seed), GameLimits())
    rng = random.Random(seed)
    for seat in range(4):
        session.attach(seat, pb.Hello(), SimpleNamespace(put_nowait=lambda message: None))
    game = asyncio.create_task(session.run())
    while not session.started:
        await asyncio.sleep(0)
    decisions = 0
    while not session.finished:
        seat = session.game.to_act
        assert seat is not None
        pending = session.seats[seat].pending
        assert pending is not None
        legal = pending.legal
        action = legal.first() if legal.choice is not None else rng.choice(legal.actions)
        reply = pb.AgentMessage(reply=pb.Reply(request_id=pending.request_id, action=str(action)))
        session.on_message(seat, reply.SerializeToString())
        decisions += 1
    await game
    return session, decisions


async def main(games: int) -> None:
    await play(-1)  # the first game's imports and caches are not what a game keeps
    gc.collect()
    before = resident_mb()
    retained, decisions = [], 0
    for seed in range(games):
        session, n = await play(seed)
        retained.append(session)
        decisions += n
    gc.collect()
    grown = resident_mb() - before
    print(
        f"{games} ended games retained, {decisions / games:.0f} decisions each: resident memory "
        f"+{grown:.0f} MB, {grown / games * 1024:.0f} KB per game"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    asyncio.run(main(parser.parse_args().games))
