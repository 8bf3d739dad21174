"""`arena watch GAME_ID`: follow a game's public events as they happen, as a spectator."""

from __future__ import annotations

import argparse

from arena.config import env

_EPILOG = """\
A spectator sees what every seat may see: who did what, cards given face up, cards played, and
counts of discards and draws; never a hand, the stock or a note. Game ids are in the game
master's log ("game ID opened"), and a game id it does not have is refused naming the newest
games in progress. Watching an ended game (kept for an hour) prints its events.

examples:
  arena watch 3f2a9c0d1e --game-master 127.0.0.1:50051
  arena watch 3f2a9c0d1e --json    # event lines as the stdio protocol has them (protocol-json.md)
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "watch",
        help="follow a game's public events live, as a spectator",
        description="Print a game's public events as the game master publishes them (Watch).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("game_id", metavar="GAME_ID", help="the game to watch")
    p.add_argument(
        "--game-master",
        metavar="HOST:PORT",
        help="the game master (default: ARENA_GAME_MASTER, 127.0.0.1:50051)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=_watch)


def _watch(args: argparse.Namespace) -> int:
    from arena.bridge import messages
    from arena.gamemaster.client import GameMasterClient
    from arena.spectator import describe

    with GameMasterClient(args.game_master or env("ARENA_GAME_MASTER")) as client:
        for event in client.watch(args.game_id):
            line = messages.dumps(messages.event(event)) if args.json else describe(event)
            print(line, flush=True)
    return 0
