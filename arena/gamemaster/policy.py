"""The fault policy of ARCHITECTURE §4: limits, fault kinds and the per-seat time bank."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

from arena.config import UINT32_MAX, Limits

# How long a seat has to say Hello after OpenGame, by default. Containers can take a while.
DEFAULT_CONNECT_MS = 60_000
# Notes longer than this are cut (the proto promises at most 200 characters in the record).
NOTE_MAX_CHARS = 200
# Detail texts taken from agents (errors, unparseable actions) are cut to this in records.
DETAIL_MAX_CHARS = 300
# Messages that answer nothing (late replies, replies while nothing is pending) a seat may send
# in one game before it forfeits for flooding. Honest slow bots send about one per timeout.
FLOOD_LIMIT = 64
# Largest message an agent may send; an honest Reply is well under 1 KiB.
MAX_AGENT_MESSAGE_BYTES = 16 * 1024
# The forfeit detail of a seat whose stream ended mid-game (its process died or gave up). The
# same words every time, however it was noticed: the record may not depend on timing.
DISCONNECTED = "crash: the agent disconnected before the game ended"


class FaultKind(StrEnum):
    """The fault kinds a record may name (RECORD.md)."""

    TIMEOUT = "timeout"
    CRASH = "crash"
    ILLEGAL = "illegal"
    MALFORMED = "malformed"


# The kinds of fault a worker stores besides a record's: a seat whose agent never said Hello
# (the game forfeited), and a seat whose token another agent used (a "contested" record event).
ABSENT, CONTESTED = "absent", "contested"
WORKER_FAULT_KINDS = (ABSENT, CONTESTED)


@dataclass(frozen=True)
class GameLimits:
    """The limits of one game: arena.config.Limits plus how long seats have to connect."""

    decision_ms: int = 2000
    bank_ms: int = 20000
    fault_limit: int = 5
    connect_ms: int = DEFAULT_CONNECT_MS

    @classmethod
    def from_env(cls, connect_ms: int = DEFAULT_CONNECT_MS) -> GameLimits:
        base = Limits.from_env()
        return cls(base.decision_ms, base.bank_ms, base.fault_limit, connect_ms)

    def with_overrides(self, **values: int | None) -> GameLimits:
        """These limits with the given (non-None) values replaced, checked."""
        changed = replace(self, **{k: v for k, v in values.items() if v is not None})
        changed.check()
        return changed

    def check(self) -> None:
        if self.decision_ms < 1:
            raise ValueError(f"decision_ms must be at least 1, not {self.decision_ms}")
        if self.fault_limit < 1:
            raise ValueError(f"fault_limit must be at least 1, not {self.fault_limit}")
        if self.connect_ms < 1:
            raise ValueError(f"connect_ms must be at least 1, not {self.connect_ms}")
        if self.bank_ms < 0:
            raise ValueError(f"bank_ms must not be negative, not {self.bank_ms}")
        for name, value in self.to_dict().items():
            if value > UINT32_MAX:  # the wire's Limits are uint32
                raise ValueError(f"{name} must be at most {UINT32_MAX}, not {value}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SeatClock:
    """One seat's time: a fixed allowance per decision and a bank drawn on beyond it.

    Milliseconds are floats internally, so many small overruns add up honestly.
    """

    def __init__(self, decision_ms: int, bank_ms: int) -> None:
        self.decision_ms = decision_ms
        self.bank_ms = float(bank_ms)

    @property
    def budget_ms(self) -> float:
        """How long the next decision may take before it is a timeout."""
        return self.decision_ms + self.bank_ms

    def charge(self, elapsed_ms: float) -> None:
        """A decision answered in time: draw any overrun from the bank."""
        self.bank_ms = max(0.0, self.bank_ms - max(0.0, elapsed_ms - self.decision_ms))

    def exhaust(self) -> None:
        """A timeout used the whole budget, bank included."""
        self.bank_ms = 0.0


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
