"""`arena dashboard`: serve the web dashboard and its JSON API through waitress."""

from __future__ import annotations

import argparse

from arena.config import ConfigError, env


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
        "--threads", type=_threads, default=8, help="waitress worker threads (default 8)"
    )
    p.set_defaults(func=_serve)


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen {text!r}: write it as HOST:PORT, e.g. 127.0.0.1:8063")
    return host.strip("[]") or "127.0.0.1", int(port)


def _serve(args: argparse.Namespace) -> int:
    import waitress

    from dashboard import create_app

    host, port = parse_listen(args.listen or env("ARENA_DASHBOARD_LISTEN"))
    app = create_app()
    print(f"arena dashboard: serving http://{host}:{port}/ (database {app.config['DATABASE_URL']})")
    waitress.serve(app, host=host, port=port, threads=args.threads, ident="sixty-three-arena")
    return 0


def _threads(text: str) -> int:
    count = int(text)
    if count < 1:  # waitress takes 0 and then never answers
        raise argparse.ArgumentTypeError(f"must be at least 1, not {count}")
    return count
