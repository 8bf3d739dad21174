"""`arena stdio-agent -- COMMAND...`: play a seat with a bot that speaks JSON lines on stdio."""

from __future__ import annotations

import argparse

from arena.errors import ArenaError

_EPILOG = """\
The bridge is an agent like any other: start it with ARENA_GAME_MASTER and ARENA_SEAT_TOKEN.
It runs COMMAND, writes one JSON object per line to the bot's stdin (welcome, decision, event,
fault, game_end) and reads one reply per line from its stdout, e.g.
  {"request_id": 7, "action": "play KH", "note": "pulling trumps"}
The bot's stderr passes through. See docs/protocol-json.md for every field.

examples:
  arena stdio-agent -- python3 sample_agents/stdio/bot.py
  arena stdio-agent --no-events -- sh sample_agents/stdio/fallback.sh

exit codes: 0 the game ended, 2 no seat token, 3 the seat was refused, 4 the game master was
unreachable, 5 the connection was lost, 6 the bot exited with 0 (or did not start) before the
end. A bot that failed before the end (an exit code, a signal) is passed on: the bridge ends
the same way.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stdio-agent",
        help="play a seat with a bot that reads and writes JSON lines (any language)",
        description="Play one seat through a child process that speaks the stdio JSON protocol.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--no-events",
        dest="events",
        action="store_false",
        help="do not send public event lines (decisions are self-contained anyway)",
    )
    p.add_argument(
        "--name", default="", help="agent name in the Hello (default: stdio: + the command)"
    )
    # Not dest "command": that is the subcommand's name, which error messages start with.
    p.add_argument(
        "bot_command", metavar="COMMAND", nargs=argparse.REMAINDER, help="the bot command, after --"
    )
    p.set_defaults(func=_stdio_agent)


def _stdio_agent(args: argparse.Namespace) -> int:
    from arena.bridge.stdio import run_from_env

    command = list(args.bot_command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ArenaError("give the bot's command after --, e.g. -- python3 bot.py")
    return run_from_env(command, events=args.events, agent_name=args.name)
