"""Rating tables and Elo history, as written by the rater and read by the dashboard."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import delete, func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.storage.bots import resolve_version_id
from arena.storage.errors import RatedMeanwhile
from arena.storage.models import Game, Rating, RatingHistory
from arena.storage.tournaments import rowcount
from arena.storage.values import HistoryEntry, RatingRow, VersionKey


def replace_ratings(session: Session, ruleset: str, rows: Iterable[RatingRow]) -> int:
    """Replace the whole rating table of `ruleset` with `rows` in one transaction."""
    count = _put_table(session, ruleset, rows)
    session.commit()
    return count


def _put_table(session: Session, ruleset: str, rows: Iterable[RatingRow]) -> int:
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
    return len(new)


def get_ratings(session: Session, ruleset: str) -> list[Rating]:
    """The rating table of `ruleset`, best Elo first."""
    query = select(Rating).where(Rating.ruleset == ruleset).order_by(Rating.elo.desc())
    return list(session.scalars(query))


def rated_rulesets(session: Session) -> list[str]:
    """The rulesets that have a rating table, in name order."""
    return list(session.scalars(select(Rating.ruleset).distinct().order_by(Rating.ruleset)))


def unrated_rulesets(session: Session) -> list[str]:
    """The rulesets with a stored game no rating pass has placed yet, in name order."""
    query = select(Game.ruleset).where(Game.rated_seq.is_(None)).distinct()
    return sorted(session.scalars(query))


def append_history(session: Session, ruleset: str, entries: Iterable[HistoryEntry]) -> int:
    """Append Elo points in order; the rows' ids keep that order."""
    count = _add_history(session, ruleset, entries)
    session.commit()
    return count


def _add_history(session: Session, ruleset: str, entries: Iterable[HistoryEntry]) -> int:
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
    return len(rows)


def next_rated_seq(session: Session, ruleset: str) -> int:
    """The place the next game rated in `ruleset` takes in its rater's order (0: none yet)."""
    last = session.scalar(select(func.max(Game.rated_seq)).where(Game.ruleset == ruleset))
    return 0 if last is None else last + 1


def place_in_rating_order(
    session: Session, ruleset: str, game_ids: Sequence[str], start: int
) -> None:
    """Give these unrated games the places `start`, `start + 1`, … in the ruleset's rating
    order, without committing. `start` is what next_rated_seq said when the pass began.

    Raises RatedMeanwhile, with nothing changed, if another rater placed any game since then
    (it took those places: a unique index) or placed one of these: the caller starts its
    pass again, from the table that rater stored.
    """
    if not game_ids:
        return
    try:
        placed = session.execute(
            text("UPDATE games SET rated_seq = :seq WHERE id = :gid AND rated_seq IS NULL"),
            [{"gid": gid, "seq": start + i} for i, gid in enumerate(game_ids)],
        )
    except IntegrityError:  # the same places, taken by a rater that committed first
        placed = None
    # Both backends sum an executemany's row counts; fewer means some were placed already.
    if placed is None or rowcount(placed) != len(game_ids):
        session.rollback()
        raise RatedMeanwhile(f"another rater updated {ruleset!r} at the same time")


def store_rating_pass(
    session: Session,
    ruleset: str,
    rows: Iterable[RatingRow],
    history: Iterable[HistoryEntry],
    next_seq: int,
) -> None:
    """Commit one rater's pass: the games it placed, the new table and the new Elo points,
    all or nothing. `next_seq` is next_rated_seq once the pass's games are placed.

    Raises RatedMeanwhile, with nothing stored, if another rater placed games meanwhile: a pass
    that placed none of its own has no other check that what it read is current.
    """
    # Checked after writing: on SQLite no other rater commits from the first write on; on
    # PostgreSQL one that commits later stores its table after this one, which is as good.
    _put_table(session, ruleset, rows)
    _add_history(session, ruleset, history)
    if next_rated_seq(session, ruleset) != next_seq:
        session.rollback()
        raise RatedMeanwhile(f"another rater updated {ruleset!r} at the same time")
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
