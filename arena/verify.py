"""Re-play a game record (RECORD.md) through the rules and check every line it claims."""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from arena.actions import parse_action
from arena.cards import Card, deck, parse_card
from arena.errors import ArenaError, RecordError
from arena.game import HAND_SIZE, Deal, Event, Game
from arena.record import RECORD_FORMAT, ruleset_of
from arena.rulesets import RULESETS

# Lines whose order and content are the record's guarantees; all others are derived events.
_KEY_EVENTS = ("deal", "action", "hand_end", "game_end", "forfeit")
_COMPARED = {
    "deal": ("hand", "dealer", "hands", "stock"),
    "hand_end": ("hand", "bidder", "contract", "trump", "points", "made", "scores"),
    "game_end": ("scores", "winner", "reason", "forfeit_seat"),
}
_RULE = {
    "deal": "RULES.md §1 and §3.1: the deal",
    "hand_end": "RULES.md §3.6: scoring a hand",
    "game_end": "RULES.md §4: the end of the game",
}


@dataclass(frozen=True)
class Verified:
    """What a record that passed verification holds."""

    game_id: str
    ruleset: str
    hands: int
    decisions: int
    faults: int
    scores: tuple[int, int]
    winner: int | None
    reason: str


def verify_text(text: str, name: str = "<record>") -> Verified:
    """Re-play the record; raise RecordError naming the file, hand, line and rule on a mismatch."""
    lines: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{name}: line {number}: not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise RecordError(f"{name}: line {number}: expected a JSON object")
        lines.append((number, value))
    if not lines:
        raise RecordError(f"{name}: empty record")
    return _Replay(name, lines).run()


