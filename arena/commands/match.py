"""`arena match A B`: duplicate sets between two bots until a sequential test decides."""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from typing import TYPE_CHECKING

from arena.commands.signals import ignore_stopping, stop_like_ctrl_c
from arena.commands.types import whole_number
from runner.plan import MAX_SETS

if TYPE_CHECKING:
    from arena.ratings import Sprt
    from arena.storage import Database


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    match = subparsers.add_parser(
        "match", help="play A against B in duplicate sets; stop when the SPRT decides"
    )
    match.add_argument("a", metavar="A", help="bot name or name@version (the tested one)")
    match.add_argument("b", metavar="B", help="bot name or name@version (the baseline)")
    match.add_argument(
        "--sets",
        type=whole_number(1, MAX_SETS),
        default=100,
        help="at most this many sets (default 100)",
    )
    match.add_argument(
        "--sprt",
        default="0,20",
        help="elo0,elo1: H0 'A is at most elo0 stronger', H1 'A is elo1 stronger' (default 0,20)",
    )
    match.add_argument(
        "--alpha", type=float, default=0.05, help="chance of accepting H1 when H0 holds (0.05)"
    )
    match.add_argument(
        "--beta", type=float, default=0.05, help="chance of accepting H0 when H1 holds (0.05)"
    )
    match.add_argument(
        "--ruleset",
        default="standard",
        help="a ruleset name or JSON object, as for tournament create (default standard)",
    )
    match.add_argument("--seed", type=int, default=None, help="seed of the deals (default: random)")
    match.add_argument(
        "--queue",
        action="store_true",
        help="play on the queue's workers instead of in this process with a local game master",
    )
    match.set_defaults(func=_run)


def _parse_sprt(text: str) -> tuple[float, float]:
    from arena.config import ConfigError

    try:
        elo0, elo1 = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--sprt {text!r}: write it as elo0,elo1 (e.g. 0,20)") from None
    return elo0, elo1


def _run(args: argparse.Namespace) -> int:
    from arena.commands.tournament import count_sets, warn_of_bots
    from arena.config import database_url, unshared_database_note
    from arena.ratings import Sprt
    from arena.storage import open_database, repo
    from runner.queue import enqueuer_for
    from runner.tournament import create_tournament

    elo0, elo1 = _parse_sprt(args.sprt)
    sprt = Sprt(elo0, elo1, alpha=args.alpha, beta=args.beta)
    with open_database(database_url()) as db:
        enqueue = enqueuer_for(db.shown_url) if args.queue else None

        # A gauntlet of A against B: A is always the set's bot a, so score_a is A's points.
        tournament = create_tournament(
            db,
            format="gauntlet",
            bots=[args.a, args.b],
            sets=args.sets,
            ruleset=args.ruleset,
            seed=args.seed,
            enqueue=enqueue,
            in_process=not args.queue,  # so running workers leave its sets alone
            sprt={"elo0": elo0, "elo1": elo1, "alpha": args.alpha, "beta": args.beta},
        )
        warn_of_bots(db, [args.a, args.b])
        if args.queue and (note := unshared_database_note()):  # once it is stored
            print(note, file=sys.stderr)
        with db.session() as session:
            sets = repo.list_game_sets(session, tournament.id)
            set_ids = [s.id for s in sets]
            a_ref, b_ref = sets[0].bot_a.ref, sets[0].bot_b.ref
        print(
            f"match {tournament.id}: {a_ref} vs {b_ref}, up to {count_sets(len(set_ids))}, "
            f"SPRT elo0={elo0:g} elo1={elo1:g} alpha={args.alpha:g} beta={args.beta:g}, "
            f"bounds [{sprt.lower_bound:.3f}, {sprt.upper_bound:.3f}]"
        )
        follow = _follow_queue if args.queue else _play_here
        played: int | None = None
        stop_like_ctrl_c()  # `kill` and a closed terminal too
        try:
            played = follow(db, set_ids, sprt)
        finally:  # whatever ended the match, it finishes: no set is left pending
            ignore_stopping()
            _settle(db, tournament.id, set_ids, played, queued=args.queue)
    print(f"{sprt.verdict(a_ref, b_ref)} after {count_sets(sprt.sets)} (LLR {sprt.llr:.3f})")
    if sprt.sets == 0:  # every set failed: not a match that found no difference
        print(
            f"arena match: no set of {tournament.id} was played to a result; see the failures "
            "above",
            file=sys.stderr,
        )
        return 1
    return 0


