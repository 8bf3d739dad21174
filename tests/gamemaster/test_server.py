"""The game master as a process: `arena gamemaster`, health, reflection, SIGTERM mid-game."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from arena import wire
from arena.gamemaster.client import GameMasterClient, GameOutcome
from arena.wire import pb
from tests.gamemaster.helpers import PY, REPO, misbehaving, record_lines, start_match


def start_game_master(admin_token: str = "") -> tuple[subprocess.Popen[str], str]:
    """`arena gamemaster` on a free port, and the address it says it listens on."""
    proc = subprocess.Popen(
        [PY, "-m", "arena.cli", "gamemaster", "--listen", "127.0.0.1:0"]
        + ["--admin-token", admin_token],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    assert line.startswith("game master listening on "), line + proc.stderr.read()
    return proc, line.split()[-1]


@pytest.fixture
def server_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, address = start_game_master()
    try:
        yield proc, address
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.mark.parametrize("token", ["", "s3cret"])
def test_a_game_master_without_an_admin_token_says_so(token: str) -> None:
    proc, _ = start_game_master(token)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert ("any client, a bot included, may open, abort and read games" in stderr) == (not token)


def test_a_game_master_on_every_interface_says_so_and_where_to_dial() -> None:
    # It said "listening on 127.0.0.1:PORT": an operator took it for local only.
    proc = subprocess.Popen(
        [PY, "-m", "arena.cli", "gamemaster", "--listen", "0.0.0.0:0"],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline().strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    port = line.rsplit(":", 1)[-1]
    assert (
        line == f"game master listening on 0.0.0.0:{port} (every interface); dial 127.0.0.1:{port}"
    )


def test_health_and_reflection_are_served(server_process) -> None:
    _, address = server_process
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", wire.SERVICE):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        response = next(iter(reflection.ServerReflectionInfo(iter([request]), timeout=5)))
        names = {s.name for s in response.list_services_response.service}
        assert {wire.SERVICE, "grpc.health.v1.Health"} <= names
        request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=wire.SERVICE)
        response = next(iter(reflection.ServerReflectionInfo(iter([request]), timeout=5)))
        assert response.file_descriptor_response.file_descriptor_proto  # grpcurl can describe it


def test_sigterm_aborts_games_in_progress_and_exits_cleanly(server_process) -> None:
    proc, address = server_process
    with GameMasterClient(address, admin_token="") as client:
        slow = [misbehaving("slow.py")] * 4  # honest but slow: the game is surely in progress
        match = start_match(
            client,
            address,
            slow,
            limits={"decision_ms": 5000, "bank_ms": 0},  # type: ignore[arg-type]
            env={"SLOW_MS": "20"},
        )
        results: list[GameOutcome] = []
        waiter = threading.Thread(target=lambda: results.append(match.finish(timeout=30)))
        waiter.start()
        with grpc.insecure_channel(address) as channel:
            watch = channel.unary_stream(
                wire.WATCH,
                request_serializer=pb.WatchRequest.SerializeToString,
                response_deserializer=pb.GameEvent.FromString,
            )
            events = iter(watch(pb.WatchRequest(game_id=match.game_id), timeout=30))
            for event in events:  # wait until the game is surely under way
                if event.WhichOneof("event") == "action":
                    break
            proc.send_signal(signal.SIGTERM)
            last = list(events)[-1]
        assert last.WhichOneof("event") == "game_end" and last.game_end.reason == "aborted"
        waiter.join(timeout=30)
        assert not waiter.is_alive()
        outcome = results[0]
    assert outcome.reason == "aborted" and outcome.winner is None
    assert "shutting down" in outcome.detail
    assert record_lines(outcome.record)[-1] == {
        "event": "game_end",
        "scores": list(outcome.scores),
        "winner": None,
        "reason": "aborted",
        "detail": "the game master is shutting down",
    }
    assert proc.wait(timeout=15) == 0
    assert "stopped" in (proc.stdout.read() if proc.stdout else "")
    assert match.reap() == [0, 0, 0, 0]  # agents were told (GameEnd) and left
