"""Agent launchers with real processes: environment, limits, group kill, stderr cap, docker argv."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from arena.exit_status import BRIDGE_SAYS, how_it_ended
from runner.launch import (
    RUNTIME_VARIABLES,
    AgentLimits,
    AgentSpec,
    ContainerLauncher,
    LaunchError,
    ProcessLauncher,
    RunningAgent,
    describe_exit,
)
from runner.launch.container import DockerUnavailable
from runner.launch.forkserver import ForkedAgent, ForkServer
from runner.launch.process import cannot_start
from runner.launch.spec import MIB
from runner.pids import group_members
from tests.hostpids import host_pid

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
TOKEN = "seat-token-0123456789abcdef"


def spec_for(*command: str, directory: Path = AGENTS, **limits: int | None) -> AgentSpec:
    return AgentSpec(
        command=tuple(command),
        directory=directory,
        game_master="127.0.0.1:50051",
        seat_token=TOKEN,
        limits=AgentLimits(**limits),  # type: ignore[arg-type]
        label="gs7-g0-s2",
    )


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.control.close()  # end of file: it kills what is left and exits
    assert server.process.wait(timeout=10) == 0


class Launched(list[RunningAgent]):
    """Agents one test started, and the fork server (if any) they start from."""

    def __init__(self, forkserver: ForkServer | None) -> None:
        super().__init__()
        self.forkserver = forkserver


@pytest.fixture(params=["spawned", "forked"])
def launched(request: pytest.FixtureRequest) -> Iterator[Launched]:
    """Every launcher test runs twice: spawned processes, and agents from the fork server.

    All agents a test started are stopped afterwards, even when the test fails.
    """
    forked = request.param == "forked"
    agents = Launched(request.getfixturevalue("forkserver") if forked else None)
    yield agents
    for agent in agents:
        agent.stop()


def launch(launched: Launched, spec: AgentSpec, **options: object) -> RunningAgent:
    launcher = ProcessLauncher(forkserver=launched.forkserver, **options)  # type: ignore[arg-type]
    agent = launcher.launch(spec)
    launched.append(agent)
    assert isinstance(agent, ForkedAgent) == (launched.forkserver is not None)
    return agent


def wait_for(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


# --- environment and working directory ------------------------------------------------------


def test_agent_sees_exactly_the_documented_environment(
    launched: Launched, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", "worker-secret")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    agent = launch(launched, spec_for(PYTHON, "print_env.py"))
    assert agent.wait(timeout=20) == 0
    seen = json.loads(agent.stderr_text())
    env = seen["env"]
    home = Path(env["HOME"])
    assert env == {
        "PATH": f"{os.path.dirname(PYTHON)}:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home.parent / "tmp"),
        "LANG": "C.UTF-8",
        "ARENA_GAME_MASTER": "127.0.0.1:50051",
        "ARENA_SEAT_TOKEN": TOKEN,
    }
    assert set(env) == set(RUNTIME_VARIABLES) | {"ARENA_GAME_MASTER", "ARENA_SEAT_TOKEN"}
    assert seen["cwd"] == str(AGENTS.resolve())
    assert seen["argv"] == ["print_env.py"]
    assert home.is_dir() and oct(home.parent.stat().st_mode & 0o777) == "0o700"
    assert agent.exit_reason() == "exited with code 0"
    agent.stop()
    assert not home.parent.exists(), "the private directory outlived the agent"


def test_bare_command_name_is_resolved_on_the_workers_path_before_the_env_is_cleaned(
    launched: Launched, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = _program_on_path(monkeypatch, tmp_path, 'echo "$0|$PATH" >&2')
    agent = launch(launched, spec_for("mybot", directory=tmp_path))
    assert agent.wait(timeout=10) == 0
    assert agent.stderr_text().strip() == f"{bot}|{bot.parent}:/usr/bin:/bin"


def _program_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str) -> Path:
    """An executable `mybot` running the shell `script`, in a directory first on the worker's
    PATH, but not the agents'."""
    tools = tmp_path / "tools"
    tools.mkdir()
    bot = tools / "mybot"
    bot.write_text(f"#!/bin/sh\n{script}\n")
    bot.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    return bot


