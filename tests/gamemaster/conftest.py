"""Fixtures: a game master on a free port in this process, and a client of its admin calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.policy import GameLimits
from arena.gamemaster.server import RunningGameMaster, start_in_thread


@pytest.fixture(scope="module")
def gm() -> Iterator[RunningGameMaster]:
    server = start_in_thread(
        "127.0.0.1:0",
        limits=GameLimits(decision_ms=5000, bank_ms=10000, fault_limit=5, connect_ms=20000),
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def client(gm: RunningGameMaster) -> Iterator[GameMasterClient]:
    with GameMasterClient(gm.address, admin_token="") as c:
        c.wait_ready()
        yield c
