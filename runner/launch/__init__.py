"""Agent launchers: start one fresh, limited agent per seat, as a process or a container."""

from __future__ import annotations

from runner.launch.container import ContainerLauncher, RunningContainer
from runner.launch.exits import describe_exit
from runner.launch.process import RUNTIME_VARIABLES, ProcessLauncher, RunningAgent
from runner.launch.spec import (
    GAME_MASTER_ENV,
    SEAT_TOKEN_ENV,
    AgentLimits,
    AgentSpec,
    LaunchError,
)

__all__ = [
    "GAME_MASTER_ENV",
    "RUNTIME_VARIABLES",
    "SEAT_TOKEN_ENV",
    "AgentLimits",
    "AgentSpec",
    "ContainerLauncher",
    "LaunchError",
    "ProcessLauncher",
    "RunningAgent",
    "RunningContainer",
    "describe_exit",
]
