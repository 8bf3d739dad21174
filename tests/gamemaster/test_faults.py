"""Every fault kind, from purpose-built misbehaving agents (tests/agents/misbehaving).

Each test runs the misbehaving game beside an honest one on the same game master: the policy
of ARCHITECTURE §4 must end the bad game as documented while the other plays on unharmed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import time
from collections.abc import Iterator

import pytest

from arena.gamemaster.client import GameMasterClient, GameOutcome
from arena.gamemaster.policy import GameLimits
from arena.gamemaster.server import RunningGameMaster
from arena.verify import verify_text
from tests.gamemaster.helpers import (
    FAST,
    PY,
    RANDOM,
    REPO,
    SHORT,
    Match,
    fallbacks_checked,
    fault_lines,
    forfeit_line,
    misbehaving,
    record_lines,
    start_match,
)

BYSTANDER = {"name": "standard", "max_hands": 3}


@pytest.fixture
def bystander(gm: RunningGameMaster, client: GameMasterClient) -> Iterator[Match]:
    """An honest game running at the same time; it must end normally."""
    match = start_match(client, gm.address, [RANDOM] * 4, ruleset=BYSTANDER, seed=99)
    yield match
    outcome = match.finish(timeout=60)
    assert outcome.reason in ("target", "max_hands"), outcome.detail
    assert all(s.faults == 0 for s in outcome.seats)
    verify_text(outcome.record)


def bad_game(
    gm: RunningGameMaster,
    client: GameMasterClient,
    argv: list[str],
    limits: GameLimits = FAST,
    **kw: object,
) -> tuple[Match, GameOutcome]:
    match = start_match(
        client, gm.address, [argv, RANDOM, RANDOM, RANDOM], ruleset=SHORT, limits=limits, **kw
    )
    return match, match.finish(timeout=30)


def assert_forfeit_by_seat0(outcome: GameOutcome) -> None:
    assert outcome.reason == "forfeit"
    assert outcome.forfeit_seat == 0
    assert outcome.winner == 1
    verify_text(outcome.record)  # a forfeited game's record still re-plays


def assert_fault_limit(outcome: GameOutcome, kind: str) -> list[dict[str, object]]:
    assert_forfeit_by_seat0(outcome)
    faults = fault_lines(outcome.record)
    assert len(faults) == FAST.fault_limit
    assert {(f["seat"], f["fault"]) for f in faults} == {(0, kind)}
    assert all(f["detail"] for f in faults)
    assert str(forfeit_line(outcome.record)["detail"]).startswith("fault limit")
    assert outcome.seats[0].faults_by_kind[kind] == FAST.fault_limit
    # The game master played the first legal action in canonical order for each fault.
    assert fallbacks_checked(outcome.record) == FAST.fault_limit
    return faults


def test_agent_that_never_answers_times_out_then_forfeits(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("silent.py"))
    faults = assert_fault_limit(outcome, "timeout")
    # The first timeout spends the decision time and the whole bank; later ones only the first.
    assert faults[0]["ms"] >= FAST.decision_ms + FAST.bank_ms
    assert all(FAST.decision_ms <= f["ms"] < FAST.decision_ms + 150 for f in faults[1:])
    assert outcome.seats[0].bank_ms_left == 0


def test_an_sdk_bot_forfeited_while_it_thinks_still_reads_its_game_end(
    gm, client, bystander
) -> None:
    # The game ends (the bot's own timeouts reach the fault limit) while the bot still thinks
    # about a decision it had: the reply it then writes must not cost it the GameEnd.
    thinker = [PY, str(REPO / "tests" / "agents" / "thinker.py")]
    match, outcome = bad_game(gm, client, thinker, env={"THINK_S": "0.6"})
    assert_fault_limit(outcome, "timeout")
    assert match.reap()[0] == 0, match.stderr(0)
    assert "over (forfeit)" in match.stderr(0) and "fault limit" in match.stderr(0)


def test_late_agent_draws_on_its_bank_then_times_out(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("slow.py"), env={"SLOW_MS": "300"})
    assert_fault_limit(outcome, "timeout")
    seat0 = [x for x in record_lines(outcome.record) if x.get("seat") == 0 and "action" in x]
    # Answered in time while the bank lasted, each answer beyond the decision limit drawing on it.
    assert "fault" not in seat0[0] and seat0[0]["ms"] > FAST.decision_ms
    assert outcome.seats[0].bank_ms_left == 0
    # Replies to requests that had timed out are ignored, not counted as further faults.
    assert outcome.seats[0].late_replies >= 1


def test_agent_exiting_mid_game_forfeits(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("exit_after.py", "2"))
    assert_forfeit_by_seat0(outcome)
    assert str(forfeit_line(outcome.record)["detail"]).startswith("crash:")
    assert fault_lines(outcome.record) == []


def test_sigkilled_agent_forfeits_at_once(gm, client, bystander) -> None:
    patient = FAST.with_overrides(decision_ms=20_000, bank_ms=0)  # only the kill can end it
    match = start_match(
        client,
        gm.address,
        [misbehaving("hang_after.py", "2"), RANDOM, RANDOM, RANDOM],
        ruleset=SHORT,
        limits=patient,
    )
    proc = match.procs[0]
    assert proc is not None and proc.stdout is not None
    assert proc.stdout.readline().strip() == "HUNG"
    killed = time.monotonic()
    os.kill(proc.pid, signal.SIGKILL)
    outcome = match.finish(timeout=15)
    assert time.monotonic() - killed < 5
    assert_forfeit_by_seat0(outcome)
    assert str(forfeit_line(outcome.record)["detail"]).startswith("crash:")


def test_illegal_actions_are_replaced_by_the_fallback_then_forfeit(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("illegal.py"))
    faults = assert_fault_limit(outcome, "illegal")
    assert all("illegal action" in str(f["detail"]) for f in faults)


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("bytes", "unreadable message"),
        ("text", "is not an action"),
        ("wrong_id", "(never sent to this seat); request"),  # and which one was waiting
    ],
)
def test_garbage_answers_are_malformed_faults(gm, client, bystander, mode, words) -> None:
    match, outcome = bad_game(gm, client, misbehaving("garbage.py", mode))
    faults = assert_fault_limit(outcome, "malformed")
    assert all(words in str(f["detail"]) for f in faults)


def test_reply_to_request_0_is_a_malformed_fault_that_answers_nothing(
    gm, client, bystander
) -> None:
    # Ids start at 1. Taken as the pending decision's answer, a stdio bot's stray line at
    # start-up cost it that decision (the fallback) and made its real answer a second fault.
    match, outcome = bad_game(gm, client, misbehaving("zero_id.py"))
    assert_forfeit_by_seat0(outcome)
    faults = fault_lines(outcome.record)
    assert [(f["event"], f["seat"], f["fault"]) for f in faults] == [
        ("fault", 0, "malformed")
    ] * FAST.fault_limit, "no action played for them: the seat's own answers were"
    details = [str(f["detail"]) for f in faults]
    assert all("request_id 0" in d and "'starting up v1'" in d for d in details), details
    # What to fix, for a gRPC agent that left request_id unset, and that its decision waits.
    assert all("copy the decision's request_id" in d for d in details), details
    assert all(re.search(r"request \d+ is still waiting for its answer$", d) for d in details)


def test_reply_with_an_old_request_id_is_a_malformed_fault_that_answers_nothing(
    gm, client, bystander
) -> None:
    # A bot that printed a reply twice: the second copy must not take the place of its answer
    # to the next decision (that made every answer after it one decision late: all faults).
    match, outcome = bad_game(gm, client, misbehaving("stale_id.py"))
    assert_forfeit_by_seat0(outcome)
    faults = fault_lines(outcome.record)
    assert len(faults) == FAST.fault_limit
    assert [(f["event"], f["seat"], f["fault"]) for f in faults] == [
        ("fault", 0, "malformed")
    ] * FAST.fault_limit, "no action played for them: the seat's own answers were"
    assert all("which was already answered" in str(f["detail"]) for f in faults)
    assert str(forfeit_line(outcome.record)["detail"]).startswith("fault limit")
    told = match.stderr(0).splitlines()  # the notices name the request answered twice
    first = told[0].removeprefix("first request ")
    assert told[1:] == [f"fault notice for request {first}"] * FAST.fault_limit, told


def test_agent_exception_is_a_crash_fault(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("crash_bot.py"))
    faults = assert_fault_limit(outcome, "crash")
    assert all("ZeroDivisionError" in str(f["detail"]) for f in faults)
    assert "ZeroDivisionError" in match.stderr(0)  # the SDK shows the traceback to the author


def test_flood_of_unknown_request_ids_is_faults_then_forfeit(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("flood.py", "unknown"))
    assert_forfeit_by_seat0(outcome)
    faults = fault_lines(outcome.record)
    # Faults between decisions get their own record lines (no action was played for them),
    # even where the flood arrives after the seat's next request went out: request id 0
    # answers nothing.
    assert [(f["event"], f["fault"]) for f in faults] == [("fault", "malformed")] * len(faults)
    assert len(faults) == FAST.fault_limit
    assert str(forfeit_line(outcome.record)["detail"]).startswith("fault limit")
    assert verify_text(outcome.record).faults == FAST.fault_limit  # both kinds counted


def test_flood_of_late_replies_forfeits(gm, client, bystander) -> None:
    # The flood must be read within the seat's next decision time (which it lets pass too):
    # 200 ms is too little for 65 messages on a loaded machine, so this game allows 1.5 s.
    patient = dataclasses.replace(FAST, decision_ms=1500, bank_ms=0)
    match, outcome = bad_game(gm, client, misbehaving("flood.py", "late"), limits=patient)
    assert_forfeit_by_seat0(outcome)
    assert str(forfeit_line(outcome.record)["detail"]).startswith("flood")
    assert outcome.seats[0].faults == 1  # the one timeout; late replies are not faults
    assert outcome.seats[0].late_replies > 60


def test_oversized_message_breaks_the_stream_and_forfeits(gm, client, bystander) -> None:
    match, outcome = bad_game(gm, client, misbehaving("oversized.py"))
    assert_forfeit_by_seat0(outcome)
    assert str(forfeit_line(outcome.record)["detail"]).startswith("crash:")