def test_arena_in_a_command_is_this_arena_though_the_worker_has_no_arena_on_path(
    launched: Launched, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a worker started as .venv/bin/arena worker
    agent = launch(launched, spec_for("arena", "verify", "missing.jsonl", directory=tmp_path))
    assert agent.wait(timeout=30) == 1
    assert agent.stderr_text().strip() == "missing.jsonl: cannot read: No such file or directory"


def test_the_stdio_bridges_program_is_found_on_the_workers_path_too(
    launched: Launched, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The bridge looked for it on the agent's own PATH (the arena's and /usr/bin:/bin): a bot
    # run by a program in /usr/local/bin forfeited every game, after registering fine.
    bot = _program_on_path(monkeypatch, tmp_path, 'echo "started $0" >&2\nsleep 30')
    agent = launch(launched, spec_for("arena", "stdio-agent", "--", "mybot", directory=tmp_path))
    wait_for(lambda: "started" in agent.stderr_text(), timeout=30)
    assert f"started {bot}" in agent.stderr_text()
    agent.stop()


def test_a_bridged_program_not_on_the_workers_path_is_a_clear_error(tmp_path: Path) -> None:
    spec = spec_for("arena", "stdio-agent", "--", "no-such-bot-xyz", directory=tmp_path)
    with pytest.raises(LaunchError, match="agent command 'no-such-bot-xyz' not found on PATH"):
        ProcessLauncher().launch(spec)
    assert "'no-such-bot-xyz' not found on PATH" in str(cannot_start(spec.command, str(tmp_path)))


def test_relative_command_is_resolved_in_the_bot_directory(
    launched: Launched, tmp_path: Path
) -> None:
    bot = tmp_path / "bin" / "bot.sh"
    bot.parent.mkdir()
    bot.write_text("#!/bin/sh\npwd >&2\n")
    bot.chmod(0o755)
    agent = launch(launched, spec_for("bin/bot.sh", directory=tmp_path))
    assert agent.wait(timeout=10) == 0
    assert agent.stderr_text().strip() == str(tmp_path.resolve())


@pytest.mark.parametrize("program", ["no-such-bot-xyz", "./missing_bot.py", "print_env.py"])
def test_missing_or_unrunnable_command_names_the_command(program: str) -> None:
    with pytest.raises(LaunchError, match=program.replace(".", r"\.")):
        ProcessLauncher().launch(spec_for(program))


def test_missing_bot_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="does not exist"):
        ProcessLauncher().launch(spec_for(PYTHON, directory=tmp_path / "gone"))


# --- limits -----------------------------------------------------------------------------------


def test_memory_hog_under_256_mb_dies_and_is_reported_as_a_memory_fault(
    launched: Launched,
) -> None:
    agent = launch(launched, spec_for(PYTHON, "hog_memory.py", memory_bytes=256 * MIB))
    code = agent.wait(timeout=30)
    assert code is not None and code != 0
    assert "MemoryError" in agent.stderr_text()
    assert agent.exit_reason() == "memory limit (256 MB) exceeded"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.parametrize("heap", ["small", "huge"])
def test_node_starts_under_the_default_memory_limit_and_its_heap_is_capped(
    launched: Launched, heap: str
) -> None:
    # Regression: under an address-space cap V8 could not even reserve its code range.
    script = (
        "const a = []; const n = process.argv[1] === 'huge' ? 4096 : 1;"
        "for (let i = 0; i < n; i++) a.push(Buffer.alloc(1 << 20, 1));"
        "console.error('allocated', n, 'MiB');"
    )
    agent = launch(launched, spec_for("node", "-e", script, heap))
    code = agent.wait(timeout=30)
    if heap == "small":
        assert code == 0, agent.stderr_text()
        assert "allocated 1 MiB" in agent.stderr_text()
    else:
        assert code != 0 and "allocated" not in agent.stderr_text()


def test_spinning_bot_under_1_s_cpu_is_stopped_and_reported_as_cpu_limit(
    launched: Launched,
) -> None:
    agent = launch(launched, spec_for(PYTHON, "spin_forever.py", cpu_seconds=1))
    assert agent.wait(timeout=20) == -signal.SIGXCPU
    assert agent.exit_reason() == "CPU time limit (1 s) exceeded"


def test_bot_ignoring_sigxcpu_is_killed_at_the_hard_cpu_limit(
    launched: Launched,
) -> None:
    agent = launch(launched, spec_for(PYTHON, "spin_forever.py", "--ignore-sigxcpu", cpu_seconds=1))
    assert agent.wait(timeout=20) == -signal.SIGKILL
    assert agent.exit_reason() == "CPU time limit (1 s) exceeded"
    agent.stop()  # after reaping, the verdict rests on exact rusage and must not change
    assert agent.exit_reason() == "CPU time limit (1 s) exceeded"


