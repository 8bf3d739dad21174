"""The stdio bridge: an agent that plays its seat through a child process speaking JSON lines.

The bridge dials the game master like any agent (ARENA_GAME_MASTER, ARENA_SEAT_TOKEN), starts
the bot, writes every server message to the bot's stdin as one JSON line (the public events a
message carries first, one ``event`` line each) and forwards every line the bot prints on stdout
as a Reply. It judges nothing: a line that is not a reply goes to the game master as it is (a
"malformed" fault there), and a bot that exits before the game is over ends the stream (a
forfeit). The bot's stderr is the bridge's stderr.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from typing import IO, TextIO

import grpc

from arena import wire
from arena.agent import (
    CONNECT_TIMEOUT_S,
    DEFAULT_GAME_MASTER,
    EXIT_LOST,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    REFUSALS,
)
from arena.bridge import messages
from arena.wire import pb

# Exit code when the bot exited (or could not be started) before the game ended.
EXIT_BOT = 6
# Seconds the bot has to exit after the game_end line before it is killed.
EXIT_GRACE_S = 3.0
# Longest line read from the bot; the rest of a longer line is dropped.
MAX_LINE_BYTES = 64 * 1024


class StdioBridge:
    """One seat played by ``command``; ``run`` returns the process exit code."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        events: bool = True,
        agent_name: str = "",
        log: TextIO | None = None,
    ) -> None:
        if not command:
            raise ValueError("the stdio bridge needs a bot command")
        self.command = list(command)
        self.events = events
        self.agent_name = agent_name or "stdio:" + " ".join(self.command)[:80]
        self.log = log if log is not None else sys.stderr
        self._outgoing: queue.Queue[pb.AgentMessage | None] = queue.Queue()
        # Decisions sent to the bot and not yet answered, oldest first: a reply line without
        # a request_id answers the oldest (the bot answers decisions in order).
        self._unanswered: deque[int] = deque()
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._bot_gone = threading.Event()
        self._died_early = threading.Event()  # gone before the game ended (not after game_end)
        self._to_bot: queue.Queue[bytes | None] = queue.Queue()
        self._proc: subprocess.Popen[bytes] | None = None

    def _say(self, text: str) -> None:
        print(f"[stdio-agent] {text}", file=self.log, flush=True)

    # ------------------------------------------------------------------------- the bot

    def _start_bot(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env.pop("ARENA_SEAT_TOKEN", None)  # the bridge holds the seat; the bot needs no secret
        env.setdefault("PYTHONUNBUFFERED", "1")  # Python bots that forget to flush still work
        return subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # passes through: the launcher captures the bridge's stderr
            env=env,
        )

    def _read_bot(self, stdout: IO[bytes]) -> None:
        """Forward the bot's lines as replies until it closes stdout."""
        for raw in _lines(stdout):
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            reply = messages.reply_from_line(text, self._take_pending())
            self._answered(reply.request_id)
            self._outgoing.put(pb.AgentMessage(reply=reply))
        if not self._ended.is_set():
            self._died_early.set()
        self._bot_gone.set()
        if self._died_early.is_set():
            code = self._exit_code(timeout=1.0)  # stdout closes a moment before the exit
            why = f"exited with code {code}" if code is not None else "closed its stdout"
            self._say(f"the bot {why} before the game ended; ending the stream (a forfeit)")
            self._outgoing.put(None)  # half-close: the game master sees the seat leave

    def _exit_code(self, timeout: float) -> int | None:
        if self._proc is None:
            return None
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def _take_pending(self) -> int:
        with self._lock:
            return self._unanswered[0] if self._unanswered else 0

    def _answered(self, request_id: int) -> None:
        with self._lock:
            if request_id in self._unanswered:
                while self._unanswered and self._unanswered.popleft() != request_id:
                    pass

    def _write_bot(self, stdin: IO[bytes]) -> None:
        """Write queued lines to the bot (in its own thread: a bot that stops reading its
        stdin must not stop the bridge from hearing the game master)."""
        try:
            while (data := self._to_bot.get()) is not None:
                stdin.write(data)
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the bot is gone; the reader sees its stdout close and ends the stream
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _stop_bot(self) -> None:
        """After the game: close the bot's stdin, give it a moment to exit, then kill it."""
        self._to_bot.put(None)
        proc = self._proc
        if proc is None:
            return
        try:
            proc.wait(EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self._say(f"the bot did not exit within {EXIT_GRACE_S:g} s after the game; killing it")
            proc.kill()
            proc.wait()

    # ------------------------------------------------------------------------- the seat

    def run(self, address: str, token: str, connect_timeout: float = CONNECT_TIMEOUT_S) -> int:
        try:
            self._proc = self._start_bot()
        except OSError as exc:
            self._say(f"cannot start the bot {self.command!r}: {exc}")
            return EXIT_BOT
        assert self._proc.stdin is not None and self._proc.stdout is not None
        reader = threading.Thread(
            target=self._read_bot, args=(self._proc.stdout,), name="bot-stdout", daemon=True
        )
        writer = threading.Thread(
            target=self._write_bot, args=(self._proc.stdin,), name="bot-stdin", daemon=True
        )
        reader.start()
        writer.start()
        try:
            return self._play(address, token, connect_timeout)
        finally:
            self._outgoing.put(None)
            self._stop_bot()

    def _play(self, address: str, token: str, connect_timeout: float) -> int:
        self._outgoing.put(
            pb.AgentMessage(
                hello=pb.Hello(
                    seat_token=token,
                    protocol_version=wire.PROTOCOL_VERSION,
                    agent_name=self.agent_name,
                    agent_version=f"stdio-json/{messages.JSON_PROTOCOL_VERSION}",
                )
            )
        )

        def requests() -> Iterator[pb.AgentMessage]:
            while (msg := self._outgoing.get()) is not None:
                yield msg

        channel = grpc.insecure_channel(address)
        try:
            try:
                grpc.channel_ready_future(channel).result(timeout=connect_timeout)
            except grpc.FutureTimeoutError:
                self._say(f"cannot reach the game master at {address}")
                return EXIT_UNREACHABLE
            call = channel.stream_stream(
                wire.PLAY,
                request_serializer=pb.AgentMessage.SerializeToString,
                response_deserializer=pb.ServerMessage.FromString,
            )(requests())
            welcomed = False
            try:
                for msg in call:
                    kind = msg.WhichOneof("kind")
                    welcomed = welcomed or kind == "welcome"
                    if kind == "decision":
                        with self._lock:
                            self._unanswered.append(msg.decision.request_id)
                    elif kind == "event" and not self.events:
                        continue  # (the game master sends these only if asked; it was not)
                    elif kind == "fault":
                        f = msg.fault
                        self._say(
                            f"fault {f.faults}/{f.fault_limit} ({f.kind}): {f.detail}"
                            + (f"; the game master played {f.fallback!r}" if f.fallback else "")
                        )
                    elif kind == "game_end":
                        self._ended.set()
                    lines = messages.to_lines(msg, events=self.events)
                    if lines:  # one write for the lot: one wake-up of the bot, not several
                        self._to_bot.put(
                            b"".join(messages.dumps(x).encode() + b"\n" for x in lines)
                        )
                    if kind == "game_end":
                        break
            except grpc.RpcError as exc:
                code, details = exc.code(), exc.details() or ""
                if not welcomed and code in REFUSALS:
                    self._say(f"game master refused the seat token: {code.name}: {details}")
                    return EXIT_REFUSED
                if not welcomed and code is grpc.StatusCode.UNAVAILABLE:
                    self._say(f"cannot reach the game master at {address}: {details}")
                    return EXIT_UNREACHABLE
                if self._died_early.is_set():
                    return EXIT_BOT
                self._say(f"lost the game master mid-game: {code.name}: {details}")
                return EXIT_LOST
            finally:
                call.cancel()
            if not self._ended.is_set():
                if self._died_early.is_set():
                    return EXIT_BOT
                self._say("the game master ended the stream before the game ended")
                return EXIT_LOST
            return EXIT_BOT if self._died_early.is_set() else 0
        finally:
            channel.close()


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    """Lines of at most MAX_LINE_BYTES (the rest of a longer line is skipped)."""
    while True:
        line = stream.readline(MAX_LINE_BYTES)
        if not line:
            return
        if len(line) >= MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
        yield line


def run_from_env(command: Sequence[str], *, events: bool = True, agent_name: str = "") -> int:
    """Play the seat in ARENA_SEAT_TOKEN on ARENA_GAME_MASTER with the bot ``command``."""
    token = os.environ.get("ARENA_SEAT_TOKEN", "")
    address = os.environ.get("ARENA_GAME_MASTER") or DEFAULT_GAME_MASTER
    if not token:
        print("ARENA_SEAT_TOKEN is not set: the platform starts agents with it", file=sys.stderr)
        return 2
    return StdioBridge(command, events=events, agent_name=agent_name).run(address, token)
