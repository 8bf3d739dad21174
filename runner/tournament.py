"""Tournaments: plan, store and enqueue them; play one game set and record it exactly once."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from arena.config import ConfigError, Limits, agent_logs_dir
from arena.errors import ArenaError
from arena.gamemaster.client import GameMasterClient
from arena.rulesets import ruleset_key
from arena.storage import (
    Database,
    GameResult,
    NotFound,
    PlannedSet,
    SetState,
    TournamentState,
    repo,
)
from arena.storage.database import driver_reason
from arena.storage.models import BotVersion, Tournament
from runner.gameset import (
    CONNECT_MS,
    GAME_TIMEOUT,
    AgentStopper,
    GameAborted,
    GameTiming,
    Launchers,
    SeatBot,
    game_master_full,
    lost_game_master,
    play_game,
    refused_admin,
)
from runner.launch import AgentLimits
from runner.launch.container import DockerUnavailable
from runner.periodic import every
from runner.plan import plan_tournament, seatings
from runner.ratings_update import update_ratings

if TYPE_CHECKING:
    from rq import Queue

log = logging.getLogger(__name__)

# Attempts at one set before it is given up as failed (the first run plus RQ's retries).
MAX_ATTEMPTS = 3
# How long a set's job waits for an unreachable game master before it gives the set back to
# the queue (not counted as an attempt: a set waits out a game master's outage, however long).
GAME_MASTER_WAIT_S = 60.0
# After this much of that wait the set says why it waits (`tournament status`, the dashboard).
GAME_MASTER_NOTICE_S = 5.0
# How often that wait asks whether its worker has been asked to stop.
STOP_POLL_S = 0.5
# How long a set's played games wait for a database that does not answer before they are given
# up (and the set played again).
DATABASE_WAIT_S = 120.0
# How often a run whose game another run took over looks whether that run has settled the set.
SETTLED_POLL_S = 0.5
# How often the run playing a set stores a sign of life (SET_BEAT_FRESH: how old the last one
# may be for the set to count as being played, by a worker that Redis lost track of).
SET_BEAT_S = 5.0


# A tournament's id names its sets' RQ jobs (which allow no other characters), export files
# and dashboard pages; a nightly job queued with an odd night once made one that no pass of
# the reconciler could queue, and each pass failed on it.
TOURNAMENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class TournamentError(ArenaError, ValueError):
    """A tournament that cannot be created as asked."""


class GameMasterDown(ArenaError):
    """No game master answered: the set was not started and will be run again."""


def resolve_bots(session: Session, wanted: Sequence[str] | None) -> list[BotVersion]:
    """Bot versions from "name@version" or bare names (their latest version); all active if none."""
    if not wanted:
        versions = repo.active_versions(session)
        if len(versions) < 2:
            raise TournamentError(
                f"{len(versions)} active bot(s) registered; a tournament needs at least 2: "
                f"{_how_to_get_bots(session)}"
            )
        return versions
    out: list[BotVersion] = []
    for item in wanted:
        item = item.strip()
        if "@" in item:
            out.append(repo.get_version(session, item))
            continue
        bot = repo.get_bot(session, item)
        if bot.latest is None:
            raise TournamentError(f"bot {item!r} has no versions")
        out.append(bot.latest)
    return out


def against_the_field(session: Session, champion: BotVersion) -> list[BotVersion]:
    """A gauntlet of one bot named: it plays every other enabled bot's latest version (a
    newcomer against the field; naming each opponent was the only way)."""
    field = [v for v in repo.active_versions(session) if v.bot_id != champion.bot_id]
    if not field:
        raise TournamentError(
            f"a gauntlet of {champion.ref} needs an opponent, and no other bot is enabled: "
            f"{_how_to_get_bots(session)}"
        )
    return [champion, *field]


def _how_to_get_bots(session: Session) -> str:
    """What would give a round robin its bots: registering more, or enabling those disabled
    (with every bot but one disabled, "register bots" sent an organiser to add what was there)."""
    disabled = [bot.name for bot in repo.list_bots(session) if bot.disabled]
    register = "register bots with `arena bots add DIR`"
    if not disabled:
        return register
    more = f" and {len(disabled) - 5} more" if len(disabled) > 5 else ""
    named = ", ".join(disabled[:5]) + more
    return f"{len(disabled)} disabled ({named}): `arena bots enable NAME`, or {register}"


def create_tournament(
    db: Database,
    *,
    format: str,
    bots: Sequence[str] | None,
    sets: int,
    ruleset: str,
    seed: int | None = None,
    limits: Limits | None = None,
    nightly: bool = False,
    connect_ms: int | None = None,
    exclusive: bool = False,
    enqueue: Callable[[Sequence[str]], int] | None = None,
    in_process: bool = False,
    sprt: Mapping[str, float] | None = None,
    tournament_id: str | None = None,
) -> Tournament:
    """Plan (pure, deterministic from the seed), store with all sets queued, then enqueue.

    Storing comes first: the database is the source of truth, and a set stored but not
    enqueued (Redis down at that moment) is picked up by the workers' reconciler.
    """
    seed = secrets.randbits(63) if seed is None else seed
    limits = limits or Limits.from_env()
    ruleset = ruleset_key(ruleset)  # one spelling: one pool of ratings
    with db.session() as session:
        versions = resolve_bots(session, bots)
        if format == "gauntlet" and len(versions) == 1:
            versions = against_the_field(session, versions[0])
        refs = [v.ref for v in versions]
        tid = tournament_id or repo.new_tournament_id()
        if not TOURNAMENT_ID.fullmatch(tid):  # it names job ids, files and pages
            raise TournamentError(
                f"tournament id {tid!r} is not allowed; use up to 64 letters, digits, '-' or "
                "'_', starting with a letter or digit"
            )
        plan = plan_tournament(format, tid, refs, sets, ruleset, seed)
        tournament = repo.create_tournament(
            session,
            format=format,
            ruleset=ruleset,
            seed=seed,
            sets_per_pair=sets,
            sets=[PlannedSet(s.a, s.b, s.seed, s.first_dealer) for s in plan],
            limits={
                **asdict(limits),
                "connect_ms": connect_ms or CONNECT_MS,
                "exclusive": exclusive,
                # Played by the process that created it (`arena match`): not the workers'.
                **({"in_process": True} if in_process else {}),
                # `arena match`'s test (elo0, elo1, alpha, beta), for its page to show.
                **({"sprt": dict(sprt)} if sprt else {}),
            },
            nightly=nightly,
            tournament_id=tid,
        )
    if enqueue is not None:
        enqueue([s.id for s in plan])
    return tournament


@dataclass(frozen=True)
class SetOutcome:
    """What one run of a set did: recorded it, found it done already, or gave it up."""

    set_id: str
    recorded: bool
    state: str
    score_a: float | None = None
    attempts: int = 0
    timings: tuple[GameTiming, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, for the job's result (each GameTiming a dict too)."""
        return asdict(self)


