"""One game played by a worker's play_game: agents that die before connecting forfeit at once."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from arena.config import Limits
from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.early_exit import EarlyExitWatch
from arena.storage import GameResult
from runner.gameset import (
    CONNECT_MS,
    GameAborted,
    Launchers,
    SeatBot,
    _gone,
    _record_faults,
    _with_deaths,
    play_game,
)
from runner.launch import AgentLimits, AgentSpec, LaunchError, RunningAgent, pidns
from tests.gamemaster.test_handshake import HeldSeat
from tests.runner.conftest import BOTS, QUICK, SAMPLE_BOTS, game_is_open, wait_for

_RANDOM_TOML = tomllib.loads((SAMPLE_BOTS / "random" / "bot.toml").read_text())
RANDOM = SeatBot(1, "random@1", str(SAMPLE_BOTS / "random"), tuple(_RANDOM_TOML["command"]), None)
MISBEHAVING = Path(__file__).resolve().parents[1] / "agents" / "misbehaving"
CRASHER = SeatBot(2, "crasher@1", str(BOTS / "crasher"), ("./crash.sh",), None)
FORKKILLER = SeatBot(4, "forkkiller@1", str(BOTS / "forkkiller"), ("python", "bot.py"), None)
SLOW = SeatBot(6, "slow@1", str(BOTS / "slow"), ("python", "slow_bot.py"), None)


def _play(
    game_master: str,
    seats: list[SeatBot],
    launchers: Launchers,
    game_id: str = "",
    connect_ms: int = CONNECT_MS,
) -> tuple[GameResult, float]:
    """play_game as a worker calls it, with the default connect deadline; and its seconds."""
    with GameMasterClient(game_master) as client:
        start = time.monotonic()
        result = play_game(
            client,
            game_id=game_id or f"test-gameset-{time.time_ns()}",
            game_index=0,
            seats=seats,
            ruleset=QUICK,
            seed=7,
            first_dealer=0,
            limits=Limits(),
            agent_limits=AgentLimits(),
            launchers=launchers,
            connect_ms=connect_ms,
        )
        return result, time.monotonic() - start


@pytest.mark.parametrize("seat", [0, 3])
def test_a_bot_crashing_at_start_forfeits_well_before_the_connect_timeout(
    game_master: str, tmp_path: Path, seat: int
) -> None:
    seats = [RANDOM] * 4
    seats[seat] = CRASHER
    result, elapsed = _play(game_master, seats, Launchers.default(tmp_path / "logs"))
    assert elapsed < CONNECT_MS / 1000 / 4, f"{elapsed:.1f} s: waited for the connect deadline?"
    assert result.reason == "forfeit" and result.forfeit_seat == seat
    assert result.winner == 1 - seat % 2
    forfeit = [json.loads(x) for x in result.record.decode().splitlines() if '"forfeit"' in x]
    assert forfeit and "exited with code 3 before connecting" in forfeit[0]["detail"]
    [fault] = [f for f in result.faults if f.seat == seat]
    assert fault.kind == "crash" and "segmentation fault (pretend)" in fault.stderr


def test_a_fork_server_that_dies_mid_game_gets_the_game_played_again_not_a_forfeit(
    game_master: str, tmp_path: Path
) -> None:
    # Every agent dies with the fork server (killed by the OOM killer, say); the seat the game
    # master missed first would forfeit, whoever it was (the opponent, in the report that
    # found this: a bot had killed the fork server, which bots can no longer see, below).
    from runner.launch import forkserver

    server = forkserver.shared()
    assert server is not None
    game_id = f"test-forkserver-death-{time.time_ns()}"
    with GameMasterClient(game_master) as client, ThreadPoolExecutor(1) as pool:
        playing = pool.submit(
            _play, game_master, [SLOW, SLOW, SLOW, SLOW], Launchers.default(tmp_path), game_id
        )
        wait_for(lambda: game_is_open(client, game_id), 30, "the game")
        # Mid-game: a decision answered (all four agents are there). A fixed pause after the
        # game opened was, on a loaded machine, before the agents connected, and the game
        # ended another way (the early-exit watch's abort).
        next(e for e in client.watch(game_id) if e.WhichOneof("event") == "action")
        os.kill(server.process.pid, signal.SIGKILL)
        with pytest.raises(GameAborted, match="the fork server died mid-game"):
            playing.result(timeout=60)


@pytest.mark.skipif(
    not pidns.available(), reason="no PID namespaces here (see runner/launch/pidns.py)"
)
def test_a_bot_cannot_kill_the_fork_server(game_master: str, tmp_path: Path) -> None:
    # It sees only its own processes: its parent is its namespace's process 1, which a signal
    # from inside the namespace does not reach. The game is played to its end.
    result, _ = _play(
        game_master, [RANDOM, FORKKILLER, RANDOM, FORKKILLER], Launchers.default(tmp_path)
    )
    assert result.reason in ("target", "max_hands"), result.reason
    assert result.faults == []


def test_a_bot_that_never_connects_gets_an_absent_fault_with_its_stderr(
    game_master: str, tmp_path: Path
) -> None:
    # Alive but silent: no crash to report, and the bot's page showed no fault at all.
    sleeper = SeatBot(
        7, "sleeper@1", str(BOTS / "crasher"), ("sh", "-c", "echo dozing >&2; sleep 600"), None
    )
    seats = [RANDOM, sleeper, RANDOM, sleeper]
    result, _ = _play(game_master, seats, Launchers.default(tmp_path), connect_ms=1500)
    assert (result.reason, result.forfeit_seat) == ("forfeit", 1)
    assert [(f.seat, f.kind) for f in result.faults] == [(1, "absent"), (3, "absent")]
    assert all(f.detail == "the agent did not connect within 1500 ms" for f in result.faults)
    assert all("dozing" in f.stderr for f in result.faults)


def test_a_partner_not_yet_connected_when_a_crash_forfeits_the_game_is_not_called_absent(
    game_master: str, tmp_path: Path
) -> None:
    # The game ends at once for seat 0's crash; seat 2 was never given the connect window, and
    # a fault saying it "did not connect within 30000 ms" would be false.
    sleeper = SeatBot(7, "sleeper@1", str(BOTS / "crasher"), ("sleep", "600"), None)
    result, _ = _play(game_master, [CRASHER, RANDOM, sleeper, RANDOM], Launchers.default(tmp_path))
    assert (result.reason, result.forfeit_seat) == ("forfeit", 0)
    assert [(f.seat, f.kind) for f in result.faults] == [(0, "crash")]


def test_a_bot_that_exits_cleanly_too_soon_forfeits_with_a_fault_and_its_stderr(
    game_master: str, tmp_path: Path
) -> None:
    # Exit code 0 is no crash by itself, but before the game's end it is why the seat forfeits:
    # the fault (and what the bot said) must be there for its author.
    quitter = SeatBot(
        5, "quitter@1", str(BOTS / "crasher"), ("sh", "-c", "echo done already >&2; exit 0"), None
    )
    result, _ = _play(game_master, [RANDOM, RANDOM, quitter, RANDOM], Launchers.default(tmp_path))
    assert (result.reason, result.forfeit_seat) == ("forfeit", 2)
    [fault] = [f for f in result.faults if f.seat == 2]
    assert fault.kind == "crash" and "exited with code 0" in fault.detail
    assert "done already" in fault.stderr


def test_a_bot_that_forfeits_at_the_fault_limit_alive_has_its_stderr_kept(
    game_master: str, tmp_path: Path
) -> None:
    # Only a dead agent's stderr was kept: a stdio bot that never flushed forfeited on
    # timeouts, and the bridge's hint to flush was nowhere to be read.
    script = f"echo 'hint: flush your stdout' >&2; exec {sys.executable} illegal.py"
    illegal = SeatBot(7, "illegal@1", str(MISBEHAVING), ("sh", "-c", script), None)
    result, _ = _play(game_master, [RANDOM, RANDOM, RANDOM, illegal], Launchers.default(tmp_path))
    assert (result.reason, result.forfeit_seat) == ("forfeit", 3)
    theirs = [f for f in result.faults if f.seat == 3]
    assert [f.kind for f in theirs] == ["illegal"] * len(theirs) and len(theirs) >= 2
    assert [bool(f.stderr) for f in theirs] == [False] * (len(theirs) - 1) + [True]
    assert "hint: flush your stdout" in theirs[-1].stderr
    assert not any(f.stderr for f in result.faults if f.seat != 3)


def test_a_bot_that_dies_mid_game_forfeits_with_its_exit_code_and_stderr(
    game_master: str, tmp_path: Path
) -> None:
    # Its stream breaks before its process has ended (here the shell outlives the Python agent
    # that held the stream by half a second): the exit is waited for, not missed.
    dies = (
        f"{sys.executable} exit_after.py 2; echo 'midgame: fatal error (pretend)' >&2; "
        "sleep 0.5; exit 3"
    )
    dier = SeatBot(6, "dier@1", str(MISBEHAVING), ("sh", "-c", dies), None)
    result, _ = _play(game_master, [RANDOM, dier, RANDOM, RANDOM], Launchers.default(tmp_path))
    assert (result.reason, result.forfeit_seat) == ("forfeit", 1)
    [fault] = [f for f in result.faults if f.seat == 1]
    assert fault.kind == "crash" and "exited with code 3" in fault.detail, fault
    assert "midgame: fatal error (pretend)" in fault.stderr


def test_bots_that_cannot_start_on_both_teams_get_no_result(
    game_master: str, tmp_path: Path
) -> None:
    # Neither team can be said to have won: no forfeit for whichever died first.
    seats = [CRASHER, CRASHER, RANDOM, RANDOM]
    with pytest.raises(GameAborted) as aborted:
        _play(game_master, seats, Launchers.default(tmp_path))
    for seat in (0, 1):
        assert f"seat {seat}: crash: the agent exited with code 3 before connecting" in str(
            aborted.value
        )


class _FailingLauncher:
    """A launcher whose agents cannot be started (a missing image, say)."""

    def launch(self, spec: AgentSpec) -> RunningAgent:
        raise LaunchError("no such image: pretend")


def test_a_bot_that_cannot_be_started_forfeits_at_once(game_master: str, tmp_path: Path) -> None:
    boxed = SeatBot(3, "boxed@1", str(SAMPLE_BOTS / "random"), None, "arena-test/none:1")
    launchers = Launchers.default(tmp_path / "logs")
    launchers.container = _FailingLauncher()
    result, elapsed = _play(game_master, [RANDOM, boxed, RANDOM, RANDOM], launchers)
    assert elapsed < CONNECT_MS / 1000 / 4, f"{elapsed:.1f} s: waited for the connect deadline?"
    assert result.reason == "forfeit" and result.forfeit_seat == 1
    assert any(f.seat == 1 and "could not be started" in f.detail for f in result.faults)


def test_an_agent_that_exits_after_its_game_ended_is_not_logged_as_forfeiting(
    game_master: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An agent exits as soon as it has its GameEnd, which may be before the worker hears the
    # game ended: its death watch must not then report a forfeit that never happened.
    launcher = Launchers.default(tmp_path / "logs").process
    caplog.set_level(logging.INFO, logger="arena.gamemaster.early_exit")
    with GameMasterClient(game_master) as client:
        results = []
        for end_first in (True, False):
            opened = client.open_game(QUICK, 7, game_id=f"test-deathwatch-{time.time_ns()}")
            if end_first:
                client.abort_game(opened.game_id)
            spec = AgentSpec(
                command=("sh", "-c", "exit 0"),
                directory=tmp_path,
                game_master=game_master,
                seat_token=opened.tokens[0],
                label=f"deathwatch-{end_first}",
            )
            # The other team is here: a forfeit by seat 0 need not wait for it.
            held = () if end_first else (1, 3)
            other_team = [HeldSeat(game_master, opened.tokens[seat]) for seat in held]
            agent = launcher.launch(spec)
            assert agent.wait(10) == 0
            gone = functools.partial(_gone, [agent, None, None, None], {})
            EarlyExitWatch(client, opened.game_id, gone).check()
            results.append(client.await_game(opened.game_id, timeout=10))
            for seat in other_team:
                seat.close()
    aborted, forfeited = results
    assert aborted.reason == "aborted" and aborted.forfeit_seat is None
    assert forfeited.reason == "forfeit" and forfeited.forfeit_seat == 0
    logged = [r.getMessage() for r in caplog.records if "forfeited" in r.getMessage()]
    assert logged == [
        f"game {forfeited.game_id}: seat 0 forfeited: crash: the agent exited "
        "with code 0 before connecting (it never dialled ARENA_GAME_MASTER: a bot that reads "
        "JSON lines on stdin runs behind the stdio bridge, `arena stdio-agent -- COMMAND`)"
    ]


def _without_timings(record: bytes) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in record.decode().splitlines()]
    return [{k: v for k, v in line.items() if k != "ms"} for line in lines]


def test_a_game_an_earlier_attempt_left_open_is_ended_and_the_next_id_is_played(
    game_master: str, tmp_path: Path
) -> None:
    # A worker died mid-game twice: its games under the set's id and under id.2 are still open.
    # The retry ends both and plays as id.3, never an id read off the clock.
    game_id = f"test-retry-{time.time_ns()}"
    with GameMasterClient(game_master) as client:
        for left in (game_id, f"{game_id}.2"):
            client.open_game(QUICK, 7, game_id=left)
        result, _ = _play(game_master, [RANDOM] * 4, Launchers.default(tmp_path), game_id)
        earlier = [client.await_game(gid, timeout=10) for gid in (game_id, f"{game_id}.2")]
        played_as = client.await_game(f"{game_id}.3", timeout=10)
    assert [r.reason for r in earlier] == ["aborted", "aborted"]
    assert result.reason in ("target", "max_hands") and played_as.reason == result.reason


def test_a_game_played_again_after_a_worker_died_has_the_record_of_one_played_once(
    game_master: str, tmp_path: Path
) -> None:
    # The retry played as id.2 and its record said so: a set played again after a crash was
    # stored under the set's game id with a record naming another, unlike the same set played
    # once (RECORD.md: the same seed and decisions give the same bytes but for timings).
    once_id, again_id = f"test-once-{time.time_ns()}", f"test-again-{time.time_ns()}"
    once, _ = _play(game_master, [RANDOM] * 4, Launchers.default(tmp_path), once_id)
    with GameMasterClient(game_master) as client:
        client.open_game(QUICK, 7, game_id=again_id)  # the attempt whose worker died
    again, _ = _play(game_master, [RANDOM] * 4, Launchers.default(tmp_path), again_id)
    assert json.loads(again.record.decode().splitlines()[0])["game_id"] == again_id
    assert _without_timings(again.record) == _without_timings(
        once.record.replace(once_id.encode(), again_id.encode())
    )


def test_a_contested_seat_is_stored_with_the_exit_of_the_agent_refused_its_seat() -> None:
    # The game master's record says a second Hello came with seat 1's token; the agent that
    # was refused exited 3. The stored row says both, as kind `contested`, not as a crash.
    record = "\n".join(
        json.dumps(line)
        for line in (
            {"record": "sixty-three/1"},
            {"event": "contested", "hand": 1, "seat": 1, "detail": "a second Hello ..."},
            {"event": "action", "hand": 1, "seat": 0, "action": "pass", "fault": "timeout"},
        )
    )
    faults = _with_deaths(_record_faults(record), {1: ("exited with code 3", "ALREADY_EXISTS")})
    assert [(f.seat, f.kind, f.hand) for f in faults] == [(1, "contested", 1), (0, "timeout", 1)]
    assert faults[0].detail == "a second Hello ...; agent exited with code 3"
    assert faults[0].stderr == "ALREADY_EXISTS"
