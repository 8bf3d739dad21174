"""`arena ratings`: the rating table of a ruleset (Bradley–Terry with 95% CI, Elo, games)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from arena.commands.table import print_table

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ratings = subparsers.add_parser("ratings", help="show the rating table of a ruleset")
    ratings.add_argument("--ruleset", default="standard", help="ruleset (default standard)")
    ratings.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ratings.add_argument(
        "--recompute",
        action="store_true",
        help="rebuild the table from all stored games first, in the order they were rated",
    )
    ratings.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from arena.config import database_url
    from arena.ratings import rank_key
    from arena.storage import open_database, repo
    from runner.ratings_update import update_ratings

    with open_database(database_url()) as db, db.session() as session:
        ruleset = _stored_ruleset(session, args.ruleset)
        if args.recompute:
            update_ratings(session, ruleset, from_scratch=True)
        rows = repo.get_ratings(session, ruleset)
        # As the leaderboard ranks them (dashboard/queries/leaderboard.py), ties included.
        rows.sort(
            key=lambda r: rank_key(r.bt, r.elo, r.bot_version.bot.name, r.bot_version.version)
        )
        if args.json:
            out = [
                {
                    "rank": i,
                    "bot": r.bot_version.ref,
                    "bt": r.bt,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "elo": r.elo,
                    "games": r.games,
                    "score": r.score,
                    "forfeits": r.forfeits,
                    "disabled": r.bot_version.bot.disabled,
                }
                for i, r in enumerate(rows, 1)
            ]
            print(json.dumps(out, indent=2))
            return 0
        if not rows:
            rated = repo.rated_rulesets(session)
            known = f"; rulesets with ratings: {', '.join(rated)}" if rated else ""
            # The database named: a mistyped ARENA_DATABASE_URL reads a new, empty one.
            print(f"no rated games under ruleset {ruleset!r} in {db.shown_url} yet{known}")
            return 0
        table = [("RANK", "BOT", "RATING", "95% CI", "ELO", "GAMES", "SCORE", "FORFEITS")]
        for i, r in enumerate(rows, 1):
            if r.bt is not None and r.ci_low is not None and r.ci_high is not None:
                half = (r.ci_high - r.ci_low) / 2
                rating, ci = f"{r.bt:.0f} ± {half:.0f}", f"[{r.ci_low:.0f}, {r.ci_high:.0f}]"
            else:
                rating, ci = "-", "-"
            table.append(
                (
                    str(i),
                    r.bot_version.ref + (" (disabled)" if r.bot_version.bot.disabled else ""),
                    rating,
                    ci,
                    f"{r.elo:.0f}",
                    str(r.games),
                    f"{100 * r.score:.1f}%",
                    str(r.forfeits),
                )
            )
    print(f"ratings, ruleset {ruleset}")
    print_table(table)
    return 0


def _stored_ruleset(session: Session, text: str) -> str:
    """The ruleset as tournaments store it (ruleset_key), however it is written; as written if
    the database has games or ratings under that spelling (stored by an older arena, say).
    Otherwise it is refused as `arena play` refuses it: a typo or a cut-off JSON object showed
    'no rated games' and exited 0, as if the ruleset were merely unplayed."""
    from arena.errors import ArenaError
    from arena.rulesets import ruleset_key
    from arena.storage import repo

    try:
        return ruleset_key(text)
    except ArenaError:
        if text in repo.rated_rulesets(session) or text in repo.unrated_rulesets(session):
            return text
        raise
