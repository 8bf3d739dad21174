"""Process agents: a fresh process group per seat, rlimits, a clean env, killed with children."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from arena.interpreter import arena_command, bridged_at
from runner.launch import rlimits, rundirs
from runner.launch.capture import StderrCapture
from runner.launch.exits import describe_exit
from runner.launch.spec import AgentLimits, AgentSpec, LaunchError, safe_label

if TYPE_CHECKING:
    from runner.launch.forkserver import ForkServer

# Directories a process agent may find programs in besides its own executable's directory.
SYSTEM_PATH = "/usr/bin:/bin"

# Every variable a process agent sees besides ARENA_GAME_MASTER and ARENA_SEAT_TOKEN, and why.
# Nothing else from the worker's environment reaches a bot (no credentials, no ARENA_ADMIN_TOKEN,
# no PYTHONPATH or LD_PRELOAD to steer it, nothing to tell seats apart but the token).
RUNTIME_VARIABLES: dict[str, str] = {
    "PATH": "the executable's own directory first, so an interpreter in a virtualenv or SDK finds "
    "its siblings, then /usr/bin:/bin for the standard tools runtimes shell out to",
    "HOME": "a private directory made for this agent and removed afterwards: runtimes (pip, npm, "
    "the JVM, .NET) write caches under ~, and a throwaway home hides the worker's own home "
    "and keeps a bot from remembering a deal from one game to the next",
    "TMPDIR": "a tmp/ directory beside that home, for the same reasons: temporary files stay "
    "private to the agent and disappear with it",
    "LANG": "C.UTF-8, so text I/O is UTF-8 whatever the worker's locale (and Python does not "
    "coerce a C locale by adding LC_CTYPE)",
}
RUNTIME_LANG = "C.UTF-8"


_POLL_INITIAL = 0.002
_POLL_MAX = 0.05
# How long exit diagnosis waits for the last stderr bytes of a process that already exited.
_STDERR_SETTLE = 0.5


def resolve_executable(program: str, directory: Path, search_path: str | None = None) -> str:
    """Absolute path of `program`: relative to the bot directory if it has a slash, else on PATH.

    This happens before the environment is cleaned, so a bot may be run by a bare interpreter
    name the worker can find (`node`) even though the agent's PATH is restricted. Give it the
    program of arena_command(), where `python` is the arena's own Python.
    The path is made absolute without resolving symlinks, so a virtualenv's python stays itself.
    """
    if not program:
        raise LaunchError("agent command is empty")
    if "/" in program:
        candidate = os.path.abspath(directory / program)
        if not os.path.isfile(candidate):
            raise LaunchError(f"agent command {program!r} not found (looked for {candidate})")
        if not os.access(candidate, os.X_OK):
            raise LaunchError(f"agent command {program!r} is not executable ({candidate})")
        return candidate
    found = shutil.which(program, path=search_path)
    if found is None:
        where = search_path if search_path is not None else os.environ.get("PATH", "")
        raise LaunchError(f"agent command {program!r} not found on PATH ({where})")
    return os.path.abspath(found)


def cannot_start(command: Sequence[str] | None, directory: str) -> str | None:
    """Why a bot registered with `command` in `directory` cannot start on this machine (its
    directory or program is gone); None if it can, or if it runs as a container."""
    if command is None:
        return None
    if not Path(directory).is_dir():
        return f"its directory {directory} does not exist"
    try:
        agent_argv(command, Path(directory))
    except LaunchError as exc:
        return str(exc)
    return None


def agent_argv(command: Sequence[str], directory: Path) -> list[str]:
    """The argv that starts a bot registered with `command`: its program resolved as
    resolve_executable says, and so is the program the stdio bridge is to run, which would
    otherwise be looked for on the agent's own cleaned PATH, where a program in /usr/local/bin
    (or anywhere but the arena's and the system's directories) is not."""
    argv = arena_command(command)
    argv[0] = resolve_executable(argv[0], directory)
    if (at := bridged_at(argv)) is not None:
        child = arena_command(argv[at:])
        child[0] = resolve_executable(child[0], directory)
        argv[at:] = child
    return argv


def agent_environment(executable: str, home: Path, tmp: Path, spec: AgentSpec) -> dict[str, str]:
    """Exactly the variables in RUNTIME_VARIABLES plus the two ARENA_ ones."""
    return {
        "PATH": f"{os.path.dirname(executable)}:{SYSTEM_PATH}",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": RUNTIME_LANG,
        **spec.arena_env(),
    }


def _read_zombie_cpu(pid: int) -> float | None:
    """CPU seconds of an exited, not yet reaped child, from /proc (utime + stime)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Child(Protocol):
    """What RunningAgent needs of its process: a Popen, or the fork server's stand-in."""

    pid: int
    returncode: int | None


