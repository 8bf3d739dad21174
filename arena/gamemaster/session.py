"""One game on the game master: its four seats, the decisions and the fault policy applied.

Everything here runs on the server's asyncio loop, so a session needs no locks: agents' messages
arrive through ``on_message``/``on_disconnect``; ``run`` waits for the seats and asks for the
first decision, and from then on whatever settles a decision (its reply, or its timer) asks for
the next. Nothing an agent sends can raise out of here; a bug in the session aborts its own game
only.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from arena import wire
from arena.errors import ArenaError, IllegalAction, UnparseableAction
from arena.game import Event, Game
from arena.gamemaster.policy import (
    DETAIL_MAX_CHARS,
    DISCONNECTED,
    FLOOD_LIMIT,
    NOTE_MAX_CHARS,
    FaultKind,
    GameLimits,
    SeatClock,
    cut,
)
from arena.gamemaster.status import Refusal, Refused
from arena.legal import Legal
from arena.observation import observe
from arena.record import header, to_jsonl
from arena.wire import pb

log = logging.getLogger(__name__)


class Outbox(Protocol):
    """Where a seat's messages go: serialized ServerMessages, in order, then None (close the
    stream). A message is encoded once, here, so that the public events it carries can be
    spliced in as bytes encoded once for all four seats (see _deliver). The server's is a
    _SeatStream, which starts writing at once; tests may use an asyncio.Queue."""

    def put_nowait(self, item: bytes | None) -> None: ...


# The tag of ServerMessage.events (field 6, length-delimited): protobuf parsers accept a message's
# fields in any order and append repeated ones, so "message bytes + encoded events" is the
# message with those events.
_EVENTS_TAG = b"\x32"


def _answering_nothing(reply: pb.Reply, pending: _Pending | None, agent_version: str) -> str:
    """A fault's detail for a reply that answers no request, with what it said. The Hello's
    `agent_version` tells the stdio bridge, whose bots give no request_id: it sends 0 for a line
    printed while no decision waited."""
    rid = reply.request_id
    if rid == 0 and agent_version.startswith(wire.STDIO_AGENT_VERSION):
        what = "a line printed while no decision waited (stdout is for replies only)"
    elif rid == 0:
        what = (
            "a reply to no request (request_id 0, that is unset: copy the decision's request_id"
            " into the reply)"
        )
    else:
        what = f"a second reply to request {rid}, which was already answered"
    what += f": {cut(reply.action or reply.error, 60)!r}"
    if pending is not None:
        what += f"; request {pending.request_id} is still waiting for its answer"
    return what


def _encoded_event(event: pb.GameEvent) -> bytes:
    """One GameEvent as an entry of ServerMessage.events (tag, length, bytes)."""
    return wire.framed(_EVENTS_TAG, event.SerializeToString())


@dataclass
class _Answer:
    """What resolved a pending decision: a reply, or a malformed message in its place."""

    reply: pb.Reply | None = None
    malformed: str = ""


_TIMED_OUT = _Answer(malformed="timed out")  # a sentinel: the decision's time ran out


@dataclass
class _Pending:
    request_id: int
    legal: Legal
    budget_ms: float  # decision time plus what was left of the bank when it was asked
    started: float  # loop time the request was queued
    deadline: float = 0.0  # loop time its time runs out


@dataclass
class SeatState:
    """One seat: its connection, its clock and what it has done."""

    seat: int
    agent: str
    clock: SeatClock
    hello_name: str = ""
    hello_version: str = ""
    live_events: bool = False  # each event as its own message (Hello.live_events)
    events_sent: int = 0  # public events this seat has received
    outbox: Outbox | None = None
    pending: _Pending | None = None
    expired: set[int] = field(default_factory=set)  # request ids that timed out
    answered: set[int] = field(default_factory=set)  # request ids settled otherwise
    decisions: int = 0
    faults: Counter[FaultKind] = field(default_factory=Counter)
    total_ms: float = 0.0
    max_ms: float = 0.0
    late_replies: int = 0
    unsolicited: int = 0
    refused: str = ""  # why its last Hello was refused (a wrong protocol version, say)
    contested: bool = False  # a second Hello came with its token while the seat was taken
    gone: str = ""  # why its agent will never connect, as the platform told (ForfeitSeat)

    @property
    def connected(self) -> bool:
        return self.outbox is not None

    @property
    def fault_count(self) -> int:
        return sum(self.faults.values())

    def stats(self) -> pb.SeatStats:
        return pb.SeatStats(
            seat=self.seat,
            agent=self.agent,
            hello_name=self.hello_name,
            hello_version=self.hello_version,
            connected=self.connected,
            decisions=self.decisions,
            faults=self.fault_count,
            timeouts=self.faults[FaultKind.TIMEOUT],
            crashes=self.faults[FaultKind.CRASH],
            illegal=self.faults[FaultKind.ILLEGAL],
            malformed=self.faults[FaultKind.MALFORMED],
            total_ms=int(self.total_ms),
            max_ms=int(self.max_ms),
            bank_ms_left=int(self.clock.bank_ms),
            late_replies=self.late_replies,
        )


class GameSession:
    """A game from OpenGame to its result."""

    def __init__(
        self,
        game_id: str,
        game: Game,
        limits: GameLimits,
        agents: Sequence[str] = (),
        on_finished: Callable[[GameSession], None] | None = None,
    ) -> None:
        self.game_id = game_id
        self.game = game
        self.limits = limits
        names = list(agents) or [""] * 4
        self.seats = [
            SeatState(s, names[s], SeatClock(limits.decision_ms, limits.bank_ms)) for s in range(4)
        ]
        self._on_finished = on_finished
        self._loop = asyncio.get_running_loop()
        self._log: list[Event] = []  # engine events plus the game master's own fault lines
        self._synced = 0  # engine events copied to _log so far
        self._public: list[pb.GameEvent] = []
        self._ended_public = b""  # the public events, as one encoded message, once it ended
        self._public_bytes: list[bytes] = []  # the same, encoded for ServerMessage.events
        self._watchers: list[asyncio.Queue[pb.GameEvent | None]] = []
        self._all_here = asyncio.Event()
        self._ended = asyncio.Event()
        self._next_request = 1
        # One timer for the game's decision deadlines, re-armed lazily (see _arm_timer).
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self.started = False
        self._seats_live = False
        self.finished = False
        self.finished_at: float | None = None
        self.result: pb.GameResult | None = None
        self._end_detail = ""

    # ------------------------------------------------------------------------- agents' side

    def attach(self, seat: int, hello: pb.Hello, outbox: Outbox) -> None:
        """A seat's agent has said Hello: welcome it; its messages go to ``outbox``."""
        st = self.seats[seat]
        st.hello_name = cut(hello.agent_name, 100)
        st.hello_version = cut(hello.agent_version, 100)
        st.live_events = hello.live_events
        st.outbox = outbox
        outbox.put_nowait(
            pb.ServerMessage(
                welcome=pb.Welcome(
                    seat=seat,
                    team=seat % 2,
                    ruleset=self.game.ruleset.name,
                    ruleset_json=wire.ruleset_json(self.game.ruleset),
                    game_id=self.game_id,
                    limits=wire.limits_to_pb(self.limits),
                    protocol_version=wire.PROTOCOL_VERSION,
                    agents=self.agent_names(),
                )
            ).SerializeToString()
        )
        if all(s.connected for s in self.seats):
            self._all_here.set()
        self._settle_absences()

    def on_message(self, seat: int, raw: bytes) -> None:
        """One message from a seat's agent (undecoded: garbage is the agent's fault, not ours)."""
        if self.finished:
            return
        st = self.seats[seat]
        pending = st.pending
        try:
            msg: pb.AgentMessage | None = pb.AgentMessage.FromString(raw)
        except Exception:  # protobuf raises DecodeError, or worse on hostile bytes
            msg = None
        kind = msg.WhichOneof("kind") if msg is not None else None
        if msg is not None and kind == "reply":
            rid = msg.reply.request_id
            if pending is not None and rid == pending.request_id:
                self._answered(st, _Answer(reply=msg.reply))
                return
            if rid in st.expired:  # the answer to a request that timed out: the timeout counted
                st.late_replies += 1
                self._unsolicited(st)
                return
            if rid in st.answered or rid == 0:
                # It answers nothing, so it does not settle the pending decision either: taken
                # as that one's answer, a bot that printed a line twice lost every decision after
                # to the fallback, its real answers each arriving one decision late. Ids start
                # at 1: 0 is what the stdio bridge gives a line that came while no decision
                # waited (a JVM's warning on stdout at start-up cost the first decision too).
                self._unsolicited(st)
                if not self.finished:
                    problem = _answering_nothing(msg.reply, pending, st.hello_version)
                    self._fault_between_decisions(st, FaultKind.MALFORMED, problem, rid)
                return
            problem = f"reply to unknown request id {rid} (never sent to this seat)"
            if pending is not None:  # an id off by some: the one it should have named
                problem += f"; request {pending.request_id} was waiting"
        elif msg is None:
            problem = f"unreadable message ({len(raw)} bytes that are not an AgentMessage)"
        elif kind == "hello":
            problem = "a second Hello on the same stream"
        else:
            problem = "empty AgentMessage (neither hello nor reply)"
        if pending is not None:
            self._answered(st, _Answer(malformed=problem))
            return
        self._unsolicited(st)
        if not self.finished:
            self._fault_between_decisions(st, FaultKind.MALFORMED, problem)

    def contested(self, seat: int, agent_name: str) -> None:
        """A second Hello with the token of a seat already taken: some other process has the
        token (process agents can read each other's environment). Which of the two Hellos
        was the seat's own agent cannot be told, so the record says what happened (once per
        seat), for the game to be looked at; it counts towards no fault limit."""
        st = self.seats[seat]
        if self.finished or st.contested:
            return
        st.contested = True
        log.warning(
            "game %s: seat %d's token was presented again (by %r)", self.game_id, seat, agent_name
        )
        self._append(
            {
                "event": "contested",
                "hand": self.game.hand_number,
                "seat": seat,
                "detail": f"a second Hello with seat {seat}'s token (agent name "
                f"{cut(agent_name, 100)!r}) was refused while the seat was taken: another "
                "process has this seat's token",
            }
        )

    def refuse_hello(self, seat: int, refused: Refused) -> Refused:
        """A Hello with this seat's token was refused: kept, so that if the seat forfeits for
        never connecting, the record says why (its author may not log gRPC errors)."""
        self.seats[seat].refused = refused.detail
        return refused

    def _absent(self, seats: Sequence[int], detail: str) -> str:
        """`detail` of a forfeit for absence, with the refusals the absent seats got."""
        refused = [(s, self.seats[s].refused) for s in seats if self.seats[s].refused]
        return "; ".join([detail, *(f"seat {s}'s Hello was refused: {why}" for s, why in refused)])

    def on_disconnect(self, seat: int, how: str) -> None:
        """The seat's stream ended or broke: its process died or gave up. It forfeits."""
        if self.finished:
            return
        # How it was noticed (end of stream, a broken transport, a cancelled call) depends on
        # timing, so it goes to the log; the record says the same thing every time.
        log.info("game %s: seat %d disconnected: %s", self.game_id, seat, how)
        self._forfeit(seat, DISCONNECTED)

    def watch(self) -> asyncio.Queue[pb.GameEvent | None]:
        """A spectator's queue: every public event so far, then live ones, then None."""
        q: asyncio.Queue[pb.GameEvent | None] = asyncio.Queue()
        for ev in self._public:
            q.put_nowait(ev)
        for ev in pb.ServerMessage.FromString(self._ended_public).events:
            q.put_nowait(ev)
        if self.finished:
            q.put_nowait(None)
        else:
            self._watchers.append(q)
        return q

    @property
    def spectators(self) -> int:
        return len(self._watchers)

    def unwatch(self, q: asyncio.Queue[pb.GameEvent | None]) -> None:
        """The spectator of ``q`` left: stop feeding it."""
        if q in self._watchers:
            self._watchers.remove(q)

    # ------------------------------------------------------------------------- platform side

    async def wait(self) -> pb.GameResult:
        await self._ended.wait()
        assert self.result is not None
        return self.result

    def abort(self, detail: str) -> None:
        """End the game with no result (shutdown, or the platform gave up on it)."""
        if self.finished:
            return
        self._end_detail = detail
        self.game.abort(detail)
        self._finish()

    def forfeit_absent(self, seat: int, detail: str) -> bool:
        """The platform says the agent of ``seat`` is gone before it connected: its team
        forfeits as soon as the other team is all here, rather than at the connect deadline; if
        a seat of the other team is gone too, nobody can be said to have won and the game is
        aborted, as at the deadline. Whether the game is over. Refused if the agent has
        connected (its own stream tells when it goes)."""
        if self.finished:
            return True
        if self.seats[seat].connected:
            raise Refused(
                Refusal.SEAT_CONNECTED,
                f"seat {seat} of game {self.game_id} is connected: its stream tells when it goes",
            )
        self.seats[seat].gone = self._absent([seat], detail)
        self._settle_absences()
        return self.finished

    def _settle_absences(self) -> None:
        """End the game for the seats known gone, once that can be decided (forfeit_absent)."""
        gone = [st for st in self.seats if st.gone and not st.connected]
        if not gone or self.finished:
            return
        if len({st.seat % 2 for st in gone}) == 2:
            self.abort("; ".join(f"seat {st.seat}: {st.gone}" for st in gone))
        elif all(st.connected for st in self.seats if st.seat % 2 != gone[0].seat % 2):
            self._forfeit(gone[0].seat, gone[0].gone)

    def agent_names(self) -> list[str]:
        return [st.agent or st.hello_name or f"seat{st.seat}" for st in self.seats]

    def record(self) -> str:
        head = header(self.game, self.agent_names(), self.game_id, limits=self.limits.to_dict())
        self._sync()
        return to_jsonl(head, self._log)

    # ------------------------------------------------------------------------- the game loop

    # The decisions are driven by callbacks, not by a loop in this task: the reply (or the
    # timer) that settles one decision asks for the next at once, in the same step of the
    # event loop, instead of waking a task to do it (a loop iteration on every decision).

    async def run(self) -> None:
        """Wait for the seats, ask for the first decision, then wait for the end."""
        try:
            await self._wait_for_seats()
            if not self.game.is_over:
                self._ask()
                await self._ended.wait()
        except Exception as exc:  # a game master bug: end this game, keep serving the others
            self._internal_error(exc)
        finally:
            if not self.game.is_over:  # cancelled (the server is stopping)
                self._end_detail = self._end_detail or "game master stopped"
                self.game.abort(self._end_detail)
            self._finish()

    async def _wait_for_seats(self) -> None:
        waiters = [
            asyncio.ensure_future(self._all_here.wait()),
            asyncio.ensure_future(self._ended.wait()),
        ]
        try:
            await asyncio.wait(
                waiters,
                timeout=self.limits.connect_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for w in waiters:
                w.cancel()
        if self.game.is_over:
            return
        missing = [st.seat for st in self.seats if not st.connected]
        if missing:
            detail = self._absent(
                missing,
                f"seat{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} did not "
                f"connect within {self.limits.connect_ms} ms",
            )
            if len({s % 2 for s in missing}) == 1:
                self._forfeit(missing[0], self.seats[missing[0]].gone or detail)
            else:  # both teams are missing players: nobody can be said to have won
                self.abort(detail)
            return
        self.started = True
        self._sync()
        self._go_live()

    def _internal_error(self, exc: Exception) -> None:
        log.exception("game %s: internal error", self.game_id)
        if not self.game.is_over:
            self._end_detail = f"game master error: {exc!r}"
            self.game.abort(self._end_detail)
        self._finish()

    def _ask(self) -> None:
        """Send the seat to act its decision request and start its clock."""
        game = self.game
        seat = game.to_act
        assert seat is not None
        st = self.seats[seat]
        legal = game.legal()
        rid = self._next_request
        self._next_request += 1
        st.decisions += 1
        pending = _Pending(rid, legal, st.clock.budget_ms, self._loop.time())
        st.pending = pending
        self._deliver(
            st,
            wire.decision_request_bytes(
                rid, observe(game, seat), legal, self.limits.decision_ms, st.clock.bank_ms
            ),
        )
        pending.deadline = self._loop.time() + pending.budget_ms / 1000
        self._arm_timer(pending.deadline)

    # A timer per decision would cost a TimerHandle and a heap push and pop on every decision
    # (and a cancelled handle left in the loop's heap). The game's one timer is set for the
    # earliest deadline it may have to meet and left alone while it is early enough: when it
    # fires, the pending decision times out if its deadline has come, else it is set again.
    # Decisions are answered well within their time, so it is seldom set more than once per
    # decision time, and deadlines are met exactly as with a timer per decision.

    def _arm_timer(self, deadline: float) -> None:
        if self._timer is not None:
            if self._timer_at <= deadline:
                return
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self._loop.call_at(deadline, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer = None
        for st in self.seats:
            pending = st.pending
            if pending is not None:
                if pending.deadline <= self._timer_at:
                    self._answered(st, _TIMED_OUT)
                else:
                    self._arm_timer(pending.deadline)
                return

    def _answered(self, st: SeatState, answer: _Answer) -> None:
        """The pending decision of ``st`` is settled (reply, garbage or timeout): apply it and
        ask for the next. Runs in the reader's (or the timer's) step, so it must not raise."""
        pending = st.pending
        if pending is None or self.finished:
            return
        st.pending = None
        if answer is not _TIMED_OUT:
            st.answered.add(pending.request_id)
        try:
            self._settle(st, pending, answer)
            if not self.game.is_over:
                self._ask()
            else:
                self._finish()
        except Exception as exc:  # a game master bug: end this game, keep serving the others
            self._internal_error(exc)

    def _settle(self, st: SeatState, pending: _Pending, answer: _Answer) -> None:
        game = self.game
        seat, rid, legal, budget_ms = st.seat, pending.request_id, pending.legal, pending.budget_ms
        ms = (self._loop.time() - pending.started) * 1000
        st.total_ms += ms
        st.max_ms = max(st.max_ms, ms)
        if answer is _TIMED_OUT:
            st.expired.add(rid)
            st.clock.exhaust()
            # The record's text stays free of timings (RECORD.md: only `ms` fields may vary);
            # the agent is told the numbers.
            told = (
                f"no reply within {self.limits.decision_ms} ms "
                f"+ {budget_ms - self.limits.decision_ms:.0f} ms of bank"
            )
            detail = "no reply within the decision time and what was left of the bank"
            self._fallback(st, rid, legal, FaultKind.TIMEOUT, detail, ms, told=told)
            return
        st.clock.charge(ms)
        if answer.reply is None:
            self._fallback(st, rid, legal, FaultKind.MALFORMED, answer.malformed, ms)
            return
        reply = answer.reply
        note = cut(reply.note, NOTE_MAX_CHARS)
        if reply.error and not reply.action:
            self._fallback(st, rid, legal, FaultKind.CRASH, f"agent error: {reply.error}", ms, note)
            return
        try:
            action = wire.parse_action_text(reply.action)
        except UnparseableAction as exc:
            self._fallback(st, rid, legal, FaultKind.MALFORMED, str(exc), ms, note)
            return
        extra: dict[str, object] = {"ms": round(ms)}
        if note:
            extra["note"] = note
        try:
            game.apply(action, seat, **extra)
        except IllegalAction as exc:
            self._fallback(st, rid, legal, FaultKind.ILLEGAL, str(exc), ms, note)
            return
        self._sync()

    def _fallback(
        self,
        st: SeatState,
        request_id: int,
        legal: Legal,
        kind: FaultKind,
        detail: str,
        ms: float,
        note: str = "",
        told: str = "",
    ) -> None:
        """Play the first legal action for a faulting seat, record and tell it (ARCH §4)."""
        detail = cut(detail, DETAIL_MAX_CHARS)
        action = legal.first()
        extra: dict[str, object] = {"fault": kind.value, "detail": detail, "ms": round(ms)}
        if note:
            extra["note"] = note
        self.game.apply(action, st.seat, **extra)
        st.faults[kind] += 1
        self._sync()  # first, so that the notice carries the fallback's public event
        self._notify_fault(st, request_id, kind, told or detail, str(action))
        self._check_fault_limit(st, kind, detail)

    def _fault_between_decisions(
        self, st: SeatState, kind: FaultKind, detail: str, request_id: int = 0
    ) -> None:
        """A fault with no action played: recorded as its own line. The agent is told the
        request its message named, if any."""
        detail = cut(detail, DETAIL_MAX_CHARS)
        st.faults[kind] += 1
        self._sync()
        self._append(
            {
                "event": "fault",
                "hand": self.game.hand_number,
                "seat": st.seat,
                "fault": kind.value,
                "detail": detail,
            }
        )
        self._notify_fault(st, request_id, kind, detail, "")
        self._check_fault_limit(st, kind, detail)

    def _notify_fault(
        self, st: SeatState, request_id: int, kind: FaultKind, detail: str, fallback: str
    ) -> None:
        self._send(
            st,
            pb.ServerMessage(
                fault=pb.FaultNotice(
                    request_id=request_id,
                    kind=kind.value,
                    detail=detail,
                    fallback=fallback,
                    faults=st.fault_count,
                    fault_limit=self.limits.fault_limit,
                )
            ),
        )

    def _check_fault_limit(self, st: SeatState, kind: FaultKind, detail: str) -> None:
        if st.fault_count >= self.limits.fault_limit and not self.game.is_over:
            self._forfeit(
                st.seat,
                f"fault limit: {st.fault_count} faults (the last: {kind.value}: {detail})",
            )

    def _unsolicited(self, st: SeatState) -> None:
        st.unsolicited += 1
        if st.unsolicited > FLOOD_LIMIT and not self.game.is_over:
            self._forfeit(
                st.seat, f"flood: more than {FLOOD_LIMIT} messages that answered no request"
            )

    # ------------------------------------------------------------------------- endings

    def _forfeit(self, seat: int, detail: str) -> None:
        if self.game.is_over:
            return
        self._end_detail = detail
        self.game.forfeit(seat, detail)
        self._finish()

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.finished_at = self._loop.time()
        try:
            self._sync()
            self._go_live()
            end = self.game.events[-1] if self.game.events else {}
            end_msg = wire.game_end(end) if end.get("event") == "game_end" else pb.GameEnd()
            if self._end_detail and not end_msg.detail:
                end_msg.detail = self._end_detail
            end_bytes = pb.ServerMessage(game_end=end_msg).SerializeToString()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            for st in self.seats:
                st.pending = None
                self._deliver(st, end_bytes)
                if st.outbox is not None:
                    st.outbox.put_nowait(None)  # the Play handler closes the stream
            for q in self._watchers:
                q.put_nowait(None)
            self._watchers.clear()
            self.result = self._result(end_msg)
        except Exception:  # never leave AwaitGame callers hanging
            log.exception("game %s: error while finishing", self.game_id)
            self.result = pb.GameResult(
                game_id=self.game_id, reason="aborted", detail="game master error at the end"
            )
        finally:
            self._let_go()
            self._ended.set()
            if self._on_finished is not None:
                self._on_finished(self)

    def _let_go(self) -> None:
        """Keep of an ended game only what is asked of it later: its result (the record is
        in it) and its public events, encoded, for a spectator who comes late. The engine's
        events, the log and the events as messages took several times the record's size: a
        game master kept about 1.8 GB for the thousand games it retains (RETAIN_MAX)."""
        self.game.events.clear()  # the game is over: the engine reads them no more
        self._log = []
        self._public_bytes = []  # every seat has been sent its share
        self._ended_public = pb.ServerMessage(events=self._public).SerializeToString()
        self._public = []
        for st in self.seats:  # what told replies apart
            st.expired.clear()
            st.answered.clear()

    def _result(self, end: pb.GameEnd) -> pb.GameResult:
        result = pb.GameResult(
            game_id=self.game_id,
            scores=end.scores,
            reason=end.reason,
            detail=end.detail,
            hands=self.game.hand_number,
            record_jsonl=self.record(),
            seats=[st.stats() for st in self.seats],
        )
        if end.HasField("winner"):
            result.winner = end.winner
        if end.HasField("forfeit_seat"):
            result.forfeit_seat = end.forfeit_seat
        return result

    # ------------------------------------------------------------------------- publishing

    def _sync(self) -> None:
        """Copy new engine events to the log and publish them (once the game has started)."""
        events = self.game.events
        while self._synced < len(events):
            self._append(events[self._synced])
            self._synced += 1

    def _append(self, event: Event) -> None:
        self._log.append(event)
        try:
            msg = wire.public_event(event, self.game_id, len(self._public), self.game.hand_number)
        except (KeyError, TypeError, ValueError, ArenaError):
            log.exception("game %s: cannot publish event %r", self.game_id, event.get("event"))
            msg = None
        if msg is None:
            return
        self._public.append(msg)
        self._public_bytes.append(_encoded_event(msg))
        for q in self._watchers:
            q.put_nowait(msg)
        if self._seats_live:
            self._push_live(len(self._public) - 1)

    def _push_live(self, index: int) -> None:
        """Send public event ``index`` at once to the seats that asked for live events."""
        wrapped: bytes | None = None
        for st in self.seats:
            if st.live_events and st.outbox is not None and st.events_sent == index:
                if wrapped is None:
                    wrapped = pb.ServerMessage(event=self._public[index]).SerializeToString()
                st.outbox.put_nowait(wrapped)
                st.events_sent = index + 1

    def _go_live(self) -> None:
        """From now on seats receive the public events: the ones so far (the first deal, say)
        ride with each seat's next message, or go out at once to seats with live events."""
        if self._seats_live:
            return
        self._seats_live = True
        for index in range(len(self._public)):
            self._push_live(index)

    def _send(self, st: SeatState, msg: pb.ServerMessage) -> None:
        if st.outbox is not None:
            self._deliver(st, msg.SerializeToString())

    def _deliver(self, st: SeatState, data: bytes) -> None:
        """Queue one encoded message for a seat, with the public events it has not had yet."""
        if st.outbox is None:
            return
        if self._seats_live and not st.live_events and st.events_sent < len(self._public):
            data += b"".join(self._public_bytes[st.events_sent :])
            st.events_sent = len(self._public)
        st.outbox.put_nowait(data)
