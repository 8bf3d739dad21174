"""The fork server (warm Python): what a forked agent sees, how it ends, and what it never sees.

The launcher behaviours shared with spawned agents (environment, limits, group kill, stderr)
run in both modes in test_launchers.py; these are the fork server's own.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.launch import AgentLimits, AgentSpec, ProcessLauncher, RunningAgent, pidns
from runner.launch.forkserver import ForkedAgent, ForkServer, runs_warm
from tests.hostpids import host_pid

AGENTS = Path(__file__).parent / "agents"
TOKEN = "seat-token-fedcba9876543210"


@pytest.fixture(params=[True, False], ids=["own-pid-namespaces", "host-process-table"])
def server(request: pytest.FixtureRequest) -> Iterator[ForkServer]:
    """A fork server each way: agents in PID namespaces of their own (where this process may
    make them), and in the host's process table, as where it may not."""
    yield from _serving(ForkServer(pid_namespaces=request.param))


@pytest.fixture
def isolating() -> Iterator[ForkServer]:
    """A fork server that gives agents PID namespaces of their own."""
    yield from _serving(ForkServer())


@pytest.fixture
def sealing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ForkServer]:
    """A fork server that gives agents PID namespaces of their own, whose data directory (out
    of sealed agents' sight) is tmp_path/data."""
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "data"))
    yield from _serving(ForkServer())


def _serving(forkserver: ForkServer) -> Iterator[ForkServer]:
    yield forkserver
    forkserver.control.close()
    forkserver.process.wait(timeout=10)


@pytest.fixture
def started() -> Iterator[list[RunningAgent]]:
    agents: list[RunningAgent] = []
    yield agents
    for agent in agents:
        agent.stop()


def start(
    server: ForkServer,
    started: list[RunningAgent],
    directory: Path,
    *command: str,
    game_master: str = "127.0.0.1:50051",
) -> RunningAgent:
    spec = AgentSpec(
        command=command,
        directory=directory,
        game_master=game_master,
        seat_token=TOKEN,
        limits=AgentLimits(),
        label="fork-test",
    )
    agent = ProcessLauncher(forkserver=server).launch(spec)
    started.append(agent)
    return agent


def test_only_the_arena_python_running_a_module_or_script_runs_warm() -> None:
    python = sys.executable
    assert runs_warm([python, "-m", "sample_agents.greedy_bot"])
    assert runs_warm([python, "bot.py", "--level", "3"])
    assert not runs_warm([python, "-u", "bot.py"])  # interpreter options: exec'd as asked
    assert not runs_warm([python, "-m"])
    assert not runs_warm([python])
    assert not runs_warm(["/usr/bin/python3", "bot.py"])  # another Python
    assert not runs_warm(["node", "bot.js"])


