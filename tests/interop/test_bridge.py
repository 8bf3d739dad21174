"""The stdio bridge: its JSON lines, and bots that misbehave (the game master's policy applies)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from arena import grpc_tuning
from arena.bridge import messages
from arena.bridge.stdio import EXIT_BOT, MAX_LINE_BYTES, NOT_FLUSHED, _lines
from arena.gamemaster.policy import GameLimits
from arena.local_match import GameSpec, LocalGameMaster, SeatSpec
from arena.verify import verify_text
from arena.wire import pb
from tests.interop.agents import AGENTS, BOTS, PY, PY_GREEDY, PY_RANDOM, REPO, bridge, misbehaving

SHORT = {"name": "standard", "max_hands": 1}


def _records(record: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in record.splitlines()]


# ----------------------------------------------------------------------------- bot output


def _lines_of(*chunks: bytes) -> list[bytes]:
    """What the bridge reads as lines from a bot that writes ``chunks``, then exits."""

    async def read() -> list[bytes]:
        stream = asyncio.StreamReader()
        for chunk in chunks:
            stream.feed_data(chunk)
        stream.feed_eof()
        return [line async for line in _lines(stream)]

    return asyncio.run(read())


def test_bot_output_is_split_into_lines_however_it_arrives() -> None:
    assert _lines_of(b"pass\nbid ", b"40\n\n", b"play KH") == [b"pass", b"bid 40", b"", b"play KH"]


def test_a_line_too_long_is_cut_and_its_rest_skipped() -> None:
    long = b"x" * (MAX_LINE_BYTES + 10)
    assert _lines_of(b"pass\n" + long + b"\nbid 40\n") == [
        b"pass",
        long[:MAX_LINE_BYTES],
        b"bid 40",
    ]
    # the same when the long line comes in pieces, and when it is the last thing written
    pieces = [long[i : i + 1000] for i in range(0, len(long), 1000)]
    assert _lines_of(*pieces, b"\npass\n") == [long[:MAX_LINE_BYTES], b"pass"]
    assert _lines_of(b"pass\n", long) == [b"pass", long[:MAX_LINE_BYTES]]


# ----------------------------------------------------------------------------- reply lines


@pytest.mark.parametrize(
    ("line", "pending", "expected"),
    [
        ('{"request_id": 7, "action": "play KH", "note": "n"}', 3, (7, "play KH", "n", "")),
        ('{"action": "pass"}', 3, (3, "pass", "", "")),  # no id: the oldest unanswered request
        ('{"request_id": "9", "action": "pass"}', 3, (9, "pass", "", "")),
        ('{"request_id": 4, "error": "boom"}', 3, (4, "", "", "boom")),
        ('{"request_id": -1, "action": "pass"}', 3, (3, "pass", "", "")),
        ("bid 45", 3, (3, "bid 45", "", "")),  # bare action text
        ('{"request_id": 7, "action": ["play", "KH"]}', 3, (7, '["play", "KH"]', "", "")),
        ("[1, 2]", 0, (0, "[1, 2]", "", "")),
        ('{"action": "pass", "note": "' + "n" * 30000 + '"}', 3, (3, "pass", "n" * 201, "")),
    ],
)
def test_a_bot_line_becomes_the_reply_it_stands_for(
    line: str, pending: int, expected: tuple[int, str, str, str]
) -> None:
    reply, problem = messages.reply_from_line(line, pending)
    assert (reply.request_id, reply.action, reply.note, reply.error) == expected
    assert problem == ""


@pytest.mark.parametrize(
    ("line", "action", "problem"),
    [
        (
            '{"request_id":8,"action":"pass"',
            '{"request_id":8,"action":"pass"',
            "a line starting with { is not valid JSON (Expecting ',' delimiter: line 1 column 32"
            " (char 31)); a reply is one JSON object on one line, not spread over several: sent"
            " as the action text",
        ),
        (  # json.dumps(reply, indent=2): each line of it a reply of its own
            "{",
            "{",
            "a line starting with { is not valid JSON (Expecting property name enclosed in double"
            " quotes: line 1 column 2 (char 1)); a reply is one JSON object on one line, not"
            " spread over several: sent as the action text",
        ),
        (
            "{'request_id': 8, 'action': 'pass'}",
            "{'request_id': 8, 'action': 'pass'}",
            "a line starting with { is not valid JSON (Expecting property name enclosed in double"
            " quotes: line 1 column 2 (char 1)): sent as the action text",
        ),
        (
            '{"request_id":8,"acton":"pass"}',
            '{"request_id":8,"acton":"pass"}',
            'a reply with neither "action" nor "error" (its keys: acton, request_id)',
        ),
        ("{}", "{}", 'a reply with neither "action" nor "error" (its keys: none)'),
        (
            "thinking about 3",  # a log line: it answers request 3 (a "malformed" fault there)
            "thinking about 3",
            "a line that is neither JSON nor an action ('thinking about 3') answered request 3:"
            " stdout is for replies only, print logs to stderr",
        ),
        ("play 10H", "play 10H", ""),  # meant as an action: the game master says what is wrong
    ],
)
def test_a_reply_line_that_cannot_be_right_is_forwarded_whole_and_explained(
    line: str, action: str, problem: str
) -> None:
    reply, said = messages.reply_from_line(line, 3)
    assert (reply.action, said) == (action, problem)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("pass", "a reply while no decision waits for one"),
        ('{"action": "pass"}', "a reply while no decision waits for one"),
        ('{"request_id": 5, "action": "pass"}', ""),  # it names its request: the game master judges
    ],
)
def test_a_reply_when_no_decision_waits_is_explained(line: str, said: str) -> None:
    reply, problem = messages.reply_from_line(line, None)
    assert (reply.action, problem) == ("pass", said)


def test_a_reply_of_any_length_fits_in_one_message_of_the_game_master() -> None:
    from arena.gamemaster.policy import MAX_AGENT_MESSAGE_BYTES

    huge = "\U0001f0a1" * 20000  # four bytes each in UTF-8
    line = json.dumps({"action": huge, "note": huge, "error": huge}, ensure_ascii=False)
    reply, _ = messages.reply_from_line(line, 3)
    assert len(pb.AgentMessage(reply=reply).SerializeToString()) < MAX_AGENT_MESSAGE_BYTES


def test_decision_lines_carry_the_whole_observation_with_nulls_for_absent_fields() -> None:
    msg = pb.ServerMessage()
    d = msg.decision
    d.request_id = 2**40
    d.legal.actions.extend(["pass", "bid 40"])
    d.legal.fallback = "pass"
    d.observation.phase = pb.PHASE_AUCTION
    d.observation.hand.extend(["AS", "JO"])
    line = messages.to_line(msg)
    assert line is not None
    assert line["type"] == "decision" and line["request_id"] == 2**40
    assert line["legal"] == {"actions": ["pass", "bid 40"], "choice": None, "fallback": "pass"}
    obs = line["observation"]
    assert obs["phase"] == "auction" and obs["hand"] == ["AS", "JO"]
    assert obs["trump"] is None and obs["bidder"] is None and obs["trick"] is None
    assert messages.dumps(line).startswith('{"type":"decision","request_id":1099511627776,')


def test_a_name_holding_a_unicode_line_break_reaches_the_bot_on_one_line() -> None:
    # Another seat's agent names itself; JSON leaves U+2028, U+2029 and U+0085 unescaped, and a
    # bot reading lines with Python's splitlines() (or JavaScript's /\r?\n|\u2028/...) got two.
    msg = pb.ServerMessage()
    msg.welcome.agents.extend(["a\u2028b", "c\u2029d", "e\x85f", "plain é"])
    line = messages.to_line(msg)
    assert line is not None
    text = messages.dumps(line)
    assert len(text.splitlines()) == 1
    assert json.loads(text)["agents"] == ["a\u2028b", "c\u2029d", "e\x85f", "plain é"]


def test_event_lines_name_their_kind_and_keep_every_field() -> None:
    msg = pb.ServerMessage()
    msg.event.sequence = 5
    msg.event.trick.trick.leader = 2
    msg.event.trick.trick.cards.add(seat=2, card="KH")
    msg.event.trick.points.extend([25, 0])
    line = messages.to_line(msg)
    assert line == {
        "type": "event",
        "game_id": "",
        "sequence": 5,
        "hand": 0,
        "kind": "trick",
        "trick": {
            "trick": {"leader": 2, "cards": [{"seat": 2, "card": "KH"}], "winner": None},
            "points": [25, 0],
        },
    }


def test_events_bundled_with_a_message_become_event_lines_before_its_own() -> None:
    msg = pb.ServerMessage()
    msg.game_end.reason = "target"
    for seq, seat in ((7, 1), (8, 2)):
        event = msg.events.add(sequence=seq, hand=1)
        event.action.seat = seat
        event.action.action = "pass"
    lines = messages.to_lines(msg)
    assert [(x["type"], x.get("sequence")) for x in lines] == [
        ("event", 7),
        ("event", 8),
        ("game_end", None),
    ]
    assert lines[1]["action"] == {"seat": 2, "action": "pass", "hidden_cards": 0, "fault": ""}
    assert [x["type"] for x in messages.to_lines(msg, events=False)] == ["game_end"]


# ----------------------------------------------------------------------------- misbehaving bots


def test_a_bot_that_prints_garbage_gets_malformed_faults_and_the_game_goes_on(
    local_gm: LocalGameMaster,
) -> None:
    seats = [misbehaving("garbage", "2"), PY_RANDOM, PY_GREEDY, PY_RANDOM]
    (result,) = local_gm.play([GameSpec(SHORT, 3, seats)], timeout=120)
    outcome = result.outcome
    assert outcome.reason == "max_hands", outcome.detail
    faults = [r for r in _records(outcome.record) if "fault" in r]
    assert [(r["seat"], r["fault"]) for r in faults] == [(0, "malformed"), (0, "malformed")]
    assert all("'this is not { json' is not an action" in str(r["detail"]) for r in faults)
    assert outcome.seats[0].faults_by_kind["malformed"] == 2
    assert result.exit_codes == [0, 0, 0, 0], result.stderr(0)
    assert verify_text(outcome.record).faults == 2
    assert "fault 2/5 (malformed)" in result.stderr(0)  # the bridge logs what the bot was told
    assert "stdout is for replies only, print logs to stderr" in result.stderr(0)


def test_a_line_printed_before_any_decision_is_one_fault_named_for_what_it_is(
    local_gm: LocalGameMaster,
) -> None:
    # A JVM's warning at start-up: for a stdio bot the fault said to copy the decision's
    # request_id, which stdio bots need not give.
    bot = REPO / "sample_agents" / "stdio" / "bot.py"
    talker = SeatSpec("talker", bridge("sh", "-c", f"echo 'starting up v2'; exec {PY} {bot}"))
    (result,) = local_gm.play([GameSpec(SHORT, 3, [talker, PY_RANDOM, PY_GREEDY, PY_RANDOM])])
    assert result.outcome.reason == "max_hands", result.outcome.detail
    [fault] = [r for r in _records(result.outcome.record) if "fault" in r]
    assert fault["fault"] == "malformed" and fault["seat"] == 0
    assert str(fault["detail"]).startswith(
        "a line printed while no decision waited (stdout is for replies only): 'starting up v2'"
    ), fault


def test_a_bot_that_answers_with_bare_action_text_plays_without_faults(
    local_gm: LocalGameMaster,
) -> None:
    seats = [PY_RANDOM, misbehaving("bare"), PY_RANDOM, misbehaving("bare")]
    (result,) = local_gm.play([GameSpec(SHORT, 4, seats)], timeout=120)
    assert result.outcome.reason == "max_hands", result.outcome.detail
    assert verify_text(result.outcome.record).faults == 0
    assert result.exit_codes == [0, 0, 0, 0]


# Short decisions, no bank: a decision left unanswered costs a second and a half.
QUICK = GameLimits(decision_ms=1500, bank_ms=0, fault_limit=3, connect_ms=30000)
ONE_TIMEOUT = {"timeout": 1, "crash": 0, "illegal": 0, "malformed": 0}


def test_a_bare_line_bot_that_skips_one_decision_is_charged_one_timeout_not_a_forfeit() -> None:
    # The bridge kept the skipped request first in line, so every later bare answer went to
    # it, was ignored as late, and each decision after timed out too: a forfeit.
    seats = [PY_RANDOM, misbehaving("skip_bare", "1"), PY_RANDOM, PY_RANDOM]
    with LocalGameMaster(QUICK) as gm:
        (result,) = gm.play([GameSpec(SHORT, 5, seats, first_dealer=0)], timeout=120)
        stderr = result.stderr(1)
    outcome = result.outcome
    assert outcome.reason == "max_hands", (outcome.detail, stderr)
    assert outcome.seats[1].faults_by_kind == ONE_TIMEOUT, stderr
    assert result.exit_codes[1] == 0, stderr


def test_a_reply_to_a_request_whose_time_was_up_is_ignored_and_the_bridge_says_so() -> None:
    seats = [PY_RANDOM, PY_RANDOM, misbehaving("late", "1", "2.5"), PY_RANDOM]
    with LocalGameMaster(QUICK) as gm:
        (result,) = gm.play([GameSpec(SHORT, 6, seats, first_dealer=0)], timeout=120)
        stderr = result.stderr(2)
    assert result.outcome.reason == "max_hands", (result.outcome.detail, stderr)
    assert result.outcome.seats[2].faults_by_kind == ONE_TIMEOUT, stderr
    assert "whose time was up: ignored" in stderr


def test_a_bot_that_prints_a_long_summary_after_the_game_exits_and_so_does_its_bridge(
    local_gm: LocalGameMaster,
) -> None:
    # The bridge stopped reading at game_end: the bot, blocked on a full pipe, was killed
    # 3 s later, and the bridge then waited forever for its unread stdout to close.
    seats = [PY_RANDOM, PY_RANDOM, PY_RANDOM, misbehaving("summary")]
    (result,) = local_gm.play([GameSpec(SHORT, 9, seats)], timeout=120)
    assert result.outcome.reason == "max_hands", result.outcome.detail
    assert result.exit_codes[3] == 0, result.stderr(3)
    assert "did not exit" not in result.stderr(3)


def test_the_bot_gets_the_agents_environment_without_the_seat_token_or_arena_settings(
    local_gm: LocalGameMaster,
) -> None:
    # The bridge is an arena process: the gRPC settings it makes for itself were passed on.
    seats = [PY_RANDOM] * 3 + [SeatSpec("env", bridge(PY, str(AGENTS / "print_env.py")))]
    (result,) = local_gm.play([GameSpec(SHORT, 9, seats)], timeout=120)
    seen = json.loads(result.stderr(3).splitlines()[0])["env"]
    assert "ARENA_GAME_MASTER" in seen and "ARENA_SEAT_TOKEN" not in seen
    assert os.environ.get(grpc_tuning.VARIABLE) == grpc_tuning.OLD_POLLER or not tuned()
    assert grpc_tuning.VARIABLE not in seen


def tuned() -> bool:
    return grpc_tuning.measured(grpc_tuning.grpcio_version())


def test_a_bot_that_exits_mid_game_forfeits_and_the_bridge_says_so(
    local_gm: LocalGameMaster,
) -> None:
    seats = [PY_GREEDY, misbehaving("exit", "3"), PY_GREEDY, PY_RANDOM]
    (result,) = local_gm.play([GameSpec("standard", 6, seats)], timeout=120)
    outcome = result.outcome
    assert (outcome.reason, outcome.forfeit_seat, outcome.winner) == ("forfeit", 1, 0)
    assert "crash" in outcome.detail
    assert outcome.seats[1].decisions == 4  # answered 3, left while asked the 4th
    forfeit = [r for r in _records(outcome.record) if r.get("event") == "forfeit"]
    assert len(forfeit) == 1 and forfeit[0]["seat"] == 1
    verify_text(outcome.record)
    assert result.exit_codes[1] == 1, "the bridge ends as its bot did"
    assert "exited with code 1 before the game ended" in result.stderr(1)
    assert "exiting mid-game" in result.stderr(1)  # the bot's stderr passes through
    assert result.exit_codes[0] == result.exit_codes[2] == result.exit_codes[3] == 0


def test_a_bot_that_exits_while_its_child_holds_its_stdout_forfeits_at_once() -> None:
    # The bridge watched only for the end of the bot's stdout: it waited on, each decision
    # timed out, the seat forfeited on timeouts and the bridge exited 0 with a traceback.
    seats = [PY_RANDOM, PY_RANDOM, PY_RANDOM, misbehaving("fork_exit", "2")]
    with LocalGameMaster(QUICK) as gm:
        (result,) = gm.play([GameSpec(SHORT, 10, seats)], timeout=120)
        stderr = result.stderr(3)
    outcome = result.outcome
    assert (outcome.reason, outcome.forfeit_seat) == ("forfeit", 3), stderr
    assert "crash" in outcome.detail and outcome.seats[3].faults_by_kind["timeout"] == 0
    assert result.exit_codes[3] == EXIT_BOT, stderr
    assert "the bot exited with code 0 before the game ended" in stderr
    assert "Traceback" not in stderr and NOT_FLUSHED not in stderr


@pytest.mark.parametrize("how", [signal.SIGXCPU, signal.SIGKILL])
def test_a_bot_killed_by_a_signal_mid_game_takes_the_bridge_with_it(
    local_gm: LocalGameMaster, how: signal.Signals
) -> None:
    # So the launcher's verdict is the bot's: SIGXCPU is a CPU time limit, not "exit code 6".
    seats = [PY_GREEDY, misbehaving("killed", "3", how.name), PY_GREEDY, PY_RANDOM]
    (result,) = local_gm.play([GameSpec("standard", 6, seats)], timeout=120)
    assert (result.outcome.reason, result.outcome.forfeit_seat) == ("forfeit", 1)
    assert result.exit_codes[1] == -how
    assert f"the bot was killed by {how.name} before the game ended" in result.stderr(1)
    assert "Traceback" not in result.stderr(1)


def test_a_bot_that_never_answers_times_out_to_a_forfeit_and_is_killed() -> None:
    limits = GameLimits(decision_ms=100, bank_ms=100, fault_limit=3, connect_ms=30000)
    seats = [PY_RANDOM, PY_RANDOM, misbehaving("silent"), misbehaving("deaf")]
    with LocalGameMaster(limits) as gm:
        (result,) = gm.play([GameSpec("standard", 7, seats, first_dealer=0)], timeout=120)
        stderr = [result.stderr(seat) for seat in range(4)]  # the logs go with the game master
    outcome = result.outcome
    assert outcome.reason == "forfeit" and outcome.forfeit_seat in (2, 3)
    seat = outcome.forfeit_seat
    assert seat is not None and outcome.seats[seat].faults_by_kind["timeout"] == 3
    assert NOT_FLUSHED in stderr[seat]  # the likeliest cause, outside Python
    verify_text(outcome.record)
    # The bridge hears GameEnd even though its bot stopped reading, then stops the bot.
    assert result.exit_codes[2:] == [0, 0], stderr[2:]


def test_a_bot_that_ends_no_reply_with_a_newline_is_told_so_not_to_flush() -> None:
    # It flushed every reply, but with printf("...") and no "\n": the bridge, which reads lines,
    # blamed flushing ("has not written a line yet: does it flush stdout"), which it did.
    limits = GameLimits(decision_ms=100, bank_ms=100, fault_limit=3, connect_ms=30000)
    seats = [PY_RANDOM, PY_RANDOM, PY_RANDOM, misbehaving("no_newline")]
    with LocalGameMaster(limits) as gm:
        (result,) = gm.play([GameSpec("standard", 7, seats, first_dealer=0)], timeout=120)
        stderr = result.stderr(3)
    outcome = result.outcome
    assert (outcome.reason, outcome.forfeit_seat) == ("forfeit", 3), stderr
    assert outcome.seats[3].faults_by_kind["timeout"] == 3
    assert "that no newline has ended yet" in stderr and '{"request_id"' in stderr, stderr
    assert "end it with a newline" in stderr
    assert NOT_FLUSHED not in stderr


def test_a_bot_command_that_cannot_start_ends_the_game_early(local_gm: LocalGameMaster) -> None:
    missing = SeatSpec("missing", bridge("/nonexistent/bot"))
    (result,) = local_gm.play([GameSpec(SHORT, 8, [PY_RANDOM, missing, PY_RANDOM, PY_RANDOM])])
    assert (result.outcome.reason, result.outcome.forfeit_seat) == ("forfeit", 1)
    detail = f"crash: the agent exited with code {EXIT_BOT} before connecting"
    assert result.outcome.detail == detail
    assert result.exit_codes[1] == EXIT_BOT
    assert "cannot start the bot '/nonexistent/bot': there is no file '/nonexistent/bot'" in (
        result.stderr(1)
    )


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_bridge_run_on_its_own_ends_what_its_bot_started(tmp_path: Path) -> None:
    # Only a launcher's kill of the bridge's process group ended the bot's children: a bridge
    # run by hand left them running.
    pid_file = tmp_path / "child.pid"
    seats = [
        *[PY_RANDOM.argv] * 3,
        bridge(PY, str(BOTS / "misbehaving_stdio.py"), "forking", str(pid_file)),
    ]
    procs: list[subprocess.Popen[bytes]] = []
    with LocalGameMaster(QUICK) as gm:
        game = gm.client.open_game(SHORT, 11)
        try:
            for argv, token in zip(seats, game.tokens, strict=True):
                env = dict(os.environ, ARENA_GAME_MASTER=gm.address, ARENA_SEAT_TOKEN=token)
                procs.append(subprocess.Popen(argv, env=env, start_new_session=True))
            assert gm.client.await_game(game.game_id, 120).reason == "max_hands"
            assert procs[3].wait(30) == 0
            child = int(pid_file.read_text())
            deadline = time.monotonic() + 5  # the bridge signals before it exits; a margin
            while _running(child) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not _running(child), "the bot's child outlived the bridge"
        finally:
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
