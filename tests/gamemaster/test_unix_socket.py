"""The game master's Unix socket, for container agents: served to every user, checked, removed."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arena import wire
from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import start_in_thread
from arena.gamemaster.unix_socket import SocketUnusable, prepare
from tests.gamemaster.helpers import PY, REPO


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a socket's path holds at most 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="gm-", dir="/tmp") as name:
        yield Path(name)


def _game_master(sock: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "arena.cli", "gamemaster", "--listen", "127.0.0.1:0", "--socket", str(sock)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_game_master_serves_its_socket_to_every_user_and_removes_it_when_it_stops(
    short_dir: Path,
) -> None:
    sock = short_dir / "run" / "gamemaster.sock"  # its directory is made
    gm = _game_master(sock)
    try:
        assert gm.stdout is not None
        assert gm.stdout.readline().startswith("game master listening on 127.0.0.1:")
        line = gm.stdout.readline().strip()
        assert line == f"game master listening on unix:{sock} for agents"
        mode = sock.stat().st_mode
        # Container agents run as nobody: connecting to a socket needs write access to it.
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o666
        with grpc.insecure_channel(f"unix:{sock}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            reply = health.Check(health_pb2.HealthCheckRequest(service=wire.SERVICE), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        # A second game master on the same socket would take some of the agents: refused.
        second = _game_master(sock)
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2
        assert f"something already listens on {sock} (another game master?)" in err
        assert sock.exists()
    finally:
        gm.send_signal(signal.SIGTERM)
        _, err = gm.communicate(timeout=30)
    assert gm.returncode == 0
    assert not sock.exists()
    assert "WARNING arena.gamemaster.server: no admin token (ARENA_ADMIN_TOKEN" in err, err


def test_a_socket_left_by_a_killed_game_master_is_replaced(short_dir: Path) -> None:
    path = short_dir / "gamemaster.sock"
    with socket.socket(socket.AF_UNIX) as left:  # bound once, nothing listens now
        left.bind(str(path))
    assert prepare(str(path)) == f"unix:{path}"
    assert not path.exists()


def test_a_data_directory_made_for_the_socket_is_its_users_only(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's walkthrough starts the game master first, with its socket in data/: the
    # directory was made 0755, and the database later made in it was everyone's to read.
    monkeypatch.setenv("ARENA_DATA_DIR", str(short_dir / "data"))
    prepare(str(short_dir / "data" / "gamemaster.sock"))
    assert stat.S_IMODE((short_dir / "data").stat().st_mode) == 0o700
    prepare(str(short_dir / "run" / "gamemaster.sock"))  # elsewhere: as the umask has it
    assert stat.S_IMODE((short_dir / "run").stat().st_mode) == 0o777 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("plain-file", "exists and is not a socket: remove it or choose another path"),
        ("relative", "the socket path 'relative' must be absolute"),
        ("x" * 120, "is longer than 107 bytes"),
        ("plain-file/gamemaster.sock", "cannot make the socket's directory .*plain-file is not a"),
    ],
)
def test_a_socket_path_the_game_master_cannot_use_says_why(
    short_dir: Path, name: str, message: str
) -> None:
    (short_dir / "plain-file").write_text("not a socket")
    path = name if name == "relative" else str(short_dir / name)
    with pytest.raises(SocketUnusable, match=message):
        prepare(path)
    assert (short_dir / "plain-file").read_text() == "not a socket"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="mounts need root")
def test_nobody_reaches_the_socket_through_a_read_only_mount_as_a_container_agent_does(
    short_dir: Path,
) -> None:
    # docker run --user 65534:65534 --mount ...,target=/run/arena,readonly: the agent connects
    # as nobody through a read-only mount (a socket is not a file the mount's ro refuses).
    served, mounted = short_dir / "served", short_dir / "mounted"
    mounted.mkdir()
    short_dir.chmod(0o755)  # as /run is: nobody may pass through to the mount
    gm = _game_master(served / "gamemaster.sock")
    try:
        assert gm.stdout is not None
        gm.stdout.readline()
        gm.stdout.readline()
        connect = (
            "import socket, sys; s = socket.socket(socket.AF_UNIX); "
            "s.connect(sys.argv[1] + '/gamemaster.sock'); print('connected')"
        )
        script = (
            f"mount --bind {served} {mounted} && mount -o remount,bind,ro {mounted} && "
            f"! touch {mounted}/written 2>/dev/null && "
            f"setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "
            f'"{connect}" {mounted}'
        )
        done = subprocess.run(
            ["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout) == (0, "connected\n"), done.stderr
    finally:
        gm.send_signal(signal.SIGTERM)
        gm.communicate(timeout=30)


def test_no_admin_call_is_served_on_the_agents_socket_even_without_a_token(
    short_dir: Path,
) -> None:
    # A sealed bot reaches the game master only through its socket: it must not open, end or
    # forfeit games there, whatever the game master's admin token (here none).
    sock = str(short_dir / "gamemaster.sock")
    with start_in_thread(socket_path=sock) as gm:
        with GameMasterClient(gm.address) as over_tcp:
            assert over_tcp.open_game("standard", 1).game_id  # the workers' way: served
        with GameMasterClient(f"unix:{sock}") as over_socket, pytest.raises(grpc.RpcError) as no:
            over_socket.open_game("standard", 1)
    assert no.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "admin calls are not served on the agents' socket" in str(no.value.details())
