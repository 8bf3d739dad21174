"""Spectators: `arena watch` follows a game's public events live; how each event reads."""

from __future__ import annotations

import functools
import json
import subprocess
import time

import grpc
import pytest

from arena.gamemaster.client import GameMasterClient, GameMasterError
from arena.gamemaster.server import RunningGameMaster, start_in_thread
from arena.spectator import describe
from arena.wire import pb
from tests.gamemaster.helpers import PY, RANDOM, REPO, record_lines, start_match

SHORT_RULESET = '{"name": "standard", "max_hands": 1}'

# Thinks 40 ms per decision: four of them make three hands last seconds, long enough to watch
# live however slowly `arena watch` starts.
SLOW = [PY, str(REPO / "tests" / "runner" / "bots" / "slow" / "slow_bot.py")]


def arena_watch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "arena.cli", "watch", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_arena_watch_prints_the_public_events_live_to_the_game_end(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    match = start_match(
        client,
        gm.address,
        [SLOW] * 4,
        ruleset={"name": "standard", "max_hands": 3},
    )
    watcher = arena_watch(match.game_id, "--game-master", gm.address, "--json")
    assert watcher.stdout is not None
    first = json.loads(watcher.stdout.readline())
    with pytest.raises(GameMasterError):  # still being played: the event came live
        client.await_game(match.game_id, timeout=0.01)
    rest = watcher.stdout.read()  # (not communicate: it would skip what readline buffered)
    outcome = match.finish()

    assert watcher.wait(timeout=30) == 0, watcher.stderr.read() if watcher.stderr else ""
    events = [first, *map(json.loads, rest.splitlines())]
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert (events[0]["kind"], events[-1]["kind"]) == ("hand_started", "game_end")
    assert events[-1]["game_end"]["scores"] == list(outcome.scores)
    # every decision of the record, in order, as the public may see it (a keep's cards hidden)
    watched = [
        (e["action"]["seat"], e["action"]["action"]) for e in events if e["kind"] == "action"
    ]
    recorded = [
        (line["seat"], "keep" if line["action"].startswith("keep") else line["action"])
        for line in record_lines(outcome.record)
        if line.get("event") == "action"
    ]
    assert watched == recorded


def test_arena_watch_of_an_ended_game_prints_it_whole_as_text(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    match = start_match(
        client, gm.address, [RANDOM] * 4, ruleset={"name": "standard", "max_hands": 1}
    )
    outcome = match.finish()
    done = subprocess.run(
        [PY, "-m", "arena.cli", "watch", match.game_id, "--game-master", gm.address],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[   0] hand 1: dealt by seat 0"
    scores = " to ".join(map(str, outcome.scores))
    assert lines[-1].startswith(
        f"[{len(lines) - 1:>4}] hand 1: game over (max_hands): scores {scores}"
    )
    # What an ended game keeps: its public events (just watched whole) and its result, with
    # the record; not the engine's events and the log besides, several times the record.
    session = gm.service.games[match.game_id]
    assert session.game.events == [] and session._log == [] and session._public_bytes == []
    assert session.result is not None and session.result.record_jsonl == outcome.record
    assert session._public == [] and len(
        pb.ServerMessage.FromString(session._ended_public).events
    ) == len(lines)


def test_watching_a_game_not_there_names_the_newest_games_in_progress() -> None:
    with start_in_thread() as gm, GameMasterClient(gm.address) as client:
        for n in range(7):
            client.open_game(game_id=f"g{n}")
        client.abort_game("g6")
        with pytest.raises(GameMasterError) as raised:
            next(client.watch("g7"))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert raised.value.details() == (
        "no game 'g7' here (unknown or forgotten); in progress here: g5, g4, g3, g2, g1 and 1 more"
    )


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("gm", "no game 'no-such-game' here (unknown or forgotten); in progress here: "),
        ("127.0.0.1:9", "cannot reach the game master at 127.0.0.1:9"),
    ],
)
def test_arena_watch_says_what_is_wrong(gm: RunningGameMaster, where: str, message: str) -> None:
    address = gm.address if where == "gm" else where
    done = subprocess.run(
        [PY, "-m", "arena.cli", "watch", "no-such-game", "--game-master", address],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("arena watch: ") and message in done.stderr, done.stderr


def _event(hand: int = 1, sequence: int = 7, **kind: object) -> pb.GameEvent:
    return pb.GameEvent(game_id="g", sequence=sequence, hand=hand, **kind)


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (
            _event(sequence=0, hand_started=pb.HandStarted(dealer=3)),
            "[   0] hand 1: dealt by seat 3",
        ),
        (_event(action=pb.ActionTaken(seat=1, action="bid 42")), "[   7] hand 1: seat 1: bid 42"),
        (
            _event(action=pb.ActionTaken(seat=2, action="keep", hidden_cards=6)),
            "[   7] hand 1: seat 2: keep (6 cards, face down)",
        ),
        (
            _event(action=pb.ActionTaken(seat=0, action="pass", fault="timeout")),
            "[   7] hand 1: seat 0: pass (played by the game master after a timeout fault)",
        ),
        (
            _event(discarded=pb.CardsDiscarded(seat=3, count=1)),
            "[   7] hand 1: seat 3 discards 1 card face down",
        ),
        (
            _event(given=pb.CardsGiven(from_seat=0, to_seat=2, cards=["5H", "JO"])),
            "[   7] hand 1: seat 0 gives 5H JO to seat 2",
        ),
        (_event(drawn=pb.CardsDrawn(seat=1, count=4)), "[   7] hand 1: seat 1 draws 4"),
        (
            _event(out=pb.SeatOut(seat=1, cards_set_aside=2)),
            "[   7] hand 1: seat 1 is out (2 cards set aside)",
        ),
        (
            _event(
                trick=pb.TrickTaken(
                    trick=pb.Trick(
                        leader=2,
                        cards=[pb.PlayedCard(seat=2, card="AH"), pb.PlayedCard(seat=3, card="5H")],
                        winner=3,
                    ),
                    points=[0, 6],
                )
            ),
            "[   7] hand 1: trick 2:AH 3:5H, won by seat 3 (points 0 to 6)",
        ),
        (_event(dead=pb.StockDead(count=3)), "[   7] hand 1: 3 cards of the stock dead"),
        (
            _event(
                hand=4,
                hand_ended=pb.HandEnded(
                    bidder=1, contract=40, trump="S", points=[20, 43], made=True, scores=[-12, 77]
                ),
            ),
            "[   7] hand 4: scored: seat 1 bid 40 in S, made; points 20 to 43; scores -12 to 77",
        ),
        (
            _event(forfeit=pb.SeatForfeited(seat=2, detail="crash: gone")),
            "[   7] hand 1: seat 2 forfeits: crash: gone",
        ),
        (
            _event(fault=pb.FaultRecorded(seat=0, kind="malformed")),
            "[   7] hand 1: seat 0: malformed fault",
        ),
        (
            _event(game_end=pb.GameEnd(scores=[63, 10], winner=0, reason="target")),
            "[   7] hand 1: game over (target): scores 63 to 10, team 0 wins",
        ),
        (
            _event(game_end=pb.GameEnd(scores=[0, 0], reason="aborted", detail="shut down")),
            "[   7] hand 1: game over (aborted): scores 0 to 0, no winner (shut down)",
        ),
    ],
)
def test_each_kind_of_event_reads_as_one_line(event: pb.GameEvent, text: str) -> None:
    assert describe(event) == text


