"""`arena tournament`: create (plan, store, enqueue), list, and follow a tournament's progress."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from arena.commands.table import print_table
from arena.commands.types import whole_number
from arena.config import UINT32_MAX, why_no_directory
from arena.errors import ArenaError
from arena.pace import elapsed_and_eta, pace_words
from runner.plan import MAX_SETS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.orm import Session

    from arena.storage import Database, Progress, Tournament

BAR_WIDTH = 30


_ID_HELP = "the tournament's id, as tournament create printed it and tournament list shows it"
_API = "the dashboard's /api/tournaments"  # whose queries --json shares


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tournament = subparsers.add_parser("tournament", help="create and follow tournaments")
    sub = tournament.add_subparsers(dest="tournament_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="plan a tournament, store it and queue its game sets")
    create.add_argument(
        "--format",
        choices=("round-robin", "gauntlet"),
        default="round-robin",
        help="round robin over all pairs, or the first of --bots (required) against the others "
        "(named alone: against every other enabled bot's latest version)",
    )
    create.add_argument(
        "--bots",
        default="",
        help="comma-separated name@version or names (latest version); default: all active bots",
    )
    create.add_argument(
        "--sets",
        type=whole_number(1, MAX_SETS),
        default=2,
        help="duplicate game sets per pair (default 2)",
    )
    create.add_argument(
        "--ruleset",
        default="standard",
        help='a ruleset name, or a JSON object such as \'{"name": "standard", "max_hands": 3}\' '
        "(default standard)",
    )
    create.add_argument("--seed", type=int, default=None, help="seed of the plan (default: random)")
    create.add_argument(
        "--connect-ms",
        type=whole_number(1, UINT32_MAX),
        default=None,
        help="how long each agent has to connect to its game before it forfeits (default 20000)",
    )
    create.add_argument(
        "--no-enqueue",
        action="store_true",
        help="only store it (a running worker's reconciler will queue it)",
    )
    create.add_argument(
        "--exclusive",
        action="store_true",
        help="each bot version plays one game set at a time across all workers",
    )
    create.set_defaults(func=_create)

    lst = sub.add_parser("list", help="list tournaments, newest first")
    lst.add_argument(
        "--limit", type=whole_number(1, 10_000), default=20, help="list at most this many (20)"
    )
    lst.add_argument("--json", action="store_true", help=f"print JSON: the list {_API} gives")
    lst.set_defaults(func=_list)

    status = sub.add_parser("status", help="show a tournament's progress")
    status.add_argument("tournament_id", metavar="ID", help=_ID_HELP)
    status.add_argument("--follow", action="store_true", help="refresh until it is done")
    status.add_argument(
        "--json",
        action="store_true",
        help=f"print JSON, as {_API}/ID/status gives it; with --follow a line at each change",
    )
    status.add_argument("--interval", type=float, default=2.0, help=argparse.SUPPRESS)
    status.set_defaults(func=_status)

    retry = sub.add_parser(
        "retry", help="queue a tournament's failed sets again, each with a fresh count of attempts"
    )
    retry.add_argument("tournament_id", metavar="ID", help=_ID_HELP)
    retry.set_defaults(func=_retry)

    export = sub.add_parser(
        "export", help="write the record of each of a tournament's games to DIR/GAME_ID.jsonl"
    )
    export.add_argument("tournament_id", metavar="ID", help=_ID_HELP)
    export.add_argument("directory", metavar="DIR", type=Path, help="created if it is missing")
    export.set_defaults(func=_export)


def _open() -> Database:
    from arena.config import database_url
    from arena.storage import open_database

    return open_database(database_url())


def _create(args: argparse.Namespace) -> int:
    from arena.config import unshared_database_note
    from runner.queue import enqueuer_for
    from runner.tournament import create_tournament

    bots = [b.strip() for b in args.bots.split(",") if b.strip()] or None
    if bots is None and args.bots.strip():  # ",," is no list of all bots
        raise ArenaError(f"--bots {args.bots!r} names no bot; leave it out for every active bot")
    if bots is None and args.format == "gauntlet":  # the first of all bots is no one's choice
        raise ArenaError(
            "a gauntlet needs --bots CHAMPION[,OPPONENT,...]: the first bot named plays each of "
            "the others (named alone, every other enabled bot)"
        )
    with _open() as db:
        enqueue = None if args.no_enqueue else enqueuer_for(db.shown_url)

        tournament = create_tournament(
            db,
            format=args.format,
            bots=bots,
            sets=args.sets,
            ruleset=args.ruleset,
            seed=args.seed,
            connect_ms=args.connect_ms,
            exclusive=args.exclusive,
            enqueue=enqueue,
        )
        warn_of_bots(db, bots)
    if not args.no_enqueue and (note := unshared_database_note()):  # once it is stored
        print(note, file=sys.stderr)
    queued = "stored" if args.no_enqueue else "queued"
    print(
        f"tournament {tournament.id}: {tournament.format}, {tournament.planned_sets} game "
        f"set{'' if tournament.planned_sets == 1 else 's'} {queued} (ruleset "
        f"{tournament.ruleset}, seed {tournament.seed})"
    )
    print(f"follow it with: arena tournament status {tournament.id} --follow")
    return 0


def warn_of_bots(db: Database, bots: Sequence[str] | None) -> None:
    """Say which bots of a new tournament will not play as their owner may expect, without
    refusing: one whose directory or program is gone here forfeits every game on workers that
    lack it too (workers on other machines may have it), and a disabled one plays only
    because it was named."""
    from runner.launch.process import cannot_start
    from runner.tournament import resolve_bots

    with db.session() as session:
        versions = resolve_bots(session, bots)
        for v in versions:
            if problem := cannot_start(v.command, v.directory):
                print(
                    f"warning: {v.ref} cannot start on this machine: {problem}; on workers "
                    f"where it cannot either, it forfeits every game (register it again, or "
                    f"`arena bots disable {v.bot.name}`)",
                    file=sys.stderr,
                )
            elif v.bot.disabled:
                print(
                    f"note: bot {v.bot.name!r} is disabled, and plays here because it is named "
                    f"(`arena bots enable {v.bot.name}` to put it back in nightly runs)",
                    file=sys.stderr,
                )


def _retry(args: argparse.Namespace) -> int:
    from runner import redis_conn
    from runner.queue import arena_queue
    from runner.tournament import retry_failed_sets

    queue = arena_queue(redis_conn.connect())
    with _open() as db:
        ids = retry_failed_sets(db, args.tournament_id, queue)
    if not ids:
        print(f"tournament {args.tournament_id} has no failed sets")
        return 0
    print(f"tournament {args.tournament_id}: queued again {count_sets(len(ids))} that had failed")
    print(f"follow it with: arena tournament status {args.tournament_id} --follow")
    return 0


def _export(args: argparse.Namespace) -> int:
    from arena.storage import DamagedRecord, repo

    with _open() as db, db.session() as session:
        t = repo.get_tournament(session, args.tournament_id)  # NotFound names it
        progress = repo.tournament_progress(session, t.id)
        try:
            args.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # "File exists", of a file where the directory goes
            raise ArenaError(
                f"cannot write records into {args.directory}: "
                f"{why_no_directory(args.directory, exc)}"
            ) from None
        written, damaged = 0, []
        for game_id, record in repo.tournament_records(session, args.tournament_id):
            if isinstance(record, DamagedRecord):  # the others are still worth having
                damaged.append(str(record))
                continue
            (args.directory / f"{game_id}.jsonl").write_bytes(record)
            written += 1
    print(f"tournament {args.tournament_id}: {written} game records written to {args.directory}")
    if not progress.finished:  # the games of sets still to play come with a later export
        unsettled = progress.total - progress.done - progress.failed
        print(
            f"note: the tournament is {t.state}, {unsettled} of its {progress.total} sets not "
            "played yet: export it again once `arena tournament status` says it is finished"
        )
    for why in damaged:
        print(f"arena tournament export: not written: {why}", file=sys.stderr)
    return 1 if damaged else 0


def _list(args: argparse.Namespace) -> int:
    from arena.storage import repo

    with _open() as db, db.session() as session:
        if args.json:
            from dashboard.queries.tournaments import tournament_list

            listed = tournament_list(session, 1, args.limit)["tournaments"]
            print(json.dumps(listed, indent=2))
            return 0
        tournaments = repo.list_tournaments(session, limit=args.limit)
        if not tournaments:
            print("no tournaments yet; create one with `arena tournament create`")
            return 0
        progresses = repo.tournaments_progress(session, tournaments)
        rows = [("ID", "FORMAT", "RULESET", "STATE", "SETS", "DONE", "CREATED")]
        for t in tournaments:
            progress = progresses[t.id]
            rows.append(
                (
                    t.id,
                    _format(session, t) + (" (nightly)" if t.nightly else ""),
                    t.ruleset,
                    t.state,
                    str(t.planned_sets),
                    f"{progress.done}" + (f" +{progress.failed} failed" if progress.failed else ""),
                    f"{t.created:%Y-%m-%d %H:%M}",
                )
            )
    print_table(rows)
    return 0


def _format(session: Session, t: Tournament) -> str:
    """ "round-robin", "gauntlet of name@version", or for a gauntlet of one opponent (what
    `arena match` plays) "match name@version vs name@version"."""
    from arena.storage import repo

    champion = repo.champion(session, t)
    if not champion:
        return t.format
    others = repo.opponents(session, t)
    if repo.tournament_kind(t.format, len(others) + 1) == "match":
        return f"match {champion} vs {others[0]}"
    return f"gauntlet of {champion}"


def count_sets(count: int) -> str:
    """ "1 set", "2 sets": the words `arena match` and `tournament status` count sets in."""
    return f"{count} set" if count == 1 else f"{count} sets"


def _sets(t: Tournament) -> str:
    """How many sets, and how many per pair; a match stopped early (SPRT) played fewer."""
    text = f"{count_sets(t.planned_sets)} ({t.sets_per_pair} per pair"
    if t.format == "gauntlet" and t.planned_sets < t.sets_per_pair:
        text += ", the rest unplayed: stopped early"
    return text + ")"


def progress_bar(done: int, failed: int, total: int, width: int = BAR_WIDTH) -> str:
    """`[#########.....x.......]` with done sets as #, failed as x; full only when all are
    (rounded down: 891 of 900 sets showed a full bar)."""
    if total <= 0:
        return "[" + " " * width + "]"
    full = width * done // total
    bad = width * (done + failed) // total - full
    return "[" + "#" * full + "x" * bad + "." * (width - full - bad) + "]"


def status_line(
    tournament: Tournament,
    progress: Progress,
    now: datetime | None = None,
    waiting: str | None = None,
    no_worker: str | None = None,
) -> str:
    """One line: bar, counts, percentage, elapsed and ETA (at the pace so far, while sets are
    being played), and why the queued sets wait if none is (`waiting`: repo.waiting_reason;
    `no_worker`: that no worker runs, see no_worker())."""
    # Sets played, as `tournament list` counts them: failed ones are not (they say so apart).
    pct = 100 * progress.done // progress.total if progress.total else 100
    parts = [
        progress_bar(progress.done, progress.failed, progress.total),
        f"{progress.done}/{progress.total} sets",
        f"{pct:3d}%",
    ]
    if progress.running:
        parts.append(f"{progress.running} running")
    if progress.failed:
        parts.append(f"{progress.failed} failed")
    now = now or datetime.now(UTC)
    parts += pace_words(*elapsed_and_eta(tournament.started, tournament.finished, progress, now))
    if progress.finished:
        parts.append(tournament.state)
    elif progress.silent_note is not None:
        parts.append(progress.silent_note)
    elif waiting:
        parts.append(f"waiting: {waiting}")
    elif progress.stalled:
        parts.append(no_worker or "waiting for a free worker")
    return "  ".join(parts)


def no_worker(database: str, queued: Sequence[str] = ()) -> str | None:
    """Why no set is played, if that is that no worker could take one: none listens on the
    queue, Redis is not there, they store sets in another database than `database`, the
    tournament's, or none of its `queued` sets has a job on the queue. None when a worker that
    could take one listens and there is one to take: it is busy."""
    from runner import queue, redis_conn

    connection = redis_conn.answering()
    if connection is None:
        return f"no worker can take a set: Redis ({redis_conn.describe()}) is not running"
    name = queue.queue_name()
    try:
        if not queue.workers_on(connection):
            return f"no worker listens on queue {name!r}: start one with `arena worker`"
        theirs = queue.foreign_databases(connection, database)
    except redis_conn.REDIS_DOWN:
        return f"no worker can take a set: Redis ({redis_conn.describe()}) stopped answering"
    if theirs:
        return (
            f"the workers on queue {name!r} store game sets in {', '.join(theirs)}, not in this "
            "tournament's database: start workers on this one"
        )
    try:
        jobless = len(queue.without_live_job(connection, queued)) if queued else 0
    except redis_conn.REDIS_DOWN:
        jobless = 0
    if queued and jobless == len(queued):
        # Idle workers, not busy ones: nothing for them to take until the reconciler queues it.
        sets, it = ("set", "it") if jobless == 1 else ("sets", "them")
        return (
            f"no job on queue {name!r} for its {jobless} queued {sets} (stored with "
            f"--no-enqueue, lost by Redis, or ended): a worker's reconciler queues {it} within "
            "--reconcile-every (15 s unless set)"
        )
    return None


def _status(args: argparse.Namespace) -> int:
    from arena.storage import repo
    from arena.storage.models import TournamentState
    from runner.tournament import retry_hint

    if args.json:
        return _status_json(args)
    final = (TournamentState.FINISHED.value, TournamentState.FAILED.value)
    tty = sys.stdout.isatty()
    with _open() as db:
        with db.session() as session:
            t = repo.get_tournament(session, args.tournament_id)
            print(
                f"tournament {t.id}: {_format(session, t)}, ruleset {t.ruleset}, seed {t.seed}, "
                f"{_sets(t)}"
            )
        last = ""
        while True:
            with db.session() as session:
                t = repo.get_tournament(session, args.tournament_id)
                progress = repo.tournament_progress(session, t.id)
                waiting = repo.waiting_reason(session, t.id)
                quiet = progress.stalled and not waiting and not progress.silent
                queued = _queued_sets(session, t.id) if quiet else []
            idle = no_worker(db.shown_url, queued) if quiet else None
            line = status_line(t, progress, waiting=waiting, no_worker=idle)
            if line != last:
                print(
                    ("\r\x1b[2K" if tty and last else "") + line,
                    end="" if tty else "\n",
                    flush=True,
                )
                last = line
            # All sets settled is not quite the end: the worker of the last one marks the
            # tournament finished a moment later.
            if not args.follow or (progress.finished and t.state in final):
                break
            time.sleep(args.interval)
        if tty:
            print()
        if progress.failed:
            print(f"{count_sets(progress.failed)} failed: {retry_hint(t)}")
            _print_failures(db, t.id)
        if progress.finished:
            _print_results(db, t.id)
            _print_match_test(db, t.id)
    return 0


def _queued_sets(session: Session, tournament_id: str) -> list[str]:
    from arena.storage import repo

    return [s.id for s in repo.list_game_sets(session, tournament_id, state="queued")]


def _status_json(args: argparse.Namespace) -> int:
    """The dashboard API's status object, once, or with --follow a line each time it changes
    until the tournament is finished or failed."""
    from dashboard.queries.tournaments import tournament_status

    last = None
    with _open() as db:
        while True:
            with db.session() as session:
                status = tournament_status(session, args.tournament_id)
            if status != last:
                print(json.dumps(status, indent=None if args.follow else 2), flush=True)
                last = status
            if not args.follow or status["state"] in ("finished", "failed"):
                return 0
            time.sleep(args.interval)


def _print_match_test(db: Database, tournament_id: str) -> None:
    """An `arena match`'s SPRT verdict, as the match printed it (and its page shows)."""
    from arena.storage import repo
    from dashboard.queries.tournaments import match_test

    with db.session() as session:
        test = match_test(session, repo.get_tournament(session, tournament_id))
    if test is not None:  # printed once the match is over: undecided is for good
        print(f"SPRT: {test['verdict']} after {count_sets(test['sets'])} (LLR {test['llr']:.3f})")


