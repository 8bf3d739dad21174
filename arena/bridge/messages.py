"""The stdio JSON protocol (docs/protocol-json.md): game master messages as JSON lines and back.

Every line to the bot mirrors one protobuf ServerMessage (field names as in arena.proto) with a
``type`` naming which one, plus three conveniences for bots without a protobuf library: 64-bit
numbers are JSON numbers, the phase is a plain word ("auction"), and an absent optional field is
``null`` rather than missing. Lines from the bot become Reply messages.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from arena import record
from arena.actions import ActionKind
from arena.gamemaster.policy import DETAIL_MAX_CHARS, NOTE_MAX_CHARS, cut
from arena.wire import pb

# The stdio protocol's own version (the JSON shape); bumped only on incompatible changes.
JSON_PROTOCOL_VERSION = 1
# How much of a reply's texts is forwarded: all the game master reads (one more character,
# so that it still marks the cut), and together less than the 16 KiB message it accepts.
_FORWARDED_CHARS = {"action": 3000, "note": NOTE_MAX_CHARS + 1, "error": DETAIL_MAX_CHARS + 1}
_PHASE_WORDS = {
    pb.PHASE_UNSPECIFIED: "unspecified",
    pb.PHASE_AUCTION: "auction",
    pb.PHASE_TRUMP: "trump",
    pb.PHASE_GIVE: "give",
    pb.PHASE_KEEP: "keep",
    pb.PHASE_PLAY: "play",
    pb.PHASE_GAME_OVER: "game_over",
}

Line = dict[str, Any]


def dumps(line: Line) -> str:
    """One compact JSON line (no spaces, so simple text tools can match `"type":"decision"`),
    with nothing in it that a bot's line reader may take for a line end."""
    return record.dumps(line)


