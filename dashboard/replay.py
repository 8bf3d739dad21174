"""Replay frames: re-play a record through the engine and describe each moment per perspective.

A frame is the table right after one decision (plus one at each deal, one at each hand's end
and one at the game's end). The `full` perspective shows every card; seat perspectives are
built only from `arena.observation.observe(game, seat)` and the public part of the decision
and its events, so a seat's frames hold nothing that seat did not know at that moment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.actions import parse_action
from arena.cards import CARD_TEXT, Card, parse_card
from arena.errors import ArenaError
from arena.game import Deal, Event, Game
from arena.observation import observe
from arena.record import record_lines, ruleset_of
from arena.summary import outcome
from dashboard.formatting import SUIT_SYMBOLS

FULL = "full"
PERSPECTIVES = (FULL, "0", "1", "2", "3")
# Every decision but a `keep` is public: bids, passes, trump, cards given face up, cards played.
PRIVATE_ACTIONS = ("keep",)


class ReplayError(ArenaError):
    """A record the engine cannot re-play (the game page still shows what it can)."""


@dataclass(frozen=True)
class Replay:
    """Frames for every perspective, and where each hand starts."""

    header: dict[str, Any]
    frames: dict[str, list[dict[str, Any]]]
    hand_starts: list[dict[str, int]]
    end: dict[str, Any] | None

    def for_perspective(self, perspective: str) -> dict[str, Any]:
        header, end = self.header, self.end
        if perspective != FULL:
            # The seed re-deals every hand, and no seat knew the result before the end: the
            # last frame says it.
            header, end = {k: v for k, v in header.items() if k != "seed"}, None
        return {
            **header,
            "perspective": perspective,
            "hands": self.hand_starts,
            "end": end,
            "frames": self.frames[perspective],
        }


def pretty(card: str) -> str:
    return "Joker" if card == "JO" else card[:-1].replace("T", "10") + SUIT_SYMBOLS[card[-1]]


def _cards(cards: Sequence[int]) -> list[str]:
    return [CARD_TEXT[c] for c in cards]


def _full_state(game: Game, auction: list[list[Any]]) -> dict[str, Any]:
    return {
        "hand": game.hand_number,
        "dealer": game.dealer,
        "phase": game.phase.value,
        "to_act": game.to_act,
        "hands": [_cards(h) for h in game.hands],
        "counts": [len(h) for h in game.hands],
        "stock": _cards(game.stock),
        "stock_count": len(game.stock),
        "auction": auction,
        "high_bid": game.high_bid,
        "bidder": game.bidder,
        "contract": game.contract,
        "trump": None if game.trump is None else str(game.trump),
        "discards": [_cards(d) for d in game.discards],
        "discard_counts": list(game.discard_counts),
        "drawn": list(game.draw_counts),
        "given": [[f, t, _cards(cs)] for f, t, cs in game.given],
        "out": list(game.out),
        "trick": (
            {"leader": game.leader, "cards": [[s, CARD_TEXT[c]] for s, c in game.trick]}
            if game.leader is not None and game.phase.value == "play"
            else None
        ),
        "tricks": [
            {"leader": lead, "cards": [[s, CARD_TEXT[c]] for s, c in cards], "winner": win}
            for lead, cards, win in game.tricks
        ],
        "points": list(game.points),
        "scores": list(game.scores),
    }


def _seat_state(game: Game, seat: int, auction: list[list[Any]]) -> dict[str, Any]:
    """The same shape as the full state, from the seat's observation alone (and the auction,
    which is public: the full state's, `auction`)."""
    obs = observe(game, seat).to_dict()
    hands: list[list[str] | None] = [None, None, None, None]
    hands[seat] = obs["hand"]
    discards: list[list[str] | None] = [None, None, None, None]
    discards[seat] = _cards(game.discards[seat])  # its own face-down cards, which it knows
    return {
        "hand": obs["hand_number"],
        "dealer": obs["dealer"],
        "phase": obs["phase"],
        "to_act": obs["to_act"],
        "hands": hands,
        "counts": list(obs["card_counts"]),
        "stock": None,
        "stock_count": obs["stock_count"],
        "auction": auction,
        "high_bid": obs["high_bid"],
        "bidder": obs["bidder"],
        "contract": obs["contract"],
        "trump": obs["trump"],
        "discards": discards,
        "discard_counts": list(obs["discarded"]),
        "drawn": list(obs["drawn"]),
        "given": obs["given"],
        "out": list(obs["out"]),
        "trick": (
            None
            if obs["trick"] is None
            else {"leader": obs["trick"]["leader"], "cards": obs["trick"]["cards"]}
        ),
        "tricks": obs["tricks"],
        "points": list(obs["points"]),
        "scores": list(obs["scores"]),
    }


