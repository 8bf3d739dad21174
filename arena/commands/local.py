"""`arena rulesets`, `arena play` and `arena verify`: the engine from the command line."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arena.commands.types import whole_number
from arena.config import UINT32_MAX, why_no_directory
from arena.errors import ArenaError
from arena.exit_status import how_it_ended

if TYPE_CHECKING:
    from arena.local_match import MatchResult, SeatSpec
    from arena.rulesets import Ruleset
    from arena.wire import pb


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
            "(random, greedy), played in this process; or with --seat four times, in seat\n"
            "order, each a built-in name or any command line that starts an agent. Seats 0\n"
            "and 2 are team 0, seats 1 and 3 team 1.\n\n"
            "When a seat is a command (or with --processes), the game runs through a game\n"
            "master on 127.0.0.1 that this command starts and stops: each seat is its own\n"
            "process, started with ARENA_GAME_MASTER and ARENA_SEAT_TOKEN, and built-in\n"
            "names run as `python -m sample_agents.<name>_bot`. A leading `python` in a\n"
            "command means the arena's Python, a leading `arena` the arena's CLI."
        ),
        epilog=(
            "examples:\n"
            "  arena play --players greedy,random,greedy,random --seed 7\n"
            "  arena play --seat greedy --seat 'node sample_agents/js/agent.js' \\\n"
            "             --seat 'python -m sample_agents.greedy_bot' \\\n"
            "             --seat 'bot=arena stdio-agent -- python3 sample_agents/stdio/bot.py'\n"
            "  arena play --processes --players greedy,greedy,greedy,greedy --mirror\n"
            '  arena play --ruleset \'{"name": "standard", "max_hands": 3}\' --output g.jsonl'
        ),
    )
    p.add_argument(
        "--ruleset",
        default="standard",
        help="ruleset name (see `arena rulesets`) or a JSON object of parameters",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the deals (default 0)")
    p.add_argument("--first-dealer", type=int, choices=range(4), help="default: from the seed")
    p.add_argument(
        "--players",
        default=None,
        help="four comma-separated players for seats 0-3 (default greedy,random,greedy,random)",
    )
    p.add_argument(
        "--seat",
        action="append",
        metavar="NAME_OR_COMMAND",
        help="the player of the next seat (give it 4 times, seats 0-3): a built-in name or an "
        "agent command line, quoted; NAME=COMMAND names the seat in the record",
    )
    p.add_argument(
        "--processes",
        action="store_true",
        help="run every seat as a process through a local game master, built-in names too",
    )
    p.add_argument(
        "--decision-ms",
        type=whole_number(1, UINT32_MAX),
        help="process seats: time per decision (ARENA_DECISION_MS)",
    )
    p.add_argument(
        "--bank-ms",
        type=whole_number(0, UINT32_MAX),
        help="process seats: time bank per seat per game (ARENA_BANK_MS)",
    )
    p.add_argument(
        "--agent-logs",
        type=Path,
        metavar="DIR",
        help="process seats: keep each seat's output in DIR (default: a temporary directory)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="print each public event as it happens, as a spectator sees it (through the local "
        "game master: implies --processes)",
    )
    p.add_argument(
        "--output",
        type=Path,
        help="write the record (JSON lines) to this file; - for standard output (the table of "
        "hands then goes to standard error)",
    )
    p.add_argument(
        "--mirror",
        action="store_true",
        help="also play the same deals with the partnerships swapped (a duplicate pair)",
    )
    p.set_defaults(func=_play)

    p = sub.add_parser(
        "verify",
        help="re-play game records and check every line",
        description=(
            "Check game records against docs/spec/RECORD.md and docs/spec/RULES.md: the "
            "header's fields, every decision's legality, every hand_end and the game_end "
            "re-derived exactly (JSON types included), fault kinds, and each derived event line "
            "present (a record may leave any of them out). Names the file, hand, line and rule "
            "of the first mismatch; exits 1 if any file fails."
        ),
    )
    p.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="a record file; - for standard input"
    )
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
    args.record_stdout = None
    if str(args.output) != "-":
        return _play_games(args)
    if args.mirror:
        raise ArenaError(
            "--output - puts one record on standard output, and --mirror plays two games: "
            "give --output a file name (the mirror game's record goes beside it)"
        )
    args.record_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # standard output carries the record alone
        return _play_games(args)


def _play_games(args: argparse.Namespace) -> int:
    from arena.play import play_game
    from arena.record import game_record
    from arena.rulesets import parse_ruleset
    from arena.summary import print_game, print_side_by_side
    from sample_agents import builtin_players

    _check_paths(args)
    ruleset = parse_ruleset(args.ruleset)
    known = builtin_players()
    if args.seat is not None:
        if args.players is not None:
            raise ArenaError("give the seats with --players or with --seat, not both")
        if len(args.seat) != 4:
            raise ArenaError(f"--seat must be given 4 times (seats 0-3), got {len(args.seat)}")
        names = list(args.seat)
        for name in names:
            if name not in known and _no_such_program(name):  # a built-in's name mistyped?
                raise ArenaError(
                    f"--seat {name!r} is neither a built-in player ({', '.join(known)}) nor a "
                    "program on PATH (registered bots play with `arena match A B`)"
                )
    else:
        players = args.players or "greedy,random,greedy,random"
        names = [n.strip() for n in players.split(",")]
        if len(names) != 4 or any(n not in known for n in names):
            raise ArenaError(
                f"--players needs four of {', '.join(known)} separated by commas, got {players!r}"
            )
    if args.processes or args.watch or any(n not in known for n in names):
        return _play_processes(args, ruleset, names, set(known))
    layouts = [names] + ([[names[1], names[0], names[3], names[2]]] if args.mirror else [])
    games, records = [], []
    for g, seats in enumerate(layouts):
        # Seed 0, as every seat's process has (`--processes`, and workers): the same game either
        # way, and a tournament's game played again here with its seed and first dealer.
        players = [known[n](0) for n in seats]
        game = play_game(ruleset, args.seed, players, args.first_dealer)
        games.append(game)
        records.append(game_record(game, seats, f"local-{args.seed}-{g}"))
    if args.mirror:
        titles = [f"game 1 (seed {args.seed})", "game 2 (partnerships swapped)"]
        print_side_by_side([g.events for g in games], layouts, titles)
        _print_duplicate([g.scores for g in games], layouts)
    else:
        print_game(games[0].events, names, f"{ruleset.name}, seed {args.seed}")
    _write_records(args, records)
    return 0


def _check_paths(args: argparse.Namespace) -> None:
    """Before the games: a record that cannot be written was lost after them."""
    if args.output is not None:
        if args.output.is_dir():
            raise ArenaError(f"--output {args.output} is a directory; give a file name")
        if not args.output.parent.is_dir():
            raise ArenaError(f"--output {args.output}: no directory {args.output.parent}")
    if args.agent_logs is not None:
        try:
            args.agent_logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            why = why_no_directory(args.agent_logs, exc)
            raise ArenaError(f"--agent-logs {args.agent_logs}: {why}; give a directory") from None


def _no_such_program(seat: str) -> bool:
    """Whether a one-word seat command (no NAME=) names no program: not a path, not on PATH,
    not the arena's own (`python`, `arena`)."""
    import shutil

    from arena.interpreter import arena_command

    word = seat.strip()
    if not word or any(c in word for c in " =/"):
        return False
    return arena_command([word]) == [word] and shutil.which(word) is None


