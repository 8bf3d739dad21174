"""An agent's namespaces where the worker is an ordinary user (pidns.py makes a user namespace
first): what the agent sees and keeps there, and that what it starts ends with it.

The fork server's tests (test_forkserver.py) run as this machine's user, root here. These run
pidns itself as nobody, in a fresh Python that drops to nobody once everything is imported
(nobody may not read this virtualenv's Python, which may live in root's home), or as the user
running the tests where that is not root. Fresh, not a fork of this process: a fork of a
process that used gRPC starts gRPC's threads again, and a process with threads may not make a
user namespace.
"""

from __future__ import annotations

import contextlib
import ctypes
import encodings.idna  # noqa: F401  (sockets encode host names with it; nobody cannot load it later)
import errno
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.launch import pidns

NOBODY = 65534
PR_SET_DUMPABLE = 4
CLONE_NEWUSER = 0x10000000


def _as_ordinary_user(task: str, *arguments: str) -> Any:
    """The JSON result of TASKS[task](*arguments), run as an ordinary user."""
    ran = subprocess.run(
        [sys.executable, "-m", "tests.test_pidns_user", task, *arguments],
        cwd=Path(__file__).parents[1],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def _become_ordinary_user() -> None:
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
        # As a process nobody started would be (a change of user made this one undumpable,
        # which leaves its /proc files, uid_map among them, to root).
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def _kernel_allows_user_namespaces() -> bool:
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os._exit(0 if ctypes.CDLL(None).unshare(CLONE_NEWUSER) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _in_agent(left_behind: str) -> dict[str, Any]:
    """What _probe says where an agent runs, as the fork server's child does."""
    said_r, said_w = os.pipe()
    relay = os.fork()
    if relay == 0:  # pragma: no cover (the agent, after enter)
        os.close(said_r)
        entered = pidns.enter()
        os.write(said_w, json.dumps({"entered": entered, **_probe(left_behind)}).encode())
        os._exit(0)
    os.close(said_w)
    with os.fdopen(said_r) as pipe:
        said = pipe.read()
    os.waitpid(relay, 0)
    return {"uid": os.getuid(), **json.loads(said or "{}")}


def _in_sealed_agent(note: str) -> dict[str, Any]:
    """Where a sealed agent may write, and whether it has a network of its own (loopback up)."""
    own = tempfile.mkdtemp()
    host_network = os.readlink("/proc/self/ns/net")
    said_r, said_w = os.pipe()
    relay = os.fork()
    if relay == 0:  # pragma: no cover (the agent, after enter)
        os.close(said_r)
        entered = pidns.enter(pidns.Room(own, sealed=True))
        with socket.create_server(("127.0.0.1", 0)) as mine:  # its own loopback works
            socket.create_connection(mine.getsockname(), timeout=5).close()
        said = {
            "entered": entered,
            "own": _write(f"{own}/note"),
            "shared": _write(note),
            "host": Path(f"{note}-host").read_text(),
            "own_network": os.readlink("/proc/self/ns/net") != host_network,
        }
        os.write(said_w, json.dumps(said).encode())
        os._exit(0)
    os.close(said_w)
    with os.fdopen(said_r) as pipe:
        said = pipe.read()
    os.waitpid(relay, 0)
    return json.loads(said or "{}")


def _write(path: str) -> str:
    try:
        with open(path, "w") as note:
            note.write("my hand")
    except OSError as error:
        return errno.errorcode[error.errno]
    return "wrote"


def _probe(left_behind: str) -> dict[str, Any]:
    """What the agent sees; it leaves `sleep left_behind` running."""
    libc = ctypes.CDLL(None, use_errno=True)
    unmounted = libc.umount2(b"/proc", 2)
    with open("/proc/self/status") as lines:
        status = dict(line.split(":\t") for line in lines)
    with open("/dev/null", "w") as null:
        null.write("x")
    with open("/dev/urandom", "rb") as urandom:
        random_bytes = len(urandom.read(4))
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    subprocess.Popen(["sleep", left_behind], start_new_session=True)
    return {
        "pids": pids,
        "me": os.getpid(),
        "agent_uid": os.getuid(),
        "umount_errno": 0 if unmounted == 0 else ctypes.get_errno(),
        "capabilities": {status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")}
        == {"0000000000000000"},
        "dev": sorted(os.listdir("/dev")),
        "random_bytes": random_bytes,
    }


def _running(argument: str) -> list[int]:
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as cmdline:
            if cmdline.read().split(b"\0")[1:2] == [argument.encode()]:
                pids.append(int(entry))
    return pids


@pytest.fixture(scope="module")
def user_namespaces() -> None:
    if not _as_ordinary_user("kernel"):
        pytest.skip("this kernel lets no ordinary user make a user namespace")


def test_an_ordinary_user_may_give_agents_namespaces(user_namespaces: None) -> None:
    assert _as_ordinary_user("available")


def test_an_ordinary_users_agent_gets_the_namespaces_too(user_namespaces: None) -> None:
    said = _as_ordinary_user("agent", "987.25")
    assert said["entered"], said
    # Only its own processes, and itself the second; the same user it was, no capability (it
    # cannot unmount its /proc to see the host's), the same /dev as a root worker's agent.
    assert said["pids"] == [1, 2] and said["me"] == 2, said
    assert said["agent_uid"] == said["uid"] != 0, said
    assert said["umount_errno"] == 1 and said["capabilities"], said  # EPERM
    assert said["dev"] == [
        "fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "tty", "urandom",
        "zero",
    ], said  # fmt: skip
    assert said["random_bytes"] == 4, said


def test_what_an_ordinary_users_agent_leaves_behind_ends_with_it(user_namespaces: None) -> None:
    left_behind = f"{987_000 + os.getpid()}.5"  # a sleep's argument, to find it by
    _as_ordinary_user("agent", left_behind)
    deadline = time.monotonic() + 5
    while _running(left_behind) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(left_behind) == []


def test_an_ordinary_users_sealed_agent_writes_only_in_its_own_directory(
    user_namespaces: None, tmp_path: Path
) -> None:
    note = f"/tmp/arena-sealed-note-{os.getpid()}"  # where a partner would look
    Path(f"{note}-host").write_text("host")
    try:
        said = _as_ordinary_user("sealed", note)
        # /tmp is its own: what it writes there no one else sees; the host's is in sight.
        assert said == {
            "entered": True, "own": "wrote", "shared": "wrote", "host": "host", "own_network": True
        }  # fmt: skip
        assert not os.path.exists(note)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(note)
        os.unlink(f"{note}-host")


TASKS: dict[str, Callable[..., Any]] = {
    "kernel": _kernel_allows_user_namespaces,
    "available": pidns.available,
    "agent": _in_agent,
    "sealed": _in_sealed_agent,
}

if __name__ == "__main__":
    _become_ordinary_user()
    print(json.dumps(TASKS[sys.argv[1]](*sys.argv[2:])))
