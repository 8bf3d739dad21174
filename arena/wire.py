"""Conversions between engine values and the protobuf messages of proto/sixtythree/v1.

The one place that knows both sides: the game master builds its messages here and the agent
SDK turns them back into the engine's Observation and Legal, so in-process players work
unchanged over the wire. Also decides which engine events are public (``public_event``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from arena._proto.sixtythree.v1 import arena_pb2 as pb
from arena.actions import PASS, Action, ActionKind, bid, parse_action, play, trump
from arena.cards import CARDS, Card, Suit, parse_card
from arena.game import Event
from arena.gamemaster.policy import GameLimits
from arena.legal import CardChoice, Legal, Phase
from arena.observation import Observation, SeenTrick
from arena.rulesets import Ruleset

PROTOCOL_VERSION = 1
# The agent_version the stdio bridge gives in its Hello, whatever agent name it was given
# (`arena stdio-agent --name`): "stdio-json/1".
STDIO_AGENT_VERSION = "stdio-json/"
SERVICE = "sixtythree.v1.GameMaster"
# Full method names, for handlers and stubs built without the generated *_pb2_grpc module.
PLAY = f"/{SERVICE}/Play"
WATCH = f"/{SERVICE}/Watch"
OPEN_GAME = f"/{SERVICE}/OpenGame"
AWAIT_GAME = f"/{SERVICE}/AwaitGame"
ABORT_GAME = f"/{SERVICE}/AbortGame"
FORFEIT_SEAT = f"/{SERVICE}/ForfeitSeat"
# Metadata header that carries the admin token on the admin calls.
ADMIN_HEADER = "x-arena-admin-token"

__all__ = ["pb", "PROTOCOL_VERSION", "SERVICE"]

_PHASES = {
    Phase.AUCTION: pb.PHASE_AUCTION,
    Phase.TRUMP: pb.PHASE_TRUMP,
    Phase.GIVE: pb.PHASE_GIVE,
    Phase.KEEP: pb.PHASE_KEEP,
    Phase.PLAY: pb.PHASE_PLAY,
    Phase.GAME_OVER: pb.PHASE_GAME_OVER,
}
_PHASES_BACK = {v: k for k, v in _PHASES.items()}


def phase_to_pb(phase: Phase) -> pb.Phase:
    return _PHASES[phase]


def phase_from_pb(value: int) -> Phase:
    try:
        return _PHASES_BACK[pb.Phase.ValueType(value)]
    except KeyError:
        raise ValueError(f"unknown phase {value!r} on the wire") from None


def _cards(cards: Sequence[Card]) -> list[str]:
    return [str(c) for c in cards]


# Texts to interned values, for the agent's side of every decision: a dict lookup per card or
# action instead of a parse (give and keep, which are never listed, still go through the parser).
_CARD_BY_TEXT = {str(c): c for c in CARDS}
_ACTION_BY_TEXT = {
    str(a): a for a in (PASS, *(bid(n) for n in range(1, 64)), *map(trump, Suit), *map(play, CARDS))
}


def _parse_cards(texts: Sequence[str]) -> tuple[Card, ...]:
    try:
        return tuple(map(_CARD_BY_TEXT.__getitem__, texts))
    except KeyError:  # let the parser name the bad text
        return tuple(parse_card(t) for t in texts)


def parse_action_text(text: str) -> Action:
    """``parse_action(text)``, by a dict lookup for the texts of listed actions (pass, bids,
    trumps, plays); UnparseableAction for text that is not an action."""
    found = _ACTION_BY_TEXT.get(text)
    return found if found is not None else parse_action(text)


# --------------------------------------------------------------------------- observation

_TRICKS_KEPT = 64  # completed tricks cached on either side: a hand has at most 13


def varint(n: int) -> bytes:
    """Protobuf's base-128 encoding of a length (or any unsigned number)."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def framed(tag: bytes, body: bytes) -> bytes:
    """A length-delimited field: its tag, the body's length, the body."""
    return tag + varint(len(body)) + body


# Tags (field number << 3 | 2, as varints) of the fields the game master encodes by hand.
_AUCTION_TAG = b"\x5a"  # Observation.auction = 11
_TRICKS_TAG = b"\xaa\x01"  # Observation.tricks = 21
_OBSERVATION_TAG = b"\x12"  # DecisionRequest.observation = 2
_DECISION_TAG = b"\x12"  # ServerMessage.decision = 2

# The auction and the completed tricks, append-only within a hand, go out again in every later
# request of the hand: each entry is encoded once and kept (a few hundred auction entries can
# exist; tricks are kept for the current hand or so).
_AUCTION_BYTES: dict[tuple[int, str], bytes] = {}
_TRICK_BYTES: dict[SeenTrick, bytes] = {}


