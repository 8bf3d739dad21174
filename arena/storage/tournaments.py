"""Tournaments and their game sets: creating, claiming, failing, progress."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.storage.bots import get_version
from arena.storage.errors import NotFound, StorageError
from arena.storage.models import (
    BotVersion,
    GameSet,
    SetState,
    Tournament,
    TournamentFormat,
    TournamentState,
    utcnow,
)
from arena.storage.values import (
    MAX_SEED,
    SET_BEAT_FRESH,
    PlannedSet,
    Progress,
    game_set_id,
    new_tournament_id,
)


def _check_seed(seed: int, what: str) -> None:
    if not 0 <= seed <= MAX_SEED:
        raise StorageError(f"{what} seed {seed} is outside 0..2**63-1")


def create_tournament(
    session: Session,
    *,
    format: str,
    ruleset: str,
    seed: int,
    sets_per_pair: int,
    sets: Sequence[PlannedSet],
    limits: Mapping[str, Any] | None = None,
    nightly: bool = False,
    tournament_id: str | None = None,
    created: datetime | None = None,
) -> Tournament:
    """Store a tournament and all its game sets (state queued) in one transaction."""
    fmt = TournamentFormat(format)
    _check_seed(seed, "tournament")
    tid = tournament_id or new_tournament_id(created)
    tournament = Tournament(
        id=tid,
        format=fmt.value,
        ruleset=ruleset,
        seed=seed,
        sets_per_pair=sets_per_pair,
        limits=dict(limits or {}),
        state=TournamentState.QUEUED.value,
        created=created or utcnow(),
        planned_sets=len(sets),
        nightly=nightly,
    )
    session.add(tournament)
    for index, planned in enumerate(sets):
        _check_seed(planned.seed, f"set {index}")
        if not 0 <= planned.first_dealer <= 3:
            raise StorageError(f"set {index}: first dealer {planned.first_dealer} is not 0..3")
        session.add(
            GameSet(
                id=game_set_id(tid, index),
                tournament=tournament,
                index=index,
                bot_a_id=get_version(session, planned.bot_a).id,
                bot_b_id=get_version(session, planned.bot_b).id,
                seed=planned.seed,
                first_dealer=planned.first_dealer,
                state=SetState.QUEUED.value,
                attempts=0,
            )
        )
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise StorageError(f"tournament {tid!r} could not be stored: {exc.orig}") from None
    return tournament


def get_tournament(session: Session, tournament_id: str) -> Tournament:
    found = session.get(Tournament, tournament_id)
    if found is None:
        raise NotFound(f"no tournament {tournament_id!r}")
    return found


def list_tournaments(session: Session, *, limit: int = 100) -> list[Tournament]:
    query = select(Tournament).order_by(Tournament.created.desc(), Tournament.id).limit(limit)
    return list(session.scalars(query))


def set_tournament_state(
    session: Session, tournament_id: str, state: str, *, now: datetime | None = None
) -> Tournament:
    """Move a tournament to `state`, stamping started/finished the first time."""
    new = TournamentState(state)
    tournament = get_tournament(session, tournament_id)
    tournament.state = new.value
    stamp = now or utcnow()
    if new is TournamentState.RUNNING and tournament.started is None:
        tournament.started = stamp
    if new in (TournamentState.FINISHED, TournamentState.FAILED):
        tournament.finished = stamp
    session.commit()
    return tournament


def get_game_set(session: Session, set_id: str) -> GameSet:
    found = session.get(GameSet, set_id)
    if found is None:
        raise NotFound(f"no game set {set_id!r}")
    return found


def list_game_sets(
    session: Session, tournament_id: str, *, state: str | None = None
) -> list[GameSet]:
    query = select(GameSet).where(GameSet.tournament_id == tournament_id)
    if state is not None:
        query = query.where(GameSet.state == SetState(state).value)
    return list(session.scalars(query.order_by(GameSet.index)))


def mark_set_running(session: Session, set_id: str, *, now: datetime | None = None) -> bool:
    """Count an attempt at a set; False (and no change) if it is done, or failed: a failed set
    starts again only through `requeue_failed_sets` (a stale job of it, run late by a worker
    that was paused, must not play it inside a tournament that has finished)."""
    result = session.execute(
        update(GameSet)
        .where(
            GameSet.id == set_id,
            GameSet.state.in_((SetState.QUEUED.value, SetState.RUNNING.value)),
        )
        .values(
            state=SetState.RUNNING.value,
            attempts=GameSet.attempts + 1,
            started=now or utcnow(),
            beat=now or utcnow(),
            error=None,
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    if rowcount(result) == 0:
        get_game_set(session, set_id)  # raises NotFound for an unknown id
        return False
    return True


def _while_run_plays(set_id: str, attempts: int) -> tuple[ColumnElement[bool], ...]:
    """The set, while the run of attempt number `attempts` plays it: not settled, not given
    back, not started again."""
    return (
        GameSet.id == set_id,
        GameSet.state == SetState.RUNNING.value,
        GameSet.attempts == attempts,
    )


def beat_set(session: Session, set_id: str, attempts: int) -> bool:
    """A sign of life of the run playing attempt number `attempts` of the set; False (no
    change) once the set has moved on: settled, given back, or started again."""
    result = session.execute(
        update(GameSet)
        .where(*_while_run_plays(set_id, attempts))
        .values(beat=utcnow())
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return rowcount(result) == 1


def give_back_attempt(session: Session, set_id: str, attempts: int, why: str) -> bool:
    """Undo the count of attempt number `attempts`, which the arena lost, not the bots (its game
    master went away): the set is queued again, with `why` as its error until the next start.
    No change (False) if the set has moved on since: recorded, failed, or started again."""
    result = session.execute(
        update(GameSet)
        .where(*_while_run_plays(set_id, attempts))
        .values(state=SetState.QUEUED.value, attempts=attempts - 1, error=why)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return rowcount(result) == 1


def note_waiting(session: Session, set_id: str, why: str) -> bool:
    """Say why a queued set is not being played (no game master, say); the next start clears
    it. False (no change) if the set is not queued."""
    result = session.execute(
        update(GameSet)
        .where(GameSet.id == set_id, GameSet.state == SetState.QUEUED.value)
        .values(error=why)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return rowcount(result) == 1


def tournament_kind(format: str, bots: int) -> str:
    """What a tournament of ``bots`` bot versions is called: "match" for a gauntlet of two
    (what `arena match` plays), else its format."""
    return "match" if format == TournamentFormat.GAUNTLET and bots == 2 else format


def champion(session: Session, tournament: Tournament) -> str | None:
    """A gauntlet's champion ("name@version"): bot A of every set. None for a round robin."""
    if tournament.format != TournamentFormat.GAUNTLET:
        return None
    query = select(GameSet).where(GameSet.tournament_id == tournament.id).order_by(GameSet.index)
    first = session.scalars(query.limit(1)).first()
    return first.bot_a.ref if first is not None else None