def _play_processes(
    args: argparse.Namespace, ruleset: Ruleset, names: list[str], builtins: set[str]
) -> int:
    """The game(s) through a local game master, one agent process per seat."""
    import tempfile

    from arena.gamemaster.policy import GameLimits
    from arena.local_match import GameSpec, LocalGameMaster, builtin_seat, command_seat

    specs = [builtin_seat(n) if n in builtins else command_seat(n) for n in names]
    layouts = [specs] + ([[specs[1], specs[0], specs[3], specs[2]]] if args.mirror else [])
    games = [
        GameSpec(ruleset, args.seed, seats, args.first_dealer, f"local-{args.seed}-{g}")
        for g, seats in enumerate(layouts)
    ]
    limits = GameLimits.from_env(connect_ms=30_000)
    limits = limits.with_overrides(decision_ms=args.decision_ms, bank_ms=args.bank_ms)
    on_event = _print_event(several=len(games) > 1) if args.watch else None
    with tempfile.TemporaryDirectory(prefix="arena-play-") as scratch:
        with LocalGameMaster(limits) as gm:
            results = gm.play(games, log_dir=args.agent_logs or Path(scratch), on_event=on_event)
        return _report_processes(args, ruleset, layouts, results)


def _print_event(several: bool) -> Callable[[int, pb.GameEvent], None]:
    """What --watch prints for each event (games told apart when several run at once)."""
    from arena.spectator import describe

    def show(number: int, event: pb.GameEvent) -> None:
        prefix = f"game {number + 1} " if several else ""
        print(prefix + describe(event), flush=True)

    return show


