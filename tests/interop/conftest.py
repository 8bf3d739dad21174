"""Fixtures: one local game master per module, and the JavaScript agent's npm packages."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from arena.gamemaster.policy import GameLimits
from arena.local_match import LocalGameMaster
from tests.interop.agents import JS_DIR

# Generous: several games and their processes share two CPUs in CI.
LIMITS = GameLimits(decision_ms=5000, bank_ms=20000, fault_limit=5, connect_ms=30000)


@pytest.fixture(scope="module")
def local_gm() -> Iterator[LocalGameMaster]:
    with LocalGameMaster(LIMITS) as gm:
        yield gm


@pytest.fixture(scope="session")
def js_ready() -> None:
    """The JavaScript agent's packages (scripts/setup installs them; this covers a bare clone)."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    if not (JS_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: cannot install the JS agent's packages"
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=JS_DIR, check=True, timeout=300
        )
