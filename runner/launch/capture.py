"""Drain an agent's stderr pipe, keeping the first N bytes (and a short tail for diagnosis)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import IO

# Enough to hold a Python traceback or a runtime's "out of memory" line, which come last,
# even when a chatty bot has already filled the head.
TAIL_BYTES = 4096
_CHUNK = 65536


class StderrCapture:
    """Reads a pipe on a daemon thread so a chatty agent never blocks on a full pipe.

    The first `limit` bytes are kept in memory and mirrored to `path`; the rest is counted
    and dropped, except the last TAIL_BYTES, kept only to explain how the agent died.
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
        self._file = path.open("wb")
        self._thread = threading.Thread(target=self._run, name=f"stderr:{path.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while chunk := os.read(self._fd, _CHUNK):
                self._take(chunk)
        except OSError:
            pass  # the pipe was closed under us: nothing more to read
        finally:
            self._pipe.close()
            self._file.close()

    def _take(self, chunk: bytes) -> None:
        with self._lock:
            room = self._limit - len(self._head)
            if room > 0:
                kept = chunk[:room]
                self._head += kept
                self._file.write(kept)
                self._file.flush()
            overflow = chunk[max(room, 0) :]
            self._dropped += len(overflow)
            self._tail = (self._tail + chunk)[-TAIL_BYTES:]

    def join(self, timeout: float | None) -> bool:
        """Wait for end of file; False if a process still holds the pipe open."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def truncated_bytes(self) -> int:
        with self._lock:
            return self._dropped

    def text(self) -> str:
        with self._lock:
            text = self._head.decode("utf-8", errors="replace")
            if self._dropped:
                text += f"\n[truncated: {self._dropped} more bytes not kept]\n"
            return text

    def sample(self) -> str:
        """Head and tail together: what exit diagnosis looks at."""
        with self._lock:
            return (self._head + b"\n" + self._tail).decode("utf-8", errors="replace")
