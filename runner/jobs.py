"""RQ job functions: JSON-able arguments, and the same calls the CLI makes."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import redis
from redis.exceptions import LockError, LockNotOwnedError
from redis.lock import Lock
from sqlalchemy.exc import OperationalError

from arena.config import agents_game_master, database_url, env
from arena.errors import ArenaError
from arena.gamemaster.client import GameMasterClient
from arena.storage import Database, open_database
from arena.storage.database import driver_reason
from arena.storage.errors import SchemaTooNew
from runner.periodic import every
from runner.redis_conn import REDIS_DOWN

if TYPE_CHECKING:
    from arena.storage.models import BotVersion

log = logging.getLogger(__name__)

# Held while a rating table is rewritten, so that two workers finishing sets at once take
# turns rather than both compute a pass and one of them start again (RatedMeanwhile, which
# keeps the tables right without the lock). A pass takes milliseconds; the lock of a worker
# killed in one holds up every worker's next set until it expires: 120 s did, visibly.
RATINGS_LOCK_TTL = 10
RATINGS_LOCK_POLL = 0.005


# How the scheduler names a night (runner/scheduler.py); anything else is a job not queued by it.
NIGHT = re.compile(r"\d{8}-\d{4}")

# How often a set taken while the database does not answer asks it again.
DATABASE_POLL_S = 2.0

# Why this worker stops for good, once a job has found the database upgraded by a newer arena
# (worker.py exits EXIT_OUTDATED): played on, it would write what the new schema means
# otherwise (an arena of schema 1 rated every game again after an upgrade to 2).
outdated: str | None = None

# Set when this worker has been asked to stop (worker.py): a set still waiting for a game master
# is given back at once rather than after the whole wait.
stopping = threading.Event()


@functools.cache
def database() -> Database:
    """The process's database, opened (and its schema checked) on first use."""
    return open_database(database_url())


@functools.cache
def game_master() -> GameMasterClient:
    """The process's game master client: one channel for all the worker's game sets."""
    return GameMasterClient(env("ARENA_GAME_MASTER"))


def _connection() -> redis.Redis:
    from rq import get_current_job

    job = get_current_job()
    if job is not None:
        return job.connection
    from runner.redis_conn import connect

    return connect()


class DatabaseDown(ArenaError):
    """The database did not answer as a set was taken; the set was not started."""


class RatingsDeferred(ArenaError):
    """A rating pass could not take its lock; a later pass rates what this one would have."""


@contextlib.contextmanager
def ratings_lock(connection: redis.Redis, ruleset: str) -> Iterator[None]:
    """Hold the lock of a rating pass of `ruleset` (workers, and the reconciler). A pass that
    outlasted the lock's RATINGS_LOCK_TTL has done no harm (see there), and ends quietly."""
    # A rating update takes milliseconds: poll for the lock as often (redis-py's default
    # 100 ms pause would stall the other workers' sets longer than the update itself).
    lock = connection.lock(
        f"arena:lock:ratings:{ruleset}", timeout=RATINGS_LOCK_TTL, sleep=RATINGS_LOCK_POLL
    )
    try:
        lock.acquire()
    except REDIS_DOWN as exc:
        # After a set is recorded: its job fails and its retry, finding the set done, rates.
        raise RatingsDeferred(
            f"no rating pass of {ruleset}: Redis did not answer ({exc}); the next one rates "
            "the games left unrated"
        ) from None
    try:
        yield
    finally:
        with contextlib.suppress(LockNotOwnedError):
            lock.release()


def _ratings_lock(ruleset: str) -> contextlib.AbstractContextManager[None]:
    return ratings_lock(_connection(), ruleset)


# A bot version's lock in an exclusive tournament: kept alive while its set plays (renewed every
# third of this), so that one left by a worker killed mid-set holds up that bot's other sets
# for at most this long, not for as long as a set may last.
BOT_LOCK_TTL = 60


@contextlib.contextmanager
def _bot_lock(refs: Sequence[str]) -> Iterator[object]:
    """Hold every named bot version's lock, taken in sorted order so two sets cannot deadlock."""
    locks = [
        # Not thread-local: the keeper thread renews them with the token this one took.
        _connection().lock(f"arena:lock:bot:{ref}", timeout=BOT_LOCK_TTL, thread_local=False)
        for ref in sorted(refs)
    ]
    with contextlib.ExitStack() as stack:
        for lock in locks:
            stack.enter_context(lock)
        # Entered last, so left first: the renewals stop before the locks are released.
        stack.enter_context(every(BOT_LOCK_TTL / 3, lambda: _renew(locks), "bot-locks"))
        yield stack


def _renew(locks: Sequence[Lock]) -> None:
    for lock in locks:
        try:
            lock.reacquire()  # its time to live starts again
        except (redis.RedisError, LockError) as exc:  # Redis away a moment: the next beat
            log.warning("could not renew the lock %s: %s", lock.name, exc)


def run_game_set(set_id: str) -> dict[str, Any]:
    """Play and record one game set (a no-op if it is already done)."""
    from runner.tournament import run_game_set as run

    if not _schema_still_ours(set_id):
        # Untouched, the set stays queued; the reconciler of an up-to-date worker enqueues it.
        return {"set_id": set_id, "recorded": False, "state": "not played", "reason": outdated}

    outcome = run(
        database(),
        set_id,
        game_master(),
        agent_game_master=agents_game_master(),
        ratings_lock=_ratings_lock,
        bot_lock=_bot_lock,
        stopping=stopping.is_set,
    )
    log.info(
        "set %s: %s (attempt %d)",
        set_id,
        "recorded" if outcome.recorded else outcome.state,
        outcome.attempts,
    )
    return outcome.to_dict()


