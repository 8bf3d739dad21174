"""Re-play a game record (RECORD.md) through the rules and check every line it claims."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

from arena.actions import parse_action
from arena.cards import Card, deck, parse_card
from arena.errors import ArenaError, RecordError
from arena.game import HAND_SIZE, Deal, Event, Game
from arena.gamemaster.policy import FaultKind
from arena.record import RECORD_FORMAT, record_lines, ruleset_of
from arena.rulesets import RULESETS, Ruleset

# Lines whose order and content are the record's guarantees; the engine's other lines are
# derived events, which a record may leave out (RECORD.md).
_KEY_EVENTS = ("deal", "action", "hand_end", "game_end")
# The arena's own lines, checked where present: RECORD.md requires none of them (a forfeit is
# told by game_end's reason and forfeit_seat).
_DERIVED_EVENTS = ("discard", "give", "draw", "out", "trick", "dead", "forfeit")
_HEADER_FIELDS = ("ruleset", "game_id", "first_dealer", "seats")
_REASONS = ("target", "max_hands", "forfeit")
_FAULTS = tuple(kind.value for kind in FaultKind)
_COMPARED = {
    "deal": ("hand", "dealer", "hands", "stock"),
    "hand_end": ("hand", "bidder", "contract", "trump", "points", "made", "scores"),
    "game_end": ("scores", "winner", "reason", "forfeit_seat"),
}
_RULE = {
    "deal": "RULES.md §1 and §3.1: the deal",
    "hand_end": "RULES.md §3.6: scoring a hand",
    "game_end": "RULES.md §4: the end of the game",
    "discard": "RULES.md §3.4: the re-deal",
    "give": "RULES.md §3.4: the re-deal",
    "draw": "RULES.md §3.4: the re-deal",
    "dead": "RULES.md §3.4 and §6: the re-deal",
    "out": "RULES.md §3.5: play",
    "trick": "RULES.md §3.5: play",
    "forfeit": "RECORD.md: the result",
}

# Every line after the header is an event (RECORD.md lists no other kind); an unknown event is
# one of the engine's derived lines and is passed over, a line with none is no part of a record.
_NO_EVENT = 'a line with no "event" (a string): after the header every line is one (RECORD.md)'
_SECOND_HEADER = "a second header: a record is one game, its header the first line only (RECORD.md)"

# The most `arena verify` reads of one file. A game of max_hands 1,000 takes about 4 MB, and
# with a 200-character note on every decision some 50 MB; past this it is no record (/dev/zero
# or an endless pipe was read until memory ran out). Read in pieces of _READ_BYTES.
MAX_RECORD_BYTES = 128 * 1024 * 1024
_READ_BYTES = 1024 * 1024


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


def read_record(path: Path) -> str:
    """A record file's text (standard input for `-`), read in bounded pieces: RecordError naming
    the file and the limit once it is longer than any record can be, pipes and devices included
    (they have no size to check first). UnicodeDecodeError if it is not UTF-8, its `start`
    counted from the file's first byte."""
    if str(path) == "-":
        return _read_bounded(sys.stdin.buffer, "standard input")
    with path.open("rb") as stream:
        return _read_bounded(stream, str(path))


def _read_bounded(stream: BinaryIO, name: str) -> str:
    text = bytearray()
    while piece := stream.read(_READ_BYTES):
        if len(text) + len(piece) > MAX_RECORD_BYTES:
            raise RecordError(
                f"{name}: longer than {MAX_RECORD_BYTES:,} bytes "
                f"({MAX_RECORD_BYTES // 2**20} MiB), more than any record can be"
            )
        text += piece
    return text.decode("utf-8")