def _opt(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


def _plain(msg: Any) -> Line:
    """Any message as a dict of every field (absent optional ones as null), numbers as numbers."""
    out: Line = {}
    for name, repeated, is_message, optional in _fields(msg.DESCRIPTOR):
        value = getattr(msg, name)
        if repeated:
            out[name] = [_plain(v) for v in value] if is_message else list(value)
        elif optional and not msg.HasField(name):
            out[name] = None
        else:
            out[name] = _plain(value) if is_message else value
    return out


@functools.cache
def _fields(descriptor: Any) -> list[tuple[str, bool, bool, bool]]:
    """(name, repeated, is a message, optional) of each field of a message type, read from the
    descriptor once: reading them for every field of every event was a sixth of the time the
    bridge spent turning messages into lines."""
    return [
        (
            f.name,
            _is_repeated(f),
            f.type == FieldDescriptor.TYPE_MESSAGE,
            f.has_presence and not _is_repeated(f),
        )
        for f in descriptor.fields
    ]


def _is_repeated(field: FieldDescriptor) -> bool:
    # protobuf 5+ has is_repeated; 4.x only the label
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _trick(msg: pb.Trick) -> Line:
    return {
        "leader": msg.leader,
        "cards": [{"seat": p.seat, "card": p.card} for p in msg.cards],
        "winner": _opt(msg, "winner"),
    }


def observation(msg: pb.Observation) -> Line:
    return {
        "seat": msg.seat,
        "team": msg.team,
        "ruleset": msg.ruleset,
        "hand_number": msg.hand_number,
        "dealer": msg.dealer,
        "phase": _PHASE_WORDS.get(msg.phase, "unspecified"),
        "to_act": _opt(msg, "to_act"),
        "hand": list(msg.hand),
        "card_counts": list(msg.card_counts),
        "stock_count": msg.stock_count,
        "auction": [{"seat": e.seat, "action": e.action} for e in msg.auction],
        "high_bid": msg.high_bid,
        "bidder": _opt(msg, "bidder"),
        "contract": _opt(msg, "contract"),
        "trump": _opt(msg, "trump"),
        "discarded": list(msg.discarded),
        "drawn": list(msg.drawn),
        "given": [
            {"from_seat": g.from_seat, "to_seat": g.to_seat, "cards": list(g.cards)}
            for g in msg.given
        ],
        "out": list(msg.out),
        "trick": _trick(msg.trick) if msg.HasField("trick") else None,
        "tricks": [_trick(t) for t in msg.tricks],
        "points": list(msg.points),
        "scores": list(msg.scores),
    }


def legal(msg: pb.LegalActions) -> Line:
    choice = None
    if msg.HasField("choice"):
        c = msg.choice
        choice = {
            "verb": c.verb,
            "cards": list(c.cards),
            "required": list(c.required),
            "min_count": c.min_count,
            "max_count": c.max_count,
        }
    return {"actions": list(msg.actions), "choice": choice, "fallback": msg.fallback}


def limits(msg: pb.Limits) -> Line:
    return {n: _opt(msg, n) for n in ("decision_ms", "bank_ms", "fault_limit", "connect_ms")}


def welcome(msg: pb.Welcome) -> Line:
    try:
        params = json.loads(msg.ruleset_json) if msg.ruleset_json else None
    except ValueError:
        params = None
    return {
        "type": "welcome",
        "json_protocol": JSON_PROTOCOL_VERSION,
        "protocol_version": msg.protocol_version,
        "seat": msg.seat,
        "team": msg.team,
        "game_id": msg.game_id,
        "ruleset": msg.ruleset,
        "ruleset_params": params,
        "limits": limits(msg.limits),
        "agents": list(msg.agents),
    }


def decision(msg: pb.DecisionRequest) -> Line:
    return {
        "type": "decision",
        "request_id": msg.request_id,
        "decision_ms_left": msg.decision_ms_left,
        "bank_ms_left": msg.bank_ms_left,
        "legal": legal(msg.legal),
        "observation": observation(msg.observation),
    }


def event(msg: pb.GameEvent) -> Line:
    kind = msg.WhichOneof("event")
    body: Any = None
    if kind == "game_end":
        body = game_end_fields(msg.game_end)
    elif kind == "trick":
        body = {"trick": _trick(msg.trick.trick), "points": list(msg.trick.points)}
    elif kind is not None:
        body = _plain(getattr(msg, kind))
    return {
        "type": "event",
        "game_id": msg.game_id,
        "sequence": msg.sequence,
        "hand": msg.hand,
        "kind": kind,
        **({kind: body} if kind else {}),
    }


def fault(msg: pb.FaultNotice) -> Line:
    return {
        "type": "fault",
        "request_id": msg.request_id,
        "kind": msg.kind,
        "detail": msg.detail,
        "fallback": msg.fallback,
        "faults": msg.faults,
        "fault_limit": msg.fault_limit,
    }


def game_end_fields(msg: pb.GameEnd) -> Line:
    return {
        "scores": list(msg.scores),
        "winner": _opt(msg, "winner"),
        "reason": msg.reason,
        "forfeit_seat": _opt(msg, "forfeit_seat"),
        "detail": msg.detail,
    }


def to_line(msg: pb.ServerMessage) -> Line | None:
    """The JSON line for one server message itself (None for an empty one); the events it
    carries are not included (see ``to_lines``)."""
    kind = msg.WhichOneof("kind")
    if kind == "welcome":
        return welcome(msg.welcome)
    if kind == "decision":
        return decision(msg.decision)
    if kind == "event":
        return event(msg.event)
    if kind == "fault":
        return fault(msg.fault)
    if kind == "game_end":
        return {"type": "game_end", **game_end_fields(msg.game_end)}
    return None


def to_lines(msg: pb.ServerMessage, events: bool = True) -> list[Line]:
    """The JSON lines for one server message: an ``event`` line for each public event it
    carries (they happened first; left out with ``events=False``), then its own line."""
    out = [event(e) for e in msg.events] if events else []
    line = to_line(msg)
    if line is not None and (events or line["type"] != "event"):
        out.append(line)
    return out


def reply_from_line(text: str, pending: int | None) -> tuple[pb.Reply, str]:
    """The Reply a bot's output line stands for, and what is wrong with the line ("" if
    nothing) for the bridge to tell the bot's author; never raises.

    A JSON object gives request_id (default: ``pending``, the request a bare line answers, None
    if there is none), action, note and error. Anything else is forwarded verbatim as the
    action text of the pending request, so a bot may answer with a bare action ("pass"), and
    garbage becomes the game master's "malformed" fault instead of being hidden by the bridge.
    """
    text = text.strip()
    value, problem = _json_object(text)
    rid = _request_id(value.get("request_id")) if value is not None else None
    if value is not None and (value.get("action") is not None or value.get("error") is not None):
        texts = {name: _cut(_text(value.get(name)), name) for name in _FORWARDED_CHARS}
    else:  # the whole line as the action: the game master's fault then shows what arrived
        if value is not None:
            keys = ", ".join(sorted(map(str, value))) or "none"
            problem = f'a reply with neither "action" nor "error" (its keys: {keys})'
        elif not problem and pending and text.split(" ")[0] not in _VERBS:
            # Most likely a log line: it still answers the decision, so say why that cost it.
            problem = (
                f"a line that is neither JSON nor an action ({cut(text, 60)!r}) answered request "
                f"{pending}: stdout is for replies only, print logs to stderr"
            )
        texts = {"action": _cut(text, "action")}
    if not problem and rid is None and pending is None:
        problem = "a reply while no decision waits for one"
    request_id = rid if rid is not None else pending or 0
    return pb.Reply(request_id=request_id, **texts), problem


_VERBS = frozenset(ActionKind)


def _json_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """The line as a JSON object, if it is one, and why not if it only looks like one."""
    if not text.startswith("{"):
        return None, ""
    try:
        value = json.loads(text)
    except ValueError as exc:
        # Most likely the first line of a pretty-printed reply (json.dumps(..., indent=2)).
        cut_short = (
            "; a reply is one JSON object on one line, not spread over several"
            if not text.rstrip().endswith("}")
            else ""
        )
        return None, (
            f"a line starting with {{ is not valid JSON ({exc}){cut_short}: sent as the action text"
        )
    return (value if isinstance(value, dict) else None), ""


def _request_id(raw: Any) -> int | None:
    if isinstance(raw, str) and raw.isdigit():  # a bot that quoted the id
        raw = int(raw)
    if not isinstance(raw, int) or isinstance(raw, bool) or not 0 <= raw < 2**64:
        return None
    return raw


def _cut(text: str, field: str) -> str:
    return text[: _FORWARDED_CHARS[field]]


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)
