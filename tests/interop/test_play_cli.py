"""`arena play` with process seats, end to end through the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.local_match import short_name
from arena.verify import verify_text
from tests.interop.agents import REPO, needs_node

# Fields a record may differ in between in-process and process play: timings, notes, agent names
# and the time limits a game master writes to the header.
_VOLATILE = ("ms", "note")


def arena(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _comparable(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    head = lines[0]
    head.pop("limits", None)
    for seat in head["seats"]:
        seat.pop("agent")
    for line in lines[1:]:
        for key in _VOLATILE:
            line.pop(key, None)
    return lines


# Random seats too: in process each was seeded by seed, game and seat; as a process (and in
# every tournament) it has seed 0, so `--processes` or `--watch` played another game.
@pytest.mark.parametrize(
    ("players", "seed"),
    [("greedy,greedy,greedy,greedy", "12"), ("random,greedy,random,greedy", "5")],
)
def test_builtin_players_give_the_same_record_in_process_and_as_processes(
    tmp_path: Path, players: str, seed: str
) -> None:
    common = ["play", "--players", players, "--seed", seed, "--mirror"]
    inproc = arena(*common, "--output", str(tmp_path / "in.jsonl"))
    procs = arena(*common, "--processes", "--output", str(tmp_path / "proc.jsonl"))
    assert inproc.returncode == 0, inproc.stderr
    assert procs.returncode == 0, procs.stderr + procs.stdout
    for name in ("{}.jsonl", "{}.mirror.jsonl"):
        a = _comparable(tmp_path / name.format("in"))
        b = _comparable(tmp_path / name.format("proc"))
        assert len(a) > 100 and a == b
    proc_record = (tmp_path / "proc.jsonl").read_text().splitlines()
    assert all("ms" in json.loads(line) for line in proc_record if '"event":"action"' in line)
    # the same summary either way (the title says which)
    assert inproc.stdout.splitlines()[3:-1] == procs.stdout.splitlines()[3:-1]


@needs_node
@pytest.mark.usefixtures("js_ready")
def test_play_with_a_seat_of_each_kind_writes_verifiable_records(tmp_path: Path) -> None:
    out = tmp_path / "game.jsonl"
    result = arena(
        "play",
        "--seat",
        "greedy",
        "--seat",
        "node sample_agents/js/agent.js",
        "--seat",
        "python -m sample_agents.random_bot",
        "--seat",
        f"bot=arena stdio-agent -- {sys.executable} sample_agents/stdio/bot.py",
        "--ruleset",
        '{"name": "queens-county", "max_hands": 3}',
        "--seed",
        "4",
        "--mirror",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "record written to" in result.stdout
    assert "duplicate total: greedy+random_bot" in result.stdout
    for path in (out, tmp_path / "game.mirror.jsonl"):
        verified = verify_text(path.read_text(), str(path))
        assert verified.faults == 0 and verified.hands <= 3
    head = json.loads(out.read_text().splitlines()[0])
    assert [s["agent"] for s in head["seats"]] == ["greedy", "agent.js", "random_bot", "bot"]
    mirror_head = json.loads((tmp_path / "game.mirror.jsonl").read_text().splitlines()[0])
    assert [s["agent"] for s in mirror_head["seats"]] == ["agent.js", "greedy", "bot", "random_bot"]


@needs_node
@pytest.mark.usefixtures("js_ready")
def test_the_sample_bots_play_the_same_game_again(tmp_path: Path) -> None:
    # The JavaScript and stdio samples drew a fresh random seed per process, so a tournament
    # played again gave other games; now they start from seed 0, as the Python one does.
    seats = [
        "node sample_agents/js/agent.js",
        f"arena stdio-agent -- {sys.executable} sample_agents/stdio/bot.py",
        "node sample_agents/js/agent.js",
        f"arena stdio-agent -- {sys.executable} sample_agents/stdio/bot.py",
    ]
    records = []
    for run in ("first", "again"):
        out = tmp_path / f"{run}.jsonl"
        argv = [x for seat in seats for x in ("--seat", seat)]
        result = arena(
            "play",
            *argv,
            "--ruleset",
            '{"name": "standard", "max_hands": 3}',
            "--seed",
            "8",
            "--output",
            str(out),
        )
        assert result.returncode == 0, result.stderr + result.stdout
        records.append(_comparable(out))
    assert len(records[0]) > 40 and records[0] == records[1]


def test_play_watch_prints_each_public_event_as_it_happens(tmp_path: Path) -> None:
    out = tmp_path / "game.jsonl"
    result = arena(
        "play",
        "--players",
        "greedy,random,greedy,random",
        "--ruleset",
        '{"name": "standard", "max_hands": 2}',
        "--watch",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr + result.stdout
    watched = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert [int(line[1:5]) for line in watched] == list(range(len(watched)))
    assert watched[0].startswith("[   0] hand 1: dealt by seat ")
    assert " game over (max_hands): scores " in watched[-1]
    # one line per decision in the record, in order; then the usual summary (through processes)
    actions = [line.split(": ", 1)[1] for line in watched if re.search(r"hand \d: seat \d: ", line)]
    recorded = [line for line in map(json.loads, out.read_text().splitlines()) if "action" in line]
    assert [a.split(": ", 1)[0] for a in actions] == [f"seat {r['seat']}" for r in recorded]
    assert result.stdout.index(watched[-1]) < result.stdout.index("standard, seed 0, processes")


def test_a_seat_that_faults_is_reported_with_its_output(tmp_path: Path) -> None:
    bot = REPO / "tests" / "interop" / "bots" / "misbehaving_stdio.py"
    result = arena(
        "play",
        "--seat",
        "random",
        "--seat",
        f"arena stdio-agent -- {sys.executable} {bot} garbage 1",
        "--seat",
        "random",
        "--seat",
        "random",
        "--ruleset",
        '{"name": "standard", "max_hands": 1}',
        cwd=tmp_path,  # relative paths are the user's; this command uses none
    )
    assert result.returncode == 0, result.stderr
    assert "game 1 seat 1 (stdio:misbehaving_stdio.py): 1 fault(s) (1 malformed)" in result.stdout
    assert "fault 1/5 (malformed)" in result.stdout


@pytest.mark.parametrize(("bank_ms", "faults"), [(0, 5), (60_000, 0)])
def test_the_time_limits_of_arena_play_apply_to_its_process_seats(
    tmp_path: Path, bank_ms: int, faults: int
) -> None:
    # 100 ms per decision against 10 ms (a margin for a loaded machine, whose timers fire
    # late): with no bank, every decision is late (five of them forfeit the game); a bank
    # pays for them all.
    out = tmp_path / "game.jsonl"
    thinker = f"env THINK_S=0.1 {sys.executable} {REPO / 'tests' / 'agents' / 'thinker.py'}"
    seats = [thinker, "greedy", "greedy", "greedy"]
    limits = ["--decision-ms", "10", "--bank-ms", str(bank_ms)]
    ruleset = ["--ruleset", '{"name": "standard", "max_hands": 1}']
    result = arena("play", *[a for s in seats for a in ("--seat", s)], *limits, *ruleset,
                   "--output", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # Seat 0's only: on a loaded machine a greedy seat's 10 ms can run out too.
    timeouts = [line for line in lines if line.get("fault") == "timeout" and line["seat"] == 0]
    assert len(timeouts) == faults
    assert (lines[-1]["reason"] == "forfeit") == (faults == 5)


def test_a_seat_that_exits_before_connecting_forfeits_at_once(tmp_path: Path) -> None:
    # As in a tournament (writing-a-bot.md §7): not an aborted game, not a wait for the connect
    # time (30 s here) either.
    out = tmp_path / "game.jsonl"
    seats = ["random", "sh -c 'echo no luck >&2; exit 3'", "random", "random"]
    result = arena("play", *[a for s in seats for a in ("--seat", s)], "--output", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "(forfeit by seat 1)" in result.stdout
    assert "game 1 seat 1 (sh): never connected, 0 fault(s), exited with code 3\n    | no luck" in (
        result.stdout
    )
    assert "game 1: forfeit: crash: the agent exited with code 3 before connecting" in (
        result.stdout
    )
    verified = verify_text(out.read_text(), str(out))
    assert (verified.reason, verified.winner) == ("forfeit", 0)


def test_a_json_lines_bot_run_without_the_bridge_is_told_of_it() -> None:
    # It read /dev/null for a decision, found none and exited 0: "crash ... exited with code 0
    # before connecting" left its author to guess.
    seats = ["random", "sh -c 'read line; exit 0'", "random", "random"]
    result = arena("play", *[a for s in seats for a in ("--seat", s)])
    assert "(forfeit by seat 1)" in result.stdout, result.stderr + result.stdout
    assert (
        "game 1: forfeit: crash: the agent exited with code 0 before connecting (it never dialled "
        "ARENA_GAME_MASTER: a bot that reads JSON lines on stdin runs behind the stdio bridge, "
        "`arena stdio-agent -- COMMAND`)"
    ) in result.stdout


def test_a_seat_killed_by_a_signal_is_reported_by_the_signals_name() -> None:
    # "exit code -10" left its author to work out which signal that was (SIGSEGV's -11, say).
    seats = ["random", "sh -c 'kill -USR1 $$'", "random", "random"]
    result = arena("play", *[a for s in seats for a in ("--seat", s)])
    assert result.returncode == 0, result.stderr + result.stdout
    said = "game 1 seat 1 (sh): never connected, 0 fault(s), was killed by SIGUSR1"
    assert said in result.stdout, result.stdout


def test_a_seat_that_quits_mid_game_is_reported_even_with_exit_code_0(tmp_path: Path) -> None:
    # No fault and a clean exit, but its leaving is what lost the game: its author needs the line.
    quitter = REPO / "tests" / "agents" / "misbehaving" / "exit_after.py"
    seats = ["random", f"sh -c '{sys.executable} {quitter} 2; echo bye for now >&2'", "random"]
    result = arena("play", *[a for s in [*seats, "random"] for a in ("--seat", s)])
    assert result.returncode == 0, result.stderr + result.stdout
    said = r"game 1 seat 1 \(.*\): 0 fault\(s\), exited with code 0\n    \| bye for now"
    assert re.search(said, result.stdout), result.stdout
    assert "game 1: forfeit: crash: the agent disconnected before the game ended" in result.stdout


def test_an_aborted_game_writes_no_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seats of both teams that never connect abort a game: it has no result, and a record
    # (RECORD.md) ends with one.
    import argparse

    from arena.commands.local import _write_records

    out = tmp_path / "game.jsonl"
    _write_records(argparse.Namespace(output=out, record_stdout=None), [None, "a record\n"])
    assert f"no record written to {out}: the game was aborted" in capsys.readouterr().out
    assert not out.exists()
    assert (tmp_path / "game.mirror.jsonl").read_text() == "a record\n"


def test_an_aborted_game_blames_only_the_seats_that_failed() -> None:
    # The greedy seats, refused when they dialled in as their game was over, were reported
    # "never connected ... exited with code 3" beside the two that crashed.
    seats = ["sh -c 'exit 1'", "sh -c 'exit 2'", "greedy", "greedy"]
    result = arena("play", *[a for s in seats for a in ("--seat", s)])
    assert result.returncode == 1, result.stderr + result.stdout
    assert "game 1 seat 0 (sh): never connected, 0 fault(s), exited with code 1" in result.stdout
    assert "game 1 seat 1 (sh): never connected, 0 fault(s), exited with code 2" in result.stdout
    for seat in (2, 3):
        assert f"game 1 seat {seat} (greedy): the game ended first\n" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seat", "greedy", "--seat", "random"], "--seat must be given 4 times"),
        (["--seat", "greedy"] * 4 + ["--players", "greedy,greedy,greedy,greedy"], "not both"),
        (["--players", "greedy,node x.js,greedy,greedy"], "--players needs four of"),
        (["--ruleset", "{bad"], "ruleset '{bad' is not valid JSON"),
        # a float made a TypeError traceback; a string "no" played with the joker
        (
            ["--ruleset", '{"min_bid":40.5}'],
            "min_bid must be a whole number from 1 to 63, not 40.5",
        ),
        (["--ruleset", '{"joker": "no"}'], 'ruleset: joker must be true or false, not "no"'),
        (["--ruleset", '{"name": "standard", "colour": 1}'], "unknown ruleset parameters"),
        (["--processes", "--decision-ms", "0"], "--decision-ms: must be at least 1, not 0"),
        (["--processes", "--bank-ms", "-1"], "--bank-ms: must be at least 0, not -1"),
        # more than the wire's uint32 limits hold made a ValueError traceback
        (
            ["--processes", "--decision-ms", "4294967296"],
            "--decision-ms: must be at most 4294967295, not 4294967296",
        ),
        (
            ["--processes", "--bank-ms", "4294967296"],
            "--bank-ms: must be at most 4294967295, not 4294967296",
        ),
        (
            ["--seat", "gredy"] + ["--seat", "greedy"] * 3,
            "--seat 'gredy' is neither a built-in player (random, greedy) nor a program on PATH",
        ),
        # "[Errno 2] No such file or directory"
        (["--seat", "nosuch-xyz --fast"] + ["--seat", "greedy"] * 3, "no 'nosuch-xyz' on PATH"),
        (["--seat", "./nosuch.sh"] + ["--seat", "greedy"] * 3, "there is no file './nosuch.sh'"),
    ],
)
def test_bad_seat_arguments_are_refused_with_a_clear_message(args: list[str], message: str) -> None:
    result = arena("play", *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_record_that_cannot_be_written_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    # /dev/full accepts the open and fails the write (ENOSPC), as a full disk does after the game
    result = arena("play", "--seed", "3", "--output", "/dev/full")
    assert result.returncode == 2, result.stderr
    said = "could not write the record to /dev/full: No space left on device; run again"
    assert said in result.stderr and "Traceback" not in result.stderr, result.stderr
    with open("/dev/full", "w") as full:  # --output -: the record on a standard output that fails
        result = subprocess.run(
            [sys.executable, "-m", "arena.cli", "play", "--seed", "3", "--output", "-"],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    said = "could not write the record to standard output: No space left on device; run again"
    assert result.returncode == 2 and said in result.stderr, result.stderr
    # the game's own record was written before its mirror failed: the error says which exists
    import argparse

    from arena.commands.local import _write_records
    from arena.errors import ArenaError

    out = tmp_path / "game.jsonl"
    (tmp_path / "game.mirror.jsonl").mkdir()  # a directory where the mirror's record goes
    with pytest.raises(ArenaError, match=rf"\({re.escape(str(out))} was written\)"):
        _write_records(argparse.Namespace(output=out, record_stdout=None), ["a", "b"])
    assert out.read_text() == "a"


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["java", "-cp", "/home/me/bots", "Bot"], "Bot"),
        (
            ["arena", "stdio-agent", "--", "java", "-classpath", "out/classes", "my.Bot"],
            "stdio:my.Bot",
        ),
        (["java", "-jar", "build/bot.jar"], "bot.jar"),
        (["node", "sample_agents/js/agent.js"], "agent.js"),
        (["python", "-m", "sample_agents.greedy_bot"], "greedy_bot"),
        (["sh", "-c", "exit 3"], "sh"),
    ],
)
def test_a_seat_is_named_after_its_program(command: list[str], name: str) -> None:
    # A Java bot was named after its class path's directory.
    assert short_name(command) == name


_NOTING_BOT = """
from arena.agent import run
from sample_agents.random_bot import RandomPlayer


class Noting(RandomPlayer):
    def act(self, obs, legal):
        return super().act(obs, legal), "one\\u2028two\\x85three"


run(Noting())
"""


def test_a_note_holding_a_unicode_line_break_is_recorded_and_reported(tmp_path: Path) -> None:
    # JSON keeps U+2028 and U+0085 unescaped in a string, and str.splitlines() ends a line at
    # each: `arena play` failed writing the record. They are written escaped, so that a reader
    # splitting lines either way reads the same lines, and the note as the bot gave it.
    bot = tmp_path / "noting_bot.py"
    bot.write_text(_NOTING_BOT)
    record = tmp_path / "game.jsonl"
    seats = ["greedy", f"python {bot}", "greedy", "random"]
    ruleset = '{"name": "standard", "max_hands": 1}'
    result = arena(
        "play", "--ruleset", ruleset, *[a for s in seats for a in ("--seat", s)],
        "--output", str(record),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    text = record.read_text(encoding="utf-8")
    assert text.splitlines() == text.split("\n")[:-1]
    notes = [json.loads(line).get("note") for line in text.splitlines()]
    assert "one\u2028two\x85three" in notes
    assert verify_text(text).hands == 1
