"""The stdio bridge: an agent that plays its seat through a child process speaking JSON lines.

The bridge dials the game master like any agent (ARENA_GAME_MASTER, ARENA_SEAT_TOKEN), starts
the bot, writes every server message to the bot's stdin as one JSON line (the public events a
message carries first, one ``event`` line each) and forwards every line the bot prints on stdout
as a Reply. It judges nothing: a line that is not a reply goes to the game master as it is (a
"malformed" fault there), and a bot that exits before the game is over ends the stream (a
forfeit). The bot's stderr is the bridge's stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
from asyncio import FIRST_COMPLETED
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any, TextIO

import grpc

from arena import grpc_tuning, wire
from arena.agent import (
    CONNECT_TIMEOUT_S,
    DEFAULT_GAME_MASTER,
    EXIT_LOST,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    GameMasterUnreachable,
    SeatRefused,
    channel_ready_within,
    fault_text,
    stream_failure,
)
from arena.bridge import messages
from arena.exit_status import BRIDGE_BOT_GONE, BRIDGE_SAYS, end_like, how_it_ended, why_not_started
from arena.wire import pb

# Exit code when the bot exited with 0 (or could not be started) before the game ended; a bot
# that ended with an exit code or signal of its own, the bridge ends as it did.
EXIT_BOT = BRIDGE_BOT_GONE
# Seconds the bot has to exit after the game_end line before it is killed.
EXIT_GRACE_S = 3.0
# Seconds between SIGTERM and SIGKILL to the bot's process group, as the worker's launcher gives.
TERM_GRACE_S = 1.0
# Longest line read from the bot; the rest of a longer line is dropped.
MAX_LINE_BYTES = 64 * 1024
# Said at a timeout while the bot has written nothing: the usual cause, outside Python (whose
# bots get PYTHONUNBUFFERED), is output waiting in the bot's own buffer.
NOT_FLUSHED = (
    "the bot has not written a line yet: does it flush stdout after each one? (Perl: $| = 1; "
    "C: fflush(stdout); Node and most others: a newline-ended write suffices)"
)
# Said at a timeout while the bot has written output that no newline has ended yet: flushing
# is not the problem, the missing end of line is (printf without \n, print instead of println).
NO_NEWLINE = (
    "the bot wrote {count} byte(s) that no newline has ended yet ({start!r}): each reply is "
    "one line, end it with a newline (\\n)"
)
# Seconds to read what the bot wrote before it exited, when its stdout stays open after it (a
# child it started holds it); the lines are in the pipe already.
LAST_LINES_S = 1.0
# Errors of a write to a stream or pipe whose other end is gone.
_STREAM_OVER = (grpc.RpcError, asyncio.InvalidStateError)


class StdioBridge:
    """One seat played by ``command``; ``run`` returns the process exit code.

    Everything runs on one asyncio loop: the game master's messages, the bot's stdin (written
    without waiting, so a bot that stops reading cannot stop the bridge from hearing the game
    master) and its stdout (a task that forwards each line as a reply at once).
    """

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
        # Decisions sent to the bot and still waiting for its answer, oldest first: a line without
        # a request_id answers the oldest (the bot answers decisions in order).
        self._unanswered: deque[int] = deque()
        # Requests whose time was up before the bot answered them, and the latest of them while
        # no newer decision came: a bare line then is a late answer to it (ignored there).
        self._expired: set[int] = set()
        self._latest_expired: int | None = None
        self._ended = False  # game_end received
        self._died_early = False  # the bot left before the game ended (not after game_end)
        self.bot_returncode: int | None = None  # how it ended, if it left early
        self._silent = True  # no line from the bot yet
        self._unterminated = bytearray()  # what the bot wrote after its last newline
        self._proc: asyncio.subprocess.Process | None = None
        self._bot_exited: asyncio.Future[None] | None = None  # done when the bot process exits
        self._transport: asyncio.SubprocessTransport | None = None
        self._relay: asyncio.Task[None] | None = None  # forwards the bot's lines

    def _say(self, text: str) -> None:
        print(f"{BRIDGE_SAYS}{text}", file=self.log, flush=True)

    # ------------------------------------------------------------------------- the bot

    async def _start_bot(self) -> asyncio.subprocess.Process:
        env = grpc_tuning.without_ours(os.environ)
        env.pop("ARENA_SEAT_TOKEN", None)  # the bridge holds the seat; the bot needs no secret
        env.setdefault("PYTHONUNBUFFERED", "1")  # Python bots that forget to flush still work
        loop = asyncio.get_running_loop()
        protocol = _BotProtocol(loop)
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,  # passes through: the launcher captures the bridge's stderr
            env=env,
            start_new_session=True,  # its own process group: ended with all it starts
        )
        self._bot_exited, self._transport = protocol.exited, transport
        return asyncio.subprocess.Process(transport, protocol, loop)

    def _to_bot(self, data: bytes) -> None:
        """Queue bytes for the bot's stdin; never waits (the pipe's buffer takes them)."""
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None or stdin.is_closing():
            return  # the bot is gone; its stdout closing ends the stream
        with contextlib.suppress(OSError):
            stdin.write(data)

    async def _relay_replies(self, call: grpc.aio.StreamStreamCall) -> None:
        """Forward the bot's lines as replies; if the bot leaves (closes its stdout or exits)
        before the game ended, end the stream (a forfeit)."""
        if await self._until_bot_leaves(call) and not self._ended:
            await self._leave_early(call)

    async def _until_bot_leaves(self, call: grpc.aio.StreamStreamCall) -> bool:
        """Forward lines until the bot closes its stdout or exits (True) or the stream ends
        (False). Its exit is watched apart from its stdout: a child it started may hold that
        open, and then no end of file comes."""
        assert self._bot_exited is not None
        forwarding = asyncio.create_task(self._forward_lines(call))
        try:
            either: list[asyncio.Future[Any]] = [forwarding, self._bot_exited]
            await asyncio.wait(either, return_when=FIRST_COMPLETED)
            if not forwarding.done():  # it exited: read the lines it wrote before
                await asyncio.wait([forwarding], timeout=LAST_LINES_S)
            return forwarding.result() if forwarding.done() else True
        finally:
            await _cancelled(forwarding)

    async def _forward_lines(self, call: grpc.aio.StreamStreamCall) -> bool:
        """Forward each line as a reply until end of file (True) or the stream ends (False)."""
        assert self._proc is not None and self._proc.stdout is not None
        async for raw in _lines(self._proc.stdout, self._unterminated):
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            self._silent = False
            if len(raw) >= MAX_LINE_BYTES:
                self._say(f"a line of more than {MAX_LINE_BYTES} bytes: the rest was dropped")
            reply, problem = messages.reply_from_line(text, self._answered_by_bare_line())
            if problem:  # the game master's fault says what arrived; this says why
                self._say(problem)
            if reply.request_id in self._expired:
                self._say(f"a line for request {reply.request_id}, whose time was up: ignored")
            if reply.request_id in self._unanswered:
                while self._unanswered.popleft() != reply.request_id:
                    pass
            try:
                await call.write(pb.AgentMessage(reply=reply))
            except _STREAM_OVER:
                return False  # the game is over or the stream broke: the reader says which
        return True

    async def _leave_early(self, call: grpc.aio.StreamStreamCall) -> None:
        self._died_early = True
        code = await self._exit_code(timeout=1.0)  # stdout closes a moment before the exit
        self.bot_returncode = code
        why = how_it_ended(code) if code is not None else "closed its stdout"
        self._say(f"the bot {why} before the game ended; ending the stream (a forfeit)")
        with contextlib.suppress(*_STREAM_OVER):
            await call.done_writing()  # half-close: the game master sees the seat leave

    def _answered_by_bare_line(self) -> int | None:
        """The request a line without a request_id answers: the oldest still waiting, else the
        latest whose time was up (so a late answer is ignored as late, not a fault)."""
        return self._unanswered[0] if self._unanswered else self._latest_expired

    def _asked(self, request_id: int) -> None:
        # The game master asks a seat one decision at a time: one still unanswered now has
        # had its time, and a bare line must not go to it (it would be ignored as late).
        self._expired.update(self._unanswered)
        self._unanswered.clear()
        self._unanswered.append(request_id)
        self._latest_expired = None

    def _time_was_up(self, request_id: int) -> None:
        """The game master played the fallback for ``request_id`` (a timeout)."""
        if request_id in self._unanswered:
            self._unanswered.remove(request_id)
        self._expired.add(request_id)
        self._latest_expired = request_id

    async def _exit_code(self, timeout: float) -> int | None:
        """The bot's exit code once it has exited, None if it is still running at ``timeout``."""
        if self._proc is None or self._bot_exited is None:
            return None
        try:
            await asyncio.wait_for(asyncio.shield(self._bot_exited), timeout)
        except TimeoutError:
            return None
        return self._proc.returncode

    async def _stop_bot(self) -> None:
        """After the game: close the bot's stdin, give it a moment to exit, then kill it."""
        proc = self._proc
        if proc is None:
            return
        if self._relay is not None:
            await _cancelled(self._relay)  # its reading must end before the draining begins
        draining = asyncio.create_task(_discard(proc.stdout))
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # after what is still buffered
            if await self._exit_code(EXIT_GRACE_S) is None:
                self._say(
                    f"the bot did not exit within {EXIT_GRACE_S:g} s after the game; killing it"
                )
            await self._end_process_group()  # what the bot started may run on without it
            await self._exit_code(EXIT_GRACE_S)
        finally:
            draining.cancel()
            # Closed here, on the running loop: left to the garbage collector after the loop
            # closed (its stdout held open by a child of the bot), it raised "Event loop is
            # closed" at exit.
            if self._transport is not None:
                self._transport.close()

    async def _end_process_group(self) -> None:
        """End the bot and everything it started (its process group): SIGTERM, a second of
        grace, then SIGKILL, as the worker's launcher does. Neither a launcher's kill of the
        bridge's own group reaches them, nor is there one when the bridge is run by hand."""
        assert self._proc is not None
        group = self._proc.pid  # a session of its own: the group's id is the bot's pid
        if not _signal_group(group, signal.SIGTERM):
            return  # nothing of it is left
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TERM_GRACE_S
        while _signal_group(group, 0) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        _signal_group(group, signal.SIGKILL)

    def kill_bot_group(self) -> None:
        """SIGKILL the bot's process group at once, if the bot was started."""
        if self._proc is not None:
            _signal_group(self._proc.pid, signal.SIGKILL)

    # ------------------------------------------------------------------------- the seat

    def run(self, address: str, token: str, connect_timeout: float = CONNECT_TIMEOUT_S) -> int:
        return asyncio.run(self._run(address, token, connect_timeout))

    async def _run(self, address: str, token: str, connect_timeout: float) -> int:
        try:
            self._proc = await self._start_bot()
        except OSError as exc:
            why = why_not_started(self.command[0], exc)
            self._say(f"cannot start the bot {shlex.join(self.command)!r}: {why}")
            return EXIT_BOT
        try:
            return await self._play(address, token, connect_timeout)
        finally:
            await self._stop_bot()

    async def _play(self, address: str, token: str, connect_timeout: float) -> int:
        hello = pb.AgentMessage(
            hello=pb.Hello(
                seat_token=token,
                protocol_version=wire.PROTOCOL_VERSION,
                agent_name=self.agent_name,
                agent_version=f"{wire.STDIO_AGENT_VERSION}{messages.JSON_PROTOCOL_VERSION}",
            )
        )
        async with grpc.aio.insecure_channel(address) as channel:

            def waiting() -> None:
                self._say(f"no game master at {address} yet; waiting up to {connect_timeout:g} s")

            if not await channel_ready_within(channel, connect_timeout, waiting):
                self._say(f"cannot reach the game master at {address}")
                return EXIT_UNREACHABLE
            call = channel.stream_stream(
                wire.PLAY,
                request_serializer=pb.AgentMessage.SerializeToString,
                response_deserializer=pb.ServerMessage.FromString,
            )()
            relay: asyncio.Task[None] | None = None
            welcomed = False
            try:
                await call.write(hello)
                relay = self._relay = asyncio.create_task(self._relay_replies(call))
                while (msg := await call.read()) is not grpc.aio.EOF:
                    kind = msg.WhichOneof("kind")
                    welcomed = welcomed or kind == "welcome"
                    if kind == "decision":
                        self._asked(msg.decision.request_id)
                    elif kind == "event" and not self.events:
                        continue  # (the game master sends these only if asked; it was not)
                    elif kind == "fault":
                        self._say(fault_text(msg.fault))
                        if msg.fault.kind == "timeout":
                            self._time_was_up(msg.fault.request_id)
                        if msg.fault.kind == "timeout" and self._unterminated:
                            start = bytes(self._unterminated[:60]).decode("utf-8", "replace")
                            self._say(NO_NEWLINE.format(count=len(self._unterminated), start=start))
                        elif msg.fault.kind == "timeout" and self._silent:
                            self._say(NOT_FLUSHED)
                    elif kind == "game_end":
                        self._ended = True
                    lines = messages.to_lines(msg, events=self.events)
                    if lines:  # one write for the lot: one wake-up of the bot, not several
                        self._to_bot(b"".join(messages.dumps(x).encode() + b"\n" for x in lines))
                    if kind == "game_end":
                        break
            except grpc.RpcError as exc:
                failure = stream_failure(exc, hello_sent=relay is not None, welcomed=welcomed)
                if isinstance(failure, SeatRefused):
                    self._say(f"game master refused the seat token: {failure}")
                    return EXIT_REFUSED
                if isinstance(failure, GameMasterUnreachable):
                    self._say(f"cannot reach the game master at {address}: {failure}")
                    return EXIT_UNREACHABLE
                if self._died_early:
                    return EXIT_BOT
                self._say(f"lost the game master mid-game: {failure}")
                return EXIT_LOST
            finally:
                if relay is not None:
                    relay.cancel()
                call.cancel()
            if not self._ended:
                if self._died_early:
                    return EXIT_BOT
                self._say("the game master ended the stream before the game ended")
                return EXIT_LOST
            return EXIT_BOT if self._died_early else 0