def test_module_agent_runs_as_python_dash_m_in_its_directory(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    (tmp_path / "mybot.py").write_text(
        "import json, os, sys\n"
        "json.dump({'argv': sys.argv, 'path0': sys.path[0], 'name': __name__,"
        " 'cwd': os.getcwd()}, sys.stderr)\n"
    )
    agent = start(server, started, tmp_path, "python", "-m", "mybot", "--level", "3")
    assert isinstance(agent, ForkedAgent)
    assert agent.wait(timeout=20) == 0, agent.stderr_text()
    seen = eval(agent.stderr_text().replace("true", "True"))  # JSON of plain strings
    assert seen == {
        "argv": [str(tmp_path / "mybot.py"), "--level", "3"],
        "path0": str(tmp_path),
        "name": "__main__",
        "cwd": str(tmp_path),
    }


@pytest.mark.parametrize(
    ("body", "code", "stderr"),
    [
        ("import sys; sys.exit(7)", 7, ""),
        ("import sys; sys.exit('bad config')", 1, "bad config"),
        ("raise ValueError('no luck')", 1, "ValueError: no luck"),
        ("import atexit, sys; atexit.register(lambda: sys.stderr.write('bye'))", 0, "bye"),
        (
            "import threading, time, sys\n"
            "late = lambda: (time.sleep(0.3), sys.stderr.write('joined'))\n"
            "threading.Thread(target=late).start()",
            0,
            "joined",
        ),
    ],
)
def test_exit_status_traceback_atexit_and_threads_behave_as_in_python(
    server: ForkServer,
    started: list[RunningAgent],
    tmp_path: Path,
    body: str,
    code: int,
    stderr: str,
) -> None:
    (tmp_path / "bot.py").write_text(body + "\n")
    agent = start(server, started, tmp_path, "python", "bot.py")
    assert agent.wait(timeout=20) == code
    assert stderr in agent.stderr_text()
    if code == 1 and "Error" in stderr:
        assert "Traceback" in agent.stderr_text()


def test_an_agent_that_cannot_start_exits_127_saying_why(
    server: ForkServer, tmp_path: Path
) -> None:
    # The launcher checks the directory first; this one vanishes between that check and the fork.
    stderr_r, stderr_w = os.pipe()
    status = server.start(
        [sys.executable, "bot.py"],
        cwd=tmp_path / "gone",
        env={},
        limits=AgentLimits(),
        stderr_fd=stderr_w,
    )
    os.close(stderr_w)
    forked, ended = status.read_line(timeout=20), status.read_line(timeout=20)
    status.close()
    assert forked is not None and forked.startswith("pid ")
    assert ended is not None and ended.split()[:2] == ["exit", "127"], ended
    with os.fdopen(stderr_r, "rb") as stderr:
        assert b"cannot start the agent" in stderr.read()


def test_what_a_forked_agent_leaves_behind_dies_with_it(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    (tmp_path / "bot.py").write_text(
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '1000'])\n"
        "sys.stderr.write(f'child pid {child.pid}\\n')\n" + _UNTIL_GO
    )
    agent = start(server, started, tmp_path, "python", "bot.py")
    child = _reported_pid(agent, "child pid")
    (tmp_path / "go").touch()
    assert agent.wait(timeout=20) == 0
    assert _gone(child), "the sleeper outlived its agent's exit"