class RunningAgent:
    """One started agent. Call `stop()` (or use `with`) when the game ends, even if it exited.

    The process group leader is never reaped before `stop()`: as a zombie it keeps the group
    id reserved, so signalling the group can never hit an unrelated process that reused it.
    """

    container = False
    # Killed because whatever ran it went away (the fork server died), not for its own doing.
    orphaned = False

    def __init__(
        self,
        popen: Child,
        capture: StderrCapture,
        limits: AgentLimits,
        run_dir: Path,
        grace_seconds: float,
        label: str,
    ) -> None:
        self.label = label
        self.limits = limits
        self._popen = popen
        self._capture = capture
        self._run_dir = run_dir
        self._grace = grace_seconds
        self._returncode: int | None = None
        self._cpu_used: float | None = None
        self._stopped = False
        self._reaped = False
        self._stderr_settled = False
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def pgid(self) -> int:
        return self._popen.pid  # start_new_session makes the agent its group's leader

    @property
    def stderr_path(self) -> Path:
        """The capped stderr file (inside the private directory unless a log_dir was given)."""
        return self._capture.path

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        """Exit code, or minus the signal number, once the agent's main process has ended."""
        if self._returncode is not None:
            return self._returncode
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            # Someone else reaped it (SIGCHLD ignored?); like Popen, assume a clean exit.
            self._returncode = 0
            self._reaped = True
            return 0
        if info is None or info.si_pid == 0:
            return None
        self._cpu_used = _read_zombie_cpu(self.pid)
        exited = info.si_code == os.CLD_EXITED
        self._returncode = info.si_status if exited else -info.si_status
        return self._returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the main process to end; None if it still runs after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = _POLL_INITIAL
        while (code := self.poll()) is None:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                delay = min(delay, remaining)
            time.sleep(delay)
            delay = min(delay * 2, _POLL_MAX)
        return code

    def _signal_group(self, signum: int) -> None:
        # Lookup errors mean the whole group is gone already.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signum)

    def stop(self) -> None:
        """Kill the whole process group (SIGTERM, a short grace, SIGKILL), reap, clean up.

        Safe to call more than once and after the agent exited by itself; children it left
        behind are killed too. A child that left the group on purpose (setsid) escapes here;
        the fork server adopts and ends those of the agents it forked, and agents are spawned
        only when it cannot run.
        """
        with self._lock:
            if not self._reaped:
                if self.poll() is None:
                    self._stopped = True
                    self._signal_group(signal.SIGTERM)
                    self.wait(self._grace)
                # Always: the leader may be gone while its children still run.
                self._signal_group(signal.SIGKILL)
                self._reap()
            self._capture.join(timeout=1.0)
            self._stderr_settled = True
            if self._run_dir.exists():
                rundirs.remove_tree(self._run_dir)

    def _reap(self) -> None:
        _, status, usage = os.wait4(self.pid, 0)
        self._reaped = True
        self._cpu_used = usage.ru_utime + usage.ru_stime
        if self._returncode is None:
            self._returncode = os.waitstatus_to_exitcode(status)
        self._popen.returncode = self._returncode  # keeps Popen from warning it still runs

    def _settle_stderr(self) -> None:
        """Once the agent exited, wait (briefly) for its last stderr bytes still in the pipe."""
        if not self._stderr_settled and self.poll() is not None:
            # Bounded: children the agent left behind may hold the pipe open until stop().
            self._capture.join(timeout=_STDERR_SETTLE)
            self._stderr_settled = True

    def stderr_text(self) -> str:
        """What the agent wrote to stderr, cut after the limit with a "[truncated: …]" line.

        While the agent runs this is what arrived so far; once it exited, all of it.
        """
        self._settle_stderr()
        return self._capture.text()

    def exit_reason(self) -> str | None:
        """Why the agent ended, in words (see `describe_exit`); None while it runs."""
        code = self.poll()
        if code is None:
            return None
        self._settle_stderr()  # the last lines (a MemoryError traceback) decide the verdict
        return describe_exit(
            code,
            limits=self.limits,
            stopped=self._stopped,
            cpu_used=self._cpu_used,
            stderr=self._capture.sample(),
            container=self.container,
        )

    def __enter__(self) -> RunningAgent:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label!r} pid={self.pid} returncode={self.poll()}>"