def _auction_entry_bytes(entry: tuple[int, str]) -> bytes:
    found = _AUCTION_BYTES.get(entry)
    if found is None:
        if len(_AUCTION_BYTES) >= 1024:  # only bad input gets here
            _AUCTION_BYTES.clear()
        body = pb.AuctionEntry(seat=entry[0], action=entry[1]).SerializeToString()
        found = _AUCTION_BYTES[entry] = framed(_AUCTION_TAG, body)
    return found


def _trick_bytes(trick: SeenTrick) -> bytes:
    found = _TRICK_BYTES.get(trick)
    if found is None:
        if len(_TRICK_BYTES) >= _TRICKS_KEPT:
            _TRICK_BYTES.clear()
        found = _TRICK_BYTES[trick] = framed(_TRICKS_TAG, _trick_to_pb(trick).SerializeToString())
    return found


def _trick_to_pb(trick: SeenTrick) -> pb.Trick:
    msg = pb.Trick(
        leader=trick.leader,
        cards=[pb.PlayedCard(seat=s, card=str(c)) for s, c in trick.cards],
    )
    if trick.winner is not None:
        msg.winner = trick.winner
    return msg


def _trick_from_pb(msg: pb.Trick) -> SeenTrick:
    by_text = _CARD_BY_TEXT
    try:
        cards = tuple([(p.seat, by_text[p.card]) for p in msg.cards])
    except KeyError:
        cards = tuple((p.seat, parse_card(p.card)) for p in msg.cards)
    return SeenTrick(msg.leader, cards, msg.winner if msg.HasField("winner") else None)


# Completed tricks come again in every later request of their hand: keep the converted ones,
# keyed by their bytes (cheap to get, and the whole value), for the current hand or so.
_TRICKS: dict[bytes, SeenTrick] = {}


def _completed_trick(msg: pb.Trick) -> SeenTrick:
    key = msg.SerializeToString()
    found = _TRICKS.get(key)
    if found is None:
        if len(_TRICKS) >= _TRICKS_KEPT:
            _TRICKS.clear()
        found = _TRICKS[key] = _trick_from_pb(msg)
    return found


def observation_to_pb(obs: Observation) -> pb.Observation:
    msg = _observation_core(obs)
    msg.auction.extend(pb.AuctionEntry(seat=s, action=a) for s, a in obs.auction)
    msg.tricks.extend(map(_trick_to_pb, obs.tricks))
    return msg


def observation_bytes(obs: Observation) -> bytes:
    """``observation_to_pb(obs).SerializeToString()`` in effect (the same message once
    parsed), with the auction and completed tricks spliced in from bytes encoded once."""
    return (
        _observation_core(obs).SerializeToString()
        + b"".join(map(_auction_entry_bytes, obs.auction))
        + b"".join(map(_trick_bytes, obs.tricks))
    )


def _observation_core(obs: Observation) -> pb.Observation:
    """The observation without its auction and completed tricks."""
    msg = pb.Observation(
        seat=obs.seat,
        team=obs.team,
        ruleset=obs.ruleset,
        hand_number=obs.hand_number,
        dealer=obs.dealer,
        phase=phase_to_pb(obs.phase),
        hand=_cards(obs.hand),
        card_counts=obs.card_counts,
        stock_count=obs.stock_count,
        high_bid=obs.high_bid,
        discarded=obs.discarded,
        drawn=obs.drawn,
        given=[pb.Gift(from_seat=f, to_seat=t, cards=_cards(cs)) for f, t, cs in obs.given],
        out=obs.out,
        points=obs.points,
        scores=obs.scores,
    )
    if obs.to_act is not None:
        msg.to_act = obs.to_act
    if obs.bidder is not None:
        msg.bidder = obs.bidder
    if obs.contract is not None:
        msg.contract = obs.contract
    if obs.trump is not None:
        msg.trump = str(obs.trump)
    if obs.trick is not None:
        msg.trick.CopyFrom(_trick_to_pb(obs.trick))
    return msg


def observation_from_pb(msg: pb.Observation) -> Observation:
    """The engine's Observation again; raises ValueError (or an ArenaError) on bad text."""
    return Observation(
        seat=msg.seat,
        team=msg.team,
        ruleset=msg.ruleset,
        hand_number=msg.hand_number,
        dealer=msg.dealer,
        phase=phase_from_pb(msg.phase),
        to_act=msg.to_act if msg.HasField("to_act") else None,
        hand=_parse_cards(msg.hand),
        card_counts=tuple(msg.card_counts),
        stock_count=msg.stock_count,
        auction=tuple((e.seat, e.action) for e in msg.auction),
        high_bid=msg.high_bid,
        bidder=msg.bidder if msg.HasField("bidder") else None,
        contract=msg.contract if msg.HasField("contract") else None,
        trump=Suit[msg.trump] if msg.HasField("trump") else None,
        discarded=tuple(msg.discarded),
        drawn=tuple(msg.drawn),
        given=tuple((g.from_seat, g.to_seat, _parse_cards(g.cards)) for g in msg.given),
        out=tuple(msg.out),
        trick=_trick_from_pb(msg.trick) if msg.HasField("trick") else None,
        tricks=tuple(map(_completed_trick, msg.tricks)),
        points=(msg.points[0], msg.points[1]) if len(msg.points) == 2 else (0, 0),
        scores=(msg.scores[0], msg.scores[1]) if len(msg.scores) == 2 else (0, 0),
    )


