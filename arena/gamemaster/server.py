"""The GameMaster gRPC service on grpc.aio, with health checking and reflection.

One asyncio loop serves every game: a game is a task, a seat a stream, so thousands of games
need no thread pool, and no agent can hold a thread hostage. ``create_server`` builds it
(tests bind port 0), ``serve`` runs it until SIGTERM, ``start_in_thread`` runs it beside
synchronous code.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import signal
import threading
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, NoReturn, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arena import wire
from arena.errors import ArenaError
from arena.game import Game
from arena.gamemaster import unix_socket
from arena.gamemaster.policy import DETAIL_MAX_CHARS, MAX_AGENT_MESSAGE_BYTES, GameLimits, cut
from arena.gamemaster.session import GameSession
from arena.gamemaster.status import SHUTTING_DOWN, Refusal, Refused
from arena.gamemaster.tokens import SeatTokens, TokenUsed
from arena.listening import check_listenable
from arena.rulesets import Ruleset, get_ruleset, ruleset_parameters
from arena.wire import pb

log = logging.getLogger(__name__)

# Seconds an agent has, after opening its stream, to send its Hello.
HELLO_TIMEOUT_S = 10.0
# Seconds a seat's stream stays open after its GameEnd, unless the agent closes it first.
AFTER_END_S = 5.0
# Games open (not yet ended) at once; beyond that OpenGame answers RESOURCE_EXHAUSTED.
DEFAULT_MAX_GAMES = 2000
# How long an ended game's result stays available to AwaitGame, and how many are kept.
RETAIN_S = 3600.0
RETAIN_MAX = 1000
# Matched whole (fullmatch): `$` also matches before a final line break.
_GAME_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")
ABORTED_BY_PLATFORM = "aborted by the platform (AbortGame)"

T = TypeVar("T")


class GameMasterService:
    """The handlers and the games they share. All methods run on the server's loop."""

    def __init__(
        self,
        limits: GameLimits,
        admin_token: str | None = None,
        max_games: int = DEFAULT_MAX_GAMES,
        retain_s: float = RETAIN_S,
    ) -> None:
        self.limits = limits
        self.admin_token = admin_token or None
        self.max_games = max_games
        self.retain_s = retain_s
        self.games: dict[str, GameSession] = {}
        self.tokens = SeatTokens()
        self.stopping = False
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------------- Play

    async def play(self, requests: object, context: grpc.aio.ServicerContext) -> None:
        # A coroutine, not an async generator: messages are written with context.write by a
        # _SeatStream, at once, from whichever step produced them (see there).
        try:
            raw = await asyncio.wait_for(context.read(), HELLO_TIMEOUT_S)
        except TimeoutError:
            await _abort(context, Refused(Refusal.NO_HELLO, "no Hello within 10 s"))
        if raw is grpc.aio.EOF:
            await _abort(context, Refused(Refusal.NOT_HELLO, "the stream ended before a Hello"))
        try:
            session, seat, hello = self._handshake(raw)
        except Refused as refused:
            log.info("refused a seat: %s", refused)
            await _abort(context, refused)
        stream = _SeatStream(context)
        session.attach(seat, hello, stream)
        # The name as a literal: it is the bot's to choose, line breaks and escapes included.
        name = cut(hello.agent_name, 100)
        log.info("game %s: seat %d connected (%r)", session.game_id, seat, name)
        reader = asyncio.create_task(self._read(context, session, seat))
        try:
            await stream.closed  # GameEnd written
            # Returning ends the call with status OK, but not at once: an agent still writing
            # a reply (the game ended while its bot thought) would have that write fail its
            # call, and never read its GameEnd. So the call ends when the agent closes its
            # side (or cancels), or after AFTER_END_S.
            await asyncio.wait({reader}, timeout=AFTER_END_S)
        finally:
            reader.cancel()
            stream.closed.cancel()  # if the call was cancelled: later messages are dropped
            if not session.finished:  # the client went away (cancelled the call or died)
                session.on_disconnect(seat, "the connection to the agent was lost")

    def _handshake(self, raw: bytes) -> tuple[GameSession, int, pb.Hello]:
        if self.stopping:
            raise Refused(Refusal.SHUTTING_DOWN, SHUTTING_DOWN)
        try:
            msg = pb.AgentMessage.FromString(raw)
        except Exception:  # hostile bytes
            raise Refused(
                Refusal.NOT_HELLO, "the first message is not a readable AgentMessage"
            ) from None
        if msg.WhichOneof("kind") != "hello":
            raise Refused(Refusal.NOT_HELLO, "the first message on Play must be a Hello")
        hello = msg.hello
        try:
            game_id, seat = self.tokens.check(hello.seat_token)
        except TokenUsed as used:
            self.games[used.game_id].contested(used.seat, hello.agent_name)
            raise
        session = self.games[game_id]
        if hello.protocol_version != wire.PROTOCOL_VERSION:
            raise session.refuse_hello(
                seat,
                Refused(
                    Refusal.VERSION,
                    f"protocol version {hello.protocol_version} is not spoken here; "
                    f"this game master speaks version {wire.PROTOCOL_VERSION}",
                ),
            )
        self.tokens.claim(hello.seat_token)
        return session, seat, hello

    @staticmethod
    async def _read(context: grpc.aio.ServicerContext, session: GameSession, seat: int) -> None:
        detail = "the agent closed its stream"
        try:
            # Read on after the game ended too (the session ignores those messages): the agent
            # may still answer decisions it had before its GameEnd (see AFTER_END_S).
            while (raw := await context.read()) is not grpc.aio.EOF:
                session.on_message(seat, raw)
        except Exception as exc:  # the transport broke (a cancellation is no Exception: it ends us)
            detail = f"the stream broke ({exc.__class__.__name__})"
        session.on_disconnect(seat, detail)

    # ------------------------------------------------------------------------- Watch

    async def watch(
        self, request: pb.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.GameEvent]:
        try:
            session = self._session(request.game_id)
            self._check_not_dealt_elsewhere(session, context)
        except Refused as refused:
            await _abort(context, refused)
        queue = session.watch()
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:  # the spectator left (or the game ended): a queue nobody reads must not grow
            session.unwatch(queue)

    # ------------------------------------------------------------------------- admin

    async def open_game(
        self, request: pb.OpenGameRequest, context: grpc.aio.ServicerContext
    ) -> pb.OpenGameReply:
        try:
            self._check_admin(context)
            return self.open(request)
        except Refused as refused:
            await _abort(context, refused)

    def open(self, request: pb.OpenGameRequest) -> pb.OpenGameReply:
        """Create a game from an OpenGameRequest (Refused on a bad one)."""
        if self.stopping:
            raise Refused(Refusal.SHUTTING_DOWN, SHUTTING_DOWN)
        self._forget_old_games()
        running = sum(1 for s in self.games.values() if not s.finished)
        if running >= self.max_games:
            raise Refused(Refusal.TOO_MANY_GAMES, f"{running} games are open (the limit)")
        ruleset = _ruleset(request)
        try:
            limits = wire.limits_from_pb(request.limits, self.limits)
        except ValueError as exc:
            raise Refused(Refusal.BAD_REQUEST, f"bad limits: {exc}") from None
        agents = list(request.agents)
        if agents and (len(agents) != 4 or any(len(a) > 200 for a in agents)):
            raise Refused(Refusal.BAD_REQUEST, "agents: give 4 names (seats 0..3), or none")
        game_id = request.game_id or uuid.uuid4().hex
        if not _GAME_ID.fullmatch(game_id):
            # Cut: the message travels in a header, which a long id made too big to send.
            shown = cut(game_id, 100)
            raise Refused(Refusal.BAD_REQUEST, f"bad game id {shown!r}: use [A-Za-z0-9._-]")
        if game_id in self.games:
            raise Refused(Refusal.GAME_EXISTS, f"game {game_id} already exists")
        first_dealer = request.first_dealer if request.HasField("first_dealer") else None
        if first_dealer is not None and first_dealer not in range(4):
            raise Refused(Refusal.BAD_REQUEST, f"first_dealer must be 0..3, not {first_dealer}")
        seed: int | str = request.seed_text or request.seed
        game = Game(ruleset, seed, first_dealer)
        session = GameSession(game_id, game, limits, agents, on_finished=self._finished)
        self.games[game_id] = session
        tokens = self.tokens.issue(game_id)
        task = asyncio.create_task(session.run(), name=f"game {game_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # Not the seed: it fixes every card of the game, and of its mirror, still to be played,
        # and a bot that finds the log file would know them (the record has it afterwards).
        log.info("game %s opened (%s)", game_id, ruleset.name)
        return pb.OpenGameReply(
            game_id=game_id, seat_tokens=tokens, limits=wire.limits_to_pb(limits)
        )

    async def await_game(
        self, request: pb.GameRef, context: grpc.aio.ServicerContext
    ) -> pb.GameResult:
        try:
            self._check_admin(context)
            session = self._session(request.game_id)
            self._check_not_dealt_elsewhere(session, context)
        except Refused as refused:
            await _abort(context, refused)
        return await session.wait()

    async def abort_game(
        self, request: pb.AbortGameRequest, context: grpc.aio.ServicerContext
    ) -> pb.GameResult:
        try:
            self._check_admin(context)
            session = self._session(request.game_id)
        except Refused as refused:
            await _abort(context, refused)
        reason = cut(request.reason.strip(), DETAIL_MAX_CHARS)
        session.abort(f"aborted by the platform: {reason}" if reason else ABORTED_BY_PLATFORM)
        return self._as_told(session, await session.wait(), context)

    async def forfeit_seat(
        self, request: pb.ForfeitSeatRequest, context: grpc.aio.ServicerContext
    ) -> pb.GameResult:
        try:
            self._check_admin(context)
            session = self._session(request.game_id)
            if request.seat > 3:
                raise Refused(Refusal.BAD_REQUEST, f"seat must be 0..3, not {request.seat}")
            detail = cut(request.detail.strip(), DETAIL_MAX_CHARS)
            over = session.forfeit_absent(request.seat, detail or "the agent is gone (ForfeitSeat)")
        except Refused as refused:
            await _abort(context, refused)
        if not over:  # the forfeit waits for the other team (reason "": not over)
            return pb.GameResult(game_id=session.game_id)
        return self._as_told(session, await session.wait(), context)

    def _check_admin(self, context: grpc.aio.ServicerContext) -> None:
        if unix_socket.is_peer(context.peer()):
            raise Refused(
                Refusal.ADMIN_ONLY,
                "admin calls are not served on the agents' socket (ARENA_GAME_MASTER_SOCKET): "
                "make them over TCP, at ARENA_GAME_MASTER",
            )
        if self.admin_token is not None and not self._is_admin(context):
            sent = any(key == wire.ADMIN_HEADER for key, _ in context.invocation_metadata() or ())
            which = "the one sent is not it" if sent else "none was sent"
            raise Refused(
                Refusal.ADMIN_ONLY,
                f"admin calls need this game master's admin token (the {wire.ADMIN_HEADER} "
                f"header): {which}; give the caller the game master's ARENA_ADMIN_TOKEN",
            )

    def _is_admin(self, context: grpc.aio.ServicerContext) -> bool:
        """The call carries the admin token (False when the game master has none)."""
        if self.admin_token is None:
            return False
        metadata = dict(context.invocation_metadata() or ())
        given = str(metadata.get(wire.ADMIN_HEADER, ""))
        return hmac.compare_digest(given.encode(), self.admin_token.encode())

    def _check_not_dealt_elsewhere(
        self, session: GameSession, context: grpc.aio.ServicerContext
    ) -> None:
        """The two games of a duplicate set deal the same cards: a seat of the one being played
        must not read the other's record or watch its cards fall. Refused, but to the holder of
        the admin token (a platform playing both at once, as `arena play --mirror` does)."""
        other = self._dealt_elsewhere(session)
        if other is not None and not self._is_admin(context):
            raise Refused(
                Refusal.DEALS_IN_PLAY,
                f"game {session.game_id} deals the same cards as game {other.game_id}, which "
                "is being played: ask again when it has ended",
            )

    def _dealt_elsewhere(self, session: GameSession) -> GameSession | None:
        """Another game being played with the same cards, if there is one."""
        deals = _deals(session)
        for other in self.games.values():
            if other is not session and not other.finished and _deals(other) == deals:
                return other
        return None

    def _as_told(
        self, session: GameSession, result: pb.GameResult, context: grpc.aio.ServicerContext
    ) -> pb.GameResult:
        """The result AbortGame and ForfeitSeat return, without the record while another game
        deals the same cards (as AwaitGame would refuse it)."""
        if self._dealt_elsewhere(session) is None or self._is_admin(context):
            return result
        told = pb.GameResult()
        told.CopyFrom(result)
        told.ClearField("record_jsonl")
        return told

    def _session(self, game_id: str) -> GameSession:
        session = self.games.get(game_id)
        if session is None:
            live = [g for g, s in self.games.items() if not s.finished]
            raise _unknown_game(game_id, live)
        return session

    def _finished(self, session: GameSession) -> None:
        self.tokens.revoke(session.game_id)
        result = session.result
        if result is not None:
            log.info(
                "game %s ended: %s %s%s",
                session.game_id,
                result.reason,
                list(result.scores),
                f" ({result.detail})" if result.detail else "",
            )

    def _forget_old_games(self) -> None:
        now = asyncio.get_running_loop().time()
        ended = [s for s in self.games.values() if s.finished and s.finished_at is not None]
        ended.sort(key=lambda s: s.finished_at or 0.0)
        excess = len(ended) - RETAIN_MAX
        for i, s in enumerate(ended):
            if i < excess or now - (s.finished_at or now) > self.retain_s:
                del self.games[s.game_id]
                self.tokens.forget(s.game_id)

    async def shutdown(self) -> None:
        """Refuse new games and seats; end every game in progress as aborted."""
        self.stopping = True
        for session in list(self.games.values()):
            session.abort(SHUTTING_DOWN)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)


