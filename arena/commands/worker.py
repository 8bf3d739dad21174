"""`arena worker`: run RQ workers that play queued game sets, with the queue reconciler."""

from __future__ import annotations

import argparse
import logging

from arena.commands.types import seconds, whole_number

MAX_WORKERS = 256  # worker processes one `arena worker` (or `arena demo`) supervises


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = subparsers.add_parser(
        "worker",
        help="play queued game sets (N worker processes and the reconciler)",
        description="Run N RQ worker processes that play the game sets queued on ARENA_QUEUE "
        "(on ARENA_REDIS_URL, or the embedded Redis) through the game master at "
        "ARENA_GAME_MASTER, storing results in ARENA_DATABASE_URL; a worker that dies is "
        "started again, and its set played again. The reconciler queues again what Redis lost. "
        "Ctrl-C or SIGTERM: finish the sets being played, then stop (twice: stop now).",
    )
    worker.add_argument(
        "--count", type=whole_number(1, MAX_WORKERS), default=1, help="worker processes (default 1)"
    )
    worker.add_argument("--queue", default=None, help="queue name (default ARENA_QUEUE)")
    worker.add_argument(
        "--burst",
        action="store_true",
        help="one worker process: queue again the sets Redis lost, play till the queue is empty",
    )
    worker.add_argument(
        "--reconcile-every",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="how often the reconciler re-enqueues sets missing from Redis (default 15)",
    )
    worker.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from arena.config import (
        Limits,
        agent_logs_dir,
        agents_game_master,
        database_url,
        env,
        parse_listen,
    )
    from arena.storage.database import check_url
    from runner import redis_conn
    from runner.queue import queue_name
    from runner.worker import (
        EXIT_OUTDATED,
        RECONCILE_INTERVAL,
        Supervisor,
        reconcile_once,
        setup_logging,
        start,
    )

    # What a game set and the nightly job will read, checked now rather than in every job.
    parse_listen(env("ARENA_GAME_MASTER"), "ARENA_GAME_MASTER")
    agents_dial = agents_game_master()
    Limits.from_env()
    agent_logs = agent_logs_dir()
    check_url(database_url())  # a database that is down is waited for; a bad URL is not
    setup_logging()
    if agent_logs is not None:
        logging.getLogger("arena.worker").info("keeping every seat's stderr in %s", agent_logs)
    redis_conn.connect()  # fail now, with the fix in the message, if Redis is not there
    _check_game_master(env("ARENA_GAME_MASTER"), agents_dial)
    if agents_dial is not None:
        from runner.launch import pidns

        # Said as it is on this host: "where namespaces can be made" left the reader to guess.
        sealed = (
            "with no network of their own and the data directory out of sight"
            if pidns.available()
            else "but unsealed: this host lets this user make no namespaces, so they share its "
            "network and its files"
        )
        logging.getLogger("arena.worker").info("process agents dial %s, %s", agents_dial, sealed)
    queue = args.queue or queue_name()
    if args.burst:  # exits as the supervisor would: 2 once a newer arena owns the database
        reconcile_once(queue)  # as the supervisor does first: sets Redis lost are queued again
        code = start(queue, burst=True)
        return 2 if code == EXIT_OUTDATED else code
    every = args.reconcile_every or RECONCILE_INTERVAL
    return Supervisor(args.count, queue, reconcile_every=every).run()


def _check_game_master(address: str, agents_dial: str | None) -> None:
    """A worker the game master would refuse does not start: with a wrong admin token it would
    take set after set off the shared queue only to give each back, and agents that dial a
    socket no game master serves would each wait out their connect time and forfeit. Both are
    told only by a game master that is up: one that is not is waited for by every set."""
    import grpc

    from arena.errors import ArenaError
    from arena.gamemaster.client import GameMasterClient

    with GameMasterClient(address) as client:
        try:
            client.wait_ready(timeout=3.0)
        except grpc.FutureTimeoutError:
            logging.getLogger("arena.worker").warning(
                "no game master at %s yet%s: game sets wait for it (start it with `arena "
                "gamemaster`, or point ARENA_GAME_MASTER at yours)",
                address,
                _unknown_host(address),
            )
            return
        refusal = client.admin_refusal()
    if refusal is not None:
        raise ArenaError(f"the game master at {address} refuses this worker: {refusal}")
    if agents_dial is not None:
        _check_agents_socket(agents_dial)


def _unknown_host(address: str) -> str:
    """Why a host:port address cannot be dialled, if its name does not resolve (a typo, or a
    compose service not started yet); else ""."""
    import socket

    host, _, port = address.rpartition(":")
    if address.startswith("unix:") or not host:
        return ""
    try:
        socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f" (the host name {host!r} is not known: {exc.strerror})"
    return ""


def _check_agents_socket(address: str) -> None:
    """Raise if nothing answers on the socket the agents would dial."""
    from arena.errors import ArenaError
    from arena.gamemaster.unix_socket import unanswered

    path = address.removeprefix("unix:")
    why = unanswered(path)
    if why is not None:
        raise ArenaError(
            f"ARENA_GAME_MASTER_SOCKET={path!r}: no game master listens there "
            f"({why.strerror or why}); give the game master the same ARENA_GAME_MASTER_SOCKET "
            "(or --socket), or unset it for the workers"
        )
