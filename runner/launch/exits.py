"""Turn how an agent ended (status, CPU used, stderr) into one human-readable reason."""

from __future__ import annotations

import re
import signal

from arena.exit_status import BRIDGE_BOT_GONE, BRIDGE_SAYS
from runner.launch.spec import MIB, AgentLimits

# What common runtimes print when an allocation fails under RLIMIT_DATA or a cgroup limit:
# CPython, C++, Java, Node/V8, Go, Rust, glibc's strerror(ENOMEM).
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|std::bad_alloc|OutOfMemoryError|out of memory"
    r"|memory allocation of \d+ bytes failed|Cannot allocate memory",
    re.IGNORECASE,
)

# `docker run` reserves these exit codes for its own failures (docker run reference). Said
# of "the agent" ("crash: the agent exited with code 125, ... before connecting").
_DOCKER_COULD_NOT_START = {
    125: "exited with code 125, docker's: it could not run the container",
    126: "exited with code 126, docker's: the container's command could not be invoked",
    127: "exited with code 127, docker's: the container's command was not found",
}


# What the stdio bridge says of its bot as it ends with BRIDGE_BOT_GONE: "the bot exited with
# code 0 before the game ended; ending the stream (a forfeit)", "cannot start the bot ...".
_BRIDGE_BOT_GONE = re.compile(
    rf"^{re.escape(BRIDGE_SAYS)}"
    r"(the bot (?:exited|was killed|closed)[^;\n]*|cannot start the bot .*)",
    re.MULTILINE,
)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def memory_text(limits: AgentLimits) -> str:
    if limits.memory_bytes is None:
        return "out of memory"
    return f"memory limit ({limits.memory_bytes // MIB} MB) exceeded"


def cpu_text(limits: AgentLimits) -> str:
    return f"CPU time limit ({limits.cpu_seconds} s) exceeded"


def looks_out_of_memory(stderr: str) -> bool:
    return _OUT_OF_MEMORY.search(stderr) is not None


def describe_exit(
    returncode: int,
    *,
    limits: AgentLimits,
    stopped: bool = False,
    cpu_used: float | None = None,
    stderr: str = "",
    container: bool = False,
) -> str:
    """Say why an agent ended. `returncode` follows Popen: negative means killed by a signal.

    The CPU verdict is exact for SIGXCPU (sent only by RLIMIT_CPU) and for SIGKILL when the
    process had used its CPU seconds (the hard limit). The memory verdict is a heuristic:
    under RLIMIT_DATA an allocation simply fails, and the runtime dies in its own way, so we
    look for the usual out-of-memory messages in stderr after an unsuccessful exit. A
    program that exits non-zero after printing such a message for another reason is
    misreported, and one that dies silently is reported by its exit code or signal. For
    containers a SIGKILL we did not send is blamed on the cgroup OOM killer, the usual cause.
    """
    if stopped:
        return "stopped by the arena"
    signal_number = -returncode if returncode < 0 else None
    if container:
        if returncode in _DOCKER_COULD_NOT_START:
            return _DOCKER_COULD_NOT_START[returncode]
        # docker run reports a container killed by signal N as exit code 128 + N.
        if 128 < returncode <= 128 + 64:
            signal_number = returncode - 128
    if limits.cpu_seconds is not None:
        if signal_number == signal.SIGXCPU:
            return cpu_text(limits)
        hard_limit = cpu_used is not None and cpu_used >= limits.cpu_seconds
        if signal_number == signal.SIGKILL and hard_limit:
            return cpu_text(limits)
    if returncode != 0 and looks_out_of_memory(stderr):
        return memory_text(limits)
    if container and signal_number == signal.SIGKILL and limits.memory_bytes is not None:
        return f"{memory_text(limits)} (killed by SIGKILL, presumably the OOM killer)"
    if signal_number is not None:
        return f"killed by signal {signal_name(signal_number)} ({signal_number})"
    if returncode == BRIDGE_BOT_GONE and (said := _BRIDGE_BOT_GONE.findall(stderr)):
        # The bridge's own code, not the bot's: "exited with code 6" alone blamed the bot.
        return f"exited with code {returncode}, the stdio bridge's code for: {said[-1]}"
    return f"exited with code {returncode}"
