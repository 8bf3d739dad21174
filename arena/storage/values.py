"""Values callers hand to storage, and the deterministic ids of tournaments, sets, games."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from arena.storage.errors import NotFound
from arena.storage.models import utcnow

MAX_SEED = 2**63 - 1
# How old the last sign of life of a set being played may be for a worker to be playing it
# still (runner/tournament.py stores one every few seconds; see also runner/reconcile.py).
SET_BEAT_FRESH = timedelta(seconds=30)
RECORD_COMPRESSION_LEVEL = 6

VersionKey = int | str  # a bot_versions.id or "name@version"


@dataclass(frozen=True)
class PlannedSet:
    """One game set of a tournament plan, before it is stored."""

    bot_a: VersionKey
    bot_b: VersionKey
    seed: int
    first_dealer: int = 0


@dataclass(frozen=True)
class FaultInfo:
    """A fault the game master recorded for one seat."""

    seat: int
    kind: str
    hand: int | None = None
    detail: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class GameResult:
    """The outcome of one game of a set, as the worker hands it to storage.

    `record` is the JSONL record, uncompressed; it is stored compressed and given back
    byte for byte. `seed`, `first_dealer` and `ruleset` default to the set's and the
    tournament's.
    """

    game_index: int
    seats: Sequence[VersionKey]
    scores: tuple[int, int]
    winner: int | None
    reason: str
    hands: int
    record: bytes
    decisions: int = 0
    think_ms: Sequence[int] = (0, 0, 0, 0)
    forfeit_seat: int | None = None
    faults: Sequence[FaultInfo] = ()
    seed: int | None = None
    first_dealer: int | None = None
    ruleset: str | None = None
    finished: datetime | None = None


@dataclass(frozen=True)
class RatingRow:
    """One line of a rating table, as the rater computes it."""

    bot_version: VersionKey
    elo: float
    bt: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    games: int = 0
    score: float = 0.0
    forfeits: int = 0
    last_played: datetime | None = None


@dataclass(frozen=True)
class HistoryEntry:
    bot_version: VersionKey
    elo: float
    game_id: str | None = None


@dataclass(frozen=True)
class Progress:
    """How far a tournament has got, counted in game sets."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    queued: int = 0
    silent: int = 0  # of the running sets, those with no sign of life for SET_BEAT_FRESH

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done + self.failed == self.total

    @property
    def stalled(self) -> bool:
        """Sets wait to be played and none is: no worker is free, or none runs (a set whose
        worker died mid-set stays "running", silent, until a worker plays it again)."""
        return bool(self.queued or self.silent) and self.running == self.silent

    @property
    def silent_note(self) -> str | None:
        """What the silent sets mean, for `tournament status` and the dashboard."""
        if not self.silent:
            return None
        sets, theirs, them = ("set", "its", "it") if self.silent == 1 else ("sets", "their", "them")
        return (
            f"{self.silent} running {sets} with no sign of life for over "
            f"{SET_BEAT_FRESH.seconds} s: {theirs} worker may have died; a running worker "
            f"plays {them} again within a minute (is `arena worker` running?)"
        )


# --- ids ---------------------------------------------------------------------------------


def new_tournament_id(now: datetime | None = None) -> str:
    """A fresh id like "t-20261129-3f9a"."""
    return f"t-{(now or utcnow()):%Y%m%d}-{secrets.token_hex(2)}"


def game_set_id(tournament_id: str, index: int) -> str:
    return f"{tournament_id}-set-{index:05d}"


def tournament_of_set(set_id: str) -> str:
    """The tournament id in a set id (game_set_id's inverse)."""
    return set_id.rsplit("-set-", 1)[0]


def game_id(set_id: str, game_index: int) -> str:
    return f"{set_id}-g{game_index}"


def parse_ref(ref: str) -> tuple[str, str]:
    """Split "name@version"; the version may not be empty."""
    name, sep, version = ref.rpartition("@")
    if not sep or not name or not version:
        # near: a slip in how it is written, not a row looked for in vain, so the CLI does not
        # add the database it looked in ("write it as name@version in sqlite:///...").
        raise NotFound(f"{ref!r} is not a bot version: write it as name@version", near=True)
    return name, version
