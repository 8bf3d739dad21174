"""Games: listings, and one game's page (header, hands, timings, faults) from row and record."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, false, func, or_, select
from sqlalchemy.orm import Session

from arena.storage import Fault, Game, GameSet, repo
from dashboard import records
from dashboard.queries.common import Page, iso, version_labels


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
    session: Session, page: int, size: int, bot: str | None = None, version: str | None = None
) -> dict[str, Any]:
    """Every game, newest first; or those of one bot (all its versions, or one)."""
    where = [] if bot is None else [_played_by(session, bot, version)]
    total = int(session.scalar(select(func.count()).select_from(Game).where(*where)) or 0)
    pager = Page(page, size, total)
    query = (
        select(Game)
        .where(*where)
        .order_by(Game.finished.desc(), Game.id)
        .limit(size)
        .offset(pager.offset)
    )
    return {
        "games": game_rows(session, query),
        "page": pager.to_dict(),
        "bot": bot,
        "version": version,
    }


def _played_by(session: Session, bot: str, version: str | None) -> Any:
    """Games with a seat of the bot's (any version's, or the one named); NotFound as the CLI's."""
    if version is None:
        ids = [v.id for v in repo.get_bot(session, bot).versions]
    else:
        ids = [repo.get_version(session, f"{bot}@{version}").id]
    return or_(false(), *(repo.seat_filter(vid) for vid in ids))


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
