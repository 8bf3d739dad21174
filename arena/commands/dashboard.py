"""`arena dashboard`: serve the web dashboard and its JSON API through waitress."""

from __future__ import annotations

import argparse

from arena.commands.types import whole_number
from arena.config import ConfigError, listen_address


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "dashboard",
        help="serve the web dashboard (leaderboard, tournaments, games, replays)",
        description="Serve the dashboard through waitress, reading ARENA_DATABASE_URL.",
    )
    p.add_argument(
        "--listen",
        default=None,
        metavar="HOST:PORT",
        help="address to serve on (default: ARENA_DASHBOARD_LISTEN, 127.0.0.1:8063)",
    )
    p.add_argument(
        "--threads",
        type=whole_number(1, 256),
        default=8,
        help="waitress worker threads (default 8)",
    )
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import waitress

    from arena.listening import check_listenable
    from dashboard import create_app

    host, port = listen_address(args.listen, "ARENA_DASHBOARD_LISTEN")
    try:
        check_listenable(f"{host}:{port}", "dashboard")
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    app = create_app()
    try:
        server = waitress.create_server(
            app, host=host, port=port, threads=args.threads, ident="sixty-three-arena"
        )
    except (OSError, ValueError) as exc:  # waitress says ValueError for a host it can't resolve
        raise ConfigError(
            f"cannot serve the dashboard on {host}:{port}: {exc} (is another program on that "
            "port, or is the host not an address of this machine? choose one with --listen)"
        ) from None
    database = app.config["DATABASE_URL"]
    print(f"arena dashboard: serving http://{host}:{port}/ (database {database})", flush=True)
    server.run()
    return 0
