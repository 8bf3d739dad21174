"""Information isolation on the wire: no seat ever receives a card it may not know.

Every ServerMessage sent to each seat is captured by a raw-protocol agent, then checked against
the record: a seat may see its own cards (dealt, drawn, given to it) and public ones (played,
given face up), and a card another seat plays only once that play has been announced.
"""

from __future__ import annotations

import re
import struct
from collections import defaultdict
from pathlib import Path

import pytest
from google.protobuf import text_format

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import RunningGameMaster
from arena.rulesets import RULESETS
from arena.verify import verify_text
from arena.wire import pb
from tests.gamemaster.helpers import PY, record_lines, start_match

CAPTURE_AGENT = [PY, str(Path(__file__).with_name("capture_agent.py"))]
_CARD = re.compile(r"(?<![A-Za-z0-9_])([2-9TJQKA][SHDC]|JO)(?![A-Za-z0-9_])")


def read_capture(path: Path) -> list[pb.ServerMessage]:
    data = path.read_bytes()
    messages, i = [], 0
    while i < len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        messages.append(pb.ServerMessage.FromString(data[i + 4 : i + 4 + n]))
        i += 4 + n
    return messages


def cards_in(msg: pb.DecisionRequest | pb.GameEvent) -> set[str]:
    return set(_CARD.findall(text_format.MessageToString(msg)))


def revealed_by(event: pb.GameEvent) -> set[str]:
    """The cards a public event makes known to everyone."""
    kind = event.WhichOneof("event")
    if kind == "action" and event.action.action.startswith(("play ", "give ")):
        return set(event.action.action.split()[1:])
    if kind == "given":
        return set(event.given.cards)
    if kind == "trick":
        return {p.card for p in event.trick.trick.cards}
    return set()


def knowledge(record: str, seat: int) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """Per hand: the cards the seat holds at some point, and every card of the pack."""
    own: dict[int, set[str]] = defaultdict(set)
    pack: dict[int, set[str]] = {}
    for line in record_lines(record)[1:]:
        kind, hand = line.get("event"), line.get("hand")
        if kind == "deal":
            own[hand] |= set(line["hands"][seat])
            pack[hand] = {c for h in line["hands"] for c in h} | set(line["stock"])
        elif (kind == "draw" and line["seat"] == seat) or (kind == "give" and line["to"] == seat):
            own[hand] |= set(line["cards"])
    return own, pack


def parts(msg: pb.ServerMessage) -> list[tuple[pb.DecisionRequest | pb.GameEvent, int]]:
    """What a message shows, in the order it happened: its bundled events, then itself."""
    out: list[tuple[pb.DecisionRequest | pb.GameEvent, int]] = [(e, e.hand) for e in msg.events]
    kind = msg.WhichOneof("kind")
    if kind == "decision":
        out.append((msg.decision, msg.decision.observation.hand_number))
    elif kind == "event":
        out.append((msg.event, msg.event.hand))
    return out


# Every seat of every ruleset, with events bundled into the messages a seat gets anyway (the
# default) and with each event as its own message (Hello.live_events).
@pytest.mark.parametrize("live", [False, True], ids=["bundled", "live"])
@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_no_seat_ever_receives_a_hidden_card(
    gm: RunningGameMaster, client: GameMasterClient, ruleset: str, live: bool, tmp_path: Path
) -> None:
    captures = [tmp_path / f"seat{s}.bin" for s in range(4)]
    match = start_match(
        client,
        gm.address,
        [CAPTURE_AGENT] * 4,
        ruleset={"name": ruleset, "max_hands": 6},
        seed=3,
        seat_env=[
            {"CAPTURE_FILE": str(path), "LIVE_EVENTS": "1" if live else "0"} for path in captures
        ],
    )
    outcome = match.finish(timeout=60)
    assert match.reap() == [0, 0, 0, 0]
    assert outcome.reason in ("target", "max_hands")
    verify_text(outcome.record)
    checked = 0
    for seat in range(4):
        own, pack = knowledge(outcome.record, seat)
        revealed: dict[int, set[str]] = defaultdict(set)
        messages = read_capture(captures[seat])
        assert messages[0].WhichOneof("kind") == "welcome"
        assert messages[-1].WhichOneof("kind") == "game_end"
        sequences, events = [], []
        for msg in messages:
            kind = msg.WhichOneof("kind")
            assert (kind == "event") == live or kind != "event", "events only when asked for"
            assert not (live and msg.events), "live events are never bundled too"
            for part, hand in parts(msg):
                if isinstance(part, pb.GameEvent):
                    revealed[hand] |= revealed_by(part)
                    sequences.append(part.sequence)
                    events.append(part)
                else:
                    assert part.observation.seat == seat
                seen = cards_in(part)
                assert seen <= pack[hand], seen - pack[hand]
                leaked = seen - own[hand] - revealed[hand]
                assert not leaked, f"seat {seat}, hand {hand}: {sorted(leaked)} in {part}"
                checked += 1
        # Every public event exactly once, in order, the last being the end of the game.
        assert sequences == list(range(len(sequences)))
        assert events[-1].WhichOneof("event") == "game_end"
    assert checked > 200
