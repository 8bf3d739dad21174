"""Container agents: `docker run` with hard limits, no privileges, only the game master in reach.

A container agent has no network at all (`--network none`): it dials the game master's Unix
socket (`arena gamemaster --socket`), whose directory is mounted read-only into it, and reaches
nothing else, not the other agents of its game either (on a shared network, partners could
find each other's ports and swap hands). ARENA_CONTAINER_SOCKET names that directory as the
docker daemon sees it: a volume's name (docker-compose.yml's `arena-gamemaster`, which its game
master serves in) or an absolute host directory, holding the socket as `gamemaster.sock`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.config import env
from arena.errors import ArenaError
from arena.gamemaster.unix_socket import SOCKET_NAME
from runner.launch.process import RunningAgent, start_process
from runner.launch.spec import SEAT_TOKEN_ENV, AgentSpec, LaunchError, safe_label

NOBODY = "65534:65534"
# `docker version` asks the daemon; a worker that reached it trusts it this long.
DAEMON_TIMEOUT_S = 10.0
DAEMON_TRUSTED_S = 30.0
# Where a container agent finds the game master's socket directory.
SOCKET_MOUNT = "/run/arena"
# A docker volume's name (docker's own rule), else an absolute host directory.
_VOLUME_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]+")

# The docker client is our program, not the bot's, so it keeps what it needs to find the
# daemon (contexts, remote or rootless daemons, TLS); the bot itself sees none of this.
DOCKER_CLIENT_VARIABLES = (
    "HOME",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "XDG_RUNTIME_DIR",
)
_DOCKER_CALL_TIMEOUT = 15.0


class RunningContainer(RunningAgent):
    """A `docker run` client process; stopping it stops and removes the container too."""

    container = True

    def __init__(self, *args: Any, docker: str, name: str) -> None:
        super().__init__(*args)
        self.docker = docker
        self.name = name

    def _docker(self, *args: str, timeout: float) -> None:
        # A failure here is not fatal: the client is killed afterwards and `rm -f` backs it up.
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [self.docker, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )

    def stop(self) -> None:
        """`docker stop` (SIGTERM, grace, SIGKILL inside), `docker rm -f`, then end the client.

        Killing only the client would leave the container running, so the daemon is asked.
        """
        if not self._reaped and self.poll() is None:
            self._stopped = True
            grace = max(1, round(self._grace))
            timeout = grace + _DOCKER_CALL_TIMEOUT
            self._docker("stop", "--time", str(grace), self.name, timeout=timeout)
        if not self._reaped:
            # Harmless when --rm already removed it; needed when the client died on its own.
            self._docker("rm", "--force", self.name, timeout=_DOCKER_CALL_TIMEOUT)
        super().stop()


class DockerUnavailable(ArenaError):
    """This worker cannot run containers (no docker client, or one that reaches no daemon):
    the arena's trouble, not the bot's (its seat would forfeit every game, the losses rated)."""


class ContainerLauncher:
    """Starts each agent as a container from the bot version's image (`spec.image`)."""

    def __init__(
        self,
        *,
        docker: str = "docker",
        socket_source: str | None = None,
        name_prefix: str = "arena-agent",
        tmpfs_size: str = "64m",
        user: str = NOBODY,
        pull: str | None = "never",
        log_dir: Path | None = None,
        grace_seconds: float = 2.0,
    ) -> None:
        self.docker = docker
        self.socket_source = socket_source or env("ARENA_CONTAINER_SOCKET")
        self.name_prefix = name_prefix
        self.tmpfs_size = tmpfs_size
        self.user = user
        # Images are built or pulled when a bot version is registered: a game must not wait
        # on a registry, nor pick up a different image than the one that was rated.
        self.pull = pull
        self.log_dir = log_dir
        self.grace_seconds = grace_seconds
        self._daemon_until = 0.0  # monotonic time until which the daemon is taken to be there

    def container_name(self, spec: AgentSpec) -> str:
        """Unique per seat: the label plus a digest of the single-use seat token (not the token)."""
        digest = hashlib.sha256(spec.seat_token.encode()).hexdigest()[:12]
        return f"{self.name_prefix}-{safe_label(spec.label)}-{digest}"

    def command(self, spec: AgentSpec) -> list[str]:
        """The `docker run` argv. The seat token is passed by name only: its value travels in
        the client's environment, because a command line is readable by every local user."""
        if not spec.image:
            raise LaunchError(f"agent {spec.label!r} has no container image")
        if spec.image.startswith("-"):  # docker would read it as an option ("--privileged")
            raise LaunchError(f"agent {spec.label!r}: {spec.image!r} is not an image reference")
        limits = spec.limits
        argv = [self.docker, "run", "--rm", "--name", self.container_name(spec)]
        argv += ["--label", f"arena.agent={safe_label(spec.label)}"]  # for cleanup after a crash
        if limits.memory_bytes is not None:
            # Swap equal to memory means no swap: the limit is real memory, not a suggestion.
            argv += ["--memory", str(limits.memory_bytes)]
            argv += ["--memory-swap", str(limits.memory_bytes)]
        argv += ["--cpus", f"{limits.cpus:g}", "--pids-limit", str(limits.pids)]
        if limits.cpu_seconds is not None:
            # RLIMIT_CPU per process, exactly as for process agents (SIGXCPU, then SIGKILL).
            argv += ["--ulimit", f"cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}"]
        argv += ["--read-only", "--tmpfs", f"/tmp:size={self.tmpfs_size}"]
        argv += ["--security-opt", "no-new-privileges", "--cap-drop", "ALL"]
        argv += ["--user", self.user, "--network", "none", "--mount", self._socket_mount()]
        # Its stderr reaches the launcher through this client; the daemon's own copy (json-file,
        # unbounded by default) must not let a chatty bot fill the host's disk.
        argv += ["--log-driver", "json-file", "--log-opt", "max-size=1m", "--log-opt", "max-file=1"]
        # A tiny init as PID 1: the bot then gets default signal actions (PID 1 ignores
        # SIGTERM and SIGXCPU) and its zombies are reaped.
        argv += ["--init"]
        if self.pull is not None:
            argv += ["--pull", self.pull]
        # The only writable place is /tmp, so runtimes that write under ~ write there.
        argv += ["-e", "HOME=/tmp", "-e", "TMPDIR=/tmp"]
        game_master = f"unix:{SOCKET_MOUNT}/{SOCKET_NAME}"
        argv += ["-e", f"ARENA_GAME_MASTER={game_master}", "-e", SEAT_TOKEN_ENV]
        return [*argv, spec.image, *spec.command]

    def _socket_mount(self) -> str:
        """The --mount of the game master's socket directory, read-only."""
        source = self.socket_source
        if _VOLUME_NAME.fullmatch(source):
            kind = "volume"
        elif os.path.isabs(source) and "," not in source and "=" not in source:
            kind = "bind"
        else:
            raise LaunchError(
                f"ARENA_CONTAINER_SOCKET={source!r} is neither a docker volume's name nor an "
                "absolute directory without ',' or '=': name where the game master's "
                f"{SOCKET_NAME} is"
            )
        return f"type={kind},source={source},target={SOCKET_MOUNT},readonly"

    def client_environment(self, spec: AgentSpec) -> dict[str, str]:
        """Environment of the docker client process (not of the bot)."""
        return {**self._client_env(), SEAT_TOKEN_ENV: spec.seat_token}

    def _client_env(self) -> dict[str, str]:
        """The worker's environment as the docker client needs it, and no more."""
        env = {name: os.environ[name] for name in DOCKER_CLIENT_VARIABLES if name in os.environ}
        env["PATH"] = f"{os.path.dirname(self._docker_path())}:/usr/bin:/bin"
        return env

    def _docker_path(self) -> str:
        found = shutil.which(self.docker)
        if found is None:
            raise LaunchError(
                f"docker client {self.docker!r} not found on PATH; install the docker CLI "
                "or use the process launcher"
            )
        return os.path.abspath(found)

    def _ask_docker(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A short docker client command; DockerUnavailable if the daemon does not answer."""
        argv = [self._docker_path(), *args]
        env = self._client_env()
        try:
            return subprocess.run(
                argv, capture_output=True, text=True, timeout=DAEMON_TIMEOUT_S, env=env
            )
        except subprocess.TimeoutExpired:
            raise DockerUnavailable(
                f"the Docker daemon did not answer within {DAEMON_TIMEOUT_S:g} s"
            ) from None

    def check_daemon(self) -> None:
        """DockerUnavailable unless the client reaches a daemon (asked at most every
        DAEMON_TRUSTED_S)."""
        if time.monotonic() < self._daemon_until:
            return
        try:
            done = self._ask_docker("version", "--format", "{{.Server.Version}}")
        except LaunchError as exc:  # no client on this host: no bot's fault either
            raise DockerUnavailable(f"this host has no docker client: {exc}") from None
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise DockerUnavailable(
                f"this host reaches no Docker daemon ({said[:300]}): start it, or check DOCKER_HOST"
            )
        self._daemon_until = time.monotonic() + DAEMON_TRUSTED_S

    def image_problem(self, image: str) -> str | None:
        """Why this host could not run `image` now (no daemon, or no such image), or None."""
        try:
            self.check_daemon()
            done = self._ask_docker("image", "inspect", "--format", "{{.Id}}", image)
        except DockerUnavailable as exc:
            return str(exc)
        if done.returncode != 0:
            return f"docker has no image {image!r} here: build or pull it (games never pull)"
        return None

    def launch(self, spec: AgentSpec) -> RunningContainer:
        self.check_daemon()
        argv = self.command(spec)
        argv[0] = self._docker_path()
        env = self.client_environment(spec)
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix=f"arena-{safe_label(spec.label)}-"))
        agent = start_process(
            argv,
            cwd=run_dir,
            env=env,
            limits=spec.limits,
            run_dir=run_dir,
            label=spec.label,
            log_dir=self.log_dir,
            grace_seconds=self.grace_seconds,
            # The bot's limits are the container's (--memory, --ulimit cpu): none on its client.
            apply_rlimits=False,
            agent_class=RunningContainer,
            docker=argv[0],
            name=self.container_name(spec),
        )
        assert isinstance(agent, RunningContainer)
        return agent
