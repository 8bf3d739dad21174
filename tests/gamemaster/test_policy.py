"""The fault policy's pieces: the time bank, seat tokens and the status-code table."""

from __future__ import annotations

import grpc
import pytest

from arena.gamemaster.policy import SeatClock
from arena.gamemaster.status import STATUS_CODES, Refusal, Refused
from arena.gamemaster.tokens import SeatTokens


def test_overruns_are_drawn_from_the_bank_until_it_is_empty() -> None:
    clock = SeatClock(decision_ms=200, bank_ms=300)
    assert clock.budget_ms == 500
    clock.charge(150)  # within the decision limit: free
    assert clock.bank_ms == 300
    clock.charge(350)
    assert clock.bank_ms == 150 and clock.budget_ms == 350
    clock.charge(400)
    assert clock.bank_ms == 0 and clock.budget_ms == 200
    clock.exhaust()
    assert clock.budget_ms == 200


def test_tokens_are_single_use_and_bound_to_one_seat() -> None:
    tokens = SeatTokens()
    issued = tokens.issue("g1")
    assert len(set(issued)) == 4 and all(len(t) >= 40 for t in issued)
    assert tokens.check(issued[2]) == ("g1", 2)
    assert tokens.claim(issued[2]) == ("g1", 2)
    with pytest.raises(Refused) as used:
        tokens.claim(issued[2])
    assert used.value.refusal is Refusal.TOKEN_USED
    assert used.value.code is grpc.StatusCode.ALREADY_EXISTS
    for bad in ("", "x", issued[2][:-1], issued[2] + "x", "\udcff"):
        with pytest.raises(Refused) as refused:
            tokens.check(bad)
        assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    tokens.revoke("g1")
    for token in (issued[0], issued[2]):  # an ended game's tokens say so, used or not
        with pytest.raises(Refused) as ended:
            tokens.check(token)
        assert ended.value.refusal is Refusal.BAD_TOKEN
        assert ended.value.detail == "the game of this seat token (g1) has ended"
    tokens.forget("g1")
    with pytest.raises(Refused) as gone:
        tokens.check(issued[0])
    assert gone.value.refusal is Refusal.BAD_TOKEN
    assert gone.value.detail == "unknown seat token (or its game has ended)"


def test_every_refusal_has_a_status_code() -> None:
    assert set(STATUS_CODES) == set(Refusal)
    assert STATUS_CODES[Refusal.VERSION] is grpc.StatusCode.FAILED_PRECONDITION
    assert STATUS_CODES[Refusal.NOT_HELLO] is grpc.StatusCode.INVALID_ARGUMENT
