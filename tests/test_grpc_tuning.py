"""gRPC's settings as the arena makes them: where they apply, where an operator's win, and that
the installed gRPC knows them (arena/grpc_tuning.py; bench/grpc_tuning.py measures the gain)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from arena import grpc_tuning
from runner.launch.forkserver import ForkServer

VAR = grpc_tuning.VARIABLE
ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_grpcio_is_read_without_importing_it() -> None:
    major, minor = grpc.__version__.split(".")[:2]
    assert grpc_tuning.grpcio_version() == (int(major), int(minor))


@pytest.mark.parametrize(
    ("version", "tuned"),
    [((1, 84), False), ((1, 85), True), ((1, 89), True), ((1, 90), False), ((2, 0), False)],
)
def test_only_grpcio_versions_measured_with_it_are_tuned(
    version: tuple[int, int], tuned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gRPC logs an experiment it does not know as an error, in every process.
    monkeypatch.setattr(grpc_tuning, "grpcio_version", lambda: version)
    environ: dict[str, str] = {}
    grpc_tuning.apply(environ)
    assert environ == ({VAR: grpc_tuning.OLD_POLLER} if tuned else {})


def test_a_setting_already_made_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grpc_tuning, "grpcio_version", lambda: grpc_tuning.MEASURED[0])
    for given in ("", "event_engine_client"):
        environ = {VAR: given}
        grpc_tuning.apply(environ)
        assert environ == {VAR: given}


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )


def test_an_arena_process_starts_grpc_with_it_and_grpc_knows_it() -> None:
    env = {k: v for k, v in os.environ.items() if k != VAR}
    code = (
        "import os, arena, grpc; grpc.insecure_channel('127.0.0.1:9').close(); "
        "print(os.environ.get('GRPC_EXPERIMENTS'))"
    )
    done = _python(code, env)
    tuned = grpc_tuning.measured(grpc_tuning.grpcio_version())
    assert done.stdout.strip() == (grpc_tuning.OLD_POLLER if tuned else "None")
    assert done.stderr == ""  # it said "Unknown experiment: ..." for a name gRPC lacks


def test_the_fork_server_gives_its_agents_the_workers_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its agents start gRPC in a fork of it; it read the setting from its own environment.
    for given in ("", grpc_tuning.OLD_POLLER):
        monkeypatch.setenv(VAR, given)
        server = ForkServer()
        try:
            environ = Path(f"/proc/{server.process.pid}/environ").read_bytes().split(b"\0")
            assert f"{VAR}={given}".encode() in environ
        finally:
            server.control.close()  # it ends when its client goes
            server.process.wait(timeout=10)