def test_stop_kills_the_whole_process_group_including_grandchildren(
    launched: Launched,
) -> None:
    agent = launch(launched, spec_for(PYTHON, "spawn_sleeper.py"))
    wait_for(lambda: "child pid" in agent.stderr_text())
    assert agent.pid is not None
    child = host_pid(int(agent.stderr_text().split("child pid")[1].split()[0]), agent.pid)
    assert child is not None and os.getpgid(child) == agent.pgid != os.getpgid(0)
    assert os.getsid(agent.pid) == agent.pid
    assert agent.poll() is None and agent.wait(timeout=0.1) is None
    agent.stop()
    wait_for(lambda: not group_members(agent.pgid), timeout=5)
    assert agent.exit_reason() == "stopped by the arena"
    agent.stop()  # idempotent


def test_stop_after_the_agent_exited_still_kills_what_it_left_behind(
    launched: Launched, tmp_path: Path
) -> None:
    bot = tmp_path / "orphaner.sh"
    bot.write_text("#!/bin/sh\nsleep 1000 &\necho started >&2\nexit 4\n")
    bot.chmod(0o755)
    agent = launch(launched, spec_for("./orphaner.sh", directory=tmp_path))
    assert agent.wait(timeout=10) == 4
    if launched.forkserver is None:
        assert group_members(agent.pgid), "the orphaned sleep should still be running"
    else:  # the fork server ends an agent's group as soon as its main process exits
        wait_for(lambda: not group_members(agent.pgid), timeout=5)
    agent.stop()
    wait_for(lambda: not group_members(agent.pgid), timeout=5)
    assert agent.exit_reason() == "exited with code 4"


def test_a_program_starts_with_default_signal_handling(launched: Launched) -> None:
    # The launchers are Python, which ignores SIGPIPE and SIGXFSZ, and exec keeps what is
    # ignored: a shell bot then saw a closed pipe as an error instead of dying of it.
    agent = launch(launched, spec_for("sh", "-c", "grep SigIgn /proc/self/status >&2"))
    assert agent.wait(timeout=10) == 0
    ignored = int(agent.stderr_text().split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1)), hex(ignored)


def test_a_program_that_cannot_be_run_exits_127_saying_why(
    launched: Launched, tmp_path: Path
) -> None:
    bot = tmp_path / "bot"
    bot.write_text("#!/no/such/interpreter\n")  # executable, but exec finds no interpreter
    bot.chmod(0o755)
    agent = launch(launched, spec_for("./bot", directory=tmp_path))
    assert agent.wait(timeout=10) == 127
    assert f"arena: cannot run {str(bot)!r}: [Errno 2]" in agent.stderr_text()


def test_stderr_is_capped_with_a_truncation_note(launched: Launched, tmp_path: Path) -> None:
    agent = launch(
        launched, spec_for(PYTHON, "noisy_stderr.py", stderr_bytes=4096), log_dir=tmp_path
    )
    assert agent.wait(timeout=20) == 3
    agent.stop()
    text = agent.stderr_text()
    head, note = text.split("\n[truncated: ")
    assert head.startswith("line 0000000000\n") and len(head.encode()) == 4096
    note, tail = note.split("]\n")
    assert note == f"{1024 * 1024 - 2 * 4096} bytes not kept; the last 4096 follow"
    last = 1024 * 1024 // 16 - 1
    assert tail.endswith(f"line {last - 1:010d}\nline {last:010d}\n") and len(tail) == 4096
    assert agent.stderr_path == tmp_path / "gs7-g0-s2.stderr.log"
    # The log file survives the agent, and ends as the text does: the cut said, the tail.
    assert agent.stderr_path.read_text() == text
    assert agent.stderr_path.stat().st_mode & 0o777 == 0o600
    assert agent.exit_reason() == "exited with code 3"


def test_a_game_played_again_keeps_the_earlier_stderr_log(
    launched: Launched, tmp_path: Path
) -> None:
    # The same game id again (a set retried after a game master restart): the first log,
    # perhaps the one that says what went wrong, was overwritten.
    says = []
    for attempt in (1, 2, 3):
        agent = launch(
            launched, spec_for("sh", "-c", f"echo attempt {attempt} >&2"), log_dir=tmp_path
        )
        assert agent.wait(timeout=10) == 0
        agent.stop()
        says.append(agent)
    names = [agent.stderr_path.name for agent in says]
    assert names == ["gs7-g0-s2.stderr.log", "gs7-g0-s2.2.stderr.log", "gs7-g0-s2.3.stderr.log"]
    assert [agent.stderr_path.read_text() for agent in says] == [
        "attempt 1\n",
        "attempt 2\n",
        "attempt 3\n",
    ]