class OtherDatabase(ArenaError):
    """A set queued by an arena that stores its tournaments in another database."""


def run_game_set(
    db: Database,
    set_id: str,
    client: GameMasterClient,
    *,
    launchers: Launchers | None = None,
    agent_limits: AgentLimits | None = None,
    agent_game_master: str | None = None,
    ratings_lock: Callable[[str], contextlib.AbstractContextManager[object]] | None = None,
    bot_lock: Callable[[Sequence[str]], contextlib.AbstractContextManager[object]] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> SetOutcome:
    """Play both games of a set and record them; a set already done is left as it is.

    Safe to run again after any crash: recording is a conditional update, so exactly one
    run's games are stored. In an exclusive tournament ``bot_lock`` is held around the games,
    so each bot version plays one game set at a time across all workers. A failure is raised
    for the queue to retry, except on the last attempt, when the set is marked failed so its
    tournament can still finish. A set waiting for a game master is given back at once when
    ``stopping()`` says its worker has been asked to stop.
    """
    with db.session() as session:
        try:
            game_set = repo.get_game_set(session, set_id)
        except NotFound:
            tournament_id = repo.tournament_of_set(set_id)
            if session.get(Tournament, tournament_id) is None:
                raise OtherDatabase(
                    f"set {set_id}: tournament {tournament_id} is not in this worker's database "
                    f"({db.shown_url}): it was created with another ARENA_DATABASE_URL. Give "
                    "the workers and the commands that create tournaments the same one"
                ) from None
            # Dropped from its match's plan after its job was queued.
            log.info("set %s is no longer planned; nothing to play", set_id)
            return SetOutcome(set_id, False, "dropped")
        exclusive = bool(game_set.tournament.limits.get("exclusive"))
        refs = sorted({game_set.bot_a.ref, game_set.bot_b.ref})
    lock = bot_lock(refs) if exclusive and bot_lock is not None else contextlib.nullcontext()
    with lock:
        # A game master restarting (or not up yet) costs the set a wait, not one of its
        # attempts: the set stays queued and its job is run again (by RQ's retries, then the
        # reconciler).
        _wait_for_game_master(db, set_id, client, stopping)
        return _run_game_set(
            db, set_id, client, launchers, agent_limits, agent_game_master, ratings_lock
        )


def _wait_for_game_master(
    db: Database, set_id: str, client: GameMasterClient, stopping: Callable[[], bool]
) -> None:
    """Return once the game master answers; after GAME_MASTER_NOTICE_S the set says why it
    waits (`tournament status`, the dashboard), after GAME_MASTER_WAIT_S GameMasterDown."""
    fix = "(start `arena gamemaster`, or check ARENA_GAME_MASTER)"
    if _ready(client, GAME_MASTER_NOTICE_S, set_id, stopping):
        return
    with db.session() as session:
        repo.note_waiting(session, set_id, f"no game master at {client.address} yet {fix}")
    if _ready(client, GAME_MASTER_WAIT_S - GAME_MASTER_NOTICE_S, set_id, stopping):
        return
    why = (
        f"no game master at {client.address} for {GAME_MASTER_WAIT_S:.0f} s; the set waits "
        f"for one {fix}"
    )
    with db.session() as session:
        repo.note_waiting(session, set_id, why)
    raise GameMasterDown(f"set {set_id}: {why}")


def _ready(
    client: GameMasterClient, seconds: float, set_id: str, stopping: Callable[[], bool]
) -> bool:
    """Whether the game master answers within `seconds`. A worker asked to stop gives the set
    back at once (GameMasterDown): it used to wait the minute out, and the demo, stopping its
    game master and workers together, killed it and left its embedded Redis running."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        try:
            client.wait_ready(timeout=max(min(left, STOP_POLL_S), 0.0))
        except grpc.FutureTimeoutError:
            if stopping():
                raise GameMasterDown(
                    f"set {set_id}: no game master at {client.address}, and this worker is "
                    "stopping; the set stays queued for the next worker"
                ) from None
            if left <= STOP_POLL_S:
                return False
        else:
            return True


def _run_game_set(
    db: Database,
    set_id: str,
    client: GameMasterClient,
    launchers: Launchers | None,
    agent_limits: AgentLimits | None,
    agent_game_master: str | None,
    ratings_lock: Callable[[str], contextlib.AbstractContextManager[object]] | None,
) -> SetOutcome:
    agent_limits = agent_limits or AgentLimits()
    with db.session() as session:
        if not repo.mark_set_running(session, set_id):
            done = repo.get_game_set(session, set_id)
            # Recorded by an attempt that died before it rated the games or finished the
            # tournament: do what that attempt left undone.
            _after_recording(session, done.tournament.ruleset, done.tournament_id, ratings_lock)
            return SetOutcome(set_id, False, done.state, done.score_a, done.attempts)
        game_set = repo.get_game_set(session, set_id)
        tournament = game_set.tournament
        if tournament.state == TournamentState.QUEUED.value:
            repo.set_tournament_state(session, tournament.id, TournamentState.RUNNING.value)
        a, b = SeatBot.of(game_set.bot_a), SeatBot.of(game_set.bot_b)
        attempts = game_set.attempts
        ruleset, tid = tournament.ruleset, tournament.id
        seed, dealer = game_set.seed, game_set.first_dealer
        limits = Limits(**{k: v for k, v in tournament.limits.items() if k in _LIMIT_FIELDS})
        connect_ms = int(tournament.limits.get("connect_ms", CONNECT_MS))
    launchers = launchers or Launchers.default(_agent_log_dir(tid))
    timings: list[GameTiming] = []
    # Agents are stopped in the background, and all of them before the set returns.
    beat = functools.partial(_beat, db, set_id, attempts)
    with AgentStopper() as stopper, every(SET_BEAT_S, beat, f"beat-{set_id}"):
        try:
            games = [
                play_game(
                    client,
                    game_id=repo.game_id(set_id, index),
                    game_index=index,
                    seats=seats,
                    ruleset=ruleset,
                    seed=seed,
                    first_dealer=dealer,
                    limits=limits,
                    agent_limits=agent_limits,
                    launchers=launchers,
                    agent_game_master=agent_game_master,
                    connect_ms=connect_ms,
                    timings=timings.append,
                    stopper=stopper,
                )
                for index, seats in enumerate(seatings(a, b))
            ]
        except Exception as exc:
            return _after_failure(db, set_id, tid, attempts, exc)
        # The games are played: a database that is down for a moment must not cost them.
        recorded = _record(db, set_id, games)
        with db.session() as session:
            _after_recording(session, ruleset, tid, ratings_lock)
            done = repo.get_game_set(session, set_id)
            return SetOutcome(set_id, recorded, done.state, done.score_a, attempts, tuple(timings))


def _agent_log_dir(tournament_id: str) -> Path | None:
    """Where this set's agents keep their stderr under ARENA_AGENT_LOGS, or None (each seat's
    log kept only with a fault) where that directory went bad after the worker started: the
    games matter more than their logs."""
    try:
        logs = agent_logs_dir()
        if logs is None:
            return None
        (logs / tournament_id).mkdir(mode=0o700, exist_ok=True)
        if not os.access(logs / tournament_id, os.W_OK | os.X_OK):
            raise ConfigError(f"ARENA_AGENT_LOGS: cannot write in {logs / tournament_id}")
    except (ConfigError, OSError) as exc:
        log.warning("playing without agents' logs: %s", exc)
        return None
    return logs / tournament_id


def _after_failure(
    db: Database, set_id: str, tid: str, attempts: int, exc: Exception
) -> SetOutcome:
    """What becomes of a set whose attempt number `attempts` failed with `exc`: raised for RQ
    to retry, given back (the game master went away), left to another run that took it over,
    or given up on as failed after MAX_ATTEMPTS."""
    why = _not_the_bots(exc)
    if why is not None:
        why += ", and this attempt does not count"
        with db.session() as session:
            repo.give_back_attempt(session, set_id, attempts, why)
        raise GameMasterDown(f"set {set_id}: {why}") from None
    if isinstance(exc, GameAborted) and _started_again(db, set_id, attempts):
        # Another run of this set (its job queued again after Redis lost it) took the game
        # over and plays the set now. Raising, this job's retry would take the game back at
        # once, and the two runs go on so until the set fails: wait for the other run instead.
        log.info("set %s: another run took it over (%s); waiting for it", set_id, exc)
        return _when_settled(db, set_id)
    if attempts < MAX_ATTEMPTS:
        raise exc
    with db.session() as session:
        repo.mark_set_failed(session, set_id, f"{type(exc).__name__}: {exc}")
        finish_if_done(session, tid)
        hint = retry_hint(repo.get_tournament(session, tid))
    log.error("set %s failed on attempt %d, giving up (%s): %s", set_id, attempts, hint, exc)
    return SetOutcome(set_id, False, SetState.FAILED.value, attempts=attempts)


def _not_the_bots(exc: Exception) -> str | None:
    """Why a failed attempt is the arena's doing, not the bots' (what the set waits for);
    None if it may be theirs."""
    if lost_game_master(exc):
        return (
            f"the game master went away mid-game ({exc}); the set is played again once it is back"
        )
    if refused_admin(exc):
        return f"the game master refused this worker ({exc}); the set waits for a worker it accepts"
    if game_master_full(exc):  # its --max-games: a limit on the arena, not a fault of the bots
        return f"the game master has no room for another game ({exc}); the set waits for room"
    if isinstance(exc, DockerUnavailable):  # a container bot's seat would forfeit every game
        return f"{exc}; the set waits for a worker that can run containers"
    return None


def _beat(db: Database, set_id: str, attempts: int) -> None:
    """Store a sign of life of the run of attempt number `attempts` (see SET_BEAT_S)."""
    try:
        with db.session() as session:
            repo.beat_set(session, set_id, attempts)
    except OperationalError as exc:  # the database away a moment: the next beat
        log.warning("set %s: no sign of life stored (%s)", set_id, driver_reason(exc))


def _started_again(db: Database, set_id: str, attempts: int) -> bool:
    """Whether a later run of the set has started since attempt number `attempts`."""
    with db.session() as session:
        return repo.get_game_set(session, set_id).attempts > attempts


def _when_settled(db: Database, set_id: str) -> SetOutcome:
    """The set as it is once done or failed, or as it is after GAME_TIMEOUT."""
    deadline = time.monotonic() + GAME_TIMEOUT
    while True:
        with db.session() as session:
            game_set = repo.get_game_set(session, set_id)
            state, score_a, attempts = game_set.state, game_set.score_a, game_set.attempts
        settled = state in (SetState.DONE.value, SetState.FAILED.value)
        if settled or time.monotonic() > deadline:
            return SetOutcome(set_id, False, state, score_a, attempts)
        time.sleep(SETTLED_POLL_S)


def _record(db: Database, set_id: str, games: Sequence[GameResult]) -> bool:
    """Store the set's games, trying again while the database does not answer, for up to
    DATABASE_WAIT_S (storing is one transaction: a failed try left nothing, a repeated one
    changes nothing)."""
    deadline = time.monotonic() + DATABASE_WAIT_S
    pause = 1.0
    while True:
        try:
            with db.session() as session:
                return repo.record_game_set_result(session, set_id, games)
        except OperationalError as exc:
            if time.monotonic() + pause > deadline:
                raise
            log.warning(
                "set %s: the database did not answer (%s); storing again in %.0f s",
                set_id,
                driver_reason(exc),
                pause,
            )
        time.sleep(pause)
        pause = min(2 * pause, 10.0)


def _after_recording(
    session: Session,
    ruleset: str,
    tournament_id: str,
    ratings_lock: Callable[[str], contextlib.AbstractContextManager[object]] | None,
) -> None:
    """Rate what is unrated in the ruleset, and finish the tournament if this was its last set.

    Both are no-ops when already done, so a retried job can always run them again.
    """
    with ratings_lock(ruleset) if ratings_lock is not None else contextlib.nullcontext():
        update_ratings(session, ruleset)
    finish_if_done(session, tournament_id)


_LIMIT_FIELDS = {"decision_ms", "bank_ms", "fault_limit"}


def retry_failed_sets(db: Database, tournament_id: str, queue: Queue) -> list[str]:
    """Queue the tournament's failed sets again, each with a fresh count of attempts (a set
    given up on after three worker deaths, say); returns their ids."""
    from runner.queue import enqueue_game_sets

    with db.session() as session:
        tournament = repo.get_tournament(session, tournament_id)
        if tournament.limits.get("in_process"):
            raise TournamentError(
                f"{tournament_id} is an `arena match`, played by the process that ran it, not "
                "by workers: run a new `arena match` instead"
            )
        ids = repo.requeue_failed_sets(session, tournament_id)
    # A failed job keeps its id, which would pass for a live one; a job the reconciler queued
    # (or a worker started) meanwhile is live, and kept.
    enqueue_game_sets(queue, ids, replace_ended=True)
    return ids


def retry_hint(tournament: Tournament) -> str:
    """What to run to play a tournament's failed sets again (said wherever sets are given up)."""
    fixed = "once what failed them is fixed"
    if tournament.limits.get("in_process"):
        # Played by the process that ran it, and by no other: running it again is a new match.
        return "a match's sets are not played again: run a new `arena match`"
    return f"`arena tournament retry {tournament.id}` queues them again, {fixed}"