class _BotProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The bot's pipes, and ``exited``, done when the bot process exits: on Python 3.11
    Process.wait() returns only once its pipes are closed too, which a child the bot started
    and left running may never do."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=MAX_LINE_BYTES, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to a process group; False if no process of it is left."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _discard(stream: asyncio.StreamReader | None) -> None:
    """Read and drop everything until end of file: a bot blocked writing to a full pipe that
    no one reads (a long summary after game_end, say) could never exit, and on Python 3.11
    Process.wait() returns only once its stdout is closed as well."""
    while stream is not None and await stream.read(MAX_LINE_BYTES):
        pass


async def _cancelled(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has stopped."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _lines(
    stream: asyncio.StreamReader, unterminated: bytearray | None = None
) -> AsyncIterator[bytes]:
    """Lines of at most MAX_LINE_BYTES (the rest of a longer line is skipped); ``unterminated``,
    if given, is kept holding what was read after the last newline."""
    pending = b""
    skipping = False  # in the rest of a line that was too long
    while chunk := await stream.read(MAX_LINE_BYTES):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if skipping:
                skipping = False
            else:
                yield line[:MAX_LINE_BYTES]
        if skipping:
            pending = b""
        elif len(pending) >= MAX_LINE_BYTES:
            yield pending[:MAX_LINE_BYTES]
            pending, skipping = b"", True
        if unterminated is not None:
            unterminated[:] = pending
    if pending and not skipping:
        yield pending