def _hand_over(state: dict[str, Any], events: list[Event]) -> dict[str, Any]:
    """The table at a hand's end, from the state before its last decision and that decision's
    (public) events: everyone is out, the last trick is in, the hand is scored."""
    done = dict(state)
    tricks = list(state["tricks"])
    for e in events:
        if e["event"] == "trick":
            tricks.append({"leader": e["leader"], "cards": e["cards"], "winner": e["winner"]})
        elif e["event"] == "hand_end":
            done["points"], done["scores"] = e["points"], e["scores"]
    done.update(
        phase="hand_end",
        to_act=None,
        hands=[[] if h is not None else None for h in state["hands"]],
        counts=[0, 0, 0, 0],
        out=[True] * 4,
        trick=None,
        tricks=tricks,
    )
    return done


def _log(events: list[Event], viewer: int | None) -> list[str]:
    """What happened, as `viewer` (None: the full view) knew it: the cards a seat discards or
    draws face down only in the full view and the seat's own."""
    full = viewer is None
    lines = []
    for e in events:
        kind = e["event"]
        seat = e.get("seat")
        cards = " ".join(pretty(c) for c in e.get("cards", []) if isinstance(c, str))
        n = len(e.get("cards", []))
        known = full or seat == viewer
        if kind == "deal":
            lines.append(f"Hand {e['hand']}: seat {e['dealer']} deals")
        elif kind == "discard" and n:
            lines.append(f"Seat {seat} discards {cards if known else _count(n)}")
        elif kind == "draw" and n:
            lines.append(f"Seat {seat} draws {cards if known else _count(n)}")
        elif kind == "give":
            lines.append(f"Seat {seat} gives {cards} to seat {e['to']} face up")
        elif kind == "dead":
            lines.append(f"Stock set aside: {cards if full else _count(n)}")
        elif kind == "out":
            aside = f" (sets aside {cards if known else _count(n)})" if n else ""
            lines.append(f"Seat {seat} is out{aside}")
        elif kind == "trick":
            won = e.get("points", [0, 0])
            points = " ".join(f"+{p} team {t}" for t, p in enumerate(won) if p)
            lines.append(f"Seat {e['winner']} wins the trick" + (f" ({points})" if points else ""))
        elif kind == "hand_end":
            made = "made it" if e["made"] else "went set"
            lines.append(
                f"Hand {e['hand']} over: seat {e['bidder']} bid {e['contract']} in "
                f"{SUIT_SYMBOLS.get(e['trump'], e['trump'])} and {made}; points "
                f"{e['points'][0]}–{e['points'][1]}, scores {e['scores'][0]} / {e['scores'][1]}"
            )
        elif kind == "forfeit":
            # Why, in the full view only: a fault's detail may quote the seat's own cards.
            why = e.get("detail") if full else None
            lines.append(f"Seat {seat} forfeits" + (f": {why}" if why else ""))
        elif kind == "game_end":
            lines.append(_end_text(e))
    return lines


def _count(n: int) -> str:
    return f"{n} card" if n == 1 else f"{n} cards"


def _end_text(e: dict[str, Any]) -> str:
    scores, winner, why = e["scores"], e.get("winner"), e.get("reason")
    if winner is None:
        return f"Game over: a draw at {scores[0]} to {scores[1]} ({why})"
    return f"Game over: {outcome(winner, scores, str(why))}"  # the winner's score first


