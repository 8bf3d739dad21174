"""The `arena` command: one subcommand module per area, each imported only when used."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Sequence

from arena.config import database_url, hide_password
from arena.errors import ArenaError
from runner.pids import keep_private

# Each module defines `register(subparsers)`, adding its subcommands with `func` set.
# Modules import their heavy dependencies (grpc, redis, flask, sqlalchemy) inside `func`.
COMMAND_MODULES = [
    "arena.commands.local",
    "arena.commands.bots",
    "arena.commands.tournament",
    "arena.commands.worker",
    "arena.commands.scheduler",
    "arena.commands.ratings",
    "arena.commands.match",
    "arena.commands.gamemaster",
    "arena.commands.stdio_agent",
    "arena.commands.watch",
    "arena.commands.dashboard",
    "arena.commands.demo",
    "arena.commands.db",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena", description="Sixty-three Arena: play, rank and replay card-game bots."
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


class _Version(argparse.Action):
    """--version: the arena's, and those of what bots and outside tools depend on (read only
    when asked: the protocol's module loads the generated gRPC code)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            help="print the arena's version, its protocols' and its record format's",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version

        from arena.bridge.messages import JSON_PROTOCOL_VERSION
        from arena.record import RECORD_FORMAT
        from arena.wire import PROTOCOL_VERSION, SERVICE

        print(
            f"arena {version('sixtythree-arena')}: gRPC {SERVICE} protocol_version "
            f"{PROTOCOL_VERSION}, stdio json_protocol {JSON_PROTOCOL_VERSION}, records "
            f"{RECORD_FORMAT}"
        )
        parser.exit()


def main(argv: Sequence[str] | None = None) -> int:
    keep_private()  # its environment holds the arena's secrets; bots may run as this user
    try:
        try:
            return _run(argv)
        finally:
            # Here, not at exit: stdout to a pipe is buffered (unless PYTHONUNBUFFERED), so a
            # reader gone often shows only at the last flush, which at exit can only print
            # "Exception ignored ... BrokenPipeError" and exit 120.
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader of our output went away (`arena watch ID | head`): stop quietly, and point
        # stdout at /dev/null so that the flush at exit does not fail again (Python's docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


# Options whose value may start with a minus that argparse would take for an option of its own
# (`--sprt -10,10`: only a bare negative number is known to it as a value).
_SIGNED_VALUES = ("--sprt",)


def _attach_signed_values(argv: Sequence[str]) -> list[str]:
    """`--sprt -10,10` as `--sprt=-10,10`; nothing after a `--`, which starts a bot's command."""
    out: list[str] = []
    rest = iter(argv)
    for arg in rest:
        if arg == "--":
            return [*out, arg, *rest]
        value = next(rest, None) if arg in _SIGNED_VALUES else None
        if value is None:
            out.append(arg)
        elif re.fullmatch(r"-\d[\d.]*,.*", value):
            out.append(f"{arg}={value}")
        else:
            out += [arg, value]
    return out


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(
        _attach_signed_values(sys.argv[1:] if argv is None else argv)
    )
    if unknown:  # argparse would show the top-level usage, which does not list them
        _chosen(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.func(args) or 0)
    except ArenaError as exc:
        # A row not found: the database looked in is the first suspect (a command run from
        # another directory makes a new, empty one).
        where = f" in {hide_password(database_url())}" if _looked_in_vain(exc) else ""
        print(f"arena {args.command}: {exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"arena {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.filename is None:  # not a file the user named: a bug, whose traceback helps
            raise
        # A path given on the command line that cannot be used (a directory where a file is
        # to be written, a file where a directory is): say which, not a traceback.
        print(f"arena {args.command}: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except Exception as exc:  # after OSError, which it would otherwise take first
        gone = _database_gone(exc)
        if gone is None:
            raise
        print(f"arena {args.command}: {gone}", file=sys.stderr)
        return 2


def _database_gone(exc: Exception) -> str | None:
    """What to say of a database that stopped answering during the command (restarted, its
    connection ended: `tournament status --follow` outlives such things), or None for any other
    error. Opening one that does not answer is said where it is opened (DatabaseUnavailable)."""
    if "sqlalchemy" not in sys.modules:  # most commands never import it
        return None
    from sqlalchemy.exc import OperationalError

    from arena.storage.database import driver_reason

    if not isinstance(exc, OperationalError):
        return None
    return (
        f"the database at {hide_password(database_url())} did not answer "
        f"({driver_reason(exc)}); try again once it answers"
    )


def _looked_in_vain(exc: ArenaError) -> bool:
    """Whether storage found no such row, nor one like it (imported here: most commands never
    open it)."""
    from arena.storage.errors import NotFound

    return isinstance(exc, NotFound) and not exc.near


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command's own parser, as far as `args` chose one: `arena bots add`'s for
    `arena bots add DIR --bogus`, so its error shows the options that command does take."""
    while True:
        subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = subcommands and getattr(args, subcommands[0].dest, None)
        if not name:
            return parser
        parser = subcommands[0].choices[name]


if __name__ == "__main__":
    sys.exit(main())
