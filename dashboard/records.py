"""Reading a stored game record (RECORD.md) into the game page's tables, without the engine."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

from arena.record import record_lines


@dataclass
class ParsedRecord:
    """The parts of a record the game page shows; `problem` says why parsing stopped early."""

    header: dict[str, Any] = field(default_factory=dict)
    hands: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    forfeit: str = ""  # why a seat forfeited, in the record's words
    line_count: int = 0
    size: int = 0
    problem: str | None = None

    @property
    def ruleset_text(self) -> str:
        ruleset = self.header.get("ruleset")
        if isinstance(ruleset, dict):
            from arena.rulesets import RULESETS, STANDARD

            name = str(ruleset.get("name", "custom"))
            base = RULESETS.get(name, STANDARD).parameters()
            changed = ", ".join(
                f"{k}={v}" for k, v in ruleset.items() if k != "name" and base.get(k) != v
            )
            return f"{name} (custom: {changed or 'as named'})"
        return str(ruleset)

    @property
    def agents(self) -> list[str]:
        seats = self.header.get("seats") or []
        return [str(s.get("agent", "")) for s in seats if isinstance(s, dict)]

    def timing(self) -> list[dict[str, Any]]:
        """Per seat: decisions, total, mean, median and slowest decision in milliseconds."""
        out = []
        for seat in range(4):
            times = [
                float(d["ms"])
                for d in self.decisions
                if d["seat"] == seat and isinstance(d.get("ms"), int | float)
            ]
            count = sum(1 for d in self.decisions if d["seat"] == seat)
            out.append(
                {
                    "seat": seat,
                    "decisions": count,
                    "timed": len(times),
                    "total_ms": round(sum(times), 1),
                    "mean_ms": round(statistics.fmean(times), 1) if times else None,
                    "median_ms": round(statistics.median(times), 1) if times else None,
                    "max_ms": round(max(times), 1) if times else None,
                }
            )
        return out


def parse(data: bytes) -> ParsedRecord:
    out = ParsedRecord(size=len(data))
    dealers: dict[int, Any] = {}
    for number, raw in enumerate(record_lines(data.decode("utf-8", "replace")), start=1):
        if not raw.strip():
            continue
        out.line_count += 1
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested past what json reads
            out.problem = f"line {number} is not JSON"
            break
        if not isinstance(line, dict):
            continue
        if number == 1:
            out.header = line
            continue
        kind = line.get("event")
        if kind == "deal":
            dealers[line.get("hand", 0)] = line.get("dealer")
        elif kind == "action":
            decision = {
                "index": len(out.decisions),
                "hand": line.get("hand"),
                "seat": line.get("seat"),
                "action": line.get("action"),
                "ms": line.get("ms"),
                "fault": line.get("fault"),
                "note": line.get("note") if isinstance(line.get("note"), str) else None,
            }
            out.decisions.append(decision)
            if line.get("fault"):
                out.faults.append(decision)
        elif kind == "hand_end":
            out.hands.append(
                {
                    "hand": line.get("hand"),
                    "dealer": dealers.get(line.get("hand", 0)),
                    "bidder": line.get("bidder"),
                    "contract": line.get("contract"),
                    "trump": line.get("trump"),
                    "points": line.get("points"),
                    "made": line.get("made"),
                    "scores": line.get("scores"),
                }
            )
        elif kind == "forfeit":
            out.forfeit = str(line.get("detail", ""))
        elif kind == "game_end":
            out.end = {k: v for k, v in line.items() if k != "event"}
    return out