def verify_text(text: str, name: str = "<record>") -> Verified:
    """Re-play the record; raise RecordError naming the file, hand, line and rule on a mismatch."""
    lines: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(record_lines(text), start=1):
        if not raw.strip():
            raise RecordError(
                f"{name}: line {number}: blank (a record is one JSON object per line)"
            )
        try:
            value = json.loads(raw, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
            if "\\u" in raw:  # an escaped lone surrogate is no UTF-8 text (RECORD.md)
                json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise RecordError(
                f"{name}: line {number}: a \\u escape of half a surrogate pair, which is no "
                "character: a record is UTF-8 text"
            ) from None
        except _NotJson as exc:
            raise RecordError(f"{name}: line {number}: {exc} is not JSON (RFC 8259)") from None
        except json.JSONDecodeError as exc:
            raise RecordError(
                f"{name}: line {number}, column {exc.colno}: not JSON ({exc.msg})"
            ) from None
        except _DuplicateKey as exc:
            raise RecordError(f"{name}: line {number}: the key {exc} appears twice") from None
        except RecursionError:
            raise RecordError(f"{name}: line {number}: nested too deeply to be a record") from None
        if not isinstance(value, dict):
            raise RecordError(f"{name}: line {number}: expected a JSON object")
        lines.append((number, value))
    if not lines:
        raise RecordError(f"{name}: empty record")
    return _Replay(name, lines).run()


def _fault_limit(head: dict[str, Any]) -> int | None:
    """The header's fault limit, if it gives one (records of in-process play have none)."""
    limits = head.get("limits")
    limit = limits.get("fault_limit") if isinstance(limits, dict) else None
    return limit if _is_int(limit) and limit > 0 else None


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> None:
    """NaN and Infinity: Python's json reads them, but they are no JSON, and other readers
    of the record refuse them."""
    raise _NotJson(name)


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different: readers disagree on which of two wins."""
    out = dict(pairs)
    if len(out) != len(pairs):
        keys = [key for key, _ in pairs]
        raise _DuplicateKey(next(repr(key) for key in keys if keys.count(key) > 1))
    return out


def _same(claimed: Any, derived: Any) -> bool:
    """Equal as JSON values, types included: Python's == takes 1.0 and True for 1."""
    if isinstance(derived, (list, tuple)):
        return (
            isinstance(claimed, list)
            and len(claimed) == len(derived)
            and all(map(_same, claimed, derived))
        )
    if isinstance(derived, dict):
        return (
            isinstance(claimed, dict)
            and claimed.keys() == derived.keys()
            and all(_same(claimed[k], v) for k, v in derived.items())
        )
    return _json_type(claimed) is _json_type(derived) and claimed == derived


def _json_type(value: Any) -> type:
    for kind in (bool, int, float, str):  # bool first: it is an int to Python
        if isinstance(value, kind):
            return kind
    return type(value)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


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
        ruleset, first_dealer = self._check_header(head)
        deals = self._deals()
        self.full_pack = deck(ruleset.joker)
        self.game = game = Game(ruleset, head.get("seed", 0), first_dealer, self._provider(deals))
        self.events = game.events  # the engine's lines; the record is checked against them
        self.next_event = 0  # the first engine line no record line has matched yet
        self.fault_limit = _fault_limit(head)
        self.seat_faults = [0, 0, 0, 0]
        decisions = 0
        ended = False
        for number, line in self.lines[1:]:
            self.line_number = number
            if ended:
                raise self.fail("a line after the game_end line, which is the record's last")
            kind = line.get("event")
            if not isinstance(kind, str):
                raise self.fail(_NO_EVENT if "record" not in line else _SECOND_HEADER)
            ended = kind == "game_end"
            if _is_int(line.get("hand")):
                self.hand = line["hand"]
            self._check_forfeit_due(line)
            if ended and line.get("reason") not in _REASONS:
                raise self.fail(
                    f"game_end reason {line.get('reason')!r}; RECORD.md allows "
                    f"{', '.join(_REASONS)} (an aborted game has no result, so no record)"
                )
            if kind == "action":
                self._apply(game, line)
                decisions += 1
            elif kind == "fault":  # a fault between decisions: no action was played for it
                self._check_fault(line)
                continue
            elif kind == "forfeit":
                self._forfeit(line.get("seat"))
            elif kind == "game_end" and line.get("reason") == "forfeit" and not game.is_over:
                self._forfeit(line.get("forfeit_seat"))  # with no forfeit line before it
            if kind in _KEY_EVENTS:
                self._match_key(kind, line)
            elif kind in _DERIVED_EVENTS:
                self._match_derived(kind, line)
        if not game.is_over:
            raise self.fail(f"the record ends before the game does (hand {game.hand_number})")
        missing = self._next_key()
        if missing is not None:
            raise self.fail(f"the record lacks the {missing[1]['event']} line the rules produce")
        named = RULESETS.get(ruleset.name) == ruleset
        return Verified(
            game_id=head["game_id"],
            ruleset=ruleset.name if named else f"{ruleset.name} (custom parameters)",
            hands=game.hand_number,
            decisions=decisions,
            faults=sum(self.seat_faults),
            scores=(game.scores[0], game.scores[1]),
            winner=game.winner,
            reason=game.end_reason or "",
        )

    def _deals(self) -> dict[int, tuple[int, dict[str, Any]]]:
        """The deal lines by hand number, each with its line number; a deal whose hand is no
        whole number is refused here (as a key of this table, a list or an object raised)."""
        deals = {}
        for number, line in self.lines[1:]:
            if line.get("event") != "deal":
                continue
            if not _is_int(line.get("hand")):
                self.line_number = number
                raise self.fail(
                    f"a deal line's hand must be a whole number, not {line.get('hand')!r}"
                )
            deals[line["hand"]] = (number, line)
        return deals

    def _goes_on_to(self, hand: int) -> bool:
        """Whether a line after the current one is of ``hand`` or later, or ends the game: a
        record cut at a hand's end has none."""
        return any(
            line.get("event") == "game_end" or (_is_int(line.get("hand")) and line["hand"] >= hand)
            for number, line in self.lines
            if number > self.line_number
        )

    def _forfeit(self, seat: Any) -> None:
        try:
            self.game.forfeit(seat)  # which checks the seat
        except ArenaError as exc:
            raise self.fail(str(exc)) from None

    def _check_header(self, head: dict[str, Any]) -> tuple[Ruleset, int]:
        """RECORD.md's header: every field it names, of its type; the ruleset it names."""
        if head.get("record") != RECORD_FORMAT:
            raise self.fail(f'header must have "record": "{RECORD_FORMAT}"')
        for field in _HEADER_FIELDS:
            if field not in head:
                raise self.fail(f'bad header: no "{field}" (RECORD.md)')
        if not isinstance(head["game_id"], str):
            raise self.fail(f"bad header: game_id must be a string, not {head['game_id']!r}")
        first_dealer = head["first_dealer"]
        if not _is_int(first_dealer) or first_dealer not in range(4):
            raise self.fail(f"bad header: first_dealer {first_dealer!r} is not a seat (0-3)")
        try:
            ruleset = ruleset_of(head)
        except (TypeError, ValueError, ArenaError) as exc:
            raise self.fail(f"bad header: {exc}") from None
        self._check_seats(head["seats"])
        return ruleset, first_dealer

    def _provider(self, deals: dict[Any, tuple[int, dict[str, Any]]]) -> Any:
        def provide(hand: int, dealer: int) -> Deal:
            self.hand = hand
            if hand not in deals:
                if not self._goes_on_to(hand):
                    raise self.fail(f"the record ends before the game does (hand {hand})")
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
        """RECORD.md's header names each seat, its team and its agent; RULES.md §1 fixes the
        teams."""
        if (
            not isinstance(seats, list)
            or len(seats) != 4
            or any(
                not isinstance(x, dict) or not _same([x.get("seat"), x.get("team")], [s, s % 2])
                for s, x in enumerate(seats)
            )
        ):
            raise self.fail("bad header: seats must list seats 0-3 in order, teams 0, 1, 0, 1")
        for s, x in enumerate(seats):
            if not isinstance(x.get("agent"), str):
                raise self.fail(f"bad header: seat {s} names no agent (a string)")

    def _check_fault(self, line: dict[str, Any]) -> None:
        """A fault of a kind RECORD.md names, counted for its seat's fault limit."""
        if line.get("fault") not in _FAULTS:
            raise self.fail(
                f"fault is {line.get('fault')!r}; RECORD.md allows {', '.join(_FAULTS)}"
            )
        seat = line.get("seat")
        if not _is_int(seat) or seat not in range(4):
            raise self.fail(f"a fault line needs the seat (0-3) that faulted, not {seat!r}")
        self.seat_faults[seat] += 1

    def _forfeit_due(self) -> int | None:
        """The seat that has reached the header's fault limit in a game still on: the game
        master forfeits it at once (ARCHITECTURE §4), so the next key line is its forfeit."""
        if self.fault_limit is None or self.game.is_over:
            return None
        return next((s for s, n in enumerate(self.seat_faults) if n >= self.fault_limit), None)

    def _check_forfeit_due(self, line: dict[str, Any]) -> None:
        seat = self._forfeit_due()
        kind = line.get("event")
        if seat is None or kind not in (*_KEY_EVENTS, "fault", "forfeit"):
            return
        if kind == "forfeit" and line.get("seat") == seat:
            return
        if kind == "game_end" and line.get("forfeit_seat") == seat:
            return
        raise self.fail(
            f"seat {seat} reached the fault limit ({self.fault_limit} faults, the header's "
            f"limits) but did not forfeit: the game master forfeits such a seat at once "
            "(ARCHITECTURE §4)"
        )

    def _apply(self, game: Game, line: dict[str, Any]) -> None:
        seat, text = line.get("seat"), line.get("action")
        if not _is_int(seat) or seat not in range(4):
            raise self.fail(f"an action line needs the seat (0-3) that acted, not {seat!r}")
        if not _same(line.get("hand"), game.hand_number):
            raise self.fail(
                f"action in hand {line.get('hand')!r} but hand {game.hand_number} is on"
            )
        if "fault" in line:
            self._check_fault(line)
            legal = None if game.is_over else game.legal()
            fallback = legal.first() if legal is not None and legal.seat == seat else None
            if fallback is not None and not _same(text, str(fallback)):
                raise self.fail(
                    f"seat {seat}'s {line['fault']} fault played {text!r}, but the game master "
                    "plays the first legal action in canonical order for a faulting seat, "
                    f"{str(fallback)!r} (ARCHITECTURE §4)"
                )
        try:
            game.apply(parse_action(text if isinstance(text, str) else repr(text)), seat)
        except RecordError:
            raise  # from the deal provider: already says where
        except ArenaError as exc:
            raise self.fail(str(exc)) from None

    def _match_key(self, kind: str, line: dict[str, Any]) -> None:
        """The engine's next key line must be this one. Derived lines before it that the
        record left out are skipped: RECORD.md lets a record hold any number of them."""
        found = self._next_key()
        if found is None:
            raise self.fail(f"{kind} line where the rules produce nothing ({self._awaiting()})")
        index, expected = found
        if expected["event"] != kind:
            raise self.fail(
                f"{kind} line where the rules produce a {expected['event']} line "
                f"({_RULE.get(expected['event'], 'RULES.md')})"
            )
        for field in _COMPARED.get(kind, ()):
            if field in expected and field not in line:  # a draw's "winner": null is no absence
                raise self.fail(
                    f'{kind} line without "{field}", which RECORD.md requires '
                    f"(re-playing gives {expected[field]!r})"
                )
            if not _same(line.get(field), expected.get(field)):
                raise self.fail(
                    f"{field} is {line.get(field)!r} but re-playing gives "
                    f"{expected.get(field)!r} ({_RULE[kind]})"
                )
        self.next_event = index + 1

    def _match_derived(self, kind: str, line: dict[str, Any]) -> None:
        """A derived line must be one the engine wrote at this point (between the key lines
        around it), after those matched before it, with the same fields. The record may have
        left out any of the engine's (RECORD.md), so the first one that agrees is taken."""
        first_of_kind: Event | None = None
        for index, expected in self._upcoming():
            if expected["event"] != kind:
                continue
            if all(_same(line.get(field), value) for field, value in expected.items()):
                self.next_event = index + 1
                return
            first_of_kind = first_of_kind or expected
        if first_of_kind is None:
            raise self.fail(f"{kind} event where re-playing gives none ({self._awaiting()})")
        field, value = next((f, v) for f, v in first_of_kind.items() if not _same(line.get(f), v))
        raise self.fail(
            f"{kind} event: {field} is {line.get(field)!r} but re-playing gives {value!r} "
            f"({_RULE[kind]})"
        )

    def _upcoming(self) -> Iterator[tuple[int, Event]]:
        """The engine's lines no record line has matched yet, up to the next key line."""
        for index in range(self.next_event, len(self.events)):
            yield index, self.events[index]
            if self.events[index]["event"] in _KEY_EVENTS:
                return

    def _next_key(self) -> tuple[int, Event] | None:
        """The engine's next key line not matched yet, with its index."""
        return next(((i, e) for i, e in self._upcoming() if e["event"] in _KEY_EVENTS), None)

    def _awaiting(self) -> str:
        """What the game waits for, when a line claims more than the decisions so far give."""
        if self.game.is_over:
            return "the game is over"
        legal = self.game.legal()
        return (
            f"the rules still wait for seat {legal.seat} ({legal.phase.value}): "
            "is a decision missing?"
        )
