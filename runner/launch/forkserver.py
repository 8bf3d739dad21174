"""Process agents started by forking the warm Python (runner.launch.zygote), not spawned.

A Python agent runs in the forked copy itself when its command runs the arena's own Python as
`python -m MODULE ARGS` or `python SCRIPT ARGS` (a leading `python` in a manifest means that
Python: arena.interpreter): it skips Python's start-up and its imports. The forked child execs
any other command. For every agent nothing else changes: the same directory, environment,
limits, own process group, captured stderr and exit diagnosis as a spawned process. What
differs, and is documented for bot authors: a warm Python agent finds the SDK, grpc and
protobuf already imported and shares the warm Python's hash seed; an agent's process group is
killed as soon as its main process exits rather than at game end; and what left its group
(setsid) is ended too, since the fork server adopts it.

Each worker process starts one fork server before its first game set; any other process that
launches agents through Launchers.default() starts its own on first use. If it cannot start
or dies, agents are spawned.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena import grpc_tuning
from arena.config import env
from runner.launch import pidns
from runner.launch.capture import StderrCapture
from runner.launch.process import RUNTIME_LANG, SYSTEM_PATH, RunningAgent
from runner.launch.spec import AgentLimits, LaunchError

log = logging.getLogger("arena.launch")

# The request travels through a pipe written before the child reads it: it must fit in the
# pipe's buffer (64 KiB on Linux).
REQUEST_LIMIT = 60_000
# The fork server imports grpc but never starts it, so each agent starts gRPC afresh, as a
# spawned one does (about 5 ms of CPU). Starting it once in the fork server and relying on
# gRPC's fork support (GRPC_ENABLE_FORK_SUPPORT) saved that, but under load about one agent in
# 150 hung for good in its first grpc.insecure_channel: a lock held across the fork (found by
# bench-style stress with py-spy; it once cost a CI run a forfeit). Fork handlers stay off so
# gRPC registers none in the fork server.
GRPC_NO_FORK_HANDLERS = {"GRPC_ENABLE_FORK_SUPPORT": "false"}
# How long a launch waits for the fork server to say it forked (it may still be importing).
# Below a game's connect time (20 s in tournaments): a fork server that stopped answering is
# replaced, and its game played again, before a seat could forfeit for not connecting.
_START_TIMEOUT = 10.0
# How long stop() waits for the fork server to report a SIGKILLed agent's end.
_REAP_TIMEOUT = 10.0


class NotForked(LaunchError):
    """The fork server cannot start this agent: spawn it instead."""


class ForkServerGone(NotForked):
    """The fork server is not running."""


def runs_warm(argv: Sequence[str]) -> bool:
    """True when argv is the arena's Python running a module (-m) or a script, no options:
    the forked warm Python runs it itself instead of exec'ing a fresh interpreter."""
    if len(argv) < 2 or argv[0] != sys.executable:
        return False
    return (argv[1] == "-m" and len(argv) >= 3) or not argv[1].startswith("-")