def _stderr_path(label: str, run_dir: Path, log_dir: Path | None) -> Path:
    if log_dir is not None:
        return log_dir / f"{safe_label(label)}.stderr.log"
    return run_dir / "stderr.log"


def start_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: AgentLimits,
    run_dir: Path,
    label: str,
    log_dir: Path | None,
    grace_seconds: float,
    apply_rlimits: bool,
    agent_class: type[RunningAgent] = RunningAgent,
    **extra: Any,
) -> RunningAgent:
    """The machinery both launchers share: new session, capped stderr, optional rlimits."""
    stderr_path = _stderr_path(label, run_dir, log_dir)
    full_argv = list(argv)
    if apply_rlimits:
        cpu = limits.cpu_seconds or 0
        memory = limits.memory_bytes or 0
        wrapper = [sys.executable, "-I", "-S", rlimits.__file__, str(cpu), str(memory)]
        full_argv = [*wrapper, *argv]
    try:
        popen = subprocess.Popen(
            full_argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # agents talk gRPC; stdout carries nothing we keep
            stderr=subprocess.PIPE,
            start_new_session=True,  # own session and process group, no controlling tty
            close_fds=True,
        )
    except OSError as error:
        rundirs.remove_tree(run_dir)
        raise LaunchError(f"cannot start {argv[0]!r} in {str(cwd)!r}: {error}") from error
    assert popen.stderr is not None
    capture = StderrCapture(popen.stderr, limits.stderr_bytes, stderr_path)
    return agent_class(popen, capture, limits, run_dir, grace_seconds, label, **extra)


class ProcessLauncher:
    """Starts each agent as a local process with rlimits and a clean, documented environment.

    Limits are POSIX rlimits per process: RLIMIT_CPU counts CPU seconds, and RLIMIT_DATA counts
    writable private memory (heap, anonymous mappings, thread stacks). RLIMIT_DATA rather than
    RLIMIT_AS because runtimes reserve large inaccessible address ranges up front (Node/V8's
    code range, Go, the JVM) and die at start under an address-space cap, while such
    reservations count for nothing here until written. The container launcher's cgroup limit
    counts resident memory instead.
    """

    def __init__(
        self,
        *,
        log_dir: Path | None = None,
        grace_seconds: float = 1.0,
        forkserver: ForkServer | Callable[[], ForkServer | None] | None = None,
    ) -> None:
        self.log_dir = log_dir
        self.grace_seconds = grace_seconds
        # Agents fork from it when given (runner.launch.forkserver), else they are spawned.
        # A function is asked at each launch: forkserver.shared replaces one that died.
        self.forkserver = forkserver

    def launch(self, spec: AgentSpec) -> RunningAgent:
        if not spec.command:
            raise LaunchError(f"agent {spec.label!r} has no command")
        directory = Path(spec.directory).resolve()
        if not directory.is_dir():
            raise LaunchError(f"bot directory {str(spec.directory)!r} does not exist")
        argv = agent_argv(spec.command, directory)
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        run_dir = rundirs.take()
        home, tmp = run_dir / "home", run_dir / "tmp"
        env = agent_environment(argv[0], home, tmp, spec)
        server = self.forkserver() if callable(self.forkserver) else self.forkserver
        if server is not None:
            forked = server.launch(
                argv,
                cwd=directory,
                env=env,
                limits=spec.limits,
                run_dir=run_dir,
                stderr_path=_stderr_path(spec.label, run_dir, self.log_dir),
                label=spec.label,
                grace_seconds=self.grace_seconds,
            )
            if forked is not None:
                return forked
        return start_process(
            argv,
            cwd=directory,  # run in place: the bot's files are read, not copied
            env=env,
            limits=spec.limits,
            run_dir=run_dir,
            label=spec.label,
            log_dir=self.log_dir,
            grace_seconds=self.grace_seconds,
            apply_rlimits=True,
        )
