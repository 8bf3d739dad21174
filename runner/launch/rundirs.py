"""Agents' private directories, made ahead of time on a background thread.

Each process agent gets a fresh private directory with `home/` and `tmp/` inside (HOME and
TMPDIR). Making one is three mkdirs, about a millisecond on the overlay filesystems containers
and CI machines use, and a game starts its four agents one after another: done while the
previous game plays instead, it costs a game's start nothing. Each directory is still used by
one agent only and removed after it.

A process's agent directories sit in one directory of its own, `arena-agents-PID-*`, so that
what a process killed with SIGKILL left behind (its agents' directories and those made ahead)
is found and removed by the next process that starts agents there.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.pids import running

# Directories kept ready: a game's four agents, twice over.
AHEAD = 8


OWNER_PREFIX = "arena-agents-"


def make_run_dir(parent: Path) -> Path:
    """A new private (0700) directory with empty home/ and tmp/ inside, in `parent`."""
    run_dir = Path(tempfile.mkdtemp(prefix="arena-agent-", dir=parent))
    (run_dir / "home").mkdir()
    (run_dir / "tmp").mkdir()
    return run_dir


def remove_tree(path: Path) -> None:
    """rmtree that also removes files a bot made unwritable (chmod 000 on its own dirs)."""
    root = os.fspath(path)

    def retry(_function: Callable[..., Any], name: str, exc: Any) -> None:
        # Which call failed does not matter (os.open, os.scandir, os.rmdir or os.unlink,
        # by Python version): make the entry and its directory ours again and remove it. Not
        # the root: its directory is not the tree's (/tmp, say), and the root fails when it is
        # gone already (another worker swept the same dead owner's directories).
        if name == root or isinstance(exc[1], FileNotFoundError):
            return
        try:
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, stat.S_IRWXU)
                shutil.rmtree(name, onerror=retry)
            else:
                os.unlink(name)
        except OSError:
            pass

    try:
        os.chmod(root, stat.S_IRWXU)  # a bot may have made its own directory unreadable
    except FileNotFoundError:
        return
    except OSError:
        pass
    shutil.rmtree(root, onerror=retry)


def owner_dir(base: Path | None = None) -> Path:
    """A new private directory for this process's agent directories in `base` (default: the
    system's temporary directory), after removing those of processes no longer running."""
    base = Path(base or tempfile.gettempdir())
    for path in base.glob(f"{OWNER_PREFIX}*"):
        pid = path.name.removeprefix(OWNER_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not running(int(pid)):
            remove_tree(path)
    return Path(tempfile.mkdtemp(prefix=f"{OWNER_PREFIX}{os.getpid()}-", dir=base))


class RunDirs:
    """A supply of fresh run directories; `take` never waits for the background thread."""

    def __init__(self, ahead: int = AHEAD, base: Path | None = None) -> None:
        self._base = base
        self._owner: Path | None = None  # made at the first take()
        self._ready: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self._wanted = threading.Semaphore(ahead)  # one permit per directory to make
        self._lock = threading.Lock()
        self._filler: threading.Thread | None = None
        self._making = threading.Lock()  # held by the filler while it makes and queues one
        self._discarded = False
        self._pid = os.getpid()
        atexit.register(self.discard)

    def take(self) -> Path:
        """A fresh directory: a ready one, or one made now if none is."""
        with self._lock:
            if self._owner is None:
                self._owner = owner_dir(self._base)
                self._filler = threading.Thread(target=self._fill, name="run-dirs", daemon=True)
                self._filler.start()
        try:
            run_dir = self._ready.get_nowait()
        except queue.Empty:
            return make_run_dir(self._owner)
        self._wanted.release()
        return run_dir

    def discard(self) -> None:
        """Remove the directories made and not taken, and the owner's if now empty (at exit)."""
        if os.getpid() != self._pid:
            return  # a forked child's copy: the directories are its parent's
        with self._making:  # the one being made, if any, is queued first; none after it
            self._discarded = True
        while True:
            try:
                shutil.rmtree(self._ready.get_nowait(), ignore_errors=True)
            except queue.Empty:
                break
        if self._owner is not None:
            with contextlib.suppress(OSError):  # an agent still being stopped keeps it
                self._owner.rmdir()

    def _fill(self) -> None:
        while True:
            self._wanted.acquire()
            with self._making:
                if self._discarded:
                    return
                try:
                    assert self._owner is not None  # made before this thread starts
                    self._ready.put(make_run_dir(self._owner))
                except OSError:
                    return  # disk full or the like: take() makes its own, and raises why


_shared = RunDirs()


def _fresh_after_fork() -> None:
    # A forked child must not hand out its parent's directories (nor wait for its thread).
    global _shared
    _shared = RunDirs()


os.register_at_fork(after_in_child=_fresh_after_fork)


def take() -> Path:
    """A fresh private directory for one agent (see the module doc)."""
    return _shared.take()
