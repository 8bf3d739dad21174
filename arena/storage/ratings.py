"""Rating tables and Elo history, as written by the rater and read by the dashboard."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from arena.storage.bots import resolve_version_id
from arena.storage.models import Rating, RatingHistory
from arena.storage.values import HistoryEntry, RatingRow, VersionKey


def replace_ratings(session: Session, ruleset: str, rows: Iterable[RatingRow]) -> int:
    """Replace the whole rating table of `ruleset` with `rows` in one transaction."""
    new = [
        Rating(
            bot_version_id=resolve_version_id(session, row.bot_version),
            ruleset=ruleset,
            elo=row.elo,
            bt=row.bt,
            ci_low=row.ci_low,
            ci_high=row.ci_high,
            games=row.games,
            score=row.score,
            forfeits=row.forfeits,
            last_played=row.last_played,
        )
        for row in rows
    ]
    session.execute(delete(Rating).where(Rating.ruleset == ruleset))
    session.add_all(new)
    session.commit()
    return len(new)


def get_ratings(session: Session, ruleset: str) -> list[Rating]:
    """The rating table of `ruleset`, best Elo first."""
    query = select(Rating).where(Rating.ruleset == ruleset).order_by(Rating.elo.desc())
    return list(session.scalars(query))


def append_history(session: Session, ruleset: str, entries: Iterable[HistoryEntry]) -> int:
    """Append Elo points in order; the rows' ids keep that order."""
    rows = [
        RatingHistory(
            bot_version_id=resolve_version_id(session, entry.bot_version),
            ruleset=ruleset,
            game_id=entry.game_id,
            elo=entry.elo,
        )
        for entry in entries
    ]
    session.add_all(rows)
    session.commit()
    return len(rows)


def clear_history(session: Session, ruleset: str) -> None:
    """Drop a ruleset's history, for a rater that recomputes it from the start."""
    session.execute(delete(RatingHistory).where(RatingHistory.ruleset == ruleset))
    session.commit()


def rating_history(session: Session, bot_version: VersionKey, ruleset: str) -> list[RatingHistory]:
    query = (
        select(RatingHistory)
        .where(
            RatingHistory.bot_version_id == resolve_version_id(session, bot_version),
            RatingHistory.ruleset == ruleset,
        )
        .order_by(RatingHistory.id)
    )
    return list(session.scalars(query))