class ForkServer:
    """A client of one warm Python process; safe to use from several threads and processes.

    Requests are single SEQPACKET messages (atomic) and each agent's answers come back on its
    own pipe, so callers never read each other's replies.
    """

    def __init__(self, *, pid_namespaces: bool = True) -> None:
        """`pid_namespaces=False` runs agents in the host's process table even where the fork
        server could give each its own (bench/agent_start.py measures what they cost)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-m", "runner.launch.zygote", str(theirs.fileno())]
        if not pid_namespaces:
            argv.append(pidns.OFF)
        for directory in _private_directories():
            argv += [pidns.HIDE, directory]
        try:
            self.process = subprocess.Popen(
                argv,
                pass_fds=[theirs.fileno()],
                # Like an agent's: nothing of the worker's environment reaches bots through it.
                env={
                    "PATH": f"{os.path.dirname(sys.executable)}:{SYSTEM_PATH}",
                    "LANG": RUNTIME_LANG,
                    **GRPC_NO_FORK_HANDLERS,
                    # Its Python agents run on the worker's gRPC settings, an operator's too.
                    **grpc_tuning.setting(),
                },
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                # Out of the worker's process group: a terminal's Ctrl-C is not for it (it ends
                # when its client goes), and it died of it with a traceback.
                start_new_session=True,
            )
        except OSError as error:
            ours.close()
            raise ForkServerGone(f"cannot start the fork server: {error}") from error
        finally:
            theirs.close()
        self.control = ours
        self.alive = True

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        limits: AgentLimits,
        stderr_fd: int,
    ) -> StatusPipe:
        """Ask for one agent; its status pipe will say "pid N" once it is forked.

        This does not wait for the fork, so a game's four agents start side by side.
        """
        request = json.dumps(
            {
                "argv": list(argv),
                "warm": runs_warm(argv),
                "cwd": str(cwd),
                "env": dict(env),
                "cpu_seconds": limits.cpu_seconds,
                "memory_bytes": limits.memory_bytes,
            }
        ).encode()
        if len(request) > REQUEST_LIMIT:
            raise NotForked(
                f"the agent's command and environment exceed the fork server's {REQUEST_LIMIT} "
                "bytes"
            )
        request_r, request_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            os.write(request_w, request)
            os.close(request_w)
            request_w = -1
            socket.send_fds(self.control, [b"launch"], [request_r, status_w, stderr_fd])
        except OSError as error:
            os.close(status_r)
            self.alive = False
            raise ForkServerGone(f"the fork server is gone: {error}") from error
        finally:
            for fd in (request_r, request_w, status_w):
                if fd >= 0:
                    os.close(fd)
        return StatusPipe(status_r)

    def kill(self) -> None:
        """End a fork server that stopped answering (a bot may have sent it SIGSTOP): its
        agents' status pipes close, so each is ended as an orphan, and the next launch starts
        a new one."""
        self.alive = False
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(_REAP_TIMEOUT)

    def signal_group(self, pid: int, signum: int) -> None:
        """Signal an agent's group, if its leader still runs (the fork server knows)."""
        try:
            self.control.send(f"signal {pid} {signum}".encode())
        except OSError:
            # Gone: it closed every status pipe, and each agent's next poll ends it.
            self.alive = False

    def launch(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        limits: AgentLimits,
        run_dir: Path,
        stderr_path: Path,
        label: str,
        grace_seconds: float,
    ) -> ForkedAgent | None:
        """Start one agent by fork; None if the fork server is gone or cannot take it.

        None means: spawn it instead.
        """
        if not self.alive:
            return None
        stderr_r, stderr_w = os.pipe()
        try:
            status = self.start(argv, cwd=cwd, env=env, limits=limits, stderr_fd=stderr_w)
        except NotForked as error:
            os.close(stderr_r)
            log.warning("%s; spawning %s instead", error, label)
            return None
        finally:
            os.close(stderr_w)
        capture = StderrCapture(os.fdopen(stderr_r, "rb"), limits.stderr_bytes, stderr_path)
        return ForkedAgent(self, status, capture, limits, run_dir, grace_seconds, label)


class StatusPipe:
    """Lines the fork server writes about one agent: "pid N", then "exit CODE CPU"."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""

    def read_line(self, timeout: float | None) -> str | None:
        """The next line; "" at end of file, None if nothing came within `timeout` seconds."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.fd, 256)
            if not chunk:
                return ""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("ascii", "replace")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class _Forked:
    """What RunningAgent keeps of a child: its pid (0 until known) and how it ended."""

    pid: int = 0
    returncode: int | None = None


