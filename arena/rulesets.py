"""The five named rulesets of RULES.md §6 as immutable values, and custom ones."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NoReturn

from arena.errors import ArenaError, BadRuleset, UnknownRuleset


class Redeal(StrEnum):
    REFILL = "refill"
    DRAW4 = "draw4"


class DirtFollow(StrEnum):
    ANY = "any"
    SUIT = "suit"


class TwoScoresFor(StrEnum):
    PLAYER = "player"
    TRICK = "trick"


# Point values of trump cards, by the key used in RULES.md §2's table ("O" = opposite five).
POINT_KEYS = ("A", "K", "J", "T", "9", "5", "O", "3", "2", "JO")
STANDARD_POINTS = {
    "A": 1,
    "K": 25,
    "J": 1,
    "T": 1,
    "9": 9,
    "5": 5,
    "O": 5,
    "3": 0,
    "2": 1,
    "JO": 15,
}
TOTAL_POINTS = 63
# A custom ruleset's game length: the standard's 250 and 100 with plenty of room either way,
# short of games that would run for hours (every hand scores at most 63).
MAX_TARGET = 10_000
MAX_HANDS = 1_000
# The longest stored form (ruleset_key) the database holds: the ratings tables' ruleset column
# (arena/storage/models.py takes its width from here).
MAX_STORED_CHARS = 200


@dataclass(frozen=True)
class Ruleset:
    """Every parameter of RULES.md; a named ruleset differs from `standard` only where §6 says."""

    name: str = "standard"
    joker: bool = True
    min_bid: int = 40
    dealer_default: int | None = 25
    points: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType(dict(STANDARD_POINTS))
    )
    target: int = 250
    max_hands: int = 100
    redeal: Redeal = Redeal.REFILL
    dealer_picks: bool = True
    out_of_trumps: bool = True
    first_lead_trump: bool = True
    dirt_follow: DirtFollow = DirtFollow.ANY
    two_scores_for: TwoScoresFor = TwoScoresFor.PLAYER

    def __post_init__(self) -> None:
        # Type and range first: a custom ruleset is JSON from a user, and the checks below and
        # the engine take each parameter to be what its annotation says.
        if not isinstance(self.name, str):
            _refuse("name", self.name, "text (a ruleset's name)")
        for flag in ("joker", "dealer_picks", "out_of_trumps", "first_lead_trump"):
            if not isinstance(getattr(self, flag), bool):
                _refuse(flag, getattr(self, flag), "true or false")
        _check_whole("min_bid", self.min_bid, 1, TOTAL_POINTS)
        if self.dealer_default is not None:
            _check_whole("dealer_default", self.dealer_default, 1, TOTAL_POINTS, "or null")
        _check_whole("target", self.target, 1, MAX_TARGET)
        _check_whole("max_hands", self.max_hands, 1, MAX_HANDS)
        object.__setattr__(self, "points", MappingProxyType(_checked_points(self.points)))
        for name, enum in (
            ("redeal", Redeal),
            ("dirt_follow", DirtFollow),
            ("two_scores_for", TwoScoresFor),
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in {m.value for m in enum}:
                _refuse(name, value, "one of " + ", ".join(f'"{m.value}"' for m in enum))
            object.__setattr__(self, name, enum(value))
        self._check()

    def _check(self) -> None:
        total = sum(v for k, v in self.points.items() if k != "JO" or self.joker)
        if total != TOTAL_POINTS:
            raise BadRuleset(
                f"ruleset: trump points must add up to {TOTAL_POINTS}, these add up to {total}"
            )
        if self.redeal is Redeal.DRAW4 and not self.dealer_picks:
            raise BadRuleset("ruleset: dealer_picks false only applies to the refill re-deal")

    def __hash__(self) -> int:  # the points mapping is not hashable by itself
        return hash(repr(self.parameters()))

    def point(self, key: str) -> int:
        return self.points.get(key, 0)

    def parameters(self) -> dict[str, Any]:
        """Every parameter as plain JSON-able values (a custom ruleset's record header)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["points"] = {k: self.points[k] for k in POINT_KEYS if k in self.points}
        for key in ("redeal", "dirt_follow", "two_scores_for"):
            out[key] = out[key].value
        return out

    @classmethod
    def from_parameters(cls, params: dict[str, Any]) -> Ruleset:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise BadRuleset(f"unknown ruleset parameters {unknown}; known: {sorted(names)}")
        name = params.get("name", STANDARD.name)
        if not isinstance(name, str) or name not in RULESETS:
            _refuse("name", name, "one of " + ", ".join(RULESETS) + " (the ruleset it changes)")
        return dataclasses.replace(RULESETS[name], **params)


def _refuse(name: str, value: object, allowed: str) -> NoReturn:
    raise BadRuleset(f"ruleset: {name} must be {allowed}, not {_shown(value)}")


def _check_whole(name: str, value: object, low: int, high: int, also: str = "") -> None:
    # bool is an int to Python, and 40.0 a float; JSON writes neither as a whole number.
    if type(value) is not int or not low <= value <= high:
        _refuse(name, value, f"a whole number from {low} to {high}" + (f" {also}" if also else ""))


def _checked_points(points: object) -> dict[str, int]:
    if not isinstance(points, Mapping):
        _refuse("points", points, f"an object of trump points by card ({', '.join(POINT_KEYS)})")
    unknown = sorted(str(k) for k in points if k not in POINT_KEYS)
    if unknown:
        raise BadRuleset(f"ruleset: unknown point keys {unknown}; use {list(POINT_KEYS)}")
    for key, value in points.items():
        _check_whole(f"points.{key}", value, 0, TOTAL_POINTS)
    return dict(points)


def _shown(value: object) -> str:
    """A value as the JSON it came from (null, true, "x"), cut short."""
    try:
        return _cut(json.dumps(value))
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def _cut(text: str, longest: int = 60) -> str:
    # User input, in a one-line message: a ruleset may be kilobytes of nested JSON.
    return text if len(text) <= longest else text[: longest - 1] + "…"


STANDARD = Ruleset()
RULESETS: dict[str, Ruleset] = {
    r.name: r
    for r in (
        STANDARD,
        Ruleset(name="wiki-2010", min_bid=25, dealer_picks=False),
        Ruleset(name="inverness", joker=False, points={**STANDARD_POINTS, "3": 15, "JO": 0}),
        Ruleset(name="queens-county", points={**STANDARD_POINTS, "2": 2, "T": 0}, target=225),
        Ruleset(
            name="rules-site",
            joker=False,
            points={**STANDARD_POINTS, "3": 15, "JO": 0},
            target=152,
            min_bid=1,
            dealer_default=None,
            redeal=Redeal.DRAW4,
            out_of_trumps=False,
            first_lead_trump=False,
            dirt_follow=DirtFollow.SUIT,
            two_scores_for=TwoScoresFor.TRICK,
        ),
    )
}


def get_ruleset(name: str) -> Ruleset:
    try:
        return RULESETS[name]
    except KeyError:
        hint = f" (names are lower-case: {name.lower()})" if name.lower() in RULESETS else ""
        raise UnknownRuleset(
            f"unknown ruleset {_cut(repr(name))}; choose one of {', '.join(RULESETS)}{hint}"
        ) from None


def ruleset_parameters(text: str) -> dict[str, Any]:
    """The JSON object of a custom ruleset's parameters (BadRuleset if the text is none)."""
    try:
        params = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to parse
        raise BadRuleset(f"ruleset {_cut(text)!r} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise BadRuleset(f"ruleset {_cut(text)!r} must be a JSON object of parameters")
    return params


def parse_ruleset(text: str) -> Ruleset:
    """The ruleset given by name or as a JSON object of parameters (as `--ruleset` takes it),
    checked as the one place a ruleset enters the arena: UnknownRuleset or BadRuleset name the
    problem, including a stored form (ruleset_key) longer than the database holds."""
    if not text.lstrip().startswith("{"):
        return get_ruleset(text)  # UnknownRuleset names the choices
    ruleset = Ruleset.from_parameters(ruleset_parameters(text))
    key = _key(ruleset)
    if len(key) > MAX_STORED_CHARS:
        raise BadRuleset(
            f"ruleset: its stored form {_cut(key)} is {len(key)} characters long; the database "
            f"holds {MAX_STORED_CHARS}. Only the parameters that differ from the named ruleset "
            f"it changes ({ruleset.name!r}) are stored, so start from the one closest to it "
            f"({', '.join(RULESETS)}) or change fewer parameters"
        )
    return ruleset


def ruleset_key(text: str) -> str:
    """The one spelling of a ruleset given by name or as JSON parameters (as `--ruleset` takes
    it): the name of a named ruleset, else compact JSON with sorted keys of its name and the
    parameters that differ from that named one's. Tournaments store it, so the same rules
    written two ways are one ruleset, rated as one pool."""
    return _key(parse_ruleset(text))


def _key(ruleset: Ruleset) -> str:
    base = RULESETS[ruleset.name].parameters()
    changed = {k: v for k, v in ruleset.parameters().items() if v != base[k] and k != "name"}
    if not changed:
        return ruleset.name
    return json.dumps({"name": ruleset.name, **changed}, sort_keys=True, separators=(",", ":"))


def as_stored(text: str) -> str:
    """The ruleset as tournaments store it (ruleset_key), however it is written; as written if
    it is no ruleset this arena knows (one stored by an older arena, say)."""
    try:
        return ruleset_key(text)
    except ArenaError:
        return text


def ruleset_from_header(value: str | dict[str, Any]) -> Ruleset:
    """A record header's ruleset: a name, or an object with every parameter."""
    if isinstance(value, str):
        return get_ruleset(value)
    if not isinstance(value, dict):
        raise BadRuleset(f"a ruleset is a name or an object of parameters, not {value!r}")
    missing = sorted({f.name for f in dataclasses.fields(Ruleset)} - set(value))
    if missing:
        raise BadRuleset(f"a custom ruleset in a record gives every parameter; missing {missing}")
    return Ruleset.from_parameters(value)
