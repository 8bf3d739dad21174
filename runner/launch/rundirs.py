"""Agents' private directories, made ahead of time on a background thread.

Each process agent gets a fresh private directory with `home/` and `tmp/` inside (HOME and
TMPDIR). Making one is three mkdirs, about a millisecond on the overlay filesystems containers
and CI machines use, and a game starts its four agents one after another: done while the
previous game plays instead, it costs a game's start nothing. Each directory is still used by
one agent only and removed after it.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import tempfile
import threading
from pathlib import Path

# Directories kept ready: a game's four agents, twice over.
AHEAD = 8


def make_run_dir(parent: Path | None = None) -> Path:
    """A new private (0700) directory with empty home/ and tmp/ inside, in `parent` (default:
    the system's temporary directory)."""
    run_dir = Path(tempfile.mkdtemp(prefix="arena-agent-", dir=parent))
    (run_dir / "home").mkdir()
    (run_dir / "tmp").mkdir()
    return run_dir


class RunDirs:
    """A supply of fresh run directories; `take` never waits for the background thread."""

    def __init__(self, ahead: int = AHEAD, parent: Path | None = None) -> None:
        self._parent = parent
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
            if self._filler is None:
                self._filler = threading.Thread(target=self._fill, name="run-dirs", daemon=True)
                self._filler.start()
        try:
            run_dir = self._ready.get_nowait()
        except queue.Empty:
            return make_run_dir(self._parent)
        self._wanted.release()
        return run_dir

    def discard(self) -> None:
        """Remove the directories made and not taken (at exit)."""
        if os.getpid() != self._pid:
            return  # a forked child's copy: the directories are its parent's
        with self._making:  # the one being made, if any, is queued first; none after it
            self._discarded = True
        while True:
            try:
                shutil.rmtree(self._ready.get_nowait(), ignore_errors=True)
            except queue.Empty:
                return

    def _fill(self) -> None:
        while True:
            self._wanted.acquire()
            with self._making:
                if self._discarded:
                    return
                try:
                    self._ready.put(make_run_dir(self._parent))
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
