"""Running real agent processes against a game master, for the game master's tests."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.gamemaster.client import GameMasterClient, GameOutcome, OpenedGame
from arena.gamemaster.policy import GameLimits

REPO = Path(__file__).resolve().parents[2]
MISBEHAVING = REPO / "tests" / "agents" / "misbehaving"
PY = sys.executable

RANDOM = [PY, "-m", "sample_agents.random_bot"]
GREEDY = [PY, "-m", "sample_agents.greedy_bot"]
# Short games where the full length is not the point.
SHORT = {"name": "standard", "max_hands": 2}
# The limits of the fault tests: quick timeouts, a small bank, few faults.
FAST = GameLimits(decision_ms=200, bank_ms=300, fault_limit=3, connect_ms=10_000)


def misbehaving(script: str, *args: str) -> list[str]:
    return [PY, str(MISBEHAVING / script), *args]


@dataclass
class Match:
    """A game opened on the game master and the agent processes playing it."""

    client: GameMasterClient
    game: OpenedGame
    procs: list[subprocess.Popen[str] | None]
    logs: list[Path] = field(default_factory=list)

    @property
    def game_id(self) -> str:
        return self.game.game_id

    def finish(self, timeout: float = 60.0) -> GameOutcome:
        """Wait for the result and for every agent to exit (killing stragglers)."""
        outcome = self.client.await_game(self.game_id, timeout=timeout)
        self.reap()
        return outcome

    def reap(self, timeout: float = 15.0) -> list[int | None]:
        deadline = time.monotonic() + timeout
        codes: list[int | None] = []
        for p in self.procs:
            if p is None:
                codes.append(None)
                continue
            try:
                codes.append(p.wait(max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                codes.append(None)
        return codes

    def stderr(self, seat: int) -> str:
        return self.logs[seat].read_text() if seat < len(self.logs) else ""


def spawn(
    argv: Sequence[str], address: str, token: str, log: Path, **env: str
) -> subprocess.Popen[str]:
    full_env = dict(os.environ, ARENA_GAME_MASTER=address, ARENA_SEAT_TOKEN=token, **env)
    full_env["PYTHONPATH"] = str(REPO)
    return subprocess.Popen(
        list(argv),
        env=full_env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )


def start_match(
    client: GameMasterClient,
    address: str,
    agents: Sequence[Sequence[str] | None],
    *,
    ruleset: str | dict[str, Any] = "standard",
    seed: int = 1,
    limits: GameLimits | Mapping[str, int] | None = None,
    first_dealer: int | None = 0,
    names: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    seat_env: Sequence[dict[str, str]] | None = None,
) -> Match:
    """Open a game and start one process per seat (None leaves a seat empty)."""
    game = client.open_game(
        ruleset,
        seed,
        first_dealer=first_dealer,
        agents=list(names) if names else [f"agent{s}" for s in range(4)],
        limits=limits,
    )
    logdir = Path(tempfile.mkdtemp(prefix=f"gm-{game.game_id[:8]}-"))
    atexit.register(shutil.rmtree, logdir, True)
    procs: list[subprocess.Popen[str] | None] = []
    logs = []
    for seat, argv in enumerate(agents):
        log = logdir / f"seat{seat}.stderr"
        logs.append(log)
        log.touch()
        extra = dict(env or {}, **(seat_env[seat] if seat_env else {}))
        procs.append(
            None if argv is None else spawn(argv, address, game.tokens[seat], log, **extra)
        )
    return Match(client, game, procs, logs)


def record_lines(record: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.splitlines() if line.strip()]


def fault_lines(record: str) -> list[dict[str, Any]]:
    return [line for line in record_lines(record) if "fault" in line]


def forfeit_line(record: str) -> dict[str, Any]:
    found = [line for line in record_lines(record) if line.get("event") == "forfeit"]
    assert len(found) == 1, found
    return found[0]


def fallbacks_checked(record: str) -> int:
    """Re-play the record and check every faulted action is the first legal one; count them."""
    from arena.cards import parse_card
    from arena.game import Game
    from arena.rulesets import ruleset_from_header

    lines = record_lines(record)
    head = lines[0]
    deals = {
        line["hand"]: (
            [[parse_card(c) for c in h] for h in line["hands"]],
            [parse_card(c) for c in line["stock"]],
        )
        for line in lines
        if line.get("event") == "deal"
    }
    game = Game(
        ruleset_from_header(head["ruleset"]),
        head["seed"],
        head["first_dealer"],
        deal_provider=lambda hand, dealer: deals[hand],
    )
    checked = 0
    for line in lines[1:]:
        if line.get("event") == "action":
            if "fault" in line:
                assert line["action"] == str(game.legal().first()), line
                checked += 1
            game.apply(line["action"], line["seat"])
    return checked
