"""The bot pages: versions and manifest, ratings, rating history, head-to-head, games, faults."""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from arena.ratings.pairs import likelihood_of_superiority
from arena.storage import BotVersion, Game, NotFound, Rating, RatingHistory, repo
from dashboard.queries.common import Cache, check_ruleset, iso, version_labels
from dashboard.queries.games import game_rows

CHART_POINTS = 400
RECENT_GAMES = 20
LATEST_FAULTS = 5


def bot_list(session: Session) -> dict[str, Any]:
    bots = []
    for bot in repo.list_bots(session):
        latest = bot.latest
        bots.append(
            {
                "bot": bot.name,
                "author": bot.author,
                "disabled": bot.disabled,
                "versions": [v.version for v in bot.versions],
                "latest": latest.version if latest else None,
                "language": latest.language if latest else None,
                "created": iso(bot.created),
            }
        )
    return {"bots": bots}


def _games_fingerprint(session: Session, version_id: int) -> tuple[int, ...]:
    """How many games the version has at each seat: four index-only counts.

    Games are only ever added, so these change exactly when the version's results do and
    identify its head-to-head table and recent games for the cache.
    """
    seats = (Game.seat0_id, Game.seat1_id, Game.seat2_id, Game.seat3_id)
    return tuple(
        int(session.scalar(select(func.count()).select_from(Game).where(seat == version_id)) or 0)
        for seat in seats
    )


def bot_page(
    session: Session,
    name: str,
    version: str | None,
    ruleset: str | None,
    cache: Cache,
) -> dict[str, Any]:
    bot = repo.get_bot(session, name)
    if not bot.versions:
        raise NotFound(f"bot {name!r} has no versions yet")
    if version is None:
        row = bot.versions[-1]
    else:
        found = [v for v in bot.versions if v.version == version]
        if not found:
            known = ", ".join(v.version for v in bot.versions)
            raise NotFound(f"bot {name!r} has no version {version!r} (versions: {known})")
        row = found[0]
    ratings = _ratings(session, row.id)
    if ruleset:
        check_ruleset(session, ruleset)
    chosen = ruleset or (ratings[0]["ruleset"] if ratings else None)
    vid = row.id

    def games_part() -> dict[str, Any]:
        recent = (
            select(Game)
            .where(repo.seat_filter(vid), *_in_ruleset(chosen))
            .order_by(*repo.NEWEST_FIRST)
            .limit(RECENT_GAMES)
        )
        return {
            "head_to_head": head_to_head(session, vid, chosen),
            "recent_games": game_rows(session, recent),
        }

    # Head to head and recent games are those of the ruleset shown, like ratings and history:
    # scores of different rules do not add up.
    key = ("bot-games", vid, chosen, _games_fingerprint(session, vid))
    games = cache(key, games_part)
    return {
        "bot": bot.name,
        "author": bot.author,
        "disabled": bot.disabled,
        "created": iso(bot.created),
        "versions": [
            {"version": v.version, "language": v.language, "created": iso(v.created)}
            for v in bot.versions
        ],
        "version": _version_dict(row),
        "ratings": ratings,
        "ruleset": chosen,
        "history": _cached_history(session, vid, chosen, cache) if chosen else [],
        **games,
        "faults": _faults(session, row.id),
    }


def _version_dict(row: BotVersion) -> dict[str, Any]:
    # Not its directory: where bots live on the workers' hosts is no business of a visitor's.
    return {
        "id": row.id,
        "version": row.version,
        "language": row.language,
        "command": row.command,
        "image": row.image,
        "created": iso(row.created),
        "manifest": row.manifest,
    }


def _ratings(session: Session, version_id: int) -> list[dict[str, Any]]:
    query = select(Rating).where(Rating.bot_version_id == version_id).order_by(Rating.games.desc())
    return [
        {
            "ruleset": r.ruleset,
            "elo": r.elo,
            "bt": r.bt,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "games": r.games,
            "points": round(r.score * r.games, 1),
            "score_pct": r.score if r.games else None,
            "forfeits": r.forfeits,
            "last_played": iso(r.last_played),
        }
        for r in session.scalars(query)
    ]


