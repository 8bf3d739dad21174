"""The rlimits a process agent runs under, set in its own process, and the exec into its bot.

Standard library only, because it runs in two places:
- as the exec wrapper of a spawned agent, `python -I -S rlimits.py CPU MEMORY PROGRAM ARGS…`:
  preexec_fn is unsafe in a threaded parent (the worker runs gRPC threads), so this tiny
  interpreter sets the limits and then execs the bot in its place;
- imported by the fork server's child before it runs a Python agent or execs any other.

The hard CPU limit is one second above the soft one, so a bot ignoring SIGXCPU gets SIGKILL.
"""

from __future__ import annotations

import os
import resource
import signal
import sys

TYPE_CHECKING = False  # typing itself takes 12 ms to import: more than all of this wrapper
if TYPE_CHECKING:
    from typing import NoReturn

# What a shell reports for a command it cannot run.
CANNOT_RUN = 127


def apply(cpu_seconds: int | None, memory_bytes: int | None) -> None:
    """No core dumps; CPU seconds and writable memory (RLIMIT_DATA) capped when given."""
    _cap(resource.RLIMIT_CORE, 0, 0)
    if cpu_seconds:
        _cap(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)
    if memory_bytes:
        _cap(resource.RLIMIT_DATA, memory_bytes, memory_bytes)


def _cap(kind: int, soft: int, hard: int) -> None:
    """Lower a limit, never above a hard limit the worker itself runs under."""
    old = resource.getrlimit(kind)[1]
    if old != resource.RLIM_INFINITY:
        soft, hard = min(soft, old), min(hard, old)
    resource.setrlimit(kind, (soft, hard))


def exec_program(argv: list[str], env: dict[str, str] | None = None) -> NoReturn:
    """Become the bot's program, with the signal dispositions a shell would give it.

    Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec:
    a shell bot would then see a closed pipe as an error instead of dying of it.
    """
    for signum in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(signum, signal.SIG_DFL)
    try:
        os.execve(argv[0], argv, os.environ if env is None else env)
    except OSError as error:
        sys.stderr.write(f"arena: cannot run {argv[0]!r}: {error}\n")
        sys.exit(CANNOT_RUN)


if __name__ == "__main__":
    apply(int(sys.argv[1]), int(sys.argv[2]))
    exec_program(sys.argv[3:])