class _Replay:
    def __init__(self, name: str, lines: list[tuple[int, dict[str, Any]]]) -> None:
        self.name = name
        self.lines = lines
        self.line_number = lines[0][0]
        self.hand: int | None = None

    def fail(self, message: str) -> RecordError:
        where = f"{self.name}: " + (f"hand {self.hand}, " if self.hand else "")
        return RecordError(f"{where}line {self.line_number}: {message}")

    def run(self) -> Verified:
        head = self.lines[0][1]
        if head.get("record") != RECORD_FORMAT:
            raise self.fail(f'header must have "record": "{RECORD_FORMAT}"')
        try:
            ruleset = ruleset_of(head)
            first_dealer = int(head["first_dealer"])
            if first_dealer not in range(4):
                raise ValueError(f"first_dealer {first_dealer} is not a seat (0-3)")
        except (KeyError, TypeError, ValueError, ArenaError) as exc:
            raise self.fail(f"bad header: {exc}") from None
        self._check_seats(head.get("seats"))
        deals = {
            line.get("hand"): (number, line)
            for number, line in self.lines[1:]
            if line.get("event") == "deal"
        }
        self.full_pack = deck(ruleset.joker)
        game = Game(ruleset, head.get("seed", 0), first_dealer, self._provider(deals))
        engine_key: deque[Event] = deque()
        engine_derived: defaultdict[str, deque[Event]] = defaultdict(deque)
        consumed = 0
        decisions = faults = 0
        for number, line in self.lines[1:]:
            self.line_number = number
            kind = line.get("event")
            if isinstance(line.get("hand"), int):
                self.hand = line["hand"]
            if kind == "action":
                self._apply(game, line)
                decisions += 1
                faults += "fault" in line
            elif kind == "fault":  # a fault between decisions: no action was played for it
                faults += 1
            elif kind == "forfeit":
                seat: Any = line.get("seat")  # checked by forfeit
                try:
                    game.forfeit(seat)
                except ArenaError as exc:
                    raise self.fail(str(exc)) from None
            elif kind == "game_end" and line.get("reason") == "aborted" and not game.is_over:
                # Not a rule: the game master stopped the game (shutdown); nothing to re-derive.
                game.abort(str(line.get("detail", "")))
            # Pull what the engine logged since the last line and compare what this line says.
            new_key, new_derived = self._split(game, consumed)
            consumed = len(game.events)
            engine_key.extend(new_key)
            for k, v in new_derived.items():
                engine_derived[k].extend(v)
            if kind in _COMPARED or kind == "action" or kind == "forfeit":
                self._compare_key(kind, line, engine_key)
            elif isinstance(kind, str) and engine_derived.get(kind):
                self._compare_derived(line, engine_derived[kind].popleft())
        if not game.is_over:
            raise self.fail(f"the record ends before the game does (hand {game.hand_number})")
        if engine_key:
            missing = engine_key[0]
            raise self.fail(f"the record lacks the {missing['event']} line the rules produce")
        named = RULESETS.get(ruleset.name) == ruleset
        return Verified(
            game_id=str(head.get("game_id", "")),
            ruleset=ruleset.name if named else f"{ruleset.name} (custom parameters)",
            hands=game.hand_number,
            decisions=decisions,
            faults=faults,
            scores=(game.scores[0], game.scores[1]),
            winner=game.winner,
            reason=game.end_reason or "",
        )

    @staticmethod
    def _split(game: Game, start: int) -> tuple[deque[Event], defaultdict[str, deque[Event]]]:
        key: deque[Event] = deque()
        derived: defaultdict[str, deque[Event]] = defaultdict(deque)
        for event in game.events[start:]:
            (key if event["event"] in _KEY_EVENTS else derived[event["event"]]).append(event)
        return key, derived

    def _provider(self, deals: dict[Any, tuple[int, dict[str, Any]]]) -> Any:
        def provide(hand: int, dealer: int) -> Deal:
            self.hand = hand
            if hand not in deals:
                raise self.fail(f"no deal line for hand {hand}")
            self.line_number, line = deals[hand]
            if line.get("dealer") != dealer:
                raise self.fail(
                    f"dealer {line.get('dealer')} but the deal passes clockwise to {dealer} "
                    f"({_RULE['deal']})"
                )
            try:
                hands = [[parse_card(c) for c in h] for h in line["hands"]]
                stock = [parse_card(c) for c in line["stock"]]
            except (KeyError, TypeError, ArenaError) as exc:
                raise self.fail(f"bad deal: {exc}") from None
            self._check_pack(hands, stock)
            return hands, stock

        return provide

    def _check_pack(self, hands: list[list[Card]], stock: list[Card]) -> None:
        if len(hands) != 4 or any(len(h) != HAND_SIZE for h in hands):
            raise self.fail(f"each of 4 hands must hold {HAND_SIZE} cards ({_RULE['deal']})")
        dealt = [c for h in hands for c in h] + stock
        if sorted(dealt) != sorted(self.full_pack):
            raise self.fail(f"the deal is not one full pack, each card once ({_RULE['deal']})")

    def _check_seats(self, seats: Any) -> None:
        """RECORD.md's header names each seat and its team; RULES.md §1 fixes the teams."""
        if (
            not isinstance(seats, list)
            or len(seats) != 4
            or any(
                not isinstance(x, dict) or (x.get("seat"), x.get("team")) != (s, s % 2)
                for s, x in enumerate(seats)
            )
        ):
            raise self.fail("bad header: seats must list seats 0-3 in order, teams 0, 1, 0, 1")

    def _apply(self, game: Game, line: dict[str, Any]) -> None:
        seat, text = line.get("seat"), line.get("action")
        if not isinstance(seat, int) or isinstance(seat, bool) or seat not in range(4):
            raise self.fail(f"an action line needs the seat (0-3) that acted, not {seat!r}")
        if line.get("hand") != game.hand_number:
            raise self.fail(f"action in hand {line.get('hand')} but hand {game.hand_number} is on")
        try:
            game.apply(parse_action(text if isinstance(text, str) else repr(text)), seat)
        except ArenaError as exc:
            raise self.fail(str(exc)) from None

    def _compare_key(self, kind: str | None, line: dict[str, Any], engine: deque[Event]) -> None:
        if not engine:
            raise self.fail(f"{kind} line where the rules produce nothing")
        expected = engine.popleft()
        if expected["event"] != kind:
            raise self.fail(
                f"{kind} line where the rules produce a {expected['event']} line "
                f"({_RULE.get(expected['event'], 'RULES.md')})"
            )
        for field in _COMPARED.get(kind or "", ()):
            if line.get(field) != expected.get(field):
                raise self.fail(
                    f"{field} is {line.get(field)!r} but re-playing gives "
                    f"{expected.get(field)!r} ({_RULE[kind or '']})"
                )

    def _compare_derived(self, line: dict[str, Any], expected: Event) -> None:
        for field, value in expected.items():
            if line.get(field) != value:
                raise self.fail(
                    f"{expected['event']} event: {field} is {line.get(field)!r} but re-playing "
                    f"gives {value!r}"
                )