def finish_if_done(session: Session, tournament_id: str) -> bool:
    """Mark the tournament finished (or failed, if no set succeeded) once every set is settled."""
    try:
        progress = repo.tournament_progress(session, tournament_id)
    except NotFound:
        return False
    if not progress.finished:
        return False
    tournament = repo.get_tournament(session, tournament_id)
    state = TournamentState.FINISHED if progress.done else TournamentState.FAILED
    # Failed can still become finished: a set given up on may be recorded by a run that was
    # still going (then that result counts). Finished stays finished.
    if tournament.state in (state.value, TournamentState.FINISHED.value):
        return True
    repo.set_tournament_state(session, tournament_id, state.value)
    log.info(
        "tournament %s %s: %d sets done, %d failed",
        tournament_id,
        state.value,
        progress.done,
        progress.failed,
    )
    return True


def finish_settled_tournaments(session: Session) -> list[str]:
    """Finish every queued or running tournament whose sets are all settled (the worker that
    settled the last one died before it could); returns their ids."""
    from sqlalchemy import select

    query = select(Tournament.id).where(
        Tournament.state.in_((TournamentState.QUEUED.value, TournamentState.RUNNING.value))
    )
    return [tid for tid in session.scalars(query).all() if finish_if_done(session, tid)]


def unsettled_sets(session: Session) -> list[tuple[str, str, int, datetime | None]]:
    """(set id, state, attempts, last sign of life) of every set not done or failed, in
    unfinished tournaments that workers play (not those a process plays itself)."""
    from sqlalchemy import select

    from arena.storage.models import GameSet

    query = (
        select(GameSet.id, GameSet.state, GameSet.attempts, GameSet.beat, Tournament.limits)
        .join(Tournament)
        .where(
            Tournament.state.in_((TournamentState.QUEUED.value, TournamentState.RUNNING.value)),
            GameSet.state.in_((SetState.QUEUED.value, SetState.RUNNING.value)),
        )
        .order_by(GameSet.tournament_id, GameSet.index)
    )
    return [
        (sid, state, int(attempts), beat)
        for sid, state, attempts, beat, limits in session.execute(query)
        if not (limits or {}).get("in_process")
    ]


def eta_seconds(started: float, done: int, total: int, now: float) -> float | None:
    """Remaining seconds at the pace so far; None before the first set is done. `now` on the
    clock `started` was read on (a default of time.time() against a monotonic start made
    the demo's ETA some 9e9 s)."""
    if done <= 0 or total <= done:
        return None if done <= 0 else 0.0
    return (now - started) / done * (total - done)
