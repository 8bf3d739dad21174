"""Game records as RECORD.md specifies: a header line, the engine's events, one JSON per line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from arena.game import Event, Game, team_of
from arena.rulesets import RULESETS, Ruleset

RECORD_FORMAT = "sixty-three/1"


def header(game: Game, agents: Sequence[str], game_id: str, **extra: Any) -> dict[str, Any]:
    """The first line. A named ruleset is written by name; a custom one with every parameter."""
    ruleset: str | dict[str, Any] = game.ruleset.name
    if RULESETS.get(game.ruleset.name) != game.ruleset:
        ruleset = game.ruleset.parameters()
    out: dict[str, Any] = {
        "record": RECORD_FORMAT,
        "ruleset": ruleset,
        "game_id": game_id,
        "first_dealer": game.first_dealer,
        "seed": game.seed,
        "seats": [{"seat": s, "team": team_of(s), "agent": agents[s]} for s in range(4)],
    }
    out.update(extra)
    return out


# One encoder for every line: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)

# Line ends to some line readers (Python's str.splitlines, among others) that JSON leaves
# unescaped inside a string: a bot's note holding one would cut its line in two for them.
_LINE_BREAKS = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\u0085", "\\u0085"))


def dumps(line: dict[str, Any]) -> str:
    """One compact JSON line, with nothing in it that any reader takes for a line end."""
    text = _ENCODER.encode(line)
    if not text.isascii():
        for char, escaped in _LINE_BREAKS:
            text = text.replace(char, escaped)
    return text


def to_jsonl(head: dict[str, Any], events: Iterable[Event]) -> str:
    return "".join(dumps(line) + "\n" for line in (head, *events))


def game_record(game: Game, agents: Sequence[str], game_id: str, **extra: Any) -> str:
    return to_jsonl(header(game, agents, game_id, **extra), game.events)


def record_lines(text: str) -> list[str]:
    """A record's lines. JSON Lines ends a line at "\\n" only (a "\\r" before it is dropped),
    and JSON leaves U+2028, U+2029 and U+0085 unescaped inside a string (a bot's note, an
    agent's name): str.splitlines() ends lines at those too, and so would cut such a line in
    two. A newline at the end of the text ends the last line; none is needed."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def ruleset_of(head: dict[str, Any]) -> Ruleset:
    from arena.rulesets import ruleset_from_header

    return ruleset_from_header(head["ruleset"])
