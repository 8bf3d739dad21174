"""The local stack: game master, workers and dashboard as child processes, stopped as one."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arena.errors import ArenaError
from runner.pids import group_members

STARTUP_SECONDS = 30.0
STOP_GRACE_SECONDS = 10.0


class StackError(ArenaError, RuntimeError):
    """A service of the local stack did not start; the message says which and why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def arena_command(*args: str) -> list[str]:
    """The `arena` CLI run by this interpreter, so children use the same installation."""
    return [sys.executable, "-m", "arena.cli", *args]


@dataclass
class Service:
    name: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass
class Stack:
    """Child services, each in its own session so Ctrl-C reaches only us and we stop them.

    All are asked to stop at once: the game master aborts its games, so a worker's set ends at
    once (counting for nothing, played again next time) and the worker stops after it.
    """

    log_dir: Path
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    services: list[Service] = field(default_factory=list)

    def start(self, name: str, command: list[str], ready: Callable[[], bool]) -> Service:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        with log.open("wb") as out:  # this run's log only: log_ready must not read an old one
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        service = Service(name, process, log)
        self.services.append(service)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready():
            if process.poll() is not None:
                raise StackError(
                    f"{name} exited with code {process.returncode} while starting; "
                    f"its log {log} ends with:\n{_tail(log)}"
                )
            if time.monotonic() > deadline:
                raise StackError(
                    f"{name} did not become ready in {STARTUP_SECONDS:.0f} s; see {log}"
                )
            time.sleep(0.2)
        return service

    def check(self) -> None:
        """Raise if a service died (a dead worker pool would leave a tournament waiting)."""
        for s in self.services:
            if s.process.poll() is not None:
                raise StackError(
                    f"{s.name} stopped unexpectedly (code {s.process.returncode}); "
                    f"its log {s.log} ends with:\n{_tail(s.log)}"
                )

    def stop(self) -> None:
        for service in self.services:
            _signal_group(service.process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for service in self.services:
            try:
                service.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(service.process, signal.SIGKILL)
                service.process.wait()
            # Anything left in the group (an agent a worker did not reap) goes too, and is
            # gone when this returns: a process still ending holds its Redis connection, and
            # the embedded Redis, seeing it, was left running for it to stop, which it never did.
            _signal_group(service.process, signal.SIGKILL)
            _wait_group_gone(service.process.pid, STOP_GRACE_SECONDS)
        self.services.clear()


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _wait_group_gone(pgid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def grpc_ready(address: str) -> Callable[[], bool]:
    def ready() -> bool:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        with grpc.insecure_channel(address) as channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=1
                )
            except grpc.RpcError:
                return False
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    return ready


def log_ready(path: Path, text: str) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            return text in path.read_text(errors="replace")
        except OSError:
            return False

    return ready
