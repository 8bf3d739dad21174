"""A game master that is down, however long, costs game sets a wait, never one of their attempts
(nor the sets themselves), and a restarted one is found within seconds."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import start_in_thread
from arena.storage import Database, open_database, repo
from runner import tournament
from tests.runner.conftest import (
    ARENA,
    QUICK,
    ROOT,
    Workers,
    arena,
    free_port,
    game_is_open,
    wait_for,
)


def test_a_set_waits_out_a_game_master_outage_without_spending_attempts(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    register("greedy", "random")
    monkeypatch.setattr(tournament, "GAME_MASTER_WAIT_S", 3.0)
    monkeypatch.setattr(tournament, "GAME_MASTER_NOTICE_S", 0.2)
    address = f"127.0.0.1:{free_port()}"
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, GameMasterClient(address) as client:
        t = tournament.create_tournament(
            db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1
        )
        with db.session() as session:
            [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
        status = [*ARENA, "tournament", "status", t.id]

        def reason() -> str | None:
            with db.session() as session:
                return repo.waiting_reason(session, t.id)

        with ThreadPoolExecutor(1) as pool:  # it says why as it waits, not after the whole wait
            first = pool.submit(tournament.run_game_set, db, set_id, client)
            wait_for(lambda: reason() is not None, 2.5, "a reason while the set waits")
            assert (
                reason() == f"no game master at {address} yet (start `arena gamemaster`, "
                "or check ARENA_GAME_MASTER)"
            )
            with pytest.raises(tournament.GameMasterDown, match="for 3 s; the set waits for one"):
                first.result(timeout=30)
        monkeypatch.setattr(tournament, "GAME_MASTER_WAIT_S", 1.0)
        for _ in range(2):  # as RQ's retries would run it, while the game master is down
            with pytest.raises(tournament.GameMasterDown, match="waits for one"):
                tournament.run_game_set(db, set_id, client)
        with db.session() as session:
            game_set = repo.get_game_set(session, set_id)
            assert (game_set.state, game_set.attempts) == ("queued", 0)
        done = subprocess.run(status, capture_output=True, text=True, cwd=ROOT)
        assert f"waiting: no game master at {address} for 1 s" in done.stdout, done
        gm = start_in_thread(address)
        monkeypatch.setattr(tournament, "GAME_MASTER_WAIT_S", 60.0)
        try:
            outcome = tournament.run_game_set(db, set_id, client)
        finally:
            gm.stop()
        with db.session() as session:
            assert repo.get_game_set(session, set_id).error is None
    assert outcome.recorded and outcome.attempts == 1


def test_the_client_finds_a_game_master_back_within_seconds() -> None:
    address = f"127.0.0.1:{free_port()}"
    with GameMasterClient(address) as client:
        with pytest.raises(grpc.FutureTimeoutError):
            client.wait_ready(timeout=10)  # gRPC backs off 1, 1.6, 2.6, 4.1 s ... by default
        gm = start_in_thread(address)
        try:
            client.wait_ready(timeout=3.5)
        finally:
            gm.stop()


def test_a_game_master_shutting_down_is_not_ready() -> None:
    # It answers health checks with NOT_SERVING while it stops: a set started then would spend
    # an attempt on its refusal.
    from concurrent.futures import ThreadPoolExecutor

    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.server(ThreadPoolExecutor(2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        with GameMasterClient(f"127.0.0.1:{port}") as client:
            with pytest.raises(grpc.FutureTimeoutError):
                client.wait_ready(timeout=1.0)
            servicer.set("", health_pb2.HealthCheckResponse.SERVING)
            client.wait_ready(timeout=5.0)
    finally:
        server.stop(0)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_game_master_lost_mid_game_costs_the_set_no_attempt(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    tmp_path: Path,
    stop: signal.Signals,
) -> None:
    # Stopped, its games end as aborted "shutting down"; killed, its calls fail UNAVAILABLE.
    # Either way the bots lost nothing: three restarts must not fail a set.
    register("slow", "random")
    address = f"127.0.0.1:{free_port()}"

    def start_game_master() -> subprocess.Popen[bytes]:
        log = (tmp_path / "gamemaster.log").open("ab")
        argv = [*ARENA, "gamemaster", "--listen", address]
        return subprocess.Popen(argv, stdout=log, stderr=log, cwd=ROOT)

    gm = start_game_master()
    try:
        with (
            open_database(arena_env["ARENA_DATABASE_URL"]) as db,
            GameMasterClient(address) as client,
        ):
            t = tournament.create_tournament(
                db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1
            )
            with db.session() as session:
                [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
            ended: list[BaseException] = []

            def play() -> None:
                try:
                    tournament.run_game_set(db, set_id, client)
                except BaseException as exc:
                    ended.append(exc)

            thread = threading.Thread(target=play)
            thread.start()
            wait_for(lambda: game_is_open(client, repo.game_id(set_id, 0)), 30, "the game")
            gm.send_signal(stop)
            gm.wait(30)
            thread.join(60)
            [lost] = ended
            assert isinstance(lost, tournament.GameMasterDown), lost
            assert "went away mid-game" in str(lost) and "does not count" in str(lost)
            with db.session() as session:
                game_set = repo.get_game_set(session, set_id)
                assert (game_set.state, game_set.attempts) == ("queued", 0)
                assert "went away mid-game" in (game_set.error or "")
            gm = start_game_master()
            outcome = tournament.run_game_set(db, set_id, client)
            assert outcome.recorded and outcome.attempts == 1
    finally:
        gm.kill()
        gm.wait()


def test_a_worker_whose_admin_token_is_refused_does_not_start(
    arena_env: dict[str, str],
) -> None:
    # It would take set after set off the shared queue only to give each back.
    with start_in_thread(admin_token="s3cret") as locked:
        env = {**arena_env, "ARENA_GAME_MASTER": locked.address, "ARENA_ADMIN_TOKEN": "wrong"}
        refused = arena(env, "worker", "--burst")
    assert refused.returncode == 2, refused.stderr
    assert f"the game master at {locked.address} refuses this worker" in refused.stderr
    assert "the one sent is not it; give the caller the game master's ARENA_ADMIN_TOKEN" in (
        refused.stderr
    )


def test_a_worker_whose_agents_would_dial_a_socket_no_game_master_serves_does_not_start(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # Its agents would wait out their connect time and forfeit, game after game.
    with start_in_thread() as gm:  # serving TCP only
        sock = tmp_path / "gamemaster.sock"
        env = {**arena_env, "ARENA_GAME_MASTER": gm.address, "ARENA_GAME_MASTER_SOCKET": str(sock)}
        refused = arena(env, "worker", "--burst")
    assert refused.returncode == 2, refused.stderr
    assert (
        f"arena worker: ARENA_GAME_MASTER_SOCKET='{sock}': no game master listens there (No such "
        "file or directory); give the game master the same ARENA_GAME_MASTER_SOCKET"
    ) in refused.stderr


def test_a_worker_started_before_its_game_master_starts_and_says_sets_wait(
    arena_env: dict[str, str], tmp_path: Path
) -> None:
    # The socket its agents dial is made by the game master: not there yet is no mistake.
    address = f"127.0.0.1:{free_port()}"  # nobody there
    sock = tmp_path / "gamemaster.sock"
    env = {**arena_env, "ARENA_GAME_MASTER": address, "ARENA_GAME_MASTER_SOCKET": str(sock)}
    started = arena(env, "worker", "--burst")  # an empty queue: it starts, then ends
    assert started.returncode == 0, started.stderr
    assert f"no game master at {address} yet: game sets wait for it" in started.stderr


def test_a_worker_told_a_host_name_that_does_not_resolve_says_so(arena_env: dict[str, str]) -> None:
    # A typo, or a compose service not started yet: waited for, but named.
    env = {**arena_env, "ARENA_GAME_MASTER": "gamemaster.invalid:50051"}
    started = arena(env, "worker", "--burst")
    assert started.returncode == 0, started.stderr
    assert (
        "no game master at gamemaster.invalid:50051 yet (the host name 'gamemaster.invalid' is "
        "not known: "
    ) in started.stderr, started.stderr


def _turned_away_for_free(db: Database, client: GameMasterClient, why: str, waiting: str) -> str:
    """The id of a new set that `client`'s game master turns away more often than the set's
    attempts allow: GameMasterDown saying `why` each time, and the set still queued with no
    attempt spent, waiting for the reason `waiting` says."""
    t = tournament.create_tournament(
        db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1
    )
    with db.session() as session:
        [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
    for _ in range(4):  # more than its attempts
        with pytest.raises(tournament.GameMasterDown, match=why):
            tournament.run_game_set(db, set_id, client)
    with db.session() as session:
        game_set = repo.get_game_set(session, set_id)
        assert (game_set.state, game_set.attempts) == ("queued", 0)
        assert waiting in repo.waiting_reason(session, t.id)
    return set_id


def test_a_set_refused_by_the_game_master_waits_without_spending_attempts(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # The game master was started again with another token while workers ran.
    register("greedy", "random")
    with (
        open_database(arena_env["ARENA_DATABASE_URL"]) as db,
        start_in_thread(admin_token="s3cret") as locked,
        GameMasterClient(locked.address, admin_token="wrong") as client,
    ):
        _turned_away_for_free(db, client, "refused this worker", "waits for a worker it accepts")


def test_a_set_the_game_master_has_no_room_for_waits_without_spending_attempts(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    # A game master run with --max-games below the workers' count: each set of the workers it
    # turned away failed at once, three attempts in a second, and the tournament ended with
    # most of its sets failed.
    register("greedy", "random")
    with (
        open_database(arena_env["ARENA_DATABASE_URL"]) as db,
        start_in_thread(max_games=1) as full,
        GameMasterClient(full.address) as client,
    ):
        client.open_game(game_id="holding-the-only-room")
        set_id = _turned_away_for_free(db, client, "no room for another game", "waits for room")
        client.abort_game("holding-the-only-room")
        outcome = tournament.run_game_set(db, set_id, client)  # room again: it is played
        assert outcome.state == "done", outcome


def test_a_set_with_a_container_bot_waits_for_a_docker_daemon_without_spending_attempts(
    arena_env: dict[str, str],
    register: Callable[..., list[str]],
    fake_docker: Path,
) -> None:
    # A worker whose docker client reached no daemon started each container seat, which failed
    # at once (docker's exit code 125) and forfeited: every game of the bot lost, and rated.
    from arena.registry import register_bot

    register("random")
    (fake_docker / "daemon-down").touch()
    with (
        open_database(arena_env["ARENA_DATABASE_URL"]) as db,
        start_in_thread() as gm,
        GameMasterClient(gm.address) as client,
    ):
        with db.session() as session:
            register_bot(session, ROOT / "tests" / "data" / "bots" / "boxed")
        set_id = _turned_away_for_free(
            db, client, "reaches no Docker daemon", "waits for a worker that can run containers"
        )
        with db.session() as session:
            assert repo.get_game_set(session, set_id).games == []
    assert "run " not in (fake_docker / "calls.log").read_text()  # no container was started


def test_a_set_waiting_for_a_game_master_is_given_back_when_its_worker_stops(
    arena_env: dict[str, str], register: Callable[..., list[str]]
) -> None:
    register("greedy", "random")
    address = f"127.0.0.1:{free_port()}"  # nobody there; the whole wait is a minute
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, GameMasterClient(address) as client:
        t = tournament.create_tournament(
            db, format="round-robin", bots=None, sets=1, ruleset=QUICK, seed=1
        )
        with db.session() as session:
            [set_id] = [s.id for s in repo.list_game_sets(session, t.id)]
        asked = threading.Event()
        threading.Timer(1.0, asked.set).start()
        with pytest.raises(tournament.GameMasterDown, match="this worker is stopping") as given:
            tournament.run_game_set(db, set_id, client, stopping=asked.is_set)
        assert str(given.value) == (
            f"set {set_id}: no game master at {address}, and this worker is stopping; the set "
            "stays queued for the next worker"
        )
        with db.session() as session:
            game_set = repo.get_game_set(session, set_id)
            assert (game_set.state, game_set.attempts) == ("queued", 0)


def test_a_worker_stopped_while_its_set_waits_for_a_game_master_stops_at_once(
    arena_env: dict[str, str], register: Callable[..., list[str]], tmp_path: Path
) -> None:
    # `arena demo` stops its game master and its workers together: a worker that had just
    # taken a set waited a minute for the game master, was killed, and left Redis running.
    register("greedy", "random")
    env = {**arena_env, "ARENA_GAME_MASTER": f"127.0.0.1:{free_port()}"}
    made = arena(env, "tournament", "create", "--sets", "1", "--ruleset", QUICK)
    assert made.returncode == 0, made.stderr
    workers = Workers(env, tmp_path / "workers.log").start()
    assert workers.process is not None
    try:
        wait_for(lambda: ": game set " in workers.log(), 30, "the worker to take the set")
        workers.process.send_signal(signal.SIGTERM)
        assert workers.process.wait(timeout=20) == 0, workers.log()
    finally:
        workers.stop()
    assert "this worker is stopping; the set stays queued for the next worker" in workers.log()
    with open_database(arena_env["ARENA_DATABASE_URL"]) as db, db.session() as session:
        [game_set] = repo.list_game_sets(session, repo.list_tournaments(session)[0].id)
        assert (game_set.state, game_set.attempts) == ("queued", 0)
