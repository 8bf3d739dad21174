"""The five named rulesets of RULES.md §6 as immutable values, and custom ones."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

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
        if not isinstance(self.points, MappingProxyType):
            object.__setattr__(self, "points", MappingProxyType(dict(self.points)))
        for name, enum in (
            ("redeal", Redeal),
            ("dirt_follow", DirtFollow),
            ("two_scores_for", TwoScoresFor),
        ):
            value = getattr(self, name)
            try:
                object.__setattr__(self, name, enum(value))
            except ValueError:
                allowed = ", ".join(repr(m.value) for m in enum)
                raise BadRuleset(f"{name} must be one of {allowed}, not {value!r}") from None
        self._check()

    def _check(self) -> None:
        unknown = set(self.points) - set(POINT_KEYS)
        if unknown:
            raise BadRuleset(f"unknown point keys {sorted(unknown)}; use {list(POINT_KEYS)}")
        total = sum(v for k, v in self.points.items() if k != "JO" or self.joker)
        if total != TOTAL_POINTS:
            raise BadRuleset(f"trump points must add up to {TOTAL_POINTS}, these add up to {total}")
        if not 1 <= self.min_bid <= TOTAL_POINTS:
            raise BadRuleset(f"min_bid must be between 1 and 63, not {self.min_bid}")
        if self.dealer_default is not None and not 1 <= self.dealer_default <= TOTAL_POINTS:
            raise BadRuleset(f"dealer_default must be between 1 and 63, not {self.dealer_default}")
        if self.target < 1 or self.max_hands < 1:
            raise BadRuleset("target and max_hands must be positive")
        if self.redeal is Redeal.DRAW4 and not self.dealer_picks:
            raise BadRuleset("dealer_picks false only applies to the refill re-deal")

    def __hash__(self) -> int:  # the points mapping is not hashable by itself
        return hash(repr(self.parameters()))

    @property
    def deck_size(self) -> int:
        return 53 if self.joker else 52

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
        base = RULESETS.get(params.get("name", ""), STANDARD)
        return dataclasses.replace(base, **params)


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
        raise UnknownRuleset(
            f"unknown ruleset {name!r}; choose one of {', '.join(RULESETS)}"
        ) from None


def ruleset_key(text: str) -> str:
    """The one spelling of a ruleset given by name or as JSON parameters (as `--ruleset` takes
    it): the name of a named ruleset, else compact JSON with sorted keys of its name and the
    parameters that differ from that named one's. Tournaments store it, so the same rules
    written two ways are one ruleset, rated as one pool."""
    if not text.lstrip().startswith("{"):
        return get_ruleset(text).name  # UnknownRuleset names the choices
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise BadRuleset(f"ruleset {text!r} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise BadRuleset(f"ruleset {text!r} must be a JSON object of parameters")
    ruleset = Ruleset.from_parameters(params)  # BadRuleset names the problem
    base = RULESETS.get(ruleset.name, STANDARD).parameters()
    changed = {k: v for k, v in ruleset.parameters().items() if v != base[k] and k != "name"}
    if not changed and ruleset.name in RULESETS:
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
