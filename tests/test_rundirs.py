"""Agents' private directories, made ahead: fresh, private, never handed out twice."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from runner.launch.rundirs import RunDirs, remove_tree


def _wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_each_take_is_a_fresh_private_directory_with_home_and_tmp(tmp_path: Path) -> None:
    supply = RunDirs(ahead=2, base=tmp_path)
    taken = [supply.take() for _ in range(6)]  # more than are made ahead
    assert len(set(taken)) == 6
    [owner] = tmp_path.iterdir()  # the process's own directory of them
    assert owner.name.startswith(f"arena-agents-{os.getpid()}-")
    assert stat.S_IMODE(owner.stat().st_mode) == 0o700
    for run_dir in taken:
        assert run_dir.parent == owner
        assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
        assert sorted(p.name for p in run_dir.iterdir()) == ["home", "tmp"]
        assert not any((run_dir / "home").iterdir())


def test_directories_made_ahead_and_not_taken_are_removed_at_exit(tmp_path: Path) -> None:
    supply = RunDirs(ahead=3, base=tmp_path)
    taken = supply.take()  # starts the background thread, which makes three more
    owner = taken.parent
    _wait_until(lambda: len(list(owner.iterdir())) == 4)
    supply.discard()
    assert list(owner.iterdir()) == [taken]  # the one taken is its agent's to remove
    shutil.rmtree(taken)  # as its agent's stop does
    supply.discard()
    assert not owner.exists()


_KILLED_SCRIPT = """
import os, sys, time
from pathlib import Path
from runner.launch.rundirs import RunDirs
supply = RunDirs(ahead=3, base=Path(sys.argv[1]))
taken = supply.take()
(taken / "home" / "locked").mkdir()
os.chmod(taken / "home" / "locked", 0)  # a bot's doing: rmtree alone cannot remove it
while len(list(taken.parent.iterdir())) < 4:
    time.sleep(0.01)
print(taken.parent, flush=True)
time.sleep(60)
"""


def test_what_a_killed_process_left_is_removed_by_the_next_one(tmp_path: Path) -> None:
    # A worker killed with SIGKILL runs no clean-up: its agents' directories and those made
    # ahead stayed in /tmp for good, a dozen per kill.
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    left = Path(child.stdout.readline().strip())
    child.kill()
    child.wait()
    assert left.is_dir() and len(list(left.iterdir())) == 4
    supply = RunDirs(ahead=1, base=tmp_path)
    mine = supply.take()
    assert not left.exists()
    assert list(tmp_path.iterdir()) == [mine.parent]
    supply.discard()


def test_removing_a_tree_already_gone_leaves_the_directory_it_was_in_alone(
    tmp_path: Path,
) -> None:
    # Two workers sweeping the same dead owner's directories: the second finds them gone. It
    # once made their directory, /tmp itself, private to it (0700) for every other user.
    tmp_path.chmod(0o1777)
    remove_tree(tmp_path / "arena-agents-1-gone")
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o1777


# Run in a fresh interpreter: forking the test process itself would copy whatever its other
# threads (gRPC's, from other tests) hold.
_FORK_SCRIPT = """
import json, os, sys, time
from runner.launch import rundirs
first = rundirs.take()
while rundirs._shared._ready.qsize() == 0:  # the parent has some ready
    time.sleep(0.01)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, str(rundirs.take()).encode())
    os._exit(0)
os.close(write)
child = os.read(read, 4096).decode()
os.waitpid(pid, 0)
ready = [str(rundirs.take()) for _ in range(rundirs._shared._ready.qsize())]
print(json.dumps({"first": str(first), "child": child, "ready": ready}))
"""


def test_a_forked_child_never_gets_its_parents_directories(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert Path(seen["child"]).is_dir()
    assert seen["child"] not in [seen["first"], *seen["ready"]]