def test_a_process_that_left_its_agents_group_dies_with_the_game_too(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # setsid() takes a process out of the group the launcher kills; the fork server adopts it
    # when its agent ends, and ends it once no agent of the game runs.
    (tmp_path / "bot.py").write_text(
        "import os, sys\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid()\n"
        "    os.write(w, b'x')\n"
        "    os.execv('/bin/sleep', ['sleep', '1000'])\n"
        "os.read(r, 1)  # out of the group before the agent ends\n"
        "sys.stderr.write(f'escaped {pid}\\n')\n" + _UNTIL_GO
    )
    agent = start(server, started, tmp_path, "python", "bot.py")
    escaped = _reported_pid(agent, "escaped")
    (tmp_path / "go").touch()
    assert agent.wait(timeout=20) == 0
    agent.stop()
    assert _gone(escaped), "the escaped sleeper outlived its game"


def test_a_process_that_left_the_group_of_an_agent_in_another_language_dies_too(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Not only Python agents: the fork server forks every agent and execs its command, so it
    # is the parent of all of them, and adopts what any of them leaves behind.
    (tmp_path / "bot.sh").write_text(
        "#!/bin/sh\n"
        "setsid sleep 1000 &\n"
        "sleep 0.2\n"
        "echo \"escaped $! session $(cut -d' ' -f6 /proc/$!/stat) mine $$\" >&2\n"
        "until [ -e go ]; do sleep 0.02; done\n"
    )
    (tmp_path / "bot.sh").chmod(0o755)
    agent = start(server, started, tmp_path, "./bot.sh")
    assert isinstance(agent, ForkedAgent)
    seen = _wait_for_line(agent, r"escaped (\d+) session (\d+) mine (\d+)")
    ns_escaped, session, mine = map(int, seen.groups())
    assert session == ns_escaped != mine  # it did leave the agent's session and group
    escaped = _host_pid(ns_escaped, agent)
    (tmp_path / "go").touch()
    assert agent.wait(timeout=20) == 0
    agent.stop()
    assert _gone(escaped), "the escaped sleeper outlived its game"


_AS_ROOT = pytest.mark.skipif(
    not pidns.available(), reason="no PID namespaces here (see runner/launch/pidns.py)"
)


@_AS_ROOT
def test_an_agent_sees_only_its_own_processes(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Not the worker's environment (database URL, admin token), nor the other agents' (seat
    # tokens), nor anything to signal: a PID namespace of its own, with its own /proc.
    (tmp_path / "bot.py").write_text(
        "import os, sys\n"
        "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "sys.stderr.write(f'pids {pids} me {os.getpid()} parent {os.getppid()}\\n')\n"
    )
    neighbour = start(isolating, started, tmp_path, "sleep", "60")
    agent = start(isolating, started, tmp_path, "python", "bot.py")
    assert agent.wait(timeout=20) == 0
    assert "pids [1, 2] me 2 parent 1" in agent.stderr_text(), agent.stderr_text()
    assert neighbour.poll() is None


def test_an_agent_that_dials_its_game_masters_socket_reaches_no_port_of_the_host(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # A port on the host's loopback, as Redis's, the database's or a partner's helper's is.
    (tmp_path / "bot.py").write_text(
        "import socket, sys\n"
        "def reach(port):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=5).close()\n"
        "        return 'reached'\n"
        "    except OSError as error:\n"
        "        return type(error).__name__\n"
        "own = socket.create_server(('127.0.0.1', 0))\n"
        "host, mine = reach(int(sys.argv[1])), reach(own.getsockname()[1])\n"
        "print('host', host, 'own', mine, file=sys.stderr)\n"
    )
    with socket.create_server(("127.0.0.1", 0)) as host_port:
        port = str(host_port.getsockname()[1])
        by_socket = start(
            isolating, started, tmp_path, "python", "bot.py", port, game_master="unix:/x.sock"
        )
        by_tcp = start(isolating, started, tmp_path, "python", "bot.py", port)
        assert by_socket.wait(timeout=20) == 0 and by_tcp.wait(timeout=20) == 0
    # Its own loopback works (a bot may talk to its own helpers); the host's is out of reach.
    assert "host ConnectionRefusedError own reached" in by_socket.stderr_text()
    assert "host reached own reached" in by_tcp.stderr_text()


def test_a_sealed_agent_writes_only_in_its_own_directory_and_sees_no_other(
    sealing: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # An agent that dials its game master's socket is sealed. Before: a shared /tmp, bot
    # directory or another agent's HOME let partners leave each other their hands, and the
    # arena's own files (its code, the database that knows every deal) were the bot's to read
    # and rewrite.
    data = tmp_path / "data"
    bot = data / "bots" / "note"  # registered inside the data directory, as compose advises
    bot.mkdir(parents=True)
    (data / "arena.db").write_text("every hand not yet played")
    (bot / "bot.py").write_text(
        "import errno, os, sys\n"
        "def attempt(act):\n"
        "    try:\n"
        "        act()\n"
        "        return 'done'\n"
        "    except OSError as error:\n"
        "        return errno.errorcode[error.errno]\n"
        "def write(path):\n"
        "    return attempt(lambda: open(path, 'w').write('my hand'))\n"
        "places = [sys.argv[1], 'note', os.environ['HOME'] + '/n', os.environ['TMPDIR'] + '/n',\n"
        "          '/dev/shm/n']\n"
        "agents = os.path.dirname(os.path.dirname(os.environ['HOME']))\n"
        "database = attempt(lambda: open(sys.argv[2]).read())\n"
        "print(*(write(place) for place in places), database, len(os.listdir(agents)),\n"
        "      file=sys.stderr)\n"
    )
    shared = Path(f"/tmp/arena-test-note-{os.getpid()}")
    try:
        start(sealing, started, tmp_path, "sleep", "60")  # another agent, with its own HOME
        args = ("python", "bot.py", str(shared), str(data / "arena.db"))
        by_socket = start(sealing, started, bot, *args, game_master="unix:/x")
        assert by_socket.wait(timeout=20) == 0
        said = by_socket.stderr_text().split()
        # Writes: its bot directory no, its HOME, TMPDIR, /dev/shm and /tmp yes (the last
        # its own); the database is not there; of all agents' directories, it sees its own only.
        assert said == ["done", "EROFS", "done", "done", "done", "ENOENT", "1"], said
        assert not shared.exists() and not (bot / "note").exists()
        by_tcp = start(sealing, started, bot, *args)
        assert by_tcp.wait(timeout=20) == 0
        said = by_tcp.stderr_text().split()
        assert said[:6] == ["done"] * 6 and int(said[6]) >= 3, said
        assert (bot / "note").exists() and not shared.exists()  # its /tmp is its own here too
    finally:
        shared.unlink(missing_ok=True)


def test_what_an_agent_writes_to_tmp_stays_its_own(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Programs write to /tmp whatever TMPDIR says. Every JVM keeps /tmp/hsperfdata_USER/PID,
    # PID being 2 in every agent's namespace: two Java bots at once found it locked and said so
    # on stdout, a stdio bot's reply channel (a fault a game). Partners could also leave each
    # other notes there. What the host has in /tmp stays in sight; its bot directory and HOME
    # (below /tmp here) are written as they are.
    (tmp_path / "bot.py").write_text(
        "import os, sys, time\n"
        "note, mine = sys.argv[1], sys.argv[2]\n"
        "open(note, 'w').write(mine)\n"
        "open(mine, 'w').write(mine)\n"
        "open(os.environ['HOME'] + '/n', 'w').write(mine)\n"
        "time.sleep(1)  # while the other agent writes its note\n"
        "print(open(note).read(), open(note + '-host').read(), file=sys.stderr)\n"
    )
    note = Path(f"/tmp/arena-test-own-tmp-{os.getpid()}")
    Path(f"{note}-host").write_text("host")
    try:
        first = start(isolating, started, tmp_path, "python", "bot.py", str(note), "first")
        second = start(isolating, started, tmp_path, "python", "bot.py", str(note), "second")
        assert first.wait(timeout=20) == 0 and second.wait(timeout=20) == 0
        assert first.stderr_text().split() == ["first", "host"], first.stderr_text()
        assert second.stderr_text().split() == ["second", "host"], second.stderr_text()
        assert not note.exists()
        assert (tmp_path / "first").read_text() == "first" and (tmp_path / "second").exists()
    finally:
        note.unlink(missing_ok=True)
        Path(f"{note}-host").unlink()


@pytest.mark.skipif(not shutil.which("javac"), reason="no JDK on this machine")
def test_java_bots_at_once_print_nothing_of_their_own_on_stdout(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Before each agent had its own /tmp, the second JVM printed, on stdout: "[warning][perf,
    # memops] Cannot use file /tmp/hsperfdata_root/2 because it is locked by another process".
    (tmp_path / "Bot.java").write_text(
        "public class Bot { public static void main(String[] a) throws Exception {"
        ' Thread.sleep(1500); System.out.println("pass"); } }'
    )
    subprocess.run(["javac", "Bot.java"], cwd=tmp_path, check=True, timeout=120)
    bots = [
        start(isolating, started, tmp_path, "sh", "-c", "exec java -cp . Bot > $0", f"out{n}")
        for n in range(2)
    ]
    assert [bot.wait(timeout=60) for bot in bots] == [0, 0]
    assert [(tmp_path / f"out{n}").read_text() for n in range(2)] == ["pass\n", "pass\n"]


@_AS_ROOT
def test_an_agent_keeps_no_capability_to_undo_its_namespace(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Root with every capability, a bot unmounted its /proc and read the host's (the worker's
    # environment). Nor may a program it execs regain any.
    (tmp_path / "bot.py").write_text(
        "import ctypes, os, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "unmounted = libc.umount2(b'/proc', 2)\n"
        "sys.stderr.write(f'umount {unmounted} errno {ctypes.get_errno()}\\n')\n"
        "sys.stderr.flush()\n"
        "os.execv('/bin/sh', ['sh', '-c', 'exec grep ^Cap /proc/self/status >&2'])\n"
    )
    agent = start(isolating, started, tmp_path, "python", "bot.py")
    assert agent.wait(timeout=20) == 0
    said = agent.stderr_text()
    assert "umount -1 errno 1" in said, said  # EPERM
    capabilities = dict(line.split(":\t") for line in said.splitlines() if line.startswith("Cap"))
    assert {capabilities[k] for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")} == {
        "0000000000000000"
    }, said


_PROBE_HOST_FILES = """
import os, sys

def writable(path):
    try:
        with open(path, "r+b"):
            return "writable"
    except OSError as error:
        return error.strerror

for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname", "/proc/sysrq-trigger"):
    sys.stderr.write(f"{path}: {writable(path)}\\n")
cgroups = [os.path.join(d, f) for d, _, fs in os.walk("/sys/fs/cgroup") for f in fs]
sys.stderr.write(f"cgroup files: {len(cgroups)}; /sys: {writable('/sys/kernel/uevent_helper')}\\n")
sys.stderr.write(f"dev: {sorted(os.listdir('/dev'))}\\n")
with open("/dev/null", "w") as null:
    null.write("x")
sys.stderr.write(f"urandom: {len(open('/dev/urandom', 'rb').read(4))}\\n")
"""


@_AS_ROOT
def test_an_agent_cannot_write_the_hosts_kernel_settings_or_devices(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Without a capability it was still uid 0, to whom the kernel leaves /proc/sys (writing
    # kernel.core_pattern runs a program as root outside every namespace), /sys (cgroup limits)
    # and the host's disks in /dev.
    (tmp_path / "bot.py").write_text(_PROBE_HOST_FILES)
    agent = start(isolating, started, tmp_path, "python", "bot.py")
    assert agent.wait(timeout=20) == 0, agent.stderr_text()
    said = agent.stderr_text()
    assert "/proc/sys/kernel/core_pattern: Read-only file system" in said, said
    assert "/proc/sys/kernel/hostname: Read-only file system" in said, said
    assert "/proc/sysrq-trigger: writable" not in said, said
    assert "cgroup files: 0; /sys: " in said and "/sys: writable" not in said, said
    devices = ["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "tty"]
    assert f"dev: {[*devices, 'urandom', 'zero']}" in said, said
    assert "urandom: 4" in said, said


@_AS_ROOT
def test_what_an_agent_left_behind_ends_with_it_while_other_agents_play(
    isolating: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # The fork server ends adopted strays only once no agent runs: a double-forked sleeper
    # deaf to SIGTERM outlived its game into the mirrored game of the set, with the same deals.
    (tmp_path / "bot.py").write_text(
        "import os, signal, sys, time\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        os.write(w, b'%16d' % os.getpid())\n"
        "        time.sleep(1000)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "sys.stderr.write(f'left {int(os.read(r, 16))}\\n')\n" + _UNTIL_GO
    )
    neighbour = start(isolating, started, tmp_path, "sleep", "60")
    agent = start(isolating, started, tmp_path, "python", "bot.py")
    left = _reported_pid(agent, "left")
    (tmp_path / "go").touch()
    assert agent.wait(timeout=20) == 0
    assert _gone(left), "what the agent left behind outlived it"
    assert neighbour.poll() is None


def test_adopted_processes_that_end_are_reaped_while_agents_run(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # A bot that leaves a short-lived helper behind on every move: the fork server adopts each,
    # and must reap it when it ends, not hold zombies until the game is over.
    (tmp_path / "bot.py").write_text(
        "import os, time\n"
        "for _ in range(10):\n"
        "    if os.fork() == 0:  # a middle process, gone at once: the helper is adopted\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(0.2)\n"
        "        os._exit(0)\n"
        "    os.wait()\n"
        "os.write(2, b'helpers left\\n')\n"
        "time.sleep(60)\n"
    )
    agent = start(server, started, tmp_path, "python", "bot.py")
    pid = server.process.pid

    def zombies() -> int:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        states = []
        for child in children:
            with contextlib.suppress(OSError):
                states.append(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0])
        return states.count("Z")

    import time

    deadline = time.monotonic() + 20
    while "helpers left" not in agent.stderr_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # every helper has ended
    assert agent.poll() is None  # the agent still plays
    assert zombies() == 0


def test_the_fork_server_never_holds_a_seat_token(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Every later agent is a copy of the fork server's memory: a token there would be readable
    # by the next seat's bot. The request (token included) must reach only the forked child.
    (tmp_path / "bot.py").write_text(
        "import os, sys; sys.stderr.write(os.environ['ARENA_SEAT_TOKEN'])\n"
    )
    agent = start(server, started, tmp_path, "python", "bot.py")
    assert agent.wait(timeout=20) == 0
    assert agent.stderr_text() == TOKEN  # the child got it
    memory = _memory_of(server.process.pid)
    assert b"exit_like_python" in memory  # the scan does see the fork server's own strings
    assert TOKEN.encode() not in memory


def test_the_fork_server_stays_one_thread_while_its_agents_use_grpc(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # A fork copies the locks other threads hold: with gRPC started in the fork server (and its
    # fork support), about one agent in 150 hung in its first channel under load.
    (tmp_path / "bot.py").write_text("import grpc\ngrpc.insecure_channel('127.0.0.1:9').close()\n")
    for _ in range(3):
        assert start(server, started, tmp_path, "python", "bot.py").wait(timeout=20) == 0
    assert os.listdir(f"/proc/{server.process.pid}/task") == [str(server.process.pid)]
    assert "GRPC_ENABLE_FORK_SUPPORT=false" in Path(
        f"/proc/{server.process.pid}/environ"
    ).read_bytes().decode().split("\0")


def test_ctrl_c_in_a_terminal_does_not_reach_the_fork_server(server: ForkServer) -> None:
    # A terminal's Ctrl-C signals its foreground process group: the worker's (or arena match's).
    # The fork server ends when its client goes, not of that, with a traceback.
    assert os.getpgid(server.process.pid) != os.getpgid(0)
    assert os.getsid(server.process.pid) == server.process.pid


def test_a_dead_fork_server_ends_its_agents_and_the_launcher_spawns_instead(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    (tmp_path / "bot.py").write_text("import time\nwhile True: time.sleep(1)\n")
    agent = start(server, started, tmp_path, "python", "bot.py")
    assert isinstance(agent, ForkedAgent) and agent.poll() is None
    server.process.kill()
    server.process.wait(timeout=10)
    assert agent.wait(timeout=10) == -signal.SIGKILL
    assert agent.orphaned  # not its own doing: its game is played again, nobody forfeits
    assert _gone(agent.pid)
    replacement = start(server, started, tmp_path, "python", "bot.py")
    assert not isinstance(replacement, ForkedAgent) and replacement.poll() is None


def test_after_a_bot_killed_the_shared_fork_server_the_next_agent_forks_from_a_new_one(
    started: list[RunningAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A game set's launcher asks forkserver.shared at each launch: the replayed game's agents
    # must not all be spawned (where what a bot moves out of its group outlives the game).
    from runner.launch import forkserver

    monkeypatch.setattr(forkserver, "_shared", None)
    (tmp_path / "bot.py").write_text("import time\nwhile True: time.sleep(1)\n")
    spec = AgentSpec(
        command=("python", "bot.py"),
        directory=tmp_path,
        game_master="127.0.0.1:50051",
        seat_token=TOKEN,
        limits=AgentLimits(),
        label="fork-test",
    )
    launcher = ProcessLauncher(forkserver=forkserver.shared)
    first = launcher.launch(spec)
    started.append(first)
    killed = forkserver._shared
    assert isinstance(first, ForkedAgent) and killed is not None and first.pid
    killed.process.kill()
    killed.process.wait(timeout=10)
    assert first.wait(timeout=10) == -signal.SIGKILL and first.orphaned
    again = launcher.launch(spec)
    started.append(again)
    replacement = forkserver._shared
    try:
        assert isinstance(again, ForkedAgent) and replacement is not killed
        assert again.pid and again.poll() is None
    finally:
        again.stop()
        if replacement is not None:
            replacement.control.close()
            replacement.process.wait(timeout=10)


_TRACED_STRAYS = """
import ctypes, os, sys, time

libc = ctypes.CDLL(None, use_errno=True)


def stray(body):
    # A grandchild in its own session: adopted by the fork server once this agent exits.
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, b"%16d" % os.getpid())
            body()
        os._exit(0)
    os.wait()
    return int(os.read(r, 16))


def traced():
    libc.prctl(0x59616D61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)  # any process may trace me
    while True:
        time.sleep(1)


a = stray(traced)
time.sleep(0.1)


def tracer():
    # PTRACE_SEIZE, never waiting: only this process may reap a once traced a has died.
    if libc.ptrace(0x4206, a, None, None) != 0:
        os.write(2, b"seize failed\\n")
    while True:
        time.sleep(1)


b = stray(tracer)
time.sleep(0.3)
sys.stderr.write(f"strays {a} {b}\\n")
"""


def test_strays_where_one_traces_the_other_do_not_hang_the_fork_server(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    # Reaping the traced one first blocked the fork server for good: the next game's agents
    # were never forked, and that game was aborted whoever played it.
    (tmp_path / "bot.py").write_text(_TRACED_STRAYS + _UNTIL_GO)
    agent = start(server, started, tmp_path, "python", "bot.py")
    seen = _wait_for_line(agent, r"strays (\d+) (\d+)")
    strays = [_host_pid(int(pid), agent) for pid in seen.groups()]
    assert "seize failed" not in agent.stderr_text()
    (tmp_path / "go").touch()
    assert agent.wait(timeout=20) == 0
    agent.stop()
    (tmp_path / "next.py").write_text("print('played')\n")
    after = start(server, started, tmp_path, "python", "next.py")
    assert isinstance(after, ForkedAgent)
    assert after.wait(timeout=5) == 0 and not after.orphaned
    assert all(_gone(pid) for pid in strays)


def test_only_the_fork_servers_own_pid_line_counts(server: ForkServer, tmp_path: Path) -> None:
    # A bot can open the fork server's end of another agent's status pipe through /proc and
    # write a "pid" of its choosing: an orphaned agent's group is then killed by that number.
    from runner.launch.capture import StderrCapture
    from runner.launch.forkserver import StatusPipe

    status_r, status_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    capture = StderrCapture(os.fdopen(stderr_r, "rb"), 1000, tmp_path / "stderr.log")
    agent = ForkedAgent(
        server, StatusPipe(status_r), capture, AgentLimits(), tmp_path, 1.0, "forged"
    )
    os.write(status_w, b"pid 111\npid 222\n")
    assert agent.pid == 111
    assert agent.poll() is None and agent.pid == 111
    os.write(status_w, b"exit 0 0.0\n")
    assert agent.poll() == 0
    for fd in (status_w, stderr_w):
        os.close(fd)
    capture.join(timeout=5)


def test_a_fork_server_that_stops_answering_is_replaced(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bot can SIGSTOP its parent: every later game of that worker then waited for agents the
    # frozen fork server never forked.
    from runner.launch import forkserver

    monkeypatch.setattr(forkserver, "_REAP_TIMEOUT", 1.0)
    (tmp_path / "bot.py").write_text("import time\nwhile True: time.sleep(1)\n")
    agent = start(server, started, tmp_path, "python", "bot.py")
    assert isinstance(agent, ForkedAgent) and agent.pid and agent.poll() is None
    os.kill(server.process.pid, signal.SIGSTOP)
    agent.stop()
    assert not server.alive and server.process.poll() is not None
    assert _gone(agent.pid)


def test_an_agent_a_stopped_fork_server_never_forks_ends_as_an_orphan_in_time(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Launches sent to a frozen fork server never start: the worker's poll must notice before
    # the game's connect time runs out (a seat would forfeit for it), and replace the server.
    import time

    from runner.launch import forkserver

    monkeypatch.setattr(forkserver, "_START_TIMEOUT", 1.0)
    monkeypatch.setattr(forkserver, "_REAP_TIMEOUT", 1.0)
    (tmp_path / "bot.py").write_text("print('never')\n")
    os.kill(server.process.pid, signal.SIGSTOP)
    agent = start(server, started, tmp_path, "python", "bot.py")
    assert isinstance(agent, ForkedAgent)
    deadline = time.monotonic() + 10
    while agent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert agent.poll() == -signal.SIGKILL and agent.orphaned  # its game is played again
    assert not server.alive and server.process.poll() is not None


def test_an_agent_too_big_for_the_fork_server_is_spawned_and_nothing_leaks(
    server: ForkServer, started: list[RunningAgent], tmp_path: Path
) -> None:
    (tmp_path / "bot.py").write_text("import sys\nsys.stderr.write(str(len(sys.argv[1])))\n")
    fds = []
    for _ in range(2):  # the first also starts what spawned agents share (the stderr pump)
        agent = start(server, started, tmp_path, "python", "bot.py", "x" * 70_000)
        assert not isinstance(agent, ForkedAgent)
        assert agent.wait(timeout=20) == 0 and agent.stderr_text() == "70000"
        agent.stop()
        fds.append(len(os.listdir("/proc/self/fd")))
    assert fds[1] == fds[0]


# The end of a test bot that waits for the test to create `go` in its directory: what it
# started is looked up while it still runs (the pids it reports are its own namespace's).
_UNTIL_GO = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.02)\n"


def _wait_for_line(agent: RunningAgent, pattern: str) -> re.Match[str]:
    import time

    deadline = time.monotonic() + 20
    while (seen := re.search(pattern, agent.stderr_text())) is None:
        assert time.monotonic() < deadline, agent.stderr_text()
        time.sleep(0.02)
    return seen


def _host_pid(reported: int, agent: RunningAgent) -> int:
    assert agent.pid is not None
    pid = host_pid(reported, agent.pid)
    assert pid is not None, f"no live process is the agent's {reported}"
    return pid


def _reported_pid(agent: RunningAgent, label: str) -> int:
    """The host pid of the live process the agent names after `label` on its stderr."""
    return _host_pid(int(_wait_for_line(agent, rf"{label} (\d+)").group(1)), agent)


def _gone(pid: int, timeout: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def _memory_of(pid: int) -> bytes:
    """Every readable private mapping of a process (it is our child, so ptrace rules allow)."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if "r" not in fields[1] or (len(fields) > 5 and fields[5].startswith("[v")):
                continue
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, ValueError, OverflowError):
                continue
    assert sum(map(len, chunks)) > 1_000_000, "could not read the fork server's memory"
    return b"".join(chunks)


def test_when_its_last_client_goes_the_fork_server_ends_its_agents_and_exits(
    started: list[RunningAgent], tmp_path: Path
) -> None:
    # The worker holding the socket died: nothing may keep playing without it.
    server = ForkServer()
    (tmp_path / "bot.py").write_text("import time\nwhile True: time.sleep(1)\n")
    agent = start(server, started, tmp_path, "python", "bot.py")
    assert agent.poll() is None
    server.control.close()
    assert server.process.wait(timeout=10) == 0
    assert agent.wait(timeout=10) == -signal.SIGKILL
    assert _gone(agent.pid)
