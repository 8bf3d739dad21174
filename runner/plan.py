"""Tournament plans: which duplicate game sets to play, with deterministic ids, seeds and seats."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from arena.errors import ArenaError
from arena.rulesets import ruleset_key

SEED_BITS = 63
# The most game sets one tournament may plan: more took minutes and gigabytes to plan and store
# (a million sets per pair was taken as given); several tournaments can play more.
MAX_SETS = 100_000
SEATS = 4

T = TypeVar("T")


class PlanError(ArenaError, ValueError):
    """A tournament that cannot be planned as asked (too few bots, duplicates, bad counts)."""


class TournamentFormat(StrEnum):
    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"


@dataclass(frozen=True)
class GameSet:
    """A duplicate game set: two games on the same deals, a and b swapping partnerships."""

    index: int
    tournament_id: str
    a: str
    b: str
    seed: int
    first_dealer: int
    ruleset: str

    @property
    def id(self) -> str:
        return f"{self.tournament_id}-set-{self.index:05d}"


def seatings(a: T, b: T) -> tuple[tuple[T, T, T, T], tuple[T, T, T, T]]:
    """Who sits where in a set's two games, both played on the set's seed and first dealer:
    a's partnership at seats 0 and 2 in game 0, b's in game 1."""
    return (a, b, a, b), (b, a, b, a)


def derive_seed(tournament_seed: int | str, a: str, b: str, set_number: int) -> tuple[int, int]:
    """(63-bit deal seed, first dealer 0..3) for set `set_number` of the pair, from sha256.

    The pair is taken in sorted order, so listing the bots differently keeps every pair's deals;
    the key is JSON so that no bot id can make two different keys collide.
    """
    low, high = sorted((a, b))
    key = json.dumps([str(tournament_seed), low, high, set_number], separators=(",", ":"))
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    seed = int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)
    first_dealer = digest[8] % SEATS  # 256 is a multiple of 4: no bias
    return seed, first_dealer


def plan_round_robin(
    tournament_id: str,
    bots: Sequence[str],
    sets_per_pair: int,
    ruleset: str = "standard",
    seed: int | str = 0,
) -> list[GameSet]:
    """Every unordered pair of distinct bots plays `sets_per_pair` duplicate sets.

    Sets are interleaved (set 1 of every pair, then set 2, …) so that a tournament stopped
    part way has played every pair about equally. Within a round the pairs come in the
    order of `bots`: (bots[0], bots[1]), (bots[0], bots[2]), …, (bots[1], bots[2]), …
    """
    _check(tournament_id, bots, sets_per_pair, ruleset, "sets_per_pair")
    pairs = [(a, b) for i, a in enumerate(bots) for b in bots[i + 1 :]]
    return _interleave(tournament_id, pairs, sets_per_pair, ruleset, seed)


def plan_gauntlet(
    tournament_id: str,
    champion: str,
    field: Sequence[str],
    sets_per_opponent: int,
    ruleset: str = "standard",
    seed: int | str = 0,
) -> list[GameSet]:
    """The champion (always `a`) plays `sets_per_opponent` duplicate sets against each opponent."""
    _check(tournament_id, [champion, *field], sets_per_opponent, ruleset, "sets_per_opponent")
    pairs = [(champion, opponent) for opponent in field]
    return _interleave(tournament_id, pairs, sets_per_opponent, ruleset, seed)


def plan_tournament(
    tournament_format: str | TournamentFormat,
    tournament_id: str,
    bots: Sequence[str],
    sets: int,
    ruleset: str = "standard",
    seed: int | str = 0,
) -> list[GameSet]:
    """Plan by format name: "round-robin" over `bots`, or "gauntlet" of bots[0] against the rest."""
    try:
        # StrEnum's str() is its value; "round_robin" and "Round-Robin" are accepted too.
        kind = TournamentFormat(str(tournament_format).lower().replace("_", "-"))
    except ValueError:
        known = ", ".join(repr(f.value) for f in TournamentFormat)
        raise PlanError(
            f"unknown tournament format {tournament_format!r}; choose one of {known}"
        ) from None
    if kind is TournamentFormat.GAUNTLET:
        if not bots:
            raise PlanError("a gauntlet needs a champion and at least one opponent, got no bots")
        return plan_gauntlet(tournament_id, bots[0], bots[1:], sets, ruleset, seed)
    return plan_round_robin(tournament_id, bots, sets, ruleset, seed)


def _check(
    tournament_id: str, bots: Sequence[str], sets: int, ruleset: str, sets_name: str
) -> None:
    if not isinstance(tournament_id, str) or not tournament_id:
        raise PlanError(f"a tournament id must be a non-empty string, not {tournament_id!r}")
    if isinstance(bots, str):  # a lone id would otherwise be planned letter by letter
        raise PlanError(f"bots must be a sequence of bot version ids, not the string {bots!r}")
    for bot in bots:
        if not isinstance(bot, str) or not bot:
            raise PlanError(f"bot version ids must be non-empty strings, not {bot!r}")
    if len(bots) < 2:
        raise PlanError(f"a tournament needs at least 2 bots, got {len(bots)}: {list(bots)!r}")
    duplicates = sorted({bot for bot in bots if bots.count(bot) > 1})
    if duplicates:
        raise PlanError(f"each bot may be entered once; repeated: {', '.join(duplicates)}")
    if isinstance(sets, bool) or not isinstance(sets, int) or sets < 1:
        raise PlanError(f"{sets_name} must be a whole number of at least 1, not {sets!r}")
    ruleset_key(ruleset)  # UnknownRuleset or BadRuleset naming the problem


def _interleave(
    tournament_id: str,
    pairs: list[tuple[str, str]],
    sets: int,
    ruleset: str,
    seed: int | str,
) -> list[GameSet]:
    if sets * len(pairs) > MAX_SETS:
        raise PlanError(
            f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''} × {sets} sets each is "
            f"{sets * len(pairs)} game sets; a tournament may have at most {MAX_SETS}: "
            "ask for fewer sets, or play several tournaments"
        )
    plan: list[GameSet] = []
    for set_number in range(sets):
        for a, b in pairs:
            set_seed, first_dealer = derive_seed(seed, a, b, set_number)
            plan.append(
                GameSet(
                    index=len(plan),
                    tournament_id=tournament_id,
                    a=a,
                    b=b,
                    seed=set_seed,
                    first_dealer=first_dealer,
                    ruleset=ruleset,
                )
            )
    return plan
