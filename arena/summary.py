"""Readable hand-by-hand summaries of game events, for terminals."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

Event = dict[str, Any]

HEADER = (
    f"{'hand':>4} {'dealer':>6} {'bidder':>6} {'bid':>4} {'trump':>5} {'points':>8} {'scores':>11}"
)


def hand_rows(events: Iterable[Event]) -> list[str]:
    rows = []
    dealer = {}
    for e in events:
        if e["event"] == "deal":
            dealer[e["hand"]] = e["dealer"]
        elif e["event"] == "hand_end":
            made = "" if e["made"] else "!"
            rows.append(
                f"{e['hand']:>4} {dealer.get(e['hand'], '?'):>6} {e['bidder']:>6} "
                f"{e['contract']:>3}{made:1} {e['trump']:>5} "
                f"{e['points'][0]:>3}-{e['points'][1]:<4} {e['scores'][0]:>5} {e['scores'][1]:>5}"
            )
    return rows


def outcome(winner: int | None, scores: Sequence[int], why: str, teams: Sequence[str] = ()) -> str:
    """The result in words, the winner's score first as the dashboard writes it: "team 1 wins,
    296 to -310 (target)" (team 0's first read as if the winner had fewer points)."""
    if winner is None:
        return f"draw at {scores[0]} to {scores[1]} ({why})"
    team = f"team {winner} ({teams[winner]})" if teams else f"team {winner}"
    return f"{team} wins, {scores[winner]} to {scores[1 - winner]} ({why})"


def result_line(events: Sequence[Event], agents: Sequence[str]) -> str:
    end = events[-1]
    teams = [f"{agents[0]}+{agents[2]}", f"{agents[1]}+{agents[3]}"]
    why = end["reason"]
    if end.get("forfeit_seat") is not None:
        why += f" by seat {end['forfeit_seat']}"
    return outcome(end["winner"], end["scores"], why, teams)


def print_game(events: Sequence[Event], agents: Sequence[str], title: str) -> None:
    print(title)
    print("  seats: " + ", ".join(f"{i} {name}" for i, name in enumerate(agents)))
    print("  team 0 = seats 0+2, team 1 = seats 1+3; '!' marks a failed contract")
    print("  " + HEADER)
    for row in hand_rows(events):
        print("  " + row)
    print("  result: " + result_line(events, agents))


def print_side_by_side(
    games: Sequence[Sequence[Event]], agents: Sequence[Sequence[str]], titles: Sequence[str]
) -> None:
    columns = [hand_rows(events) for events in games]
    width = len(HEADER)
    print("  ".join(f"{t:<{width}}" for t in titles))
    print("  ".join(f"{'seats ' + ','.join(a):<{width}}" for a in agents))
    print("  ".join(f"{HEADER:<{width}}" for _ in games))
    for i in range(max(len(c) for c in columns)):
        print("  ".join(f"{(c[i] if i < len(c) else ''):<{width}}" for c in columns))
    for title, events, names in zip(titles, games, agents, strict=True):
        print(f"{title}: {result_line(events, names)}")