def _report_processes(
    args: argparse.Namespace,
    ruleset: Ruleset,
    layouts: list[list[SeatSpec]],
    results: list[MatchResult],
) -> int:
    import json

    from arena.agent import EXIT_REFUSED
    from arena.record import record_lines
    from arena.summary import print_game, print_side_by_side

    events = [[json.loads(line) for line in record_lines(r.outcome.record)[1:]] for r in results]
    seat_names = [[s.name for s in seats] for seats in layouts]
    if args.mirror:
        titles = [f"game 1 (seed {args.seed})", "game 2 (partnerships swapped)"]
        print_side_by_side(events, seat_names, titles)
        _print_duplicate([r.outcome.scores for r in results], seat_names)
    else:
        print_game(events[0], seat_names[0], f"{ruleset.name}, seed {args.seed}, processes")
    failed = False
    for g, result in enumerate(results):
        outcome = result.outcome
        failed |= outcome.reason == "aborted"
        for seat, report in enumerate(outcome.seats):
            code = result.exit_codes[seat]
            forfeited = outcome.reason == "forfeit" and seat == outcome.forfeit_seat
            if report.faults == 0 and code == 0 and report.connected and not forfeited:
                continue
            # Another seat's forfeit ended the game before this one dialled in; or other
            # seats gone ended it as aborted, and this one was refused when it came (its
            # token's game over), or not yet there: not its own failure.
            refused = outcome.reason == "aborted" and code in (EXIT_REFUSED, None)
            ended_first = outcome.reason == "forfeit" or refused
            if not report.connected and ended_first and not forfeited:
                print(f"game {g + 1} seat {seat} ({seat_names[g][seat]}): the game ended first")
                continue
            kinds = ", ".join(f"{n} {k}" for k, n in report.faults_by_kind.items() if n)
            print(
                f"game {g + 1} seat {seat} ({seat_names[g][seat]}): "
                + ("never connected, " if not report.connected else "")
                + f"{report.faults} fault(s){f' ({kinds})' if kinds else ''}, "
                + (how_it_ended(code) if code is not None else "still running at the end")
            )
            for line in result.stderr(seat).splitlines()[-5:]:
                print(f"    | {line}")
        if outcome.detail:
            print(f"game {g + 1}: {outcome.reason}: {outcome.detail}")
    _write_records(
        args, [None if r.outcome.reason == "aborted" else r.outcome.record for r in results]
    )
    return 1 if failed else 0


def _write_records(args: argparse.Namespace, records: Sequence[str | None]) -> None:
    """Write each game's record (the mirror game's beside it); None for an aborted game, which
    has no result and so no record (RECORD.md: a record ends with a finished game's result)."""
    if not args.output:
        return
    if args.record_stdout is not None:  # --output -
        if records[0] is None:
            print("no record written: the game was aborted, so it has no result")
        else:
            with _writing_record("standard output", []):
                args.record_stdout.write(records[0])
                args.record_stdout.flush()
        return
    paths = [args.output, args.output.with_name(f"{args.output.stem}.mirror{args.output.suffix}")]
    written: list[str] = []
    for path, record in zip(paths, records, strict=False):
        if record is None:
            print(f"no record written to {path}: the game was aborted, so it has no result")
        else:
            with _writing_record(str(path), written):
                path.write_text(record, encoding="utf-8")
            written.append(str(path))
    if written:
        print("record written to " + " and ".join(written))


@contextlib.contextmanager
def _writing_record(where: str, written: Sequence[str]) -> Iterator[None]:
    """A record that cannot be written (a full disk, say) is an error that says what to do,
    and which records were written before it."""
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away: cli.main stops quietly
    except OSError as exc:
        done = f" ({' and '.join(written)} was written)" if written else ""
        raise ArenaError(
            f"could not write the record to {where}: {exc.strerror or exc}{done}; "
            "run again with another --output (the same --seed deals the same cards)"
        ) from exc


def _print_duplicate(scores: Sequence[Sequence[int]], layouts: list[list[str]]) -> None:
    """Per player name: its team's score summed over both games (luck of the deal cancels)."""
    totals: dict[str, int] = {}
    for game_scores, seats in zip(scores, layouts, strict=True):
        for seat, name in enumerate(seats[:2]):
            key = f"{name}+{seats[seat + 2]}"
            totals[key] = totals.get(key, 0) + game_scores[seat % 2]
    print("duplicate total: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


def _verify(args: argparse.Namespace) -> int:
    from arena.summary import outcome
    from arena.verify import read_record, verify_text

    failed = 0
    for path in args.files:
        name = "standard input" if str(path) == "-" else str(path)
        try:
            v = verify_text(read_record(path), name)
        except OSError as exc:
            print(f"{name}: cannot read: {exc.strerror}", file=sys.stderr)
            failed += 1
            continue
        except UnicodeDecodeError as exc:  # RECORD.md: records are UTF-8 text
            print(f"FAIL {name}: not UTF-8 text (byte {exc.start}: {exc.reason})", file=sys.stderr)
            failed += 1
            continue
        except ArenaError as exc:
            print(f"FAIL {exc}", file=sys.stderr)
            failed += 1
            continue
        print(
            f"OK   {name}: {v.ruleset}, {v.hands} hands, {v.decisions} decisions, "
            f"{v.faults} faults, {outcome(v.winner, v.scores, v.reason)}"
        )
    return 1 if failed else 0
