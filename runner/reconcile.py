"""The reconciler: the database says which sets are unsettled; make sure Redis has a job for each.

This is what makes a Redis restart lose nothing. Job ids are set ids, so a set that still
has a live job is left alone and one whose job is gone is enqueued again, never twice.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

import redis
from rq.exceptions import InvalidJobOperation
from rq.registry import StartedJobRegistry
from sqlalchemy.exc import DatabaseError

from arena.errors import ArenaError
from arena.storage import Database, SetState, repo
from arena.storage.database import driver_reason
from arena.storage.models import utcnow
from arena.storage.values import SET_BEAT_FRESH
from runner.jobs import ratings_lock
from runner.queue import (
    JOB_ID,
    LIVE_STATES,
    arena_queue,
    delete_job,
    enqueue_game_set,
    enqueue_lock,
    fetch_job,
)
from runner.ratings_update import update_ratings
from runner.tournament import (
    MAX_ATTEMPTS,
    finish_if_done,
    finish_settled_tournaments,
    retry_hint,
    unsettled_sets,
)

log = logging.getLogger(__name__)

# The "cannot rate" failures this process has logged, per database (by URL): ruleset -> reason.
# A ruleset that cannot be rated fails the same way on every pass, and logged on every pass it
# buried the rest of the log. One is logged again once it changes, or once it has been
# resolved (rated, or gone from the unrated) and comes back.
_cannot_rate_logged: dict[str, dict[str, str]] = {}


@dataclass
class Reconciled:
    """What one pass did."""

    checked: int = 0
    enqueued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # tournaments whose last set's worker died
    playing: list[str] = field(default_factory=list)  # running sets with a fresh sign of life
    rated: list[str] = field(default_factory=list)  # rulesets with games left unrated
    skipped: bool = False


def reconcile(db: Database, connection: redis.Redis, queue_name: str | None = None) -> Reconciled:
    """One pass: settle abandoned jobs, finish tournaments whose sets are all settled, enqueue
    every unsettled set that has no live job, then rate stored games no rating pass placed.

    Only one process reconciles at a time (a Redis lock); the others skip the pass.
    """
    report = Reconciled()
    hints: dict[str, str] = {}  # how to retry each tournament with a set given up on
    queue = arena_queue(connection, queue_name)
    lock = enqueue_lock(queue)
    if not lock.acquire(blocking=False):
        report.skipped = True
        return report
    try:
        # Jobs of workers that died: RQ retries them (or fails them when out of retries)
        # once their heartbeat has expired.
        StartedJobRegistry(queue=queue).cleanup()
        with db.session() as session:
            report.finished = finish_settled_tournaments(session)
            sets = unsettled_sets(session)
        now = utcnow()
        for set_id, state, attempts, beat in sets:
            report.checked += 1
            if state == SetState.RUNNING.value and beat and now - beat < SET_BEAT_FRESH:
                # Played by a worker still, whatever Redis says (after a restart without its
                # data, no job): a second run would take the game over and play it again.
                report.playing.append(set_id)
                continue
            if not JOB_ID.fullmatch(set_id):  # stored by an older arena: RQ refuses such ids
                log.error("reconciler: set %r cannot be queued: its id is not a job id", set_id)
                continue
            job = fetch_job(connection, set_id)
            status = None
            if job is not None:
                try:
                    status = job.get_status()
                except InvalidJobOperation:
                    status = None
            if status in LIVE_STATES:
                continue
            if attempts >= MAX_ATTEMPTS:
                with db.session() as session:
                    last = status.value if status is not None else "lost"
                    why = f"gave up after {attempts} attempts (last job: {last})"
                    if state == SetState.RUNNING.value:
                        # No run recorded an error: the last one's worker went away mid-set.
                        why += (
                            ": the worker of the last one stopped mid-set without recording "
                            "why (killed, out of memory, its host down?); see the workers' logs"
                        )
                    repo.mark_set_failed(session, set_id, why)
                    tournament = repo.get_game_set(session, set_id).tournament
                    finish_if_done(session, tournament.id)
                    hints.setdefault(tournament.id, retry_hint(tournament))
                report.failed.append(set_id)
                continue
            if job is not None:
                delete_job(job)  # a failed or stale job: its id is needed for the new one
            # A set whose job ended (failed) is played again next, as RQ's own retries are.
            enqueue_game_set(queue, set_id, at_front=job is not None)
            report.enqueued.append(set_id)
        _rate_unrated(db, connection, report)
    finally:
        # It may have expired during a long pass; harmless.
        with contextlib.suppress(redis.exceptions.LockError):
            lock.release()
    if report.enqueued:
        log.warning(
            "reconciler: %d game set(s) had no live job in Redis and were enqueued again: %s",
            len(report.enqueued),
            ", ".join(report.enqueued[:5]) + (" ..." if len(report.enqueued) > 5 else ""),
        )
    if report.failed:
        log.warning(
            "reconciler: gave up on %d set(s): %s; %s",
            len(report.failed),
            ", ".join(report.failed),
            "; ".join(hints.values()),
        )
    return report


def _rate_unrated(db: Database, connection: redis.Redis, report: Reconciled) -> None:
    """Rate the games stored but not rated: a worker died between the two, or an upgrade asked
    for a ruleset to be rated again. Later sets of the ruleset would rate them, but there may
    be none. Done last, each ruleset on its own: one that could not be rated (a database
    refusing its name, say) stopped every pass before it queued any set, of every tournament."""
    with db.session() as session:
        rulesets = repo.unrated_rulesets(session)
    logged = _cannot_rate_logged.get(db.shown_url, {})
    failing: dict[str, str] = {}
    for ruleset in rulesets:
        try:
            with db.session() as session, ratings_lock(connection, ruleset):
                update_ratings(session, ruleset)
        except (DatabaseError, ArenaError) as exc:
            why = driver_reason(exc) if isinstance(exc, DatabaseError) else str(exc)
            failing[ruleset] = why
            if logged.get(ruleset) != why:
                log.error(
                    "reconciler: cannot rate the games of %s; they stay unrated: %s (said "
                    "once: later passes try again quietly)",
                    ruleset,
                    why,
                )
            continue
        log.info("reconciler: rated the games of %s that no rating pass had", ruleset)
        report.rated.append(ruleset)
    _cannot_rate_logged[db.shown_url] = failing
