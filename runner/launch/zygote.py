"""The warm Python: one pre-imported interpreter that forks agents on request.

A fresh Python agent spends about 0.1 CPU-seconds importing grpc, protobuf and the arena SDK
before it says hello; four of them per game were most of what a worker's CPU did for bots that
answer instantly. This process imports all that once and forks a copy per agent instead
(bench/agent_start.py). It imports gRPC but never starts it: it stays one thread, so a fork
copies no lock another thread holds (forkserver.GRPC_NO_FORK_HANDLERS says why). Agents in
other languages are forked too, and exec their command. Each agent gets a PID namespace of its
own where this process may make one (pidns.py), which ends everything the agent started when
it ends; elsewhere this process, their parent and child subreaper, ends what agents leave
behind, even outside their process group, once none runs.

It never learns what it runs. `runner.launch.forkserver` sends it the word "launch" with three
file descriptors (SCM_RIGHTS over a Unix SEQPACKET socket): a pipe holding the launch request
(argv, directory, environment with the seat token, limits), the write end of the agent's status
pipe, and the agent's stderr. Only the forked child reads the request, so no seat token ever
sits in this process's memory, where every later child would inherit it. The parent writes
"pid N" and, once the agent ended, "exit CODE CPU_SECONDS" to the status pipe, then closes it.
"signal PID SIGNUM" signals an agent's process group, only while its leader is unreaped, so a
signal can never reach a process group that reused the number.

When the last holder of the socket goes away (its worker) it kills every agent's group and
exits. Run as `python -m runner.launch.zygote FD [--no-pid-namespaces] [--hide DIR]...`, FD being
its socket end and each DIR one that sealed agents must not see into (pidns.Room).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import itertools
import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Collection
from pathlib import Path
from typing import NoReturn

import arena.agent  # noqa: F401  (the point of this process: the SDK, grpc and protobuf, warm)
from runner.launch import pidns, rlimits


class ChildTask:
    """What a forked child does once it has left the parent's loop: become the agent."""

    def __init__(self, request_fd: int) -> None:
        with os.fdopen(request_fd, "rb") as pipe:
            self.request = json.loads(pipe.read())  # the launcher wrote it all and closed its end

    def room(self, hidden: Collection[str]) -> pidns.Room | None:
        """The agent's own places (pidns.enter): its directory (HOME's), its bot's and its game
        master's socket. One that dials that socket is sealed: it needs no network, no place to
        write but its own, and no sight of the other agents' directories (beside its own) or of
        `hidden`."""
        env = self.request["env"]
        if "HOME" not in env:
            return None
        own = os.path.dirname(env["HOME"])
        address = env.get("ARENA_GAME_MASTER", "")
        sealed = address.startswith("unix:")
        socket_path = (address.removeprefix("unix:"),) if sealed else ()
        return pidns.Room(
            own=own,
            visible=(self.request["cwd"], *socket_path),
            hidden=(os.path.dirname(own), *hidden),
            sealed=sealed,
        )

    def run(self) -> None:
        """Run the agent: its Python entry point, as `python -m MODULE` or `python SCRIPT`, in
        this warm Python, or any other command by exec."""
        request = self.request
        try:
            rlimits.apply(request["cpu_seconds"], request["memory_bytes"])
            os.chdir(request["cwd"])
        except OSError as error:
            sys.stderr.write(f"arena: cannot start the agent: {error}\n")
            raise SystemExit(rlimits.CANNOT_RUN) from None
        if not request["warm"]:
            rlimits.exec_program(request["argv"], request["env"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # TMPDIR is the agent's own now: forget any cached choice
        argv = request["argv"]
        if argv[1] == "-m":  # as `python -m MODULE ARGS`: the directory first on sys.path
            sys.argv = argv[2:]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        else:  # as `python SCRIPT ARGS`: the script's own directory first on sys.path
            sys.argv = argv[1:]
            sys.path[0] = os.path.dirname(os.path.realpath(argv[1]))
            runpy.run_path(argv[1], run_name="__main__")


class Zygote:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.agents: dict[int, int] = {}  # leader pid -> write end of its status pipe
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)

    def serve(self) -> ChildTask | None:
        """Answer requests until the socket closes; in a forked child, return its task."""
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        while True:
            ready, _, _ = select.select([self.control.fileno(), self.wake_r], [], [])
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
                self._report_exits()
            if self.control.fileno() in ready:
                message, fds, _, _ = socket.recv_fds(self.control, 256, 3)
                if not message:
                    self._shut_down()
                    return None
                task = self._handle(message.decode("ascii", "replace").split(), fds)
                if task is not None:
                    return task

    def _handle(self, words: list[str], fds: list[int]) -> ChildTask | None:
        if words == ["launch"] and len(fds) == 3:
            return self._launch(*fds)
        for fd in fds:
            os.close(fd)
        if len(words) == 3 and words[0] == "signal":
            pid, signum = int(words[1]), int(words[2])
            if pid in self.agents:  # unreaped: the group id is still this agent's
                _signal_agent(pid, signum)
        return None

    def _launch(self, request_fd: int, status_fd: int, stderr_fd: int) -> ChildTask | None:
        pid = os.fork()
        if pid == 0:
            self._become_child(stderr_fd, request_fd)
            return ChildTask(request_fd)
        os.close(request_fd)
        os.close(stderr_fd)
        self.agents[pid] = status_fd
        _write(status_fd, f"pid {pid}\n")
        return None

    def _become_child(self, stderr_fd: int, request_fd: int) -> None:
        os.setsid()  # own session and process group, like start_new_session
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(stderr_fd, 2)
        self.control.detach()  # closed below with everything else the parent held
        os.closerange(3, request_fd)
        os.closerange(request_fd + 1, os.sysconf("SC_OPEN_MAX"))
        self.agents.clear()

    def _report_exits(self) -> None:
        """Report each agent that ended; kill what its group left behind, then reap it."""
        for pid in list(self.agents):
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is None or info.si_pid == 0:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # the leader is a zombie: the group is its own
            _, status, usage = os.wait4(pid, 0)
            status_fd = self.agents.pop(pid)
            cpu = usage.ru_utime + usage.ru_stime
            _write(status_fd, f"exit {os.waitstatus_to_exitcode(status)} {cpu:.3f}\n")
            os.close(status_fd)
        if self.agents:
            _reap_ended_strays(self.agents)
        else:
            _end_strays()

    def _shut_down(self) -> None:
        for pid in self.agents:
            _signal_agent(pid, signal.SIGKILL)
        while self.agents:
            self._report_exits()
            if self.agents:
                select.select([self.wake_r], [], [], 0.1)


# prctl(2): descendants orphaned by an agent's death become this process's children, not init's.
_PR_SET_CHILD_SUBREAPER = 36
_STRAY_ROUNDS = 20
_STRAY_PAUSE = 0.005


def _become_subreaper() -> None:
    """Adopt what agents leave behind: a process that left its agent's group (setsid) would
    otherwise outlive the game under init. Best effort: Linux only."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children() -> list[int]:
    me = os.getpid()  # one thread: its task's children are all the process's
    try:
        return [int(pid) for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split()]
    except OSError:
        return []


def _reap_ended_strays(agents: Collection[int] = ()) -> None:
    """Reap adopted processes that have ended, without waiting: also while agents run (a bot
    that leaves a helper behind on every move must not fill the process table with zombies).
    The leaders of `agents` stay unreaped: their pid holds their group's id."""
    for pid in _children():
        if pid not in agents:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def _end_strays() -> None:
    """Kill and reap every child that is no agent: processes agents left behind, adopted.
    Called when no agent runs, so none of them belongs to a game still being played; each
    killed one's own children are adopted in turn, hence the rounds.

    All are killed before any is waited for, and never with a blocking wait: a stray that
    another one traces (ptrace) can be reaped only once its tracer is gone, and waiting for it
    first hung the fork server. What is still not reaped after the rounds waits for the next
    pass."""
    for _ in range(_STRAY_ROUNDS):
        strays = _children()
        if not strays:
            return
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap_ended_strays()
        time.sleep(_STRAY_PAUSE)  # for the killed to die, and their children to be adopted


def _signal_agent(pid: int, signum: int) -> None:
    """Signal an agent's process group, or the agent alone if it has no group yet.

    A child just forked may not have called setsid() yet; then it runs no bot code and has
    no children, so signalling its pid is enough.
    """
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    except PermissionError:
        pass


def _write(fd: int, text: str) -> None:
    with contextlib.suppress(BrokenPipeError):  # the launcher gave up on this agent
        os.write(fd, text.encode("ascii"))


def exit_like_python(task: ChildTask) -> NoReturn:
    """Run the agent and exit as `python` would, minus tearing down the inherited heap.

    The interpreter's own exit would free every module the warm Python imported, touching
    (and so copying) all the pages the child shares with it: 35 ms of CPU per agent. The
    steps that matter to a program are kept: exit status, traceback, non-daemon threads
    joined, atexit handlers, buffers flushed.
    """
    try:
        task.run()
        code = 0
    except SystemExit as exit_request:
        code = _exit_status(exit_request.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _exit_status(code: object) -> int:
    """SystemExit's argument as the interpreter turns it into an exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main() -> int:
    control = socket.socket(fileno=int(sys.argv[1]))
    # Everything imported so far is shared with every agent, page by page, until written.
    # The garbage collector writes to every object it visits: keep it off what is shared.
    gc.freeze()
    _become_subreaper()
    options = sys.argv[2:]
    isolate = pidns.OFF not in options
    hidden = [path for option, path in itertools.pairwise(options) if option == pidns.HIDE]
    if isolate and not pidns.available():
        sys.stderr.write(
            "arena fork server: cannot give agents a PID namespace of their own (that needs "
            "root, CAP_SYS_ADMIN or user namespaces, which this kernel or container does not "
            "allow this user): process bots see the host's processes "
            "(docs/writing-a-bot.md, section 8)\n"
        )
    task = Zygote(control).serve()
    if task is not None:  # in a forked child
        if isolate:
            pidns.enter(task.room(hidden))
        exit_like_python(task)
    return 0


if __name__ == "__main__":
    sys.exit(main())
