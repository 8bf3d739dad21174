"""gRPC's settings for the arena's processes, made before any of them imports grpc.

gRPC reads GRPC_EXPERIMENTS once, when grpc is imported (so `arena/__init__.py` applies this
first). Python's gRPC runs on gRPC's EventEngine by default in recent grpcio; the poller it
replaces costs less here, where every decision is one small message each way: with it, a
decision of a full game between four SDK agents takes about 0.8× the time, the game master
about 0.8× the CPU and the agents about 0.9× (grpcio 1.85; `bench/grpc_tuning.py` measures
both ways in one run).

Only grpcio versions measured with it get it: gRPC logs an experiment it does not know as an
error in every process, and later versions may drop the old poller. A GRPC_EXPERIMENTS already
set is kept (empty: gRPC's own defaults).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path

VARIABLE = "GRPC_EXPERIMENTS"
OLD_POLLER = (
    "-event_engine_client,-event_engine_listener,-event_engine_for_all_other_endpoints,"
    "-event_engine_callback_cq"
)
MEASURED = ((1, 85), (1, 90))  # from this grpcio minor version, up to that one (excluded)


def apply(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set GRPC_EXPERIMENTS for this process (and what it starts) unless it is set."""
    if VARIABLE not in environ and measured(grpcio_version()):
        environ[VARIABLE] = OLD_POLLER


def measured(version: tuple[int, int] | None) -> bool:
    return version is not None and MEASURED[0] <= version < MEASURED[1]


def grpcio_version() -> tuple[int, int] | None:
    """grpcio's major and minor version, read without importing grpc (which would read the
    settings); None if grpcio is not installed."""
    spec = importlib.util.find_spec("grpc")
    if spec is None or spec.origin is None:
        return None
    try:
        text = (Path(spec.origin).parent / "_grpcio_metadata.py").read_text()
    except OSError:
        return None
    found = re.search(r"(\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else None


def setting(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """GRPC_EXPERIMENTS as it is here, for a clean environment that keeps it ({} if unset)."""
    return {VARIABLE: environ[VARIABLE]} if VARIABLE in environ else {}


def without_ours(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of `environ` without the setting `apply` made: a bot an arena process starts
    (the stdio bridge's) gets the agent's environment, nothing of the arena's."""
    env = dict(environ)
    if env.get(VARIABLE) == OLD_POLLER:
        del env[VARIABLE]
    return env
