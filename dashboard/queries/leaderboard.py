"""The leaderboard: the stored rating table of a ruleset, or one computed from its games."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.ratings import RatingError, bradley_terry, elo_ratings, rank_key
from arena.storage import Bot, BotVersion, Game, Rating, RatingHistory, repo
from dashboard.queries.common import (
    DEFAULT_RULESET,
    Cache,
    check_ruleset,
    finite,
    iso,
    rulesets,
    version_labels,
)

SPARKLINE_POINTS = 100


def leaderboard(session: Session, ruleset: str | None, cache: Cache) -> dict[str, Any]:
    """Ranked rows for `ruleset` (default: the most rated one), best Bradley–Terry rating first."""
    available = rulesets(session)
    if ruleset:
        check_ruleset(session, ruleset, available)
    chosen = ruleset or (available[0] if available else DEFAULT_RULESET)
    if chosen not in available:  # a named ruleset with no games yet: the menu shows it too
        available = [*available, chosen]
    rows = _stored(session, chosen, cache)
    source = "ratings"
    if not rows:
        source = "computed"
        fingerprint = session.execute(
            select(func.count(), func.max(Game.finished)).where(Game.ruleset == chosen)
        ).one()
        disabled = session.scalar(select(func.count()).select_from(Bot).where(Bot.disabled))
        key = ("leaderboard", chosen, int(fingerprint[0]), iso(fingerprint[1]), disabled)

        def compute() -> list[dict[str, Any]]:
            return _computed(session, chosen)

        rows = cache(key, compute)
    return {"ruleset": chosen, "rulesets": available, "source": source, "rows": rows}


def _rank(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # `arena ratings` ranks the same way (rank_key), ties included.
    rows.sort(key=lambda r: rank_key(r["bt"], r["elo"], r["bot"], r["version"]))
    for i, row in enumerate(rows, start=1):
        row["rank"] = i
    return rows


def _sparklines(
    session: Session, games: list[tuple[int, int]], ruleset: str, cache: Cache
) -> dict[int, list[float]]:
    """The last Elo points of each version in `games`, (version id, games rated) of each row of
    the rating table. A rating pass that adds history changes those counts in the same commit,
    so they are the key. (The history's last id is not: on PostgreSQL passes of two rulesets
    may commit their ids out of order.)"""

    def compute() -> dict[int, list[float]]:
        return {vid: _history_tail(session, vid, ruleset) for vid, _ in games}

    found: dict[int, list[float]] = cache(("sparklines", ruleset, tuple(games)), compute)
    return found


def _stored(session: Session, ruleset: str, cache: Cache) -> list[dict[str, Any]]:
    query = (
        select(Rating, Bot.name, BotVersion.version, Bot.disabled)
        .join(BotVersion, BotVersion.id == Rating.bot_version_id)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .where(Rating.ruleset == ruleset)
    )
    found = session.execute(query).all()
    lines = _sparklines(
        session, sorted((r[0].bot_version_id, r[0].games) for r in found), ruleset, cache
    )
    rows = []
    for rating, name, version, disabled in found:
        rows.append(
            _row(
                rating.bot_version_id,
                name,
                version,
                disabled,
                elo=rating.elo,
                bt=rating.bt,
                ci=(rating.ci_low, rating.ci_high),
                games=rating.games,
                score=rating.score,
                forfeits=rating.forfeits,
                last_played=rating.last_played,
                history=lines[rating.bot_version_id],
            )
        )
    return _rank(rows)


def _row(
    version_id: int,
    name: str,
    version: str,
    disabled: bool,
    *,
    elo: float,
    bt: float | None,
    ci: tuple[float | None, float | None],
    games: int,
    score: float,
    forfeits: int,
    last_played: datetime | None,
    history: list[float],
) -> dict[str, Any]:
    return {
        "rank": 0,
        "version_id": version_id,
        "bot": name,
        "version": version,
        "disabled": disabled,
        "bt": finite(bt),
        "ci_low": finite(ci[0]),
        "ci_high": finite(ci[1]),
        "elo": elo,
        "games": games,
        # The rater stores the score as a fraction of the games (runner/ratings_update.py).
        "points": round(score * games, 1),
        "score_pct": score if games else None,
        "forfeits": forfeits,
        "last_played": iso(last_played),
        "history": history,
    }


def _history_tail(session: Session, version_id: int, ruleset: str) -> list[float]:
    """The last Elo points of one version (newest last); the index makes this a short seek."""
    query = (
        select(RatingHistory.elo)
        .where(RatingHistory.bot_version_id == version_id, RatingHistory.ruleset == ruleset)
        .order_by(RatingHistory.id.desc())
        .limit(SPARKLINE_POINTS)
    )
    return [round(e, 1) for e in reversed(session.scalars(query).all())]


def game_results(session: Session, ruleset: str) -> list[tuple[int, int, float, Game]]:
    """(team 0's version, team 1's version, team 0's score, game) per rated game, in order."""
    query = (
        select(Game)
        .where(Game.ruleset == ruleset, repo.has_result())
        .order_by(Game.finished, Game.id)
    )
    out = []
    for game in session.scalars(query):
        team0, team1 = {game.seat0_id, game.seat2_id}, {game.seat1_id, game.seat3_id}
        if len(team0) != 1 or len(team1) != 1 or team0 == team1:
            continue
        score = 0.5 if game.winner is None else (1.0 if game.winner == 0 else 0.0)
        out.append((game.seat0_id, game.seat1_id, score, game))
    return out


def _computed(session: Session, ruleset: str) -> list[dict[str, Any]]:
    """The fallback when no rater has written a table yet: Elo and Bradley–Terry from games."""
    results = game_results(session, ruleset)
    if not results:
        return []
    triples = [(str(a), str(b), s) for a, b, s, _ in results]
    table = elo_ratings(triples)
    try:
        fit = bradley_terry(triples)
    except RatingError:
        fit = None
    games: dict[int, int] = {}
    score: dict[int, float] = {}
    forfeits: dict[int, int] = {}
    last: dict[int, datetime] = {}
    for a, b, s, game in results:
        for vid, points in ((a, s), (b, 1.0 - s)):
            games[vid] = games.get(vid, 0) + 1
            score[vid] = score.get(vid, 0.0) + points
            last[vid] = max(last.get(vid, game.finished), game.finished)
        if game.forfeit_seat is not None:
            vid = game.seat_ids[game.forfeit_seat]
            forfeits[vid] = forfeits.get(vid, 0) + 1
    labels = version_labels(session, set(games))
    disabled = {
        vid: flag
        for vid, flag in session.execute(
            select(BotVersion.id, Bot.disabled)
            .join(Bot, Bot.id == BotVersion.bot_id)
            .where(BotVersion.id.in_(games))
        )
    }
    rows = []
    for vid in games:
        label = labels[vid]
        fitted = fit.ratings.get(str(vid)) if fit else None
        rows.append(
            _row(
                vid,
                label.bot,
                label.version,
                bool(disabled.get(vid)),
                elo=table.rating(str(vid)),
                bt=fitted.rating if fitted else None,
                ci=(fitted.lower, fitted.upper) if fitted else (None, None),
                games=games[vid],
                score=score[vid] / games[vid],
                forfeits=forfeits.get(vid, 0),
                last_played=last.get(vid),
                history=[
                    round(p.rating, 1) for p in table.history.get(str(vid), [])[-SPARKLINE_POINTS:]
                ],
            )
        )
    return _rank(rows)
