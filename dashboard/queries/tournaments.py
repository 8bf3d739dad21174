"""Tournaments: the list with progress, and one tournament's crosstable, standings and games."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from arena.pace import elapsed_and_eta, pace_words
from arena.ratings import RatingError, Sprt, bradley_terry
from arena.ratings.pairs import likelihood_of_superiority
from arena.storage import Game, GameSet, Progress, Tournament, repo
from dashboard.queries.common import Cache, Page, finite, iso, version_labels
from dashboard.queries.games import game_rows


def _progress_dict(progress: Progress) -> dict[str, Any]:
    total = progress.total
    return {
        "total": total,
        "done": progress.done,
        "failed": progress.failed,
        "running": progress.running,
        "queued": progress.queued,
        "silent": progress.silent,
        "fraction": (progress.done + progress.failed) / total if total else 0.0,
        "finished": progress.finished,
    }


def _tournament_dict(t: Tournament, progress: Progress) -> dict[str, Any]:
    return {
        "id": t.id,
        "format": t.format,
        "ruleset": t.ruleset,
        "state": t.state,
        # The seed derives every set's deals: shown once every set is played, or a bot that
        # reads the dashboard would know the cards of the games still to come.
        "seed": t.seed if progress.total and progress.done == progress.total else None,
        "sets_per_pair": t.sets_per_pair,
        # Fewer than sets_per_pair for a match its SPRT stopped early (the rest never planned).
        "planned_sets": t.planned_sets,
        "nightly": t.nightly,
        "limits": t.limits,
        "created": iso(t.created),
        "started": iso(t.started),
        "finished": iso(t.finished),
        "progress": _progress_dict(progress),
        **_pace(t, progress),
    }


def _pace(t: Tournament, progress: Progress) -> dict[str, Any]:
    """Seconds run and left (as `tournament status` estimates them), and those in words."""
    elapsed, eta = elapsed_and_eta(t.started, t.finished, progress, datetime.now(UTC))
    return {"elapsed_s": elapsed, "eta_s": eta, "pace": " · ".join(pace_words(elapsed, eta))}


def tournament_list(session: Session, page: int, size: int) -> dict[str, Any]:
    total = int(session.scalar(select(func.count()).select_from(Tournament)) or 0)
    pager = Page(page, size, total)
    query = (
        select(Tournament)
        .order_by(Tournament.created.desc(), Tournament.id)
        .limit(size)
        .offset(pager.offset)
    )
    tournaments = list(session.scalars(query))
    progress = repo.tournaments_progress(session, tournaments)
    bots = _bots_of(session, tournaments)
    return {
        "tournaments": [{**_tournament_dict(t, progress[t.id]), **bots[t.id]} for t in tournaments],
        "page": pager.to_dict(),
    }


def _bots_of(session: Session, tournaments: list[Tournament]) -> dict[str, dict[str, Any]]:
    """The bot versions ("name@version") each of several tournaments plays, in one query:
    the list tells one match (a gauntlet of two) from another by them. A gauntlet's champion
    is named apart: among the bots sorted by name it was lost."""
    ids = [t.id for t in tournaments]
    pairs: dict[str, set[int]] = {tid: set() for tid in ids}
    if ids:
        query = (
            select(GameSet.tournament_id, GameSet.bot_a_id, GameSet.bot_b_id)
            .where(GameSet.tournament_id.in_(ids))
            .distinct()
        )
        for tid, a, b in session.execute(query):
            pairs[tid] |= {a, b}
    labels = version_labels(session, set().union(*pairs.values()))
    return {
        t.id: {
            "champion": repo.champion(session, t),
            "bots": sorted(labels[v].ref for v in pairs[t.id]),
            "kind": repo.tournament_kind(t.format, len(pairs[t.id])),
        }
        for t in tournaments
    }


def tournament_status(session: Session, tournament_id: str) -> dict[str, Any]:
    """Just the state, the progress and why sets wait: what the live page polls."""
    t = repo.get_tournament(session, tournament_id)
    progress = repo.tournaments_progress(session, [t])[t.id]
    return {**_tournament_dict(t, progress), "waiting": _waiting(session, t, progress)}


# A tournament with sets to play and none being played, for no reason a set has given.
NO_FREE_WORKER = "no set is being played: every worker is busy elsewhere, or none is running"


def _waiting(session: Session, t: Tournament, progress: Progress) -> str | None:
    """Why the tournament's queued sets wait, if they do."""
    if progress.finished:
        return None
    if progress.silent_note is not None:
        return progress.silent_note
    reason = repo.waiting_reason(session, t.id)
    return NO_FREE_WORKER if reason is None and progress.stalled else reason