def test_stderr_a_little_over_the_cap_is_kept_whole(tmp_path: Path) -> None:
    from runner.launch.capture import StderrCapture

    read, write = os.pipe()
    capture = StderrCapture(os.fdopen(read, "rb"), 100, tmp_path / "stderr.log")
    os.write(write, b"x" * 100 + b"\nthe last words\n")
    os.close(write)
    assert capture.join(timeout=10)
    assert capture.text() == "x" * 100 + "\nthe last words\n"  # the tail holds what was cut
    assert (tmp_path / "stderr.log").read_text() == capture.text()  # the file too


@pytest.mark.parametrize("trap", ["fifo", "symlink"])
def test_a_trap_at_the_stderr_path_neither_blocks_nor_redirects_the_capture(
    launched: Launched, tmp_path: Path, trap: str
) -> None:
    # The run directory is the agent's to write in, stderr.log included: a FIFO there blocked
    # the one thread that drains every agent's stderr; a symlink sent it to another file.
    victim = tmp_path / "someone-elses.txt"
    victim.write_text("untouched")
    agent = launch(launched, spec_for(PYTHON, "stderr_trap.py", trap, str(victim)))
    assert agent.wait(timeout=20) == 1
    pool = ThreadPoolExecutor(1)
    try:
        text = pool.submit(agent.stderr_text).result(timeout=10)  # not stuck behind the trap
    finally:
        pool.shutdown(wait=False)
    assert "trapped" in text and agent.exit_reason() == "exited with code 1"
    assert victim.read_text() == "untouched"


# --- exit reasons, as a table -------------------------------------------------------------------

LIMITS = AgentLimits(cpu_seconds=5, memory_bytes=256 * MIB)
BOT_GONE = f"the bot {how_it_ended(0)} before the game ended"
BRIDGE_6 = f"exited with code 6, the stdio bridge's code for: {BOT_GONE}"
NOT_STARTED_6 = f"{BRIDGE_6[: -len(BOT_GONE)]}cannot start the bot 'x': no 'x' on PATH"
EXIT_6 = "exited with code 6"


@pytest.mark.parametrize(
    ("returncode", "options", "reason"),
    [
        (0, {}, "exited with code 0"),
        (2, {}, "exited with code 2"),
        (0, {"stderr": "MemoryError"}, "exited with code 0"),
        (1, {"stderr": "Traceback ...\nMemoryError\n"}, "memory limit (256 MB) exceeded"),
        (-6, {"stderr": "std::bad_alloc"}, "memory limit (256 MB) exceeded"),
        (-11, {}, "killed by signal SIGSEGV (11)"),
        (-9, {"cpu_used": 1.0}, "killed by signal SIGKILL (9)"),
        (-9, {"cpu_used": 5.9}, "CPU time limit (5 s) exceeded"),
        (-int(signal.SIGXCPU), {}, "CPU time limit (5 s) exceeded"),
        (-15, {"stopped": True}, "stopped by the arena"),
        (
            137,
            {"container": True},
            "memory limit (256 MB) exceeded (killed by SIGKILL, presumably the OOM killer)",
        ),
        (128 + int(signal.SIGXCPU), {"container": True}, "CPU time limit (5 s) exceeded"),
        (139, {"container": True}, "killed by signal SIGSEGV (11)"),
        # Said of "the agent": it read "the agent docker could not run the container".
        (
            125,
            {"container": True},
            "exited with code 125, docker's: it could not run the container",
        ),
        (1, {"container": True}, "exited with code 1"),
        # The stdio bridge's own code: "exited with code 6" alone blamed the bot for it.
        (6, {"stderr": f"{BRIDGE_SAYS}{BOT_GONE}; ending the stream (a forfeit)\n"}, BRIDGE_6),
        (6, {"stderr": f"{BRIDGE_SAYS}cannot start the bot 'x': no 'x' on PATH"}, NOT_STARTED_6),
        (6, {"stderr": f"{BRIDGE_SAYS}the bot wrote 3 byte(s) that no newline has ended"}, EXIT_6),
        (6, {}, EXIT_6),
    ],
)
def test_exit_reason_table(returncode: int, options: dict[str, object], reason: str) -> None:
    assert describe_exit(returncode, limits=LIMITS, **options) == reason  # type: ignore[arg-type]