def _ruleset(request: pb.OpenGameRequest) -> Ruleset:
    # No limit on the stored form's length (parse_ruleset's): ruleset_json is every parameter,
    # as a client such as runner/ sends it, and a game master stores nothing.
    try:
        if request.ruleset_json:
            params = ruleset_parameters(request.ruleset_json)
            if request.ruleset and "name" not in params:
                params["name"] = request.ruleset
            return Ruleset.from_parameters(params)
        return get_ruleset(request.ruleset or "standard")
    except ArenaError as exc:  # each names the parameter, the value and what is allowed
        raise Refused(Refusal.BAD_REQUEST, str(exc)) from None


def _unknown_game(game_id: str, live: list[str]) -> Refused:
    """Refused, naming the newest games in progress: a spectator's typo, or an id from another
    game master, is then plain to see."""
    shown = ", ".join(reversed(live[-_LIVE_SHOWN:])) or "none"
    more = f" and {len(live) - _LIVE_SHOWN} more" if len(live) > _LIVE_SHOWN else ""
    return Refused(
        Refusal.UNKNOWN_GAME,
        f"no game {game_id!r} here (unknown or forgotten); in progress here: {shown}{more}",
    )


_LIVE_SHOWN = 5


async def _abort(context: grpc.aio.ServicerContext, refused: Refused) -> NoReturn:
    """End the call with the refusal's status code and message: context.abort always raises."""
    await context.abort(refused.code, str(refused))
    raise AssertionError("grpc's context.abort returned")