def opponents(session: Session, tournament: Tournament) -> list[str]:
    """A gauntlet's opponents of its champion ("name@version", sorted): bot B of its sets."""
    query = select(GameSet.bot_b_id).where(GameSet.tournament_id == tournament.id).distinct()
    return sorted(session.get_one(BotVersion, v).ref for v in session.scalars(query))


def waiting_reason(session: Session, tournament_id: str) -> str | None:
    """Why the tournament's queued sets wait, as the last one to try said, if one did; None
    while one of its sets is being played (then they wait only for their turn)."""
    of_tournament = GameSet.tournament_id == tournament_id
    playing = select(GameSet.id).where(of_tournament, GameSet.state == SetState.RUNNING.value)
    return session.scalars(
        select(GameSet.error)
        .where(
            of_tournament,
            GameSet.state == SetState.QUEUED.value,
            GameSet.error.is_not(None),
            ~playing.exists(),
        )
        .order_by(GameSet.index)
        .limit(1)
    ).first()


def mark_set_failed(session: Session, set_id: str, error: str = "") -> bool:
    """Mark a set failed; False (and no change) if it already has its result."""
    result = session.execute(
        update(GameSet)
        .where(GameSet.id == set_id, GameSet.state != SetState.DONE.value)
        .values(state=SetState.FAILED.value, error=error, finished=utcnow())
        .execution_options(synchronize_session=False)
    )
    session.commit()
    if rowcount(result) == 0:
        get_game_set(session, set_id)
        return False
    return True