def tournament_page(
    session: Session, tournament_id: str, page: int, size: int, cache: Cache
) -> dict[str, Any]:
    t = repo.get_tournament(session, tournament_id)
    progress = repo.tournaments_progress(session, [t])[t.id]
    # Results are recorded exactly once per set, so the done/failed counts identify the table.
    key = ("tournament-table", t.id, progress.done, progress.failed)

    def compute() -> dict[str, Any]:
        return {**_table(session, t.id), "sprt": match_test(session, t)}

    table = cache(key, compute)
    games_total = int(table["game_count"])
    pager = Page(page, size, games_total)
    games_query = (
        select(Game)
        .join(GameSet, GameSet.id == Game.game_set_id)
        .where(GameSet.tournament_id == t.id)
        .order_by(GameSet.index, Game.game_index)
        .limit(size)
        .offset(pager.offset)
    )
    failed = session.execute(
        select(GameSet.id, GameSet.error)
        .where(GameSet.tournament_id == t.id, GameSet.state == "failed")
        .order_by(GameSet.index)
        .limit(20)
    ).all()
    return {
        **_tournament_dict(t, progress),
        **table,
        **_bots_of(session, [t])[t.id],
        "waiting": _waiting(session, t, progress),
        "failed_sets": [{"id": sid, "error": err} for sid, err in failed],
        "games": game_rows(session, games_query),
        "games_page": pager.to_dict(),
    }


def match_test(session: Session, t: Tournament) -> dict[str, Any] | None:
    """A match's SPRT as `arena match` ran it: its stored test fed the sets' results in the
    order of play (a set given up counts for nothing), up to the decision; None for others."""
    test = t.limits.get("sprt")
    if not test:
        return None
    sprt = Sprt(test["elo0"], test["elo1"], alpha=test["alpha"], beta=test["beta"])
    sets = session.execute(
        select(GameSet.score_a)
        .where(GameSet.tournament_id == t.id, GameSet.score_a.is_not(None))
        .order_by(GameSet.index)
    ).scalars()
    for score in sets:
        if sprt.decision is not None:  # sets that played on after it count in ratings only
            break
        sprt.add(float(score or 0.0))  # never None here: only done sets have a score
    a, b = session.execute(
        select(GameSet.bot_a_id, GameSet.bot_b_id)
        .where(GameSet.tournament_id == t.id)
        .order_by(GameSet.index)
        .limit(1)
    ).one()
    labels = version_labels(session, {a, b})
    return {
        **test,
        "sets": sprt.sets,
        "llr": sprt.llr,
        "lower_bound": sprt.lower_bound,
        "upper_bound": sprt.upper_bound,
        "decision": sprt.decision,
        "verdict": sprt.verdict(labels[a].ref, labels[b].ref),
    }