class ForkedAgent(RunningAgent):
    """An agent the fork server started: its parent (the fork server) reaps and signals it."""

    def __init__(
        self,
        server: ForkServer,
        status: StatusPipe,
        capture: StderrCapture,
        limits: AgentLimits,
        run_dir: Path,
        grace_seconds: float,
        label: str,
    ) -> None:
        self._forked = _Forked()
        super().__init__(self._forked, capture, limits, run_dir, grace_seconds, label)
        self._server = server
        self._status = status
        self._status_lock = threading.Lock()
        self._launched = time.monotonic()

    @property
    def pid(self) -> int:
        """The agent's pid, once the fork server has forked it (waits for that, briefly)."""
        if not self._forked.pid and self._returncode is None:
            self._read_status(_START_TIMEOUT, until_pid=True)
            if not self._forked.pid and self._returncode is None:
                self._server_silent()
        return self._forked.pid

    def _server_silent(self) -> None:
        """The fork server did not start this agent in time (a bot may have stopped it): it is
        replaced, and the agent ends as an orphan (its game is played again)."""
        log.warning(
            "the fork server did not start agent %s within %.0f s; it is replaced",
            self.label,
            _START_TIMEOUT,
        )
        self._server.kill()
        self._read_status(_REAP_TIMEOUT)  # its end of the pipe is closed now

    @property
    def pgid(self) -> int:
        return self.pid  # the fork server's child calls setsid(): it leads its own group

    def poll(self) -> int | None:
        code = self._read_status(0)
        late = time.monotonic() - self._launched > _START_TIMEOUT
        if code is None and not self._forked.pid and late:
            self._server_silent()
            code = self._returncode
        return code

    def wait(self, timeout: float | None = None) -> int | None:
        return self._read_status(timeout)

    def _read_status(self, timeout: float | None, *, until_pid: bool = False) -> int | None:
        """Read what the fork server said ("pid N", "exit CODE CPU"); the exit code if ended.
        With `until_pid`, stop reading once the pid is known (the agent may run on)."""
        with self._status_lock:
            while self._returncode is None and not (until_pid and self._forked.pid):
                line = self._status.read_line(timeout)
                if line is None:
                    return None  # still running
                if line.startswith("pid "):
                    # The first is the fork server's; a bot could write more into this pipe
                    # through /proc/<fork server>/fd, to steer where an orphan's kill goes.
                    self._forked.pid = self._forked.pid or int(line.split()[1])
                    continue
                self._status.close()
                self._reaped = True
                if line.startswith("exit "):
                    _, code, cpu = line.split()
                    self._returncode, self._cpu_used = int(code), float(cpu)
                else:
                    self._returncode = self._orphaned()
            return self._returncode

    def _orphaned(self) -> int:
        """End of file, no verdict: the fork server died. Its agent is nobody's child now, so
        end its group here rather than leave it playing unsupervised."""
        log.warning("the fork server died; killing agent %s", self.label)
        self.orphaned = True
        self._server.alive = False  # the next launch starts a new one (forkserver.shared)
        if self._forked.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._forked.pid, signal.SIGKILL)
        return -signal.SIGKILL

    def _signal_group(self, signum: int) -> None:
        # Through the fork server, which signals only a group whose leader it has not reaped.
        if self._returncode is None:
            self._server.signal_group(self.pid, signum)

    def _reap(self) -> None:
        if self.wait(_REAP_TIMEOUT) is not None:
            return
        # The fork server did not pass on the SIGKILL or report the end: it is not answering.
        log.warning(
            "agent %s (pid %d) did not end after SIGKILL; the fork server is not answering, "
            "so it is replaced",
            self.label,
            self.pid,
        )
        self._server.kill()
        self.wait(_REAP_TIMEOUT)


_shared: ForkServer | None = None
_shared_lock = threading.Lock()


def _private_directories() -> list[str]:
    """What sealed agents must not see into (pidns.Room): the data directory, whose SQLite
    database knows every hand not yet played, and the agents' logs."""
    return [
        os.path.abspath(name) for name in (env("ARENA_DATA_DIR"), env("ARENA_AGENT_LOGS")) if name
    ]


def shared() -> ForkServer | None:
    """This process's fork server, started on first use (again if it died); None if it can't."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive:
            try:
                _shared = ForkServer()
            except ForkServerGone as error:
                log.warning("%s; agents are spawned instead", error)
                return None
        return _shared