def _check_schema_once_it_answers(set_id: str) -> None:
    """The schema check (SchemaTooNew), once the database answers: its query is the one that
    tells. A set taken while it does not waits for it, as one
    waits for a game master: failing at once, every job on the queue went through RQ's retries
    into its failed jobs within a second, a traceback per try, until the reconciler queued them
    again once the database was back. After DATABASE_WAIT_S, or once the worker is asked to
    stop, DatabaseDown: the set, not started, is queued again by RQ's retry or the reconciler."""
    from runner.tournament import DATABASE_WAIT_S

    deadline = time.monotonic() + DATABASE_WAIT_S
    waited = False
    while True:
        try:
            database().check_schema()
        except OperationalError as exc:
            why = f"the database at {database().shown_url} does not answer ({driver_reason(exc)})"
            if stopping.is_set() or time.monotonic() + DATABASE_POLL_S > deadline:
                raise DatabaseDown(
                    f"set {set_id}: {why}; not started, it stays queued and is played once the "
                    "database answers (check that it runs and that ARENA_DATABASE_URL reaches it)"
                ) from None
            if not waited:
                log.warning(
                    "set %s waits: %s; asking again every %.0f s for up to %.0f s",
                    set_id,
                    why,
                    DATABASE_POLL_S,
                    DATABASE_WAIT_S,
                )
                waited = True
            time.sleep(DATABASE_POLL_S)
            continue
        if waited:
            log.warning("set %s: the database answers again; playing it", set_id)
        return


def _schema_still_ours(set_id: str) -> bool:
    global outdated
    try:
        _check_schema_once_it_answers(set_id)
    except SchemaTooNew as exc:
        outdated = str(exc)
        log.error("%s; this worker stops and leaves its sets to the new arena's workers", exc)
        os.kill(os.getpid(), signal.SIGTERM)  # RQ's warm stop: the worker ends after this job
        return False
    return True


def nightly_round_robin(
    sets: int = 2, ruleset: str = "standard", night: str | None = None, cron: str | None = None
) -> dict[str, Any]:
    """Create and enqueue a round robin of every active bot's latest version.

    `night` (the scheduled time, "YYYYmmdd-HHMM" UTC) names the tournament, so that one night
    gets one tournament however often its job runs: retried after a worker died, or enqueued by
    a scheduler that woke from a pause after another took over. With the schedule's `cron`, a
    night whose job runs after the next night was due is skipped: after days without workers,
    their nights are played once, as the latest, not one after another.
    """
    from arena.storage import NotFound, repo
    from runner.queue import arena_queue, enqueue_game_sets
    from runner.scheduler import overdue
    from runner.tournament import TournamentError, create_tournament

    if night is not None and not NIGHT.fullmatch(str(night)):
        why = f"night {night!r} is not a time YYYYmmdd-HHMM (UTC); no tournament made"
        log.warning("nightly round robin skipped: %s", why)
        return {"tournament": None, "skipped": why}
    later = overdue(night, cron) if night and cron else None
    if later is not None:
        why = f"overdue: the night of {later} was due before it ran, and is played instead"
        log.warning("nightly round robin nightly-%s skipped: %s", night, why)
        return {"tournament": None, "skipped": why}
    tournament_id = f"nightly-{night}" if night else None
    if tournament_id is not None:
        with database().session() as session, contextlib.suppress(NotFound):
            repo.get_tournament(session, tournament_id)
            log.warning("nightly round robin %s exists already; not created again", tournament_id)
            return {"tournament": tournament_id, "skipped": "exists already"}
    with database().session() as session:
        versions = repo.active_versions(session)
        ready = [v.ref for v in versions if not _cannot_start(v)]
    if len(ready) < len(versions) and len(ready) < 2:
        why = f"{len(ready)} of the {len(versions)} active bots can start; a tournament needs 2"
        log.warning("nightly round robin skipped: %s", why)
        return {"tournament": None, "skipped": why}
    queue = arena_queue(_connection())
    try:
        tournament = create_tournament(
            database(),
            format="round-robin",
            bots=ready if len(ready) < len(versions) else None,
            sets=sets,
            ruleset=ruleset,
            nightly=True,
            enqueue=lambda ids: enqueue_game_sets(queue, ids),
            tournament_id=tournament_id,
        )
    except TournamentError as exc:
        log.warning("nightly round robin skipped: %s", exc)
        return {"tournament": None, "skipped": str(exc)}
    # Said as the skips are: the log showed why a night was not played, never what one played.
    sets = tournament.planned_sets
    log.info(
        "nightly round robin %s: %d game set%s queued, of %s",
        tournament.id,
        sets,
        "" if sets == 1 else "s",
        ", ".join(ready),
    )
    return {"tournament": tournament.id, "sets": tournament.planned_sets}


def _cannot_start(version: BotVersion) -> str | None:
    """Why a process bot cannot start here, said in the log; None if it can. Left in, it
    forfeited every game of every night, and handed its opponents a free win each time."""
    from runner.launch.process import cannot_start

    problem = cannot_start(version.command, version.directory)
    if problem is not None:
        log.warning(
            "nightly round robin: leaving out %s: %s (register it again, or "
            "`arena bots disable %s`)",
            version.ref,
            problem,
            version.bot.name,
        )
    return problem
