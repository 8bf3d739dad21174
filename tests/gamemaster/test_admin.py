"""The platform's ways to end a game early: ForfeitSeat for an agent gone before it connected,
AbortGame with a reason; and the SDK's view of the public events bundled into its messages."""

from __future__ import annotations

import threading
import time

import grpc
import pytest

from arena.actions import Action
from arena.agent import play
from arena.errors import RecordError
from arena.gamemaster.client import GameMasterClient
from arena.gamemaster.server import RunningGameMaster
from arena.legal import Legal
from arena.observation import Observation
from arena.verify import verify_text
from arena.wire import pb
from tests.gamemaster.helpers import FAST, RANDOM, SHORT, forfeit_line, start_match
from tests.gamemaster.test_handshake import HeldSeat

SLOW_CONNECT = FAST.with_overrides(connect_ms=20_000)


def _held(gm: RunningGameMaster, tokens: list[str], seats: tuple[int, ...]) -> list[HeldSeat]:
    return [HeldSeat(gm.address, tokens[seat]) for seat in seats]


def test_forfeit_seat_ends_the_game_at_once_as_that_seats_forfeit(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    game = client.open_game(SHORT, 5, limits=SLOW_CONNECT)
    held = _held(gm, game.tokens, (0, 2))  # the other team is all here
    try:
        start = time.monotonic()
        outcome = client.forfeit_seat(game.game_id, 1, "crash: the agent exited with code 3")
        assert time.monotonic() - start < 5  # not the 20 s connect deadline
    finally:
        for seat in held:
            seat.close()
    assert (outcome.reason, outcome.forfeit_seat, outcome.winner) == ("forfeit", 1, 0)
    assert outcome.detail == "crash: the agent exited with code 3"
    assert forfeit_line(outcome.record)["detail"] == "crash: the agent exited with code 3"
    verify_text(outcome.record)
    # Once over, the game stays as it ended.
    again = client.forfeit_seat(game.game_id, 3, "too late")
    assert (again.reason, again.forfeit_seat) == ("forfeit", 1)


def test_a_forfeit_waits_until_the_other_team_is_all_here(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    # Had that team's agent died before connecting too, nobody could be said to have won.
    game = client.open_game(SHORT, 5, limits=SLOW_CONNECT)
    pending = client.forfeit_seat(game.game_id, 1, "crash: the agent exited with code 3")
    assert pending.reason == ""  # not over yet
    held = _held(gm, game.tokens, (0, 2))
    try:
        outcome = client.await_game(game.game_id, timeout=5)
    finally:
        for seat in held:
            seat.close()
    assert (outcome.reason, outcome.forfeit_seat) == ("forfeit", 1)
    assert outcome.detail == "crash: the agent exited with code 3"


def test_a_seat_of_each_team_gone_aborts_the_game(client: GameMasterClient) -> None:
    # Two bots that cannot start, against each other: neither wins (it was seat 0's loss).
    game = client.open_game(SHORT, 5, limits=SLOW_CONNECT)
    assert client.forfeit_seat(game.game_id, 2, "crash: the agent exited with code 3").reason == ""
    outcome = client.forfeit_seat(game.game_id, 1, "crash: the agent could not be started")
    assert outcome.reason == "aborted" and outcome.winner is None
    assert outcome.detail == (
        "seat 1: crash: the agent could not be started; seat 2: crash: the agent exited with code 3"
    )


def test_forfeit_seat_is_refused_for_a_seat_whose_agent_connected(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    game = client.open_game(SHORT, 5, limits=SLOW_CONNECT)
    held = _held(gm, game.tokens, (0, 2))
    try:
        with pytest.raises(grpc.RpcError) as info:
            client.forfeit_seat(game.game_id, 0, "gone?")
        assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.RpcError) as info:
            client.forfeit_seat(game.game_id, 4, "no such seat")
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        # The seats that did not connect can still be forfeited; the held ones are told.
        outcome = client.forfeit_seat(game.game_id, 3, "crash: the agent could not be started")
        assert (outcome.reason, outcome.forfeit_seat) == ("forfeit", 3)
        messages = list(held[0].call)
        assert messages[-1].game_end.reason == "forfeit"
        bundled = [e.WhichOneof("event") for e in messages[-1].events]
        assert bundled[0] == "hand_started" and bundled[-2:] == ["forfeit", "game_end"]
    finally:
        for seat in held:
            seat.close()


def test_forfeit_seat_of_an_unknown_game_is_not_found(client: GameMasterClient) -> None:
    with pytest.raises(grpc.RpcError) as info:
        client.forfeit_seat("no-such-game", 0, "x")
    assert info.value.code() is grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("reason", "detail"),
    [
        (
            "its agents could not be started",
            "aborted by the platform: its agents could not be started",
        ),
        ("", "aborted by the platform (AbortGame)"),
    ],
)
def test_abort_game_records_the_reason_given(
    client: GameMasterClient, reason: str, detail: str
) -> None:
    game = client.open_game(SHORT, 5, limits=SLOW_CONNECT)
    outcome = client.abort_game(game.game_id, reason)
    assert (outcome.reason, outcome.detail) == ("aborted", detail)
    # Every line checks up to its game_end, which no stored record may have (RECORD.md).
    with pytest.raises(RecordError, match="an aborted game has no result, so no record"):
        verify_text(outcome.record)


class _Instant:
    name = "instant"

    def act(self, obs: Observation, legal: Legal) -> Action:
        return legal.first()


@pytest.mark.parametrize("live", [False, True], ids=["bundled", "live"])
def test_sdk_sees_every_public_event_once_in_order_as_watch_does(
    gm: RunningGameMaster, client: GameMasterClient, live: bool
) -> None:
    match = start_match(client, gm.address, [None, RANDOM, RANDOM, RANDOM], ruleset=SHORT)
    seen: list[pb.GameEvent] = []
    kinds: list[str | None] = []
    result: list[object] = []

    def seat0() -> None:
        result.append(
            play(
                _Instant(),
                gm.address,
                match.game.tokens[0],
                on_event=seen.append,
                on_message=lambda m: kinds.append(m.WhichOneof("kind")),
                live_events=live,
            )
        )

    thread = threading.Thread(target=seat0)
    thread.start()
    outcome = match.finish(timeout=60)
    thread.join(30)
    assert result and outcome.reason in ("target", "max_hands")
    assert [e.sequence for e in seen] == list(range(len(seen)))
    assert seen[-1].WhichOneof("event") == "game_end"
    channel = grpc.insecure_channel(gm.address)
    watched = list(
        channel.unary_stream(
            "/sixtythree.v1.GameMaster/Watch",
            request_serializer=pb.WatchRequest.SerializeToString,
            response_deserializer=pb.GameEvent.FromString,
        )(pb.WatchRequest(game_id=match.game_id))
    )
    channel.close()
    assert seen == watched
    # Bundled, a seat gets one message per decision (plus Welcome and GameEnd): no more.
    assert ("event" in kinds) == live
    if not live:
        assert len(kinds) == 2 + kinds.count("decision")
