"""`arena gamemaster`: run the game master that agents dial into (gRPC)."""

from __future__ import annotations

import argparse
import logging

from arena.commands.types import whole_number
from arena.config import UINT32_MAX, ConfigError, env, listen_address


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "gamemaster",
        help="run the game master (gRPC) that agents play through",
        description=(
            "Serve the GameMaster gRPC service (proto/sixtythree/v1/arena.proto) with health "
            "checking and reflection. SIGTERM or Ctrl-C stops accepting, ends games in "
            "progress as aborted and exits 0. Time and fault limits default to ARENA_DECISION_MS, "
            "ARENA_BANK_MS and ARENA_FAULT_LIMIT; OpenGame may override them per game."
        ),
    )
    p.add_argument(
        "--listen",
        default=None,
        metavar="HOST:PORT",
        help="address to serve on (default: ARENA_GAME_MASTER, 127.0.0.1:50051; port 0 = any)",
    )
    p.add_argument(
        "--socket",
        default=None,
        metavar="PATH",
        help="also serve on this Unix socket, for agents with no network: containers (which "
        "dial gamemaster.sock in the directory ARENA_CONTAINER_SOCKET names) and the process "
        "agents of workers given the same ARENA_GAME_MASTER_SOCKET (default: "
        "ARENA_GAME_MASTER_SOCKET; empty = none)",
    )
    p.add_argument(
        "--decision-ms",
        type=whole_number(1, UINT32_MAX),
        help="time per decision (default ARENA_DECISION_MS)",
    )
    p.add_argument(
        "--bank-ms",
        type=whole_number(0, UINT32_MAX),
        help="time bank per seat per game (default ARENA_BANK_MS)",
    )
    p.add_argument(
        "--fault-limit",
        type=whole_number(1, UINT32_MAX),
        help="faults before a forfeit (ARENA_FAULT_LIMIT)",
    )
    p.add_argument(
        "--connect-ms",
        type=whole_number(1, UINT32_MAX),
        help="how long seats have to connect after OpenGame (default 60000)",
    )
    p.add_argument(
        "--max-games", type=whole_number(1, 1_000_000), help="games open at once (default 2000)"
    )
    p.add_argument(
        "--admin-token",
        default=None,
        help="require this token on OpenGame/AwaitGame/AbortGame/ForfeitSeat (default: "
        "ARENA_ADMIN_TOKEN; empty = no check, for a game master only the workers can reach)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="logging level (default INFO)",
    )
    p.set_defaults(func=_gamemaster)


def _gamemaster(args: argparse.Namespace) -> int:
    from arena.gamemaster.policy import GameLimits
    from arena.gamemaster.server import DEFAULT_MAX_GAMES, serve

    logging.basicConfig(
        level=args.log_level,
        format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    try:
        limits = GameLimits.from_env().with_overrides(
            decision_ms=args.decision_ms,
            bank_ms=args.bank_ms,
            fault_limit=args.fault_limit,
            connect_ms=args.connect_ms,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    admin_token = env("ARENA_ADMIN_TOKEN") if args.admin_token is None else args.admin_token
    # Checked first: gRPC would misread some (a port above 65535).
    listen_address(args.listen, "ARENA_GAME_MASTER")
    address = args.listen or env("ARENA_GAME_MASTER")
    try:
        return serve(
            address,
            limits=limits,
            admin_token=admin_token or None,
            max_games=args.max_games or DEFAULT_MAX_GAMES,
            socket_path=(env("ARENA_GAME_MASTER_SOCKET") if args.socket is None else args.socket)
            or None,
        )
    except OSError as exc:  # a port taken or not this machine's; a SocketUnusable
        raise ConfigError(str(exc)) from None