def _report(
    db: Database, set_id: str, sprt: Sprt, index: int, total: int, score: float | None
) -> None:
    """The set's line, then why any of its games was forfeited (a bot that never ran, say)."""
    from arena.commands.forfeits import print_forfeits
    from arena.storage import repo

    shown = "failed" if score is None else f"{score:g}/2"
    print(
        f"set {index}/{total}: A {shown}  LLR {sprt.llr:+.3f}  "
        f"[{sprt.lower_bound:.3f}, {sprt.upper_bound:.3f}]  counts {list(sprt.counts)}",
        flush=True,
    )
    with db.session() as session:
        print_forfeits(session, repo.get_game_set(session, set_id).games, say=_indented)


def _indented(text: str) -> None:
    print(f"  {text}", flush=True)


def _play_here(db: Database, set_ids: list[str], sprt: Sprt) -> int:
    from arena.gamemaster.client import GameMasterClient
    from arena.gamemaster.server import start_in_thread
    from runner.gameset import GameAborted
    from runner.tournament import run_game_set

    token = secrets.token_hex(16)  # the bots it starts cannot end or read other games
    with (
        start_in_thread(admin_token=token) as gm,
        GameMasterClient(gm.address, admin_token=token) as client,
    ):
        for index, set_id in enumerate(set_ids, 1):
            while True:  # a set whose game was aborted is played again, as workers would
                try:
                    outcome = run_game_set(db, set_id, client)
                    break
                except GameAborted as exc:
                    _indented(f"{exc}; playing the set again")
            if outcome.score_a is not None:
                sprt.add(outcome.score_a)
            _report(db, set_id, sprt, index, len(set_ids), outcome.score_a)
            if sprt.decision is not None:
                return index
    return len(set_ids)


def _follow_queue(db: Database, set_ids: list[str], sprt: Sprt) -> int:
    """Feed sets to the test in plan order as workers finish them (they may finish out of order)."""
    from arena.storage import repo

    index = 0
    while index < len(set_ids):
        with db.session() as session:
            game_set = repo.get_game_set(session, set_ids[index])
            state, score = game_set.state, game_set.score_a
        if state not in ("done", "failed"):
            time.sleep(0.5)
            continue
        if state == "failed":
            score = None
        if score is not None:
            sprt.add(score)
        index += 1
        _report(db, set_ids[index - 1], sprt, index, len(set_ids), score)
        if sprt.decision is not None:
            break
    return index


def _settle(
    db: Database, tournament_id: str, set_ids: list[str], played: int | None, *, queued: bool
) -> None:
    """Settle the sets the match will not play, so that it finishes. After the SPRT decided
    (`played` sets), those not started leave the plan: the match did not need them. A match
    stopped (Ctrl-C, `kill`, an error; `played` None) marks what it did not play as failed."""
    from arena.commands.tournament import count_sets
    from arena.storage import repo
    from runner.tournament import finish_if_done

    unplayed = set_ids if played is None else set_ids[played:]
    with db.session() as session:
        if played is None:
            stopped = sum(
                repo.mark_set_failed(session, set_id, "not played: the match was stopped")
                for set_id in unplayed
            )
            print(
                f"arena match: stopped with {stopped} of {len(set_ids)} sets unplayed; "
                f"`arena tournament status {tournament_id}` shows what was played",
                file=sys.stderr,
            )
        else:  # a set a worker had already started plays on, and counts
            started = len(unplayed) - repo.drop_unstarted_sets(session, tournament_id, unplayed)
            if started:
                print(
                    f"note: {count_sets(started)} more had started on the workers when the test "
                    "decided: they are played to the end and count in the ratings, not in the "
                    "test"
                )
        finish_if_done(session, tournament_id)
    if queued and unplayed:
        from runner import redis_conn
        from runner.queue import fetch_job

        connection = redis_conn.connect()
        for set_id in unplayed:
            job = fetch_job(connection, set_id)
            if job is not None:
                job.cancel()
