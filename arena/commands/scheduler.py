"""`arena scheduler`: the one process that enqueues the nightly round robin (RQ's cron)."""

from __future__ import annotations

import argparse

from arena.commands.types import whole_number
from arena.config import VARIABLES
from runner.plan import MAX_SETS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scheduler = subparsers.add_parser(
        "scheduler", help="enqueue the nightly round robin on ARENA_NIGHTLY_CRON (one may run)"
    )
    scheduler.add_argument(
        "--cron",
        default=None,
        help="cron expression in UTC (default ARENA_NIGHTLY_CRON, itself "
        f"{VARIABLES['ARENA_NIGHTLY_CRON'][0]!r} unless set)",
    )
    scheduler.add_argument("--queue", default=None, help="queue name (default ARENA_QUEUE)")
    scheduler.add_argument(
        "--sets",
        type=whole_number(1, MAX_SETS),
        default=2,
        help="sets per pair each night (default 2)",
    )
    scheduler.add_argument(
        "--ruleset", default="standard", help="ruleset of the nightly games (default standard)"
    )
    scheduler.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from arena.rulesets import ruleset_key
    from runner.queue import queue_name
    from runner.scheduler import run_scheduler
    from runner.worker import setup_logging

    ruleset = ruleset_key(args.ruleset)  # now, not in a worker each night
    setup_logging()
    return run_scheduler(
        args.queue or queue_name(),
        cron=args.cron,
        kwargs={"sets": args.sets, "ruleset": ruleset},
    )