# ----------------------------------------------------------------------------- building


class _SeatStream:
    """The writing side of one seat's Play stream: the session's messages, written in order.

    A message is written at once, in the loop step that produced it (typically the step that
    read the previous seat's reply), instead of being queued for the Play handler's task to
    write when it next runs: that would cost a loop iteration and a task switch on every
    decision. So the write coroutine is stepped by hand here, as an eagerly started task would
    be (asyncio.Task starts even its first step in a later iteration on Python 3.11): the first
    step starts the gRPC send, a done callback on the future it waits for runs the rest. While
    one write is in flight the next messages wait in order. ``closed`` resolves once None has
    been put (after the writes before it), or fails with the error of a write that failed.
    """

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context
        self._waiting: deque[bytes | None] = deque()
        self._writing = False
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def put_nowait(self, item: bytes | None) -> None:
        if self.closed.done():
            return
        if self._writing:
            self._waiting.append(item)
        else:
            self._start(item)

    def _start(self, item: bytes | None) -> None:
        if self.closed.done():  # cancelled: the Play handler is gone
            self._waiting.clear()
            return
        if item is None:
            self.closed.set_result(None)
            return
        self._writing = True
        self._step(self._context.write(item))

    def _step(self, write: Coroutine[Any, Any, None]) -> None:
        try:
            awaited = write.send(None)
        except StopIteration:  # written
            self._writing = False
            if self._waiting:
                self._start(self._waiting.popleft())
            return
        except BaseException as exc:  # the call is over (cancelled, broken, or ended)
            self._writing = False
            self._waiting.clear()
            if not self.closed.done():
                self.closed.set_exception(exc)
            return
        if isinstance(awaited, asyncio.Future):
            awaited._asyncio_future_blocking = False  # as asyncio.Task does
            awaited.add_done_callback(lambda _: self._step(write))
        else:  # a bare yield (asyncio.sleep(0)): resume in the next iteration
            asyncio.get_running_loop().call_soon(self._step, write)