def _table(session: Session, tournament_id: str) -> dict[str, Any]:
    """Crosstable cells (bot A's games against bot B) and standings, from the finished games."""
    a_team0 = Game.seat0_id == GameSet.bot_a_id
    a_won = case(
        (Game.winner.is_(None), 0), (Game.winner == case((a_team0, 0), else_=1), 1), else_=0
    )
    query = (
        select(
            GameSet.bot_a_id,
            GameSet.bot_b_id,
            func.count(),
            func.sum(a_won),
            func.sum(case((Game.winner.is_(None), 1), else_=0)),
            func.count(func.distinct(GameSet.id)),
        )
        .join(Game, Game.game_set_id == GameSet.id)
        .where(GameSet.tournament_id == tournament_id, repo.has_result())
        .group_by(GameSet.bot_a_id, GameSet.bot_b_id)
    )
    pairs: dict[tuple[int, int], list[int]] = {}
    # Every game is listed, aborted ones stored by older arenas too: the table counts results.
    game_count = session.scalar(
        select(func.count())
        .select_from(Game)
        .join(GameSet, Game.game_set_id == GameSet.id)
        .where(GameSet.tournament_id == tournament_id)
    )
    for a, b, games, wins, draws, sets in session.execute(query):
        if a == b:
            continue
        wins, draws, games = int(wins or 0), int(draws or 0), int(games)
        for key, w, l_ in (
            ((a, b), wins, games - wins - draws),
            ((b, a), games - wins - draws, wins),
        ):
            cell = pairs.setdefault(key, [0, 0, 0, 0])
            cell[0] += w
            cell[1] += draws
            cell[2] += l_
            cell[3] += int(sets)
    planned = session.execute(
        select(GameSet.bot_a_id, GameSet.bot_b_id)
        .where(GameSet.tournament_id == tournament_id)
        .distinct()
    ).all()
    ids = {v for pair in planned for v in pair} | {v for pair in pairs for v in pair}
    labels = version_labels(session, ids)
    totals: dict[int, list[float]] = {v: [0, 0, 0, 0.0] for v in ids}  # games, wins, draws, score
    results: list[tuple[str, str, float]] = []
    for (a, b), (w, d, l_, _sets) in pairs.items():
        totals[a][0] += w + d + l_
        totals[a][1] += w
        totals[a][2] += d
        totals[a][3] += w + 0.5 * d
        if a < b:
            results += [(str(a), str(b), 1.0)] * w + [(str(a), str(b), 0.5)] * d
            results += [(str(a), str(b), 0.0)] * l_
    # Only the bots that have played are fitted: one with no game yet would get the prior's
    # rating and interval, as if it had drawn an average bot, and move the others' mean.
    try:
        fit = bradley_terry(results) if results else None
    except RatingError:
        fit = None
    faults = repo.fault_counts(session, tournament_id)
    standings = []
    for vid in ids:
        games, wins, draws, score = totals[vid]
        fitted = fit.ratings.get(str(vid)) if fit else None
        standings.append(
            {
                **labels[vid].to_dict(),
                "games": int(games),
                "wins": int(wins),
                "draws": int(draws),
                "losses": int(games - wins - draws),
                "score": score,
                "score_pct": score / games if games else None,
                "bt": finite(fitted.rating) if fitted else None,
                "ci_low": finite(fitted.lower) if fitted else None,
                "ci_high": finite(fitted.upper) if fitted else None,
                "faults": faults.get(vid, 0),
            }
        )
    standings.sort(key=lambda r: (-(r["score_pct"] or 0.0), -r["games"], r["bot"]))
    for rank, row in enumerate(standings, start=1):
        row["rank"] = rank
    order = [row["id"] for row in standings]
    crosstable = [
        {
            **labels[a].to_dict(),
            "cells": [_cell(pairs.get((a, b))) if a != b else None for b in order],
        }
        for a in order
    ]
    return {"standings": standings, "crosstable": crosstable, "game_count": game_count}


def _cell(counts: list[int] | None) -> dict[str, Any]:
    if counts is None:
        return {"games": 0}
    wins, draws, losses, sets = counts
    games = wins + draws + losses
    score = wins + 0.5 * draws
    return {
        "games": games,
        "sets": sets,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "score": score,
        "score_pct": score / games if games else None,
        "los": likelihood_of_superiority(wins, losses),
    }
