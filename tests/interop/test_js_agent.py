"""The JavaScript sample agent's handshake failures: clear messages and the SDK's exit codes."""

from __future__ import annotations

import os
import subprocess

import pytest

from arena.local_match import LocalGameMaster
from tests.interop.agents import JS, needs_node

pytestmark = [needs_node, pytest.mark.usefixtures("js_ready")]


def _run(**env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    full.update(env)
    return subprocess.run(list(JS.argv), env=full, capture_output=True, text=True, timeout=60)


def test_js_agent_exits_3_when_the_seat_token_is_refused(local_gm: LocalGameMaster) -> None:
    result = _run(ARENA_GAME_MASTER=local_gm.address, ARENA_SEAT_TOKEN="not-a-token")
    assert result.returncode == 3
    assert "refused the seat token" in result.stderr and "unknown seat token" in result.stderr


def test_js_agent_exits_3_when_a_token_is_used_twice(local_gm: LocalGameMaster) -> None:
    game = local_gm.client.open_game("standard", 1)
    try:
        first = subprocess.Popen(
            list(JS.argv),
            env=dict(
                os.environ, ARENA_GAME_MASTER=local_gm.address, ARENA_SEAT_TOKEN=game.tokens[0]
            ),
            stderr=subprocess.PIPE,
            text=True,
        )
        assert first.stderr is not None
        welcomed = first.stderr.readline()  # the agent logs its Welcome: it holds the seat
        assert welcomed.startswith("[js-agent] seat 0 of game"), welcomed
        result = _run(ARENA_GAME_MASTER=local_gm.address, ARENA_SEAT_TOKEN=game.tokens[0])
        assert result.returncode == 3 and "already used" in result.stderr, result.stderr
    finally:
        local_gm.client.abort_game(game.game_id)
        first.wait(30)
    assert first.returncode == 0  # an aborted game still ends with GameEnd


def test_js_agent_exits_2_without_a_token() -> None:
    result = _run()
    assert result.returncode == 2 and "ARENA_SEAT_TOKEN is not set" in result.stderr