def requeue_failed_sets(session: Session, tournament_id: str) -> list[str]:
    """Give the tournament's failed sets a fresh start (queued, no attempts, no error) and the
    tournament its running state back; returns their ids, for the caller to enqueue."""
    tournament = get_tournament(session, tournament_id)
    ids = list(
        session.scalars(
            select(GameSet.id)
            .where(GameSet.tournament_id == tournament_id, GameSet.state == SetState.FAILED.value)
            .order_by(GameSet.id)
        )
    )
    if ids:
        session.execute(
            update(GameSet)
            .where(GameSet.id.in_(ids), GameSet.state == SetState.FAILED.value)
            .values(state=SetState.QUEUED.value, attempts=0, error=None, finished=None)
            .execution_options(synchronize_session=False)
        )
        tournament.state = TournamentState.RUNNING.value
        tournament.finished = None
        session.commit()
    return ids


def drop_unstarted_sets(session: Session, tournament_id: str, set_ids: Sequence[str]) -> int:
    """Delete those of `set_ids` never started (still queued) from the tournament's plan, which
    shrinks by as many: a match its SPRT decided early planned sets it never needed. Returns
    how many were dropped."""
    result = session.execute(
        delete(GameSet)
        .where(
            GameSet.tournament_id == tournament_id,
            GameSet.id.in_(list(set_ids)),
            GameSet.state == SetState.QUEUED.value,
        )
        .execution_options(synchronize_session=False)
    )
    dropped = rowcount(result)
    session.execute(
        update(Tournament)
        .where(Tournament.id == tournament_id)
        .values(planned_sets=Tournament.planned_sets - dropped)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return dropped


def tournament_progress(session: Session, tournament_id: str) -> Progress:
    tournament = get_tournament(session, tournament_id)
    return tournaments_progress(session, [tournament])[tournament_id]


def tournaments_progress(
    session: Session, tournaments: Sequence[Tournament]
) -> dict[str, Progress]:
    """Set counts by state of several tournaments, in two indexed queries."""
    ids = [t.id for t in tournaments]
    counts: dict[str, dict[str, int]] = {tid: {} for tid in ids}
    silent: dict[str, int] = {}
    if ids:
        of_these = GameSet.tournament_id.in_(ids)
        by_state = select(GameSet.tournament_id, GameSet.state, func.count()).where(of_these)
        for tid, state, n in session.execute(
            by_state.group_by(GameSet.tournament_id, GameSet.state)
        ):
            counts[tid][state] = int(n)
        quiet = select(GameSet.tournament_id, func.count()).where(
            of_these,
            GameSet.state == SetState.RUNNING.value,
            GameSet.beat < utcnow() - SET_BEAT_FRESH,
        )
        silent = {tid: int(n) for tid, n in session.execute(quiet.group_by(GameSet.tournament_id))}
    return {
        t.id: Progress(
            total=t.planned_sets,
            done=counts[t.id].get(SetState.DONE.value, 0),
            failed=counts[t.id].get(SetState.FAILED.value, 0),
            running=counts[t.id].get(SetState.RUNNING.value, 0),
            queued=counts[t.id].get(SetState.QUEUED.value, 0),
            silent=silent.get(t.id, 0),
        )
        for t in tournaments
    }


def rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)