def _handlers(service: GameMasterService) -> grpc.GenericRpcHandler:
    # Built by hand rather than from *_pb2_grpc: Play takes raw bytes, so that an unreadable
    # message is the agent's fault ("malformed") instead of a transport error.
    return grpc.method_handlers_generic_handler(
        wire.SERVICE,
        {
            "Play": grpc.stream_stream_rpc_method_handler(
                service.play,
                # Both ways raw: the session encodes each ServerMessage itself (once, with
                # its events spliced in as bytes encoded once for every seat).
                request_deserializer=None,
                response_serializer=None,
            ),
            "Watch": grpc.unary_stream_rpc_method_handler(
                service.watch,
                request_deserializer=pb.WatchRequest.FromString,
                response_serializer=pb.GameEvent.SerializeToString,
            ),
            "OpenGame": grpc.unary_unary_rpc_method_handler(
                service.open_game,
                request_deserializer=pb.OpenGameRequest.FromString,
                response_serializer=pb.OpenGameReply.SerializeToString,
            ),
            "AwaitGame": grpc.unary_unary_rpc_method_handler(
                service.await_game,
                request_deserializer=pb.GameRef.FromString,
                response_serializer=pb.GameResult.SerializeToString,
            ),
            "AbortGame": grpc.unary_unary_rpc_method_handler(
                service.abort_game,
                request_deserializer=pb.AbortGameRequest.FromString,
                response_serializer=pb.GameResult.SerializeToString,
            ),
            "ForfeitSeat": grpc.unary_unary_rpc_method_handler(
                service.forfeit_seat,
                request_deserializer=pb.ForfeitSeatRequest.FromString,
                response_serializer=pb.GameResult.SerializeToString,
            ),
        },
    )


