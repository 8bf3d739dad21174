"""A game's public events (GameEvent, what spectators receive) as lines of text to read live."""

from __future__ import annotations

from collections.abc import Iterable

from arena.wire import pb


def describe(event: pb.GameEvent) -> str:
    """One line: the event's place in the game, then what happened."""
    return f"[{event.sequence:>4}] hand {event.hand}: {_what(event)}"


def _what(event: pb.GameEvent) -> str:
    kind = event.WhichOneof("event")
    if kind == "hand_started":
        return f"dealt by seat {event.hand_started.dealer}"
    if kind == "action":
        a = event.action
        text = f"seat {a.seat}: {a.action}"
        if a.hidden_cards:
            text += f" ({a.hidden_cards} card{_s(a.hidden_cards)}, face down)"
        if a.fault:
            text += f" (played by the game master after a {a.fault} fault)"
        return text
    if kind == "discarded":
        d = event.discarded
        return f"seat {d.seat} discards {d.count} card{_s(d.count)} face down"
    if kind == "given":
        g = event.given
        return f"seat {g.from_seat} gives {' '.join(g.cards)} to seat {g.to_seat}"
    if kind == "drawn":
        return f"seat {event.drawn.seat} draws {event.drawn.count}"
    if kind == "out":
        o = event.out
        return f"seat {o.seat} is out ({o.cards_set_aside} card{_s(o.cards_set_aside)} set aside)"
    if kind == "trick":
        t = event.trick
        cards = " ".join(f"{p.seat}:{p.card}" for p in t.trick.cards)
        return f"trick {cards}, won by seat {t.trick.winner} (points {_pair(t.points)})"
    if kind == "dead":
        return f"{event.dead.count} card{_s(event.dead.count)} of the stock dead"
    if kind == "hand_ended":
        h = event.hand_ended
        made = "made" if h.made else "set"
        return (
            f"scored: seat {h.bidder} bid {h.contract} in {h.trump}, {made}; "
            f"points {_pair(h.points)}; scores {_pair(h.scores)}"
        )
    if kind == "forfeit":
        return f"seat {event.forfeit.seat} forfeits: {event.forfeit.detail}"
    if kind == "fault":
        return f"seat {event.fault.seat}: {event.fault.kind} fault"
    if kind == "game_end":
        e = event.game_end
        outcome = f"team {e.winner} wins" if e.HasField("winner") else "no winner"
        text = f"game over ({e.reason}): scores {_pair(e.scores)}, {outcome}"
        return text + (f" ({e.detail})" if e.detail else "")
    return "an event this version does not know"


def _pair(values: Iterable[int]) -> str:
    """Two teams' numbers, team 0 first (scores may be negative, hence no dash)."""
    return " to ".join(map(str, values))


def _s(count: int) -> str:
    return "" if count == 1 else "s"