def test_spec_repr_does_not_show_the_seat_token() -> None:
    assert TOKEN not in repr(spec_for(PYTHON))


# --- container launcher -------------------------------------------------------------------------


def container_spec(**limits: int | None) -> AgentSpec:
    return AgentSpec(
        command=(),
        directory=AGENTS,
        game_master="gamemaster:50051",
        seat_token=TOKEN,
        limits=AgentLimits(**limits),  # type: ignore[arg-type]
        label="gs7-g0-s2",
        image="arena-bots/greedy:3",
    )


def test_container_command_is_exactly_the_documented_docker_run() -> None:
    spec = container_spec(cpu_seconds=30, memory_bytes=256 * MIB)
    name = ContainerLauncher().container_name(spec)
    assert ContainerLauncher().command(spec) == [
        "docker", "run", "--rm",
        "--name", name,
        "--label", "arena.agent=gs7-g0-s2",
        "--memory", str(256 * MIB),
        "--memory-swap", str(256 * MIB),
        "--cpus", "1",
        "--pids-limit", "128",
        "--ulimit", "cpu=30:31",
        "--read-only",
        "--tmpfs", "/tmp:size=64m",
        "--security-opt", "no-new-privileges",
        "--cap-drop", "ALL",
        "--user", "65534:65534",
        "--network", "none",
        "--mount", "type=volume,source=arena-gamemaster,target=/run/arena,readonly",
        "--log-driver", "json-file",
        "--log-opt", "max-size=1m",
        "--log-opt", "max-file=1",
        "--init",
        "--pull", "never",
        "-e", "HOME=/tmp",
        "-e", "TMPDIR=/tmp",
        "-e", "ARENA_GAME_MASTER=unix:/run/arena/gamemaster.sock",
        "-e", "ARENA_SEAT_TOKEN",
        "arena-bots/greedy:3",
    ]  # fmt: skip


def test_container_name_is_valid_unique_per_token_and_hides_the_token() -> None:
    launcher = ContainerLauncher()
    spec = container_spec()
    name = launcher.container_name(spec)
    assert name.startswith("arena-agent-gs7-g0-s2-") and TOKEN not in name
    other = AgentSpec(**{**spec.__dict__, "seat_token": "another-token"})
    assert launcher.container_name(other) != name
    assert all(c.isascii() and (c.isalnum() or c in "_.-") for c in name)


def test_container_command_options_follow_the_spec() -> None:
    spec = AgentSpec(
        command=("--level", "3"),
        directory=AGENTS,
        game_master="gm:1",
        seat_token=TOKEN,
        limits=AgentLimits(cpu_seconds=None, memory_bytes=None, cpus=0.5, pids=32),
        label="weird label/é",
        image="img",
    )
    argv = ContainerLauncher(socket_source="/srv/arena/run", pull=None).command(spec)
    assert "--memory" not in argv and "--ulimit" not in argv and "--pull" not in argv
    assert argv[argv.index("--cpus") + 1] == "0.5"
    assert argv[argv.index("--pids-limit") + 1] == "32"
    mount = "type=bind,source=/srv/arena/run,target=/run/arena,readonly"
    assert argv[argv.index("--mount") + 1] == mount
    assert argv[-3:] == ["img", "--level", "3"]
    assert argv[argv.index("--label") + 1] == "arena.agent=weird-label"


def test_container_without_image_is_a_clear_error() -> None:
    spec = AgentSpec(command=(), directory=AGENTS, game_master="gm:1", seat_token=TOKEN)
    with pytest.raises(LaunchError, match="no container image"):
        ContainerLauncher().command(spec)
    # An image registered before the registry refused such names: docker reads it as an option.
    spec = AgentSpec(
        command=(), directory=AGENTS, game_master="gm:1", seat_token=TOKEN, image="--privileged"
    )
    with pytest.raises(LaunchError, match="'--privileged' is not an image reference"):
        ContainerLauncher().command(spec)