def run_from_env(command: Sequence[str], *, events: bool = True, agent_name: str = "") -> int:
    """Play the seat in ARENA_SEAT_TOKEN on ARENA_GAME_MASTER with the bot ``command``."""
    token = os.environ.get("ARENA_SEAT_TOKEN", "")
    address = os.environ.get("ARENA_GAME_MASTER") or DEFAULT_GAME_MASTER
    if not token:
        print("ARENA_SEAT_TOKEN is not set: the platform starts agents with it", file=sys.stderr)
        return 2
    bridge = StdioBridge(command, events=events, agent_name=agent_name)
    _end_bot_with_the_bridge(bridge)
    code = bridge.run(address, token)
    if code == EXIT_BOT and bridge.bot_returncode:
        # Ended as the bot did, so the platform's verdict is the bot's own: its exit code,
        # its crash, the CPU time limit that killed it (the limits apply to each process).
        return end_like(bridge.bot_returncode)
    return code


def _end_bot_with_the_bridge(bridge: StdioBridge) -> None:
    """Stopped by SIGTERM or SIGHUP (a launcher ending the bridge's process group, a closed
    terminal), the bridge first kills the bot's group, which is not the bridge's, then dies
    of the signal as it would have without this handler."""

    def die_with_the_bot(signum: int, _frame: object) -> None:
        bridge.kill_bot_group()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, die_with_the_bot)