def _decision(line: dict[str, Any], viewer: int | None) -> dict[str, Any]:
    seat = line.get("seat")
    action = str(line.get("action"))
    out: dict[str, Any] = {"seat": seat, "action": action}
    for key in ("ms", "fault"):
        if key in line:
            out[key] = line[key]
    own = viewer is None or viewer == seat
    if own:
        if isinstance(line.get("note"), str):
            out["note"] = line["note"]
        # A fault's detail quotes what the seat sent, which may name a card of its hand: as
        # a note, only the full view and the seat's own show it.
        if isinstance(line.get("detail"), str):
            out["detail"] = line["detail"]
    else:
        if action.split(" ", 1)[0] in PRIVATE_ACTIONS:
            out["action"] = f"{action.split(' ', 1)[0]} ({_count(len(action.split()) - 1)})"
        if "note" in line:
            out["note_hidden"] = True
    return out


class _Auction:
    """The auction as text, kept up to date bid by bid: written out afresh at every decision,
    long auctions (a bid a point higher each time) took most of a long game's replay."""

    def __init__(self) -> None:
        self._seen: list[Any] = []  # the engine's entries, to tell a new auction from more bids
        self._text: list[list[Any]] = []

    def now(self, game: Game) -> list[list[Any]]:
        """A list of its own for each frame; the [seat, action] pairs are shared, never changed."""
        auction = game.auction
        known = len(self._seen)
        if len(auction) < known or (known and auction[known - 1] is not self._seen[-1]):
            self._seen, self._text = [], []  # a new hand's auction
        for entry in auction[len(self._seen) :]:
            self._seen.append(entry)
            self._text.append([entry[0], str(entry[1])])
        return self._text[:]


