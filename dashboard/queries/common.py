"""Helpers shared by the queries: version labels, times, pages, the cache they are handed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.rulesets import RULESETS
from arena.storage import Bot, BotVersion, NotFound, Rating, Tournament

DEFAULT_RULESET = "standard"

# A cache's get_or_compute(key, compute), as views hand it to the queries (dashboard/cache.py).
Cache = Callable[[Any, Callable[[], Any]], Any]


@dataclass(frozen=True)
class VersionLabel:
    id: int
    bot: str
    version: str

    @property
    def ref(self) -> str:
        return f"{self.bot}@{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "bot": self.bot, "version": self.version}


def version_labels(session: Session, ids: set[int] | None = None) -> dict[int, VersionLabel]:
    """Bot name and version for the given version ids (all versions if None)."""
    query = select(BotVersion.id, Bot.name, BotVersion.version).join(
        Bot, Bot.id == BotVersion.bot_id
    )
    if ids is not None:
        if not ids:
            return {}
        query = query.where(BotVersion.id.in_(ids))
    return {vid: VersionLabel(vid, name, ver) for vid, name, ver in session.execute(query)}


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def finite(value: float | None) -> float | None:
    """JSON has no infinities: they become None."""
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return value


@dataclass(frozen=True)
class Page:
    """One page of a long listing."""

    number: int
    size: int
    total: int

    @property
    def offset(self) -> int:
        # Every page past the end is empty: read them all from just past the end, so that a
        # huge page number (shown as asked) never overflows the databases' 64-bit OFFSET.
        return (min(self.number, self.pages + 1) - 1) * self.size

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.size))

    def to_dict(self) -> dict[str, int]:
        return {"page": self.number, "pages": self.pages, "size": self.size, "total": self.total}


def rulesets(session: Session) -> list[str]:
    """Rulesets that have ratings or tournaments: standard first, then the most used first."""
    rated = select(Rating.ruleset, func.count()).group_by(Rating.ruleset)
    counts = {name: int(n) for name, n in session.execute(rated)}
    for (name,) in session.execute(select(Tournament.ruleset).distinct()):
        counts.setdefault(name, 0)
    return sorted(counts, key=lambda r: (r != DEFAULT_RULESET, -counts[r], r))


def check_ruleset(session: Session, ruleset: str, played: list[str] | None = None) -> None:
    """NotFound for a ruleset that is neither named in RULES.md §6 nor played here (`played`:
    rulesets(session), if the caller has it already)."""
    if ruleset in RULESETS:
        return
    played = rulesets(session) if played is None else played
    if ruleset not in played:
        known = ", ".join([*RULESETS, *(r for r in played if r not in RULESETS)])
        raise NotFound(f"no ruleset {ruleset!r}; the rulesets are {known}")
