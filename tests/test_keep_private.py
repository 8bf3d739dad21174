"""The arena keeps its secrets: its processes their environment and memory from other processes
of their user, its data directory (the database knows every hand not yet played) from other
users.

Bots run as the worker's user, and where the worker may make no namespace they share its
process table (docs/writing-a-bot.md section 8): a dumpable process's /proc/PID/environ is
theirs to read. The prober reads it as a bot would: the same user, no capability (as root here,
it drops them all: root's CAP_SYS_PTRACE would read anything), and so do the processes it
probes (a process without a capability may not read one with more).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

SECRET = "s3cret-the-prober-must-not-read"
PROBE = """
import sys
try:
    with open(f"/proc/{sys.argv[1]}/environ", "rb") as environ:
        print("read", sys.argv[2].encode() in environ.read())
except PermissionError:
    print("refused")
"""


# Each process drops its capabilities itself: a preexec_fn would run Python in a fork of this
# one, whose gRPC threads (from earlier tests) gRPC restarts there (CI: one such child aborted
# with "epoll_wait error: Bad file descriptor").
WITHOUT_CAPABILITIES = [
    sys.executable,
    "-c",
    "import os, sys; from runner.launch.pidns import drop_capabilities; drop_capabilities(); "
    "os.execvp(sys.argv[1], sys.argv[1:])",
]
REPO = Path(__file__).parents[1]


def _probe(pid: int) -> str:
    ran = subprocess.run(
        [*WITHOUT_CAPABILITIES, sys.executable, "-c", PROBE, str(pid), SECRET],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        process.kill()
        process.wait()


def _start_and_await(
    started: list[subprocess.Popen[str]], argv: list[str], env: dict[str, str], said: str
) -> int:
    """Start argv with SECRET in its environment and return its pid once it says `said`."""
    process = subprocess.Popen(
        [*WITHOUT_CAPABILITIES, *argv],
        env={**os.environ, **env, "PROBED_SECRET": SECRET},
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started.append(process)
    assert process.stdout is not None
    watchdog = threading.Timer(30, process.kill)  # one that never says it ends the wait
    watchdog.start()
    try:
        for line in process.stdout:
            if said in line:
                return process.pid
    finally:
        watchdog.cancel()
    pytest.fail(f"{argv} ended without saying {said!r}")


def test_the_prober_reads_an_ordinary_process_of_its_user(
    started: list[subprocess.Popen[str]],
) -> None:
    pid = _start_and_await(started, ["sh", "-c", "echo up >&2; exec sleep 60"], {}, "up")
    assert _probe(pid) == "read True"


def test_the_game_master_keeps_its_environment_to_itself(
    started: list[subprocess.Popen[str]],
) -> None:
    # The admin token, with which a bot aborted games it was losing.
    argv = [sys.executable, "-m", "arena.cli", "gamemaster", "--listen", "127.0.0.1:0"]
    pid = _start_and_await(started, argv, {}, "game master listening")
    assert _probe(pid) == "refused"


def test_an_sdk_agent_keeps_its_seat_token_to_itself(
    started: list[subprocess.Popen[str]],
) -> None:
    env = {"ARENA_SEAT_TOKEN": SECRET, "ARENA_GAME_MASTER": "127.0.0.1:1"}
    pid = _start_and_await(
        started, [sys.executable, "-m", "sample_agents.random_bot"], env, "no game master"
    )
    assert _probe(pid) == "refused"


def test_a_new_data_directory_is_its_users_only(tmp_path: Path) -> None:
    data = tmp_path / "new" / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    listed = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bots", "list"],
        env={**env, "ARENA_DATA_DIR": str(data)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert (data / "arena.db").exists()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
