"""Games: listings, and one game's page (header, hands, timings, faults) from row and record."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, false, func, or_, select
from sqlalchemy.orm import Session

from arena.storage import Bot, Fault, Game, GameSet, repo
from dashboard import records
from dashboard.queries.common import Page, iso, version_labels

ANY_FAULT = "any"


def game_rows(session: Session, query: Select[Game]) -> list[dict[str, Any]]:
    """Summaries of the games the query selects, with bot names and tournament ids."""
    games = list(session.scalars(query))
    labels = version_labels(session, {v for g in games for v in g.seat_ids})
    set_ids = {g.game_set_id for g in games}
    tournaments: dict[str, str] = {}
    if set_ids:
        query_sets = select(GameSet.id, GameSet.tournament_id).where(GameSet.id.in_(set_ids))
        tournaments = {sid: tid for sid, tid in session.execute(query_sets)}
    return [
        {
            "id": g.id,
            "tournament_id": tournaments.get(g.game_set_id),
            "game_set_id": g.game_set_id,
            "ruleset": g.ruleset,
            "seats": [labels[v].to_dict() for v in g.seat_ids],
            "scores": list(g.scores),
            "winner": g.winner,
            "reason": g.reason,
            "forfeit_seat": g.forfeit_seat,
            "hands": g.hands,
            "finished": iso(g.finished),
        }
        for g in games
    ]


def game_list(
    session: Session,
    page: int,
    size: int,
    bot: str | None = None,
    version: str | None = None,
    fault: str | None = None,
) -> dict[str, Any]:
    """Every game, newest first; or those of one bot (all its versions, or one); with `fault`
    (a fault kind, or "any"), only those in which that bot (or, with none named, a bot)
    faulted so."""
    versions = None if bot is None else _version_ids(session, bot, version)
    where = []
    if fault is not None:  # a bot's own faults are in games it played
        where.append(_faulted(fault, versions))
    elif versions is not None:
        where.append(or_(false(), *(repo.seat_filter(v) for v in versions)))
    total = int(session.scalar(select(func.count()).select_from(Game).where(*where)) or 0)
    pager = Page(page, size, total)
    # The page's ids first, then their rows: skipping rows to a deep page reads the index
    # only, not every skipped game's record.
    page_ids = (
        select(Game.id).where(*where).order_by(*repo.NEWEST_FIRST).limit(size).offset(pager.offset)
    )
    query = select(Game).where(Game.id.in_(page_ids)).order_by(*repo.NEWEST_FIRST)
    return {
        "games": game_rows(session, query),
        "page": pager.to_dict(),
        "bot": bot,
        "version": version,
        "fault": fault,
    }


def bot_names(session: Session) -> list[str]:
    """Every bot's name, in order (the game list's filter menu): names only, not each bot's
    versions as repo.list_bots loads them."""
    return list(session.scalars(select(Bot.name).order_by(Bot.name)))


def _version_ids(session: Session, bot: str, version: str | None) -> list[int]:
    """The bot's versions (every one, or the one named); NotFound as the CLI's."""
    if version is None:
        return [v.id for v in repo.get_bot(session, bot).versions]
    return [repo.get_version(session, f"{bot}@{version}").id]


def _faulted(kind: str, versions: list[int] | None) -> Any:
    """Games with a fault of `kind` ("any": of any kind), by one of `versions` (None: any)."""
    faults = select(Fault.game_id)
    if kind != ANY_FAULT:
        faults = faults.where(Fault.kind == kind)
    if versions is not None:
        faults = faults.where(Fault.bot_version_id.in_(versions))
    # IN, not a correlated EXISTS: SQLite ran that once per game (0.9 s on 100,000 games).
    return Game.id.in_(faults)


def game_page(session: Session, game_id: str) -> dict[str, Any]:
    game = repo.get_game(session, game_id)
    summary = game_rows(session, select(Game).where(Game.id == game_id))[0]
    record = records.parse(repo.get_game_record(session, game_id))
    faults = session.scalars(select(Fault).where(Fault.game_id == game_id).order_by(Fault.id))
    return {
        **summary,
        "seed": game.seed,
        "first_dealer": game.first_dealer,
        "game_index": game.game_index,
        # The other game of its duplicate set: the same deals, partnerships swapped.
        "mirror_id": session.scalar(
            select(Game.id).where(Game.game_set_id == game.game_set_id, Game.id != game.id)
        ),
        "forfeit_detail": record.forfeit,
        "decisions": game.decisions,
        "think_ms": list(game.think_ms),
        "record": {
            "format": record.header.get("record"),
            "ruleset": record.ruleset_text,
            "agents": record.agents,
            "lines": record.line_count,
            "bytes": record.size,
            "problem": record.problem,
        },
        "hands_table": record.hands,
        "timing": record.timing(),
        "decision_log": record.decisions,
        "decision_faults": record.faults,
        "faults": [
            {
                "seat": f.seat,
                "kind": f.kind,
                "hand": f.hand,
                "detail": f.detail,
                "stderr": f.stderr,
            }
            for f in faults
        ],
        "end": record.end,
    }
