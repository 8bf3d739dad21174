"""The handshake: refusals and their status codes, single-use tokens, seats that never come."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import time

import grpc
import pytest

from arena import wire
from arena.gamemaster.client import GameMasterClient
from arena.verify import verify_text
from arena.wire import pb
from tests.gamemaster.helpers import (
    FAST,
    PY,
    RANDOM,
    REPO,
    SHORT,
    forfeit_line,
    misbehaving,
    record_lines,
    spawn,
    start_match,
)


def run_agent(argv: list[str], address: str, token: str, tmp_path) -> tuple[int, str, str]:
    log = tmp_path / "agent.stderr"
    proc = spawn(argv, address, token, log)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, out, log.read_text()


class HeldSeat:
    """A seat taken by a raw stream that says Hello and then just listens."""

    def __init__(self, address: str, token: str, name: str = "") -> None:
        self.channel = grpc.insecure_channel(address)
        stub = self.channel.stream_stream(
            wire.PLAY,
            request_serializer=pb.AgentMessage.SerializeToString,
            response_deserializer=pb.ServerMessage.FromString,
        )
        hello = pb.AgentMessage(
            hello=pb.Hello(
                seat_token=token, protocol_version=wire.PROTOCOL_VERSION, agent_name=name
            )
        )
        self._out: queue.Queue[pb.AgentMessage | None] = queue.Queue()
        self._out.put(hello)
        # Keep the request stream open: a stream closed by the agent forfeits the seat.
        self.call = stub(iter(self._out.get, None))
        self.welcome = next(iter(self.call)).welcome

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()
        self.channel.close()


@pytest.fixture
def open_game(client: GameMasterClient):
    game = client.open_game(SHORT, 5, limits=FAST.with_overrides(connect_ms=20_000))
    yield game
    client.abort_game(game.game_id)


def test_unknown_token_is_refused_with_unauthenticated(gm, open_game, tmp_path) -> None:
    code, _, err = run_agent(RANDOM, gm.address, "not-a-token", tmp_path)
    assert code == 3
    assert "game master refused the seat token: UNAUTHENTICATED" in err


@pytest.mark.parametrize("whose", ["same seat", "another seat's agent"])
def test_a_used_token_is_refused_with_already_exists(gm, open_game, tmp_path, whose) -> None:
    held = HeldSeat(gm.address, open_game.tokens[0])
    try:
        assert held.welcome.seat == 0 and held.welcome.game_id == open_game.game_id
        code, _, err = run_agent(RANDOM, gm.address, open_game.tokens[0], tmp_path)
        assert code == 3
        assert "ALREADY_EXISTS" in err and "already used" in err
    finally:
        held.close()


def test_a_token_presented_again_marks_its_seat_contested_in_the_record(
    gm, client, open_game, tmp_path
) -> None:
    # Process agents can read each other's environment, so a second Hello with a seat's token
    # may be a theft: which one is the seat's own agent cannot be told, so the record says so.
    held = HeldSeat(gm.address, open_game.tokens[2])
    try:
        for _ in range(2):
            code, _, err = run_agent(RANDOM, gm.address, open_game.tokens[2], tmp_path)
            assert code == 3 and "ALREADY_EXISTS" in err
    finally:
        held.close()
    record = client.await_game(open_game.game_id, timeout=30).record
    contested = [line for line in record_lines(record) if line.get("event") == "contested"]
    assert len(contested) == 1 and contested[0]["seat"] == 2, contested  # once per seat
    assert "a second Hello with seat 2's token (agent name 'random')" in contested[0]["detail"]
    verify_text(record)


def test_the_log_shows_an_agents_name_as_a_literal(gm, open_game, caplog) -> None:
    # A line break in it forged a log line of the bot's choosing; an escape recoloured the rest.
    name = "evil\n05:50:00 [1] runner.jobs: fake\x1b[31m"

    def connected() -> list[str]:  # (the game master is shared: only this seat's line)
        return [r.getMessage() for r in caplog.records if "connected ('evil" in r.getMessage()]

    with caplog.at_level("INFO", logger="arena.gamemaster.server"):
        HeldSeat(gm.address, open_game.tokens[0], name).close()
        deadline = time.monotonic() + 10  # logged by the server's thread, after the Welcome
        while not connected() and time.monotonic() < deadline:
            time.sleep(0.01)
    [line] = connected()
    assert line.endswith("seat 0 connected ('evil\\n05:50:00 [1] runner.jobs: fake\\x1b[31m')")


def test_wrong_protocol_version_is_refused_and_leaves_the_seat_free(gm, open_game, tmp_path):
    code, out, _ = run_agent(
        misbehaving("wrong_version.py"), gm.address, open_game.tokens[1], tmp_path
    )
    assert code == 0 and out.startswith("REFUSED FAILED_PRECONDITION"), out
    assert "protocol version 99" in out
    held = HeldSeat(gm.address, open_game.tokens[1])  # the token was not used up
    assert held.welcome.seat == 1
    held.close()


def test_a_seat_refused_for_its_version_forfeits_saying_why(gm, client, tmp_path) -> None:
    # Its author may not log gRPC errors: the record must say why the seat never joined.
    # (8 s to connect: in 2 s a loaded machine had not started the agent's Python yet.)
    game = client.open_game(SHORT, 5, limits=FAST.with_overrides(connect_ms=8_000))
    held = [HeldSeat(gm.address, game.tokens[seat]) for seat in (0, 2, 3)]
    try:
        run_agent(misbehaving("wrong_version.py"), gm.address, game.tokens[1], tmp_path)
        result = client.await_game(game.game_id, timeout=30)
    finally:
        for seat in held:
            seat.close()
    assert (result.reason, result.forfeit_seat) == ("forfeit", 1)
    assert result.detail == (
        "seat 1 did not connect within 8000 ms; seat 1's Hello was refused: "
        "protocol version 99 is not spoken here; this game master speaks version 1"
    )
    assert result.detail in forfeit_line(result.record)["detail"]


@pytest.mark.parametrize("first", ["reply", "bytes"])
def test_first_message_must_be_a_hello(gm, open_game, tmp_path, first) -> None:
    code, out, _ = run_agent(
        misbehaving("not_hello.py", first), gm.address, open_game.tokens[2], tmp_path
    )
    assert code == 0 and out.startswith("REFUSED INVALID_ARGUMENT"), out


def test_admin_calls_on_unknown_games_are_not_found(client: GameMasterClient) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.await_game("no-such-game", timeout=5)
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND


def test_bad_open_game_requests_are_invalid_argument(client: GameMasterClient) -> None:
    for kwargs in (
        {"ruleset": "no-such-ruleset"},
        {"ruleset": {"max_hands": 0}},
        {"ruleset": "standard", "first_dealer": 7},
        {"ruleset": "standard", "limits": {"decision_ms": 0}},
        {"ruleset": "standard", "game_id": "spaces are not allowed"},
        # echoed whole, its refusal was too big a header to send (RESOURCE_EXHAUSTED)
        {"ruleset": "standard", "game_id": "x" * 10_000 + " "},
    ):
        with pytest.raises(grpc.RpcError) as caught:
            client.open_game(**kwargs)  # type: ignore[arg-type]
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT, kwargs


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # "name": 5 was accepted, then failed every Hello as UNKNOWN and aborted the game
        ({"name": 5, "max_hands": 1}, "ruleset: name must be one of standard, "),
        # these were accepted and played (1.5 hands as 2), or refused in Python's words
        ({"max_hands": 1.5}, "ruleset: max_hands must be a whole number from 1 to 1000, not 1.5"),
        ({"target": 2.7}, "ruleset: target must be a whole number from 1 to 10000, not 2.7"),
        ({"min_bid": 40.5}, "ruleset: min_bid must be a whole number from 1 to 63, not 40.5"),
        ({"min_bid": "40"}, 'ruleset: min_bid must be a whole number from 1 to 63, not "40"'),
        ({"points": [1, 2]}, "ruleset: points must be an object of trump points by card"),
        ({"points": {"A": -24, "K": 25, "3": 40, "9": 9, "JO": 13}}, "points.A must be"),
        ({"redeal": ["x"]}, 'ruleset: redeal must be one of "refill", "draw4", not ["x"]'),
    ],
)
def test_a_bad_ruleset_parameter_is_invalid_argument_naming_it(
    client: GameMasterClient, params: dict[str, object], message: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.open_game(params, limits={"connect_ms": 200})
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details(), caught.value.details()


def test_a_game_id_ending_in_a_line_break_is_refused(client: GameMasterClient) -> None:
    # `$` matches before a final line break: "newline-id\n" was accepted as a game id.
    with pytest.raises(grpc.RpcError) as caught:
        client.open_game("standard", game_id="newline-id\n", limits={"connect_ms": 200})
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "bad game id 'newline-id\\n'" in caught.value.details()


def test_a_game_id_in_use_is_already_exists(client: GameMasterClient) -> None:
    client.open_game("standard", game_id="fixed-id-1", limits={"connect_ms": 200})
    with pytest.raises(grpc.RpcError) as caught:
        client.open_game("standard", game_id="fixed-id-1")
    assert caught.value.code() is grpc.StatusCode.ALREADY_EXISTS
    assert client.await_game("fixed-id-1", timeout=10).reason == "aborted"


def test_a_seat_that_never_connects_forfeits(gm, client) -> None:
    limits = FAST.with_overrides(connect_ms=4000)  # room for agents to start on a busy machine
    match = start_match(
        client, gm.address, [RANDOM, None, RANDOM, RANDOM], ruleset=SHORT, limits=limits
    )
    outcome = match.finish(timeout=20)
    assert outcome.reason == "forfeit" and outcome.forfeit_seat == 1 and outcome.winner == 0
    assert "did not connect within 4000 ms" in str(forfeit_line(outcome.record)["detail"])
    assert [s.connected for s in outcome.seats] == [True, False, True, True]
    assert match.reap() == [0, None, 0, 0]  # the others were told the game ended
    verify_text(outcome.record)


def test_missing_seats_on_both_teams_abort_the_game(gm, client) -> None:
    limits = FAST.with_overrides(connect_ms=4000)
    match = start_match(
        client, gm.address, [RANDOM, None, None, RANDOM], ruleset=SHORT, limits=limits
    )
    outcome = match.finish(timeout=20)
    assert outcome.reason == "aborted" and outcome.winner is None
    assert "seats 1, 2 did not connect" in outcome.detail
    assert record_lines(outcome.record)[-1]["reason"] == "aborted"
    assert match.reap() == [0, None, None, 0]


def test_tokens_die_with_their_game(gm, client, tmp_path) -> None:
    game = client.open_game(SHORT, 3)
    client.abort_game(game.game_id)
    code, _, err = run_agent(RANDOM, gm.address, game.tokens[0], tmp_path)
    assert code == 3 and "UNAUTHENTICATED" in err


def test_admin_token_is_required_when_configured(tmp_path) -> None:
    from arena.gamemaster.server import start_in_thread

    with start_in_thread(admin_token="s3cret") as locked:
        for token, says in (("", "none was sent"), ("wrong", "the one sent is not it")):
            with GameMasterClient(locked.address, admin_token=token) as stranger:
                with pytest.raises(grpc.RpcError) as caught:
                    stranger.open_game("standard")
                assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
                assert says in caught.value.details()
                assert stranger.admin_refusal() == caught.value.details()
        with GameMasterClient(locked.address, admin_token="s3cret") as admin:
            assert admin.admin_refusal() is None
            game = admin.open_game("standard", limits={"connect_ms": 100})
            assert admin.await_game(game.game_id, timeout=10).reason == "aborted"


def test_sdk_reports_a_missing_game_master(monkeypatch, capsys) -> None:
    from arena import agent
    from sample_agents.random_bot import RandomPlayer

    with pytest.raises(agent.GameMasterUnreachable):
        agent.play(RandomPlayer(), "127.0.0.1:9", "tok", connect_timeout=0.5)
    monkeypatch.setenv("ARENA_GAME_MASTER", "127.0.0.1:9")
    monkeypatch.setenv("ARENA_SEAT_TOKEN", "tok")
    monkeypatch.setattr(agent, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.setattr(agent, "WAIT_NOTICE_S", 0.1)
    with pytest.raises(SystemExit) as exited:
        agent.run(RandomPlayer())
    assert exited.value.code == agent.EXIT_UNREACHABLE
    said = capsys.readouterr().err
    # While it waits it says so, once (a silent agent looks hung), then why it gave up.
    assert said.count("no game master at 127.0.0.1:9 yet; waiting up to 0.5 s") == 1, said
    assert "cannot reach the game master" in said


def test_the_stdio_bridge_says_it_waits_for_a_missing_game_master(monkeypatch) -> None:
    import io

    from arena import agent
    from arena.bridge.stdio import StdioBridge

    monkeypatch.setattr(agent, "WAIT_NOTICE_S", 0.1)
    log = io.StringIO()
    bridge = StdioBridge([sys.executable, "-c", "pass"], log=log)
    assert bridge.run("127.0.0.1:9", "tok", connect_timeout=0.5) == agent.EXIT_UNREACHABLE
    assert log.getvalue().splitlines() == [
        "[stdio-agent] no game master at 127.0.0.1:9 yet; waiting up to 0.5 s",
        "[stdio-agent] cannot reach the game master at 127.0.0.1:9",
    ]


def test_sdk_whose_hello_went_out_does_not_wait_for_a_game_master_that_then_fails() -> None:
    """UNAVAILABLE after the Hello was sent (as from a game master killed before the agent read
    its Welcome: a reset drops what was not read) is a lost game master, said at once; only a
    stream that could not even send its Hello waits for a game master to come."""
    from concurrent.futures import ThreadPoolExecutor

    from arena import agent
    from sample_agents.random_bot import RandomPlayer

    def play(requests, context):  # type: ignore[no-untyped-def]
        next(requests)  # the Hello
        context.abort(grpc.StatusCode.UNAVAILABLE, "gone")

    server = grpc.server(ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                wire.SERVICE, {"Play": grpc.stream_stream_rpc_method_handler(play)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with pytest.raises(agent.ConnectionLost, match="UNAVAILABLE: gone"):
            agent.play(RandomPlayer(), f"127.0.0.1:{port}", "tok", connect_timeout=5)
    finally:
        server.stop(0)


def test_sdk_started_before_its_game_master_waits_for_it_and_then_speaks_to_it() -> None:
    import socket
    import threading
    import time

    from arena import agent
    from arena.gamemaster.server import start_in_thread
    from sample_agents.random_bot import RandomPlayer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    outcome: list[BaseException] = []

    def play() -> None:
        try:
            agent.play(RandomPlayer(), f"127.0.0.1:{port}", "no-such-token", connect_timeout=20)
        except BaseException as exc:  # noqa: BLE001  (the test inspects it)
            outcome.append(exc)

    player = threading.Thread(target=play)
    player.start()
    time.sleep(0.5)  # the first stream has failed: nothing listens yet
    server = start_in_thread(f"127.0.0.1:{port}", admin_token=None)
    try:
        player.join(timeout=30)
    finally:
        server.stop()
    assert not player.is_alive()
    [refused] = outcome
    # Refused by the game master, not "unreachable": it waited, connected and said hello.
    assert isinstance(refused, agent.SeatRefused), refused
    assert refused.code is grpc.StatusCode.UNAUTHENTICATED


STDIO_BOT = [PY, "-m", "arena.cli", "stdio-agent", "--", PY, "sample_agents/stdio/bot.py"]


@pytest.mark.parametrize("argv", [RANDOM, STDIO_BOT], ids=["sdk", "stdio-bridge"])
def test_agents_that_lose_their_game_master_mid_game_say_so_and_exit_5(argv: list[str]) -> None:
    from arena import agent

    gm = subprocess.Popen(
        [PY, "-m", "arena.cli", "gamemaster", "--listen", "127.0.0.1:0", "--log-level", "ERROR"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ, ARENA_ADMIN_TOKEN=""),
    )
    try:
        assert gm.stdout is not None
        address = gm.stdout.readline().strip().rsplit(" ", 1)[-1]
        with GameMasterClient(address, admin_token="") as client:
            client.wait_ready()
            match = start_match(client, address, [argv] * 4)  # a full game: a second or more
            with grpc.insecure_channel(address) as channel:
                watch = channel.unary_stream(
                    wire.WATCH,
                    request_serializer=pb.WatchRequest.SerializeToString,
                    response_deserializer=pb.GameEvent.FromString,
                )
                for event in watch(pb.WatchRequest(game_id=match.game_id)):
                    if event.HasField("action"):  # the game is under way
                        gm.kill()
                        break
            codes = match.reap(timeout=30)
    finally:
        gm.kill()
        gm.wait()
    stderr = [match.stderr(seat) for seat in range(4)]
    assert codes == [agent.EXIT_LOST] * 4, stderr
    # (the status code varies with how the broken socket is noticed: UNAVAILABLE, mostly)
    assert all("lost the game master mid-game: " in text for text in stderr), stderr