class GameMasterServer:
    """A started server: ``port`` is the bound port (useful after binding port 0)."""

    def __init__(
        self,
        server: grpc.aio.Server,
        service: GameMasterService,
        health_servicer: Any,
        host: str,
        port: int,
        socket_path: str | None = None,
    ) -> None:
        self.server = server
        self.service = service
        self.health = health_servicer
        self.host = host
        self.port = port
        self.socket_path = socket_path

    @property
    def address(self) -> str:
        """host:port for clients (ARENA_GAME_MASTER)."""
        host = self.host
        if host in ("", "0.0.0.0", "[::]", "::"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"

    async def stop(self, grace: float = 2.0) -> None:
        """Stop accepting, abort games in progress (their agents get GameEnd), then stop."""
        await self.health.enter_graceful_shutdown()
        await self.service.shutdown()
        await self.server.stop(grace)
        if self.socket_path is not None:
            unix_socket.remove(self.socket_path)


async def create_server(
    address: str = "127.0.0.1:0",
    *,
    limits: GameLimits | None = None,
    admin_token: str | None = None,
    max_games: int = DEFAULT_MAX_GAMES,
    retain_s: float = RETAIN_S,
    socket_path: str | None = None,
) -> GameMasterServer:
    """Build and start a game master on ``address`` (port 0 picks a free port), and on the Unix
    socket ``socket_path`` too if given (for agents with no network, unix_socket.py)."""
    service = GameMasterService(limits or GameLimits.from_env(), admin_token, max_games, retain_s)
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_AGENT_MESSAGE_BYTES),
            # Without this, a second game master on the same port would silently share it.
            ("grpc.so_reuseport", 0),
            # Find dead agents on quiet connections too (a SIGKILL closes the socket anyway).
            ("grpc.keepalive_time_ms", 20_000),
            ("grpc.keepalive_timeout_ms", 10_000),
            ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        ]
    )
    server.add_generic_rpc_handlers((_handlers(service),))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (wire.SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    port = _listen(server, address)
    if socket_path is not None:
        _listen(server, unix_socket.prepare(socket_path))
    await server.start()
    if socket_path is not None:
        unix_socket.open_to_agents(socket_path)
    serving = health_pb2.HealthCheckResponse.SERVING
    await health_servicer.set("", serving)
    await health_servicer.set(wire.SERVICE, serving)
    host = address.rsplit(":", 1)[0]
    return GameMasterServer(server, service, health_servicer, host, port, socket_path)


def _listen(server: grpc.aio.Server, address: str) -> int:
    """Bind the server to address; the port (1 for a Unix socket) or an OSError saying why not."""
    check_listenable(address, "game master")
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {address}: {exc}") from None
    if not port:
        raise OSError(f"cannot listen on {address}")
    return int(port)


def serve(address: str, **options: Any) -> int:
    """Run a game master until SIGTERM or SIGINT; then abort games in progress and exit 0."""
    return asyncio.run(_serve(address, **options))


async def _serve(address: str, grace: float = 2.0, **options: Any) -> int:
    gm = await create_server(address, **options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    shown = gm.address  # the last word is the address to dial from this host: scripts read it
    if gm.host != shown.rsplit(":", 1)[0]:  # a wildcard: bound on every interface
        shown = f"{gm.host}:{gm.port} (every interface); dial {gm.address}"
    print(f"game master listening on {shown}", flush=True)
    if gm.socket_path is not None:
        print(f"game master listening on unix:{gm.socket_path} for agents", flush=True)
    if options.get("admin_token") is None:  # said once it serves, not before a refusal
        log.warning(
            "no admin token (ARENA_ADMIN_TOKEN or --admin-token): any client, a bot included, "
            "may open, abort and read games here; give this game master and its workers one "
            "before bots you do not trust play"
        )
    await stop.wait()
    running = sum(1 for s in gm.service.games.values() if not s.finished)
    print(f"game master stopping: aborting {running} game(s) in progress", flush=True)
    await gm.stop(grace)
    print("game master stopped", flush=True)
    return 0


class RunningGameMaster:
    """A game master on its own loop in a background thread, for synchronous callers."""

    def __init__(self, address: str = "127.0.0.1:0", **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        started: Future[GameMasterServer] = Future()

        def main() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                started.set_result(self._loop.run_until_complete(create_server(address, **options)))
            except BaseException as exc:
                started.set_exception(exc)
                return
            self._loop.run_forever()

        self._thread = threading.Thread(target=main, name="game-master", daemon=True)
        self._thread.start()
        self.server = started.result(timeout=30)
        self.port = self.server.port
        self.address = self.server.address

    @property
    def service(self) -> GameMasterService:
        return self.server.service

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Run a coroutine on the game master's loop and wait for its result."""

        async def run() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def stop(self, grace: float = 1.0) -> None:
        if not self._thread.is_alive():
            return
        self.call(lambda: self.server.stop(grace), timeout=grace + 30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def __enter__(self) -> RunningGameMaster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _deals(session: GameSession) -> tuple[object, int]:
    """What fixes a game's cards: its seed and first dealer (whatever else the rules say)."""
    return (session.game.seed, session.game.first_dealer)


def start_in_thread(address: str = "127.0.0.1:0", **options: Any) -> RunningGameMaster:
    """Start a game master in a background thread; ``.address``, ``.port``, ``.stop()``."""
    return RunningGameMaster(address, **options)
