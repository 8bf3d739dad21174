"""What a launcher needs to start one agent: the bot's command, its seat, and its limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from arena.errors import ArenaError

KIB = 1024
MIB = 1024 * KIB

# The only two variables that carry game information to an agent (ARCHITECTURE §3).
GAME_MASTER_ENV = "ARENA_GAME_MASTER"
SEAT_TOKEN_ENV = "ARENA_SEAT_TOKEN"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_label(label: str) -> str:
    """A label reduced to characters safe in file names and docker container names."""
    return _UNSAFE.sub("-", label).strip("-.") or "agent"


class LaunchError(ArenaError, RuntimeError):
    """An agent could not be started: missing command, missing docker, bad spec."""


@dataclass(frozen=True)
class AgentLimits:
    """Resources one agent may use; `None` switches a limit off."""

    cpu_seconds: int | None = 60
    memory_bytes: int | None = 512 * MIB
    stderr_bytes: int = 64 * KIB
    # Containers only: a process agent has no cheap per-agent equivalent.
    cpus: float = 1.0
    pids: int = 128

    def __post_init__(self) -> None:
        if self.cpu_seconds is not None and self.cpu_seconds < 1:
            raise LaunchError(f"cpu_seconds={self.cpu_seconds!r} must be at least 1")
        if self.memory_bytes is not None and self.memory_bytes < MIB:
            raise LaunchError(f"memory_bytes={self.memory_bytes!r} must be at least 1 MiB")
        if self.stderr_bytes < 0:
            raise LaunchError(f"stderr_bytes={self.stderr_bytes!r} must not be negative")
        if self.cpus <= 0:
            raise LaunchError(f"cpus={self.cpus!r} must be positive")
        if self.pids < 1:
            raise LaunchError(f"pids={self.pids!r} must be at least 1")


@dataclass(frozen=True)
class AgentSpec:
    """One agent for one seat of one game.

    `command` is argv for a process agent; for a container agent it is optional and, when
    given, replaces the image's default command. `label` names logs and containers, so the
    worker should make it unique per seat (e.g. "gs42-g1-s3").
    """

    command: tuple[str, ...]
    directory: Path
    game_master: str
    seat_token: str = field(repr=False)  # a secret: keep it out of logs and reprs
    limits: AgentLimits = AgentLimits()
    label: str = "agent"
    image: str = ""

    def arena_env(self) -> dict[str, str]:
        return {GAME_MASTER_ENV: self.game_master, SEAT_TOKEN_ENV: self.seat_token}