def _print_failures(db: Database, tournament_id: str, most: int = 3) -> None:
    """Why sets failed: each different error once, with how many sets it failed."""
    from collections import Counter

    from arena.storage import repo

    with db.session() as session:
        errors = Counter(
            s.error for s in repo.list_game_sets(session, tournament_id, state="failed")
        )
    for error, sets in errors.most_common(most):
        print(f"  {count_sets(sets)}: {error or 'no reason recorded'}")
    if len(errors) > most:
        print(f"  and {len(errors) - most} other error(s): the dashboard lists each set's")


def _print_results(db: Database, tournament_id: str) -> None:
    """Each bot's points in the tournament's finished sets, best first, and its faults (a bot
    that faults without forfeiting only looks weak in the points)."""
    from arena.storage import repo

    scores: dict[tuple[str, int], list[float]] = {}  # by (ref, version id)
    with db.session() as session:
        faults = repo.fault_counts(session, tournament_id)
        for s in repo.list_game_sets(session, tournament_id, state="done"):
            if s.score_a is None:
                continue
            for bot, points in ((s.bot_a, s.score_a), (s.bot_b, 2.0 - s.score_a)):
                entry = scores.setdefault((bot.ref, bot.id), [0.0, 0.0])
                entry[0] += points
                entry[1] += 2
    if not scores:
        return
    print("results (points out of games played):")
    for (ref, version), (points, games) in sorted(
        scores.items(), key=lambda kv: -kv[1][0] / kv[1][1]
    ):
        faulted = f"  {faults[version]} fault(s)" if version in faults else ""
        print(f"  {ref:30s} {points:5.1f}/{games:<4.0f} {100 * points / games:5.1f}%{faulted}")
