"""Rating tables from stored games: Elo game by game, Bradley–Terry with confidence intervals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.ratings import bradley_terry, elo_ratings
from arena.storage import repo
from arena.storage.models import BotVersion, EndReason, Game
from arena.storage.values import HistoryEntry, RatingRow


@dataclass(frozen=True)
class RatedGame:
    """One game as the rater sees it: team 0's bot against team 1's, from team 0's side."""

    game_id: str
    a: int
    b: int
    score_a: float
    forfeit_version: int | None
    finished: datetime


def rated_games(session: Session, ruleset: str) -> list[RatedGame]:
    """The ruleset's games in the order they finished; self-play and aborted games are left out."""
    query = (
        select(
            Game.id,
            Game.seat0_id,
            Game.seat1_id,
            Game.seat2_id,
            Game.seat3_id,
            Game.winner,
            Game.reason,
            Game.forfeit_seat,
            Game.finished,
        )
        .where(Game.ruleset == ruleset, Game.reason != EndReason.ABORTED.value)
        .order_by(Game.finished, Game.id)
    )
    out: list[RatedGame] = []
    for gid, s0, s1, s2, s3, winner, _reason, forfeit_seat, finished in session.execute(query):
        seats = (s0, s1, s2, s3)
        if s0 == s1:
            continue
        score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
        forfeit = seats[forfeit_seat] if forfeit_seat is not None else None
        out.append(RatedGame(gid, s0, s1, score, forfeit, finished))
    return out


def update_ratings(session: Session, ruleset: str, new_games: Collection[str] = ()) -> int:
    """Recompute the ruleset's rating table from all its games; append history for `new_games`.

    Elo runs over every game in finishing order, so the table never depends on which worker
    stored which set first; callers serialize updates per ruleset (a Redis lock in workers).
    Returns the number of rated bot versions.
    """
    games = rated_games(session, ruleset)
    keys = {g.a for g in games} | {g.b for g in games}
    refs = _refs(session, keys)
    results = [(refs[g.a], refs[g.b], g.score_a) for g in games]
    elo = elo_ratings(results)
    fit = bradley_terry(results) if results else None

    played: dict[int, int] = defaultdict(int)
    points: dict[int, float] = defaultdict(float)
    forfeits: dict[int, int] = defaultdict(int)
    last: dict[int, datetime] = {}
    for g in games:
        for version, score in ((g.a, g.score_a), (g.b, 1.0 - g.score_a)):
            played[version] += 1
            points[version] += score
            last[version] = max(last.get(version, g.finished), g.finished)
        if g.forfeit_version is not None:
            forfeits[g.forfeit_version] += 1
    rows = []
    for version in sorted(keys):
        ref = refs[version]
        bt = fit.ratings.get(ref) if fit is not None else None
        rows.append(
            RatingRow(
                bot_version=version,
                elo=elo.rating(ref),
                bt=bt.rating if bt else None,
                ci_low=bt.lower if bt else None,
                ci_high=bt.upper if bt else None,
                games=played[version],
                score=points[version] / played[version] if played[version] else 0.0,
                forfeits=forfeits[version],
                last_played=last.get(version),
            )
        )
    repo.replace_ratings(session, ruleset, rows)

    if new_games:
        wanted = set(new_games)
        by_ref = {ref: version for version, ref in refs.items()}
        entries = []
        for index, g in enumerate(games):
            if g.game_id not in wanted:
                continue
            for ref in (refs[g.a], refs[g.b]):
                point = next(p for p in elo.history[ref] if p.game == index)
                entries.append(HistoryEntry(by_ref[ref], point.rating, g.game_id))
        repo.append_history(session, ruleset, entries)
    return len(rows)


def _refs(session: Session, version_ids: Collection[int]) -> dict[int, str]:
    if not version_ids:
        return {}
    versions = session.scalars(select(BotVersion).where(BotVersion.id.in_(version_ids)))
    return {v.id: v.ref for v in versions}
