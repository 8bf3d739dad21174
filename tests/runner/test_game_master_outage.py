"""A game master that is down, however long, costs game sets a wait, never one of their attempts
(nor the sets themselves), and a restarted one is found within seconds."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import start_in_thread
from arena.storage import open_database, repo
from runner import tournament
from tests.runner.conftest import QUICK, free_port


def test_a_set_waits_out_a_game_master_outage_without_spending_attempts(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    register("greedy", "random")
    monkeypatch.setattr(tournament, "GAME_MASTER_WAIT_S", 1.0)
    address = f"127.0.0.1:{free_port()}"
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, GameMasterClient(address) as client:
        t = tournament.create_tournament(
            db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1
        )
        with db.session() as session:
            [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
        for _ in range(2):  # as RQ's retries would run it, while the game master is down
            with pytest.raises(tournament.GameMasterDown, match="waits for one"):
                tournament.run_game_set(db, set_id, client)
        with db.session() as session:
            game_set = repo.get_game_set(session, set_id)
            assert (game_set.state, game_set.attempts) == ("queued", 0)
        gm = start_in_thread(address)
        monkeypatch.setattr(tournament, "GAME_MASTER_WAIT_S", 60.0)
        try:
            outcome = tournament.run_game_set(db, set_id, client)
        finally:
            gm.stop()
    assert outcome.recorded and outcome.attempts == 1


def test_the_client_finds_a_game_master_back_within_seconds() -> None:
    address = f"127.0.0.1:{free_port()}"
    with GameMasterClient(address) as client:
        with pytest.raises(grpc.FutureTimeoutError):
            client.wait_ready(timeout=10)  # gRPC backs off 1, 1.6, 2.6, 4.1 s ... by default
        gm = start_in_thread(address)
        try:
            client.wait_ready(timeout=3.5)
        finally:
            gm.stop()