def _cached_history(
    session: Session, version_id: int, ruleset: str, cache: Cache
) -> list[dict[str, Any]]:
    """History is only appended to, so its last id for the version identifies it."""
    last = session.scalar(
        select(func.max(RatingHistory.id)).where(
            RatingHistory.bot_version_id == version_id, RatingHistory.ruleset == ruleset
        )
    )
    key = ("bot-history", version_id, ruleset, last)
    found: list[dict[str, Any]] = cache(key, lambda: _history(session, version_id, ruleset))
    return found


def _history(session: Session, version_id: int, ruleset: str) -> list[dict[str, Any]]:
    """The Elo history, thinned evenly to at most CHART_POINTS points (the last one kept).

    The ids come from the (version, ruleset, id) index alone; only the picked rows are read.
    """
    ids = session.scalars(
        select(RatingHistory.id)
        .where(RatingHistory.bot_version_id == version_id, RatingHistory.ruleset == ruleset)
        .order_by(RatingHistory.id)
    ).all()
    n = len(ids)
    if n > CHART_POINTS:
        step = n / CHART_POINTS
        picked = sorted({int(i * step) for i in range(CHART_POINTS)} | {n - 1})
    else:
        picked = list(range(n))
    wanted = [ids[i] for i in picked]
    rows = {
        rid: (elo, game)
        for rid, elo, game in session.execute(
            select(RatingHistory.id, RatingHistory.elo, RatingHistory.game_id).where(
                RatingHistory.id.in_(wanted)
            )
        )
    }
    return [{"n": i + 1, "elo": round(rows[ids[i]][0], 1), "game": rows[ids[i]][1]} for i in picked]


def _in_ruleset(ruleset: str | None) -> list[Any]:
    """The filter on games of `ruleset` (none for None: a version with no games yet)."""
    return [] if ruleset is None else [Game.ruleset == ruleset]


def head_to_head(
    session: Session, version_id: int, ruleset: str | None = None
) -> list[dict[str, Any]]:
    """Per opponent, in `ruleset`: games, wins, draws, losses, score and likelihood of
    superiority."""
    on_team0 = or_(Game.seat0_id == version_id, Game.seat2_id == version_id)
    opponent = case((on_team0, Game.seat1_id), else_=Game.seat0_id)
    won = case(
        (Game.winner.is_(None), 0),
        (Game.winner == case((on_team0, 0), else_=1), 1),
        else_=0,
    )
    query = (
        select(
            opponent.label("opponent"),
            func.count(),
            func.sum(won),
            func.sum(case((Game.winner.is_(None), 1), else_=0)),
            func.count(func.distinct(Game.game_set_id)),
        )
        .where(repo.seat_filter(version_id), repo.has_result(), *_in_ruleset(ruleset))
        .group_by(opponent)
    )
    rows = session.execute(query).all()
    labels = version_labels(session, {int(r[0]) for r in rows})
    out: list[dict[str, Any]] = []
    for opp, games, wins, draws, sets in rows:
        if opp == version_id:
            continue
        wins, draws = int(wins or 0), int(draws or 0)
        losses = int(games) - wins - draws
        label = labels[opp]
        out.append(
            {
                "opponent": label.to_dict(),
                "games": int(games),
                "sets": int(sets),
                "wins": wins,
                "draws": draws,
                "losses": losses,
                "score": wins + 0.5 * draws,
                "score_pct": (wins + 0.5 * draws) / games if games else None,
                "los": likelihood_of_superiority(wins, losses),
            }
        )
    out.sort(key=lambda r: (-r["games"], r["opponent"]["bot"]))
    return out


def _faults(session: Session, version_id: int) -> dict[str, Any]:
    latest = repo.list_faults_for_version(session, version_id, limit=LATEST_FAULTS)
    return {
        "by_kind": [{"kind": k, "count": n} for k, n in repo.fault_kinds(session, version_id)],
        "latest": [
            {
                "game_id": f.game_id,
                "seat": f.seat,
                "kind": f.kind,
                "hand": f.hand,
                "detail": f.detail,
                "stderr": f.stderr,
            }
            for f in latest
        ],
    }