class _LazyObservation(Observation):
    """An Observation converted from its message only when a field is first read.

    Many bots decide from the legal actions alone; they should not pay for converting the
    hand, auction and tricks on every decision. It behaves as the Observation it stands for:
    equal to it, same hash and repr, and ``dataclasses.replace`` gives a plain Observation.
    """

    __slots__ = ("_msg", "_full")

    def __new__(cls, *args: Any, **fields: Any) -> Any:
        if fields:  # dataclasses.replace(lazy, ...) builds a new value with every field
            return Observation(**fields)
        return super().__new__(cls)

    def __init__(self, msg: pb.Observation) -> None:
        object.__setattr__(self, "_msg", msg)
        object.__setattr__(self, "_full", None)

    def _converted(self) -> Observation:
        full: Observation | None = object.__getattribute__(self, "_full")
        if full is None:
            full = observation_from_pb(object.__getattribute__(self, "_msg"))
            object.__setattr__(self, "_full", full)
        return full

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _LazyObservation):
            other = other._converted()
        return self._converted() == other

    def __hash__(self) -> int:
        return hash(self._converted())

    def __repr__(self) -> str:
        return repr(self._converted())

    def __reduce__(self) -> str | tuple[Any, ...]:  # copies and pickles: plain Observations
        return self._converted().__reduce__()


def _lazy_field(name: str) -> property:
    return property(lambda self: getattr(self._converted(), name))


# Set after the class statement so that type checkers see Observation's own field types.
for _field in fields(Observation):
    setattr(_LazyObservation, _field.name, _lazy_field(_field.name))


def lazy_observation(msg: pb.Observation) -> Observation:
    """``observation_from_pb(msg)``, done when (and if) the observation is first read; a bad
    message raises then, from the field access."""
    return _LazyObservation(msg)


# --------------------------------------------------------------------------- legal actions


def legal_to_pb(legal: Legal) -> pb.LegalActions:
    msg = pb.LegalActions(fallback=str(legal.first()))
    choice = legal.choice
    if choice is None:
        msg.actions.extend(str(a) for a in legal.actions)
    else:
        msg.choice.CopyFrom(
            pb.CardChoice(
                verb=choice.kind.value,
                cards=_cards(choice.cards),
                required=_cards(choice.required),
                min_count=choice.min_count,
                max_count=choice.max_count,
            )
        )
    return msg


def legal_from_pb(msg: pb.LegalActions, phase: Phase, seat: int) -> Legal:
    if msg.HasField("choice"):
        c = msg.choice
        choice = CardChoice(
            ActionKind(c.verb),
            _parse_cards(c.cards),
            _parse_cards(c.required),
            c.min_count,
            c.max_count,
        )
        return Legal(phase, seat, choice=choice)
    return Legal(phase, seat, tuple(map(parse_action_text, msg.actions)))


def legal_to_dict(legal: Legal) -> dict[str, Any]:
    """Plain values for function bots: phase, actions (texts), choice (or None), fallback."""
    choice = None
    if legal.choice is not None:
        c = legal.choice
        choice = {
            "verb": c.kind.value,
            "cards": _cards(c.cards),
            "required": _cards(c.required),
            "min_count": c.min_count,
            "max_count": c.max_count,
        }
    return {
        "phase": legal.phase.value,
        "actions": [str(a) for a in legal.actions],
        "choice": choice,
        "fallback": str(legal.first()),
    }


def decision_request(
    request_id: int,
    obs: Observation,
    legal: Legal,
    decision_ms_left: float,
    bank_ms_left: float,
) -> pb.ServerMessage:
    return pb.ServerMessage(
        decision=pb.DecisionRequest(
            request_id=request_id,
            observation=observation_to_pb(obs),
            legal=legal_to_pb(legal),
            decision_ms_left=max(0, int(decision_ms_left)),
            bank_ms_left=max(0, int(bank_ms_left)),
        )
    )