class _Builder:
    """Re-plays the record's lines, describing each frame; with `frames=False` it only counts
    them and notes where each hand starts (what the replay page needs, in a fraction of the
    time)."""

    def __init__(self, lines: list[dict[str, Any]], *, frames: bool = True) -> None:
        self.lines = lines
        self.with_frames = frames
        self.frames: dict[str, list[dict[str, Any]]] = {p: [] for p in PERSPECTIVES}
        self.frame_count = 0
        self.hand_starts: list[dict[str, int]] = []
        self.decisions = 0
        self.states: list[dict[str, Any]] = []
        self.auction = _Auction()
        # The dirt each seat set aside face down on going out this hand: the engine keeps no
        # such list (the cards leave play), the `out` events name them.
        self.aside: list[list[str]] = [[], [], [], []]

    def provider(self, deals: dict[int, dict[str, Any]]) -> Any:
        def provide(hand: int, dealer: int) -> Deal:
            line = deals.get(hand)
            if line is None:
                raise ReplayError(f"the record has no deal line for hand {hand}")
            hands: list[list[Card]] = [[parse_card(c) for c in h] for h in line["hands"]]
            return hands, [parse_card(c) for c in line["stock"]]

        return provide

    def emit(
        self,
        kind: str,
        states: list[dict[str, Any]],
        events: list[Event],
        line: dict[str, Any] | None,
        result: dict[str, Any] | None = None,
    ) -> None:
        if kind == "deal":
            self.hand_starts.append({"hand": states[0]["hand"], "frame": self.frame_count})
        self.frame_count += 1
        if not self.with_frames:
            return
        for e in events:
            if e["event"] == "deal":
                self.aside = [[], [], [], []]
            elif e["event"] == "out":
                self.aside[e["seat"]] = [str(c) for c in e.get("cards", [])]
        for i, perspective in enumerate(PERSPECTIVES):
            viewer = None if perspective == FULL else int(perspective)
            state = dict(states[i])
            state["aside"] = [
                cards if viewer in (None, seat) else None for seat, cards in enumerate(self.aside)
            ]
            tricks = state.pop("tricks")
            state["trick_count"] = len(tricks)
            state["last_trick"] = tricks[-1] if tricks else None
            self.frames[perspective].append(
                {
                    "i": len(self.frames[perspective]),
                    "kind": kind,
                    "decisions": self.decisions,
                    "decision": None if line is None else _decision(line, viewer),
                    "log": _log(events, viewer),
                    "result": result,
                    **state,
                }
            )

    def snapshot(self, game: Game) -> list[dict[str, Any]]:
        if not self.with_frames:
            self.states = [{"hand": game.hand_number}]
            return self.states
        auction = self.auction.now(game)
        seats = [_seat_state(game, s, auction) for s in range(4)]
        self.states = [_full_state(game, auction), *seats]
        return self.states

    def run(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        head = self.lines[0]
        try:
            ruleset = ruleset_of(head)
            first_dealer = int(head["first_dealer"])
        except (KeyError, TypeError, ValueError, ArenaError) as exc:
            raise ReplayError(f"bad record header: {exc}") from None
        deals = {
            int(line["hand"]): line
            for line in self.lines[1:]
            if line.get("event") == "deal" and isinstance(line.get("hand"), int)
        }
        game = Game(ruleset, head.get("seed", 0), first_dealer, self.provider(deals))
        self.emit("deal", self.snapshot(game), list(game.events), None)
        consumed = len(game.events)
        end: dict[str, Any] | None = None
        for number, line in enumerate(self.lines[1:], start=2):
            kind = line.get("event")
            if kind == "game_end":
                end = {k: v for k, v in line.items() if k != "event"}
            if kind not in ("action", "forfeit") or game.is_over:
                continue
            before = self.states
            try:
                if kind == "action":
                    game.apply(parse_action(str(line.get("action"))), line.get("seat"))
                    self.decisions += 1
                else:
                    game.forfeit(int(line["seat"]))
            except (ArenaError, KeyError, TypeError, ValueError) as exc:
                raise ReplayError(f"line {number}: {exc}") from None
            new = game.events[consumed:]
            consumed = len(game.events)
            decision = line if kind == "action" else None
            ends = [i for i, e in enumerate(new) if e["event"] == "hand_end"]
            if ends:
                cut = ends[0] + 1
                over = [_hand_over(s, new[:cut]) for s in before] if self.with_frames else before
                hand_end = {k: v for k, v in new[ends[0]].items() if k != "event"}
                self.emit("hand_end", over, new[:cut], decision, {"hand_end": hand_end})
                if game.is_over:
                    result = {"hand_end": hand_end, "game_end": _game_end(new[cut:])}
                    self.snapshot(game)
                    self.emit("game_end", over, new[cut:], None, result)
                else:
                    self.emit("deal", self.snapshot(game), new[cut:], None)
            elif game.is_over:  # a forfeit: the record's line says why, the engine's does not
                told = [
                    dict(e, detail=line.get("detail")) if e["event"] == "forfeit" else e
                    for e in new
                ]
                self.emit(
                    "game_end", self.snapshot(game), told, decision, {"game_end": _game_end(new)}
                )
            else:
                self.emit("decision", self.snapshot(game), new, decision)
        return head, end


def _game_end(events: list[Event]) -> dict[str, Any] | None:
    for e in events:
        if e["event"] == "game_end":
            return {k: v for k, v in e.items() if k != "event"}
    return None


def build_replay(game_id: str, record: bytes) -> Replay:
    """Re-play `record`; ReplayError if it is not a record the engine can re-play."""
    builder = _Builder(_lines(record))
    head, end = _run(builder)
    seats = head.get("seats") or []
    header = {
        "game_id": game_id,
        "ruleset": head.get("ruleset") if isinstance(head.get("ruleset"), str) else "custom",
        "first_dealer": head.get("first_dealer"),
        "seed": head.get("seed"),
        "agents": [str(s.get("agent", "")) for s in seats if isinstance(s, dict)],
        "frame_count": builder.frame_count,
    }
    return Replay(header, builder.frames, builder.hand_starts, end)


def hand_starts(record: bytes) -> list[dict[str, int]]:
    """Where each hand starts in the replay of `record` (`Replay.hand_starts`), without
    describing a frame; ReplayError as `build_replay`."""
    builder = _Builder(_lines(record), frames=False)
    _run(builder)
    return builder.hand_starts


def _lines(record: bytes) -> list[dict[str, Any]]:
    lines = []
    for number, raw in enumerate(record_lines(record.decode("utf-8", "replace")), start=1):
        if raw.strip():
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):  # nested past what json reads
                raise ReplayError(f"line {number} is not JSON") from None
            if isinstance(value, dict):
                lines.append(value)
    if not lines:
        raise ReplayError("the record is empty")
    return lines


def _run(builder: _Builder) -> tuple[dict[str, Any], dict[str, Any] | None]:
    try:
        return builder.run()
    except ReplayError:
        raise
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        # A damaged line the checks above let through (a deal with no hands, say): the engine
        # cannot re-play it, and says so, rather than the page failing.
        raise ReplayError(f"the record cannot be re-played: {type(exc).__name__}: {exc}") from None