@pytest.mark.parametrize("source", ["relative/dir", "/a,b", "/a=b", "-v", "vol:ume"])
def test_a_socket_directory_docker_would_misread_is_a_clear_error(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARENA_CONTAINER_SOCKET", source)
    message = f"ARENA_CONTAINER_SOCKET={source!r} is neither a docker volume's name nor"
    with pytest.raises(LaunchError, match=re.escape(message)):
        ContainerLauncher().command(container_spec())


def test_missing_docker_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker's trouble, not the bot's: its sets wait for a worker that can run containers.
    with pytest.raises(DockerUnavailable, match="docker client 'docker-missing-xyz' not found"):
        ContainerLauncher(docker="docker-missing-xyz").launch(container_spec())
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DockerUnavailable, match="no docker client: docker client 'docker' not"):
        ContainerLauncher().launch(container_spec())


def test_container_launch_runs_docker_with_the_token_in_its_env_and_stops_the_container(
    launched: Launched, monkeypatch: pytest.MonkeyPatch, fake_docker: Path
) -> None:
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", "worker-secret")  # must not be passed through
    launcher = ContainerLauncher(grace_seconds=1)
    spec = container_spec()
    agent = launcher.launch(spec)
    launched.append(agent)
    wait_for(lambda: "container starting" in agent.stderr_text())
    version, *calls = (fake_docker / "calls.log").read_text().splitlines()
    assert version == "version --format {{.Server.Version}}"  # is a daemon there?
    assert calls[0] == " ".join(launcher.command(spec)[1:])
    assert calls[1] == f"ARENA_SEAT_TOKEN={TOKEN}"
    client_env = set(calls[2].removeprefix("env: ").split()) - {"PWD"}  # sh adds PWD
    assert client_env == {"ARENA_SEAT_TOKEN", "DOCKER_CONFIG", "HOME", "PATH"}
    assert agent.poll() is None
    agent.stop()
    name = launcher.container_name(spec)
    calls = (fake_docker / "calls.log").read_text().splitlines()
    assert calls[4:] == [f"stop --time 1 {name}", f"rm --force {name}"]
    assert agent.exit_reason() == "stopped by the arena"


def test_a_docker_client_with_no_daemon_is_the_arenas_trouble_not_the_bots(
    fake_docker: Path,
) -> None:
    # Each container seat used to start, fail with docker's exit code 125 and forfeit: every
    # game of the bot lost, and rated. Now no container starts, and the worker is told why.
    (fake_docker / "daemon-down").touch()
    launcher = ContainerLauncher(grace_seconds=1)
    with pytest.raises(DockerUnavailable, match=r"reaches no Docker daemon \(Cannot connect"):
        launcher.launch(container_spec())
    calls = (fake_docker / "calls.log").read_text().splitlines()
    assert calls == ["version --format {{.Server.Version}}"]  # and no `docker run`
    (fake_docker / "daemon-down").unlink()
    launcher.check_daemon()  # back: asked again, since it was not reached
    launcher.check_daemon()  # trusted for a while: not asked again
    assert (fake_docker / "calls.log").read_text().count("version") == 2


NOBODY = 65534
_REMOVE_AS_NOBODY = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from runner.launch.rundirs import remove_tree
run = Path(sys.argv[1]) / "run"
(run / "home" / "cache").mkdir(parents=True)
(run / "home" / "cache" / "note").write_text("kept for the next game?")
os.chmod(run / "home" / "cache", 0)
os.chmod(run / "home", 0o500)
os.chmod(run, 0)
remove_tree(run)
print(run.exists())
"""


def _python_nobody_can_run() -> str | None:
    """An interpreter user nobody may run that imports the launchers (the venv's may sit in
    root's home)."""
    for python in (PYTHON, "/usr/bin/python3"):
        probe = f"import sys; sys.path.insert(0, {str(REPO)!r}); import runner.launch.rundirs"
        try:
            done = subprocess.run([python, "-c", probe], user=NOBODY, capture_output=True, cwd="/")
        except OSError:
            continue
        if done.returncode == 0:
            return python
    return None


@pytest.mark.skipif(os.getuid() != 0, reason="runs a child as user nobody, which needs root")
def test_a_non_root_worker_removes_a_run_directory_the_bot_made_unreadable() -> None:
    # The tests run as root, whom chmod 000 stops from nothing; the image's worker is a user.
    python = _python_nobody_can_run()
    if python is None:
        pytest.skip("no Python here that user nobody may run")
    scratch = Path(tempfile.mkdtemp())
    try:
        scratch.chmod(0o777)
        done = subprocess.run(
            [python, "-c", _REMOVE_AS_NOBODY, str(scratch), str(REPO)],
            user=NOBODY,
            capture_output=True,
            text=True,
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "False"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