def decision_request_bytes(
    request_id: int,
    obs: Observation,
    legal: Legal,
    decision_ms_left: float,
    bank_ms_left: float,
) -> bytes:
    """The encoded ServerMessage of ``decision_request`` (equal to it once parsed), built for
    the game master's hot path: the observation from ``observation_bytes``."""
    rest = pb.DecisionRequest(
        request_id=request_id,
        legal=legal_to_pb(legal),
        decision_ms_left=max(0, int(decision_ms_left)),
        bank_ms_left=max(0, int(bank_ms_left)),
    ).SerializeToString()
    body = rest + framed(_OBSERVATION_TAG, observation_bytes(obs))
    return framed(_DECISION_TAG, body)


def reply(request_id: int, action: Action | str, note: str = "") -> pb.AgentMessage:
    return pb.AgentMessage(reply=pb.Reply(request_id=request_id, action=str(action), note=note))


# --------------------------------------------------------------------------- limits, rulesets


def limits_to_pb(limits: GameLimits) -> pb.Limits:
    return pb.Limits(
        decision_ms=limits.decision_ms,
        bank_ms=limits.bank_ms,
        fault_limit=limits.fault_limit,
        connect_ms=limits.connect_ms,
    )


def limits_overrides(msg: pb.Limits) -> dict[str, int | None]:
    """The fields a request sets (absent ones are None: the game master's default applies)."""
    names = ("decision_ms", "bank_ms", "fault_limit", "connect_ms")
    return {n: (getattr(msg, n) if msg.HasField(n) else None) for n in names}


def limits_from_pb(msg: pb.Limits, default: GameLimits | None = None) -> GameLimits:
    return (default or GameLimits()).with_overrides(**limits_overrides(msg))


def ruleset_json(ruleset: Ruleset) -> str:
    return json.dumps(ruleset.parameters(), separators=(",", ":"))


# --------------------------------------------------------------------------- public events


def public_event(event: Event, game_id: str, sequence: int, hand: int) -> pb.GameEvent | None:
    """The public part of one engine (or game master) event; None for events nobody may see.

    Hidden cards never pass: deals, draws, discards, set-aside and dead cards become counts,
    and a `keep` action becomes "keep" with the number of cards kept. Notes are left out (they
    could carry hidden information to a partner); unknown kinds are dropped, not guessed at.
    """
    kind = event.get("event")
    msg = pb.GameEvent(game_id=game_id, sequence=sequence, hand=int(event.get("hand", hand)))
    if kind == "deal":
        msg.hand_started.dealer = event["dealer"]
    elif kind == "action":
        text = str(event["action"])
        action = msg.action
        action.seat = event["seat"]
        if text == "keep" or text.startswith("keep "):
            action.action = "keep"
            action.hidden_cards = len(text.split()) - 1
        else:
            action.action = text
        action.fault = str(event.get("fault", ""))
    elif kind == "discard":
        msg.discarded.seat = event["seat"]
        msg.discarded.count = len(event["cards"])
    elif kind == "give":
        msg.given.from_seat = event["seat"]
        msg.given.to_seat = event["to"]
        msg.given.cards.extend(event["cards"])
    elif kind == "draw":
        msg.drawn.seat = event["seat"]
        msg.drawn.count = len(event["cards"])
    elif kind == "out":
        msg.out.seat = event["seat"]
        msg.out.cards_set_aside = len(event.get("cards", ()))
    elif kind == "trick":
        trick = msg.trick.trick
        trick.leader = event["leader"]
        trick.cards.extend(pb.PlayedCard(seat=s, card=c) for s, c in event["cards"])
        trick.winner = event["winner"]
        msg.trick.points.extend(event["points"])
    elif kind == "dead":
        msg.dead.count = len(event["cards"])
    elif kind == "hand_end":
        msg.hand_ended.CopyFrom(
            pb.HandEnded(
                bidder=event["bidder"],
                contract=event["contract"],
                trump=event["trump"],
                points=event["points"],
                made=event["made"],
                scores=event["scores"],
            )
        )
    elif kind == "forfeit":
        msg.forfeit.seat = event["seat"]
        msg.forfeit.detail = str(event.get("detail", ""))
    elif kind == "fault":
        msg.fault.seat = event["seat"]
        msg.fault.kind = str(event["fault"])
    elif kind == "game_end":
        msg.game_end.CopyFrom(game_end(event))
    else:
        return None
    return msg


def game_end(event: Event) -> pb.GameEnd:
    """A GameEnd from the engine's game_end event."""
    msg = pb.GameEnd(scores=event["scores"], reason=str(event["reason"]))
    if event.get("winner") is not None:
        msg.winner = event["winner"]
    if event.get("forfeit_seat") is not None:
        msg.forfeit_seat = event["forfeit_seat"]
    if event.get("detail"):
        msg.detail = str(event["detail"])
    return msg
