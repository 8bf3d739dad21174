"""`arena rulesets`, `arena play` and `arena verify`: the engine from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from arena.errors import ArenaError

if TYPE_CHECKING:
    from arena.game import Game


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("rulesets", help="list the rulesets and their parameters")
    p.set_defaults(func=_rulesets)

    p = sub.add_parser(
        "play",
        help="play one game and print it hand by hand",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Play one game of Sixty-three and write its record.\n\n"
            "Seats are given with --players as four comma-separated built-in players\n"
            "(random, greedy); seat 0 and 2 are team 0, seats 1 and 3 team 1."
        ),
    )
    p.add_argument("--ruleset", default="standard", help="ruleset name (see `arena rulesets`)")
    p.add_argument("--seed", type=int, default=0, help="seed of the deals (default 0)")
    p.add_argument("--first-dealer", type=int, choices=range(4), help="default: from the seed")
    p.add_argument(
        "--players",
        default="greedy,random,greedy,random",
        help="four comma-separated players for seats 0-3 (default greedy,random,greedy,random)",
    )
    p.add_argument("--output", type=Path, help="write the record (JSON lines) to this file")
    p.add_argument(
        "--mirror",
        action="store_true",
        help="also play the same deals with the partnerships swapped (a duplicate pair)",
    )
    p.set_defaults(func=_play)

    p = sub.add_parser("verify", help="re-play game records and check every line")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.set_defaults(func=_verify)


def _rulesets(args: argparse.Namespace) -> int:
    from arena.rulesets import RULESETS

    for ruleset in RULESETS.values():
        params = ruleset.parameters()
        params.pop("name")
        points = params.pop("points")
        print(f"{ruleset.name}")
        print("  " + ", ".join(f"{k} {v}" for k, v in params.items()))
        print("  trump points: " + " ".join(f"{k}={v}" for k, v in points.items() if v))
    return 0


def _play(args: argparse.Namespace) -> int:
    from arena.play import play_game
    from arena.record import game_record
    from arena.rulesets import get_ruleset
    from arena.summary import print_game, print_side_by_side
    from sample_agents import builtin_players

    ruleset = get_ruleset(args.ruleset)
    names = [n.strip() for n in args.players.split(",")]
    known = builtin_players()
    if len(names) != 4 or any(n not in known for n in names):
        raise ArenaError(
            f"--players needs four of {', '.join(known)} separated by commas, got {args.players!r}"
        )
    layouts = [names] + ([[names[1], names[0], names[3], names[2]]] if args.mirror else [])
    games, records = [], []
    for g, seats in enumerate(layouts):
        players = [known[n](f"{args.seed}/{g}/{i}") for i, n in enumerate(seats)]
        game = play_game(ruleset, args.seed, players, args.first_dealer)
        games.append(game)
        records.append(game_record(game, seats, f"local-{args.seed}-{g}"))
    if args.mirror:
        titles = [f"game 1 (seed {args.seed})", "game 2 (partnerships swapped)"]
        print_side_by_side([g.events for g in games], layouts, titles)
        _print_duplicate(games, layouts)
    else:
        print_game(games[0].events, names, f"{ruleset.name}, seed {args.seed}")
    if args.output:
        args.output.write_text(records[0], encoding="utf-8")
        written = [args.output]
        if args.mirror:
            written.append(args.output.with_name(f"{args.output.stem}.mirror{args.output.suffix}"))
            written[1].write_text(records[1], encoding="utf-8")
        print("record written to " + " and ".join(str(p) for p in written))
    return 0


def _print_duplicate(games: list[Game], layouts: list[list[str]]) -> None:
    """Per player name: its team's score summed over both games (luck of the deal cancels)."""
    totals: dict[str, int] = {}
    for game, seats in zip(games, layouts, strict=True):
        for seat, name in enumerate(seats[:2]):
            key = f"{name}+{seats[seat + 2]}"
            totals[key] = totals.get(key, 0) + game.scores[seat % 2]
    print("duplicate total: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


def _verify(args: argparse.Namespace) -> int:
    from arena.verify import verify_text

    failed = 0
    for path in args.files:
        try:
            v = verify_text(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            failed += 1
            continue
        except ArenaError as exc:
            print(f"FAIL {exc}", file=sys.stderr)
            failed += 1
            continue
        winner = "draw" if v.winner is None else f"team {v.winner} wins"
        print(
            f"OK   {path}: {v.ruleset}, {v.hands} hands, {v.decisions} decisions, "
            f"{v.faults} faults, {winner} {v.scores[0]}-{v.scores[1]} ({v.reason})"
        )
    return 1 if failed else 0
