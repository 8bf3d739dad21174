"""Drain agents' stderr pipes, keeping the first N bytes and a short tail."""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from pathlib import Path
from typing import IO

# Enough to hold a Python traceback or a runtime's "out of memory" line, which come last,
# even when a chatty bot has already filled the head.
TAIL_BYTES = 4096
_CHUNK = 65536
_ENDING = ".stderr.log"
# Logs of one game id kept side by side, at most: past this, a seat's stderr is kept in memory only.
_MAX_NAMES = 100


class StderrCapture:
    """Drains a pipe (on the process's one pump thread) so a chatty agent never blocks on it.

    The first `limit` bytes are kept in memory and mirrored to `path`; the rest is counted
    and dropped, except the last TAIL_BYTES, kept in memory to show how the agent ended.
    """

    def __init__(self, pipe: IO[bytes], limit: int, path: Path) -> None:
        self.path = path
        self._fd = pipe.fileno()
        self._pipe = pipe
        self._limit = limit
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0
        self._lock = threading.Lock()
        # Opened by the pump with the first bytes: not on the way to starting the agent.
        self._file: IO[bytes] | None = None
        self._opened = False
        self._ended = threading.Event()
        _pump().add(self)

    def _finish(self) -> None:
        self._pipe.close()
        if not self._opened:
            self._open()  # a silent agent leaves an empty file too
        if self._file is not None and self._dropped:
            # The file ends as text() does: the cut said, then how the agent ended.
            with self._lock, contextlib.suppress(OSError):
                self._file.write(self._ending())
        self._close_file()
        self._ended.set()

    def _open(self) -> None:
        """Open the mirror file, once. Whatever fails, what was read stays in memory."""
        self._opened = True
        # Always a file of its own, created here (O_EXCL): the agent may write in this
        # directory, and a FIFO it left at the path would block the pump (every agent's stderr)
        # in open(), a symlink point anywhere; and a game of the same id played again (its set
        # retried after a game master restart, or `arena play` run again) keeps the earlier
        # log, which may tell why, writing NAME.2.stderr.log. Its directory may also be gone
        # (the agent was stopped and its last bytes came late).
        stem = self.path.name.removesuffix(_ENDING)
        for again in range(1, _MAX_NAMES + 1):
            path = self.path if again == 1 else self.path.with_name(f"{stem}.{again}{_ENDING}")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            except OSError:
                return
            self.path = path
            self._file = os.fdopen(fd, "wb")
            return

    def _close_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def _take(self, chunk: bytes) -> None:
        with self._lock:
            room = self._limit - len(self._head)
            if room > 0:
                kept = chunk[:room]
                self._head += kept
                if not self._opened:
                    self._open()
                if self._file is not None:
                    try:
                        self._file.write(kept)
                        self._file.flush()
                    except OSError:  # a full disk, say: the memory copy is what counts
                        self._close_file()
            overflow = chunk[max(room, 0) :]
            self._dropped += len(overflow)
            self._tail = (self._tail + chunk)[-TAIL_BYTES:]

    def join(self, timeout: float | None) -> bool:
        """Wait for end of file; False if a process still holds the pipe open."""
        return self._ended.wait(timeout)

    def text(self) -> str:
        """The head, and after a cut the tail: how the agent ended (its last words, a stdio
        bot's bridge saying why) comes last, after whatever filled the head."""
        with self._lock:
            return (self._head + self._ending()).decode("utf-8", errors="replace")

    def _ending(self) -> bytes:
        """What follows the head: after a cut, a line saying so and the tail (lock held)."""
        if not self._dropped:
            return b""
        tail = self._tail[-min(self._dropped, TAIL_BYTES) :]
        cut = self._dropped - len(tail)
        said = f"\n[truncated: {cut} bytes not kept; the last {len(tail)} follow]\n" if cut else ""
        return said.encode() + bytes(tail)

    def sample(self) -> str:
        """Head and tail together: what exit diagnosis looks at."""
        with self._lock:
            return (self._head + b"\n" + self._tail).decode("utf-8", errors="replace")


class _Pump:
    """One thread that reads every agent's stderr pipe: cheaper than a thread per agent,
    whose start alone costs a few milliseconds on a busy machine, four times a game.

    Pipes are added from the launching thread straight into the epoll set the pump waits on
    (epoll, unlike select or poll, sees a descriptor added while it waits), so adding one
    wakes no thread: the pump first runs when the agent writes.
    """

    def __init__(self) -> None:
        self._selector = selectors.EpollSelector()
        threading.Thread(target=self._run, name="stderr-pump", daemon=True).start()

    def add(self, capture: StderrCapture) -> None:
        self._selector.register(capture._fd, selectors.EVENT_READ, capture)

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select():
                capture = key.data
                try:
                    chunk = os.read(key.fd, _CHUNK)
                except OSError:
                    chunk = b""  # the pipe was closed under us: nothing more to read
                if chunk:
                    capture._take(chunk)
                else:
                    self._selector.unregister(key.fd)
                    capture._finish()


_pump_lock = threading.Lock()
_the_pump: _Pump | None = None


def _pump() -> _Pump:
    """This process's pump, started on first use."""
    global _the_pump
    with _pump_lock:
        if _the_pump is None:
            _the_pump = _Pump()
        return _the_pump