def test_spectators_that_leave_are_no_longer_fed(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    match = start_match(
        client, gm.address, [SLOW] * 4, ruleset={"name": "standard", "max_hands": 20}
    )

    async def spectators_and_finished() -> tuple[int, bool]:
        session = gm.service.games[match.game_id]
        return session.spectators, session.finished

    for _ in range(5):
        events = client.watch(match.game_id)
        next(events)  # subscribed: it has the first event
        events.close()  # and leaves (the generator cancels its call)
    deadline = time.monotonic() + 10
    while gm.call(spectators_and_finished) != (0, False) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Gone while the game goes on: else each of them would be sent every event to its end.
    assert gm.call(spectators_and_finished) == (0, False)
    client.abort_game(match.game_id)
    match.reap()


def _asked(address: str, method: str, game_id: str, token: str = "") -> grpc.StatusCode:
    """How a Watch or AwaitGame of `game_id` is answered within half a second: refused at once,
    or DEADLINE_EXCEEDED while it waits for events (a game no agent joined has none yet)."""
    from arena import wire

    metadata = ((wire.ADMIN_HEADER, token),) if token else ()
    with grpc.insecure_channel(address) as channel:
        if method == "Watch":
            stream = channel.unary_stream(
                wire.WATCH,
                request_serializer=pb.WatchRequest.SerializeToString,
                response_deserializer=pb.GameEvent.FromString,
            )(pb.WatchRequest(game_id=game_id), timeout=0.5, metadata=metadata)
            read = functools.partial(next, stream)
        else:
            read = functools.partial(
                channel.unary_unary(
                    wire.AWAIT_GAME,
                    request_serializer=pb.GameRef.SerializeToString,
                    response_deserializer=pb.GameResult.FromString,
                ),
                pb.GameRef(game_id=game_id),
                timeout=0.5,
                metadata=metadata,
            )
        try:
            read()
        except grpc.RpcError as error:
            return error.code()
        return grpc.StatusCode.OK


def test_a_game_dealing_the_cards_of_one_being_played_cannot_be_watched_or_read(
    gm: RunningGameMaster, client: GameMasterClient
) -> None:
    # The two games of a duplicate set deal the same cards: a seat of the mirror game must not
    # watch the other's cards fall, or read its record, while it plays.
    stamp = time.time_ns()
    first, mirror, other = (f"seal-{stamp}-{x}" for x in ("g0", "g1", "x"))
    client.open_game(SHORT_RULESET, 77, game_id=first)
    client.abort_game(first)  # played: its record holds every hand
    client.open_game(SHORT_RULESET, 77, game_id=mirror)  # being played, same cards
    client.open_game(SHORT_RULESET, 78, game_id=other)
    refused = grpc.StatusCode.FAILED_PRECONDITION
    assert _asked(gm.address, "Watch", first) == refused
    assert _asked(gm.address, "AwaitGame", first) == refused
    with pytest.raises(GameMasterError, match=f"deals the same cards as game {mirror}"):
        next(client.watch(first))
    # Ending it again, or forfeiting a seat of it, tells how it ended, not its record.
    assert client.abort_game(first).record == ""
    assert client.forfeit_seat(first, 0).record == ""
    waiting = grpc.StatusCode.DEADLINE_EXCEEDED
    assert _asked(gm.address, "Watch", other) == waiting  # other cards: watched as ever
    assert _asked(gm.address, "Watch", mirror) == waiting  # its own game: its seats see it
    client.abort_game(mirror)
    assert _asked(gm.address, "Watch", first) == grpc.StatusCode.OK  # ended: the whole game
    assert client.await_game(first, timeout=5).reason == "aborted"
    client.abort_game(other)


def test_the_admin_token_may_read_both_games_of_a_set_at_once() -> None:
    from arena.gamemaster.server import start_in_thread

    with (
        start_in_thread(admin_token="s3cret") as gm,
        GameMasterClient(gm.address, admin_token="s3cret") as admin,
    ):
        admin.open_game(SHORT_RULESET, 5, game_id="both-g0")
        admin.open_game(SHORT_RULESET, 5, game_id="both-g1")
        waiting = grpc.StatusCode.DEADLINE_EXCEEDED
        assert _asked(gm.address, "Watch", "both-g0", "s3cret") == waiting
        assert _asked(gm.address, "AwaitGame", "both-g0", "s3cret") == waiting
        assert _asked(gm.address, "Watch", "both-g0") == grpc.StatusCode.FAILED_PRECONDITION
        admin.abort_game("both-g0")
        admin.abort_game("both-g1")
