#!/usr/bin/env python3
"""A Sixty-three bot for the stdio bridge, in Python with nothing but the standard library.

Run it through the bridge, which holds the seat on the game master:

    arena stdio-agent -- python3 sample_agents/stdio/bot.py

It reads one JSON object per line on stdin and answers each "decision" line with one JSON line
on stdout (docs/protocol-json.md). Every decision carries the full observation and the legal
actions, so the bot keeps no state. Debug output goes to stderr: stdout is the protocol.
Its random choices repeat from game to game (seed 0), so a tournament played again gives the
same games; set BOT_SEED for other ones.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any

OPPOSITE = {"S": "C", "C": "S", "H": "D", "D": "H"}
STANDARD_POINTS = {"A": 1, "K": 25, "J": 1, "T": 1, "9": 9, "5": 5, "O": 5, "2": 1, "JO": 15}


def is_trump(card: str, trump: str) -> bool:
    return card == "JO" or card[1] == trump or card == "5" + OPPOSITE[trump]


def points(card: str, trump: str, table: dict[str, int]) -> int:
    if not is_trump(card, trump):
        return 0
    if card == "JO":
        return table.get("JO", 0)
    if card[1] != trump:
        return table.get("O", 0)  # the opposite five
    return table.get(card[0], 0)


def hand_value(hand: list[str], trump: str, table: dict[str, int]) -> int:
    """Points held in trumps, five for each trump, ten from partner: what we might take."""
    trumps = [c for c in hand if is_trump(c, trump)]
    return sum(points(c, trump, table) for c in trumps) + 5 * len(trumps) + 10


def best_suit(hand: list[str], table: dict[str, int]) -> str:
    return max("SHDC", key=lambda s: hand_value(hand, s, table))


def choose_cards(choice: dict[str, Any], rng: random.Random) -> str:
    """A legal give/keep: the required cards plus a random legal number of the others."""
    required = list(choice["required"])
    others = [c for c in choice["cards"] if c not in required]
    count = rng.randint(choice["min_count"], choice["max_count"])
    picked = required + rng.sample(others, max(0, count - len(required)))
    return " ".join([choice["verb"], *picked])


def decide(msg: dict[str, Any], table: dict[str, int], rng: random.Random) -> dict[str, Any]:
    obs, legal = msg["observation"], msg["legal"]
    reply: dict[str, Any] = {"request_id": msg["request_id"]}
    if legal["choice"] is not None:
        reply["action"] = choose_cards(legal["choice"], rng)
        return reply
    actions = legal["actions"]
    if obs["phase"] == "auction":
        suit = best_suit(obs["hand"], table)
        value = hand_value(obs["hand"], suit, table)
        bids = [a for a in actions if a.startswith("bid ") and int(a[4:]) <= value]
        if bids:
            reply["action"], reply["note"] = bids[0], f"{value} in {suit}"
        else:
            reply["action"] = "pass" if "pass" in actions else actions[0]
    elif obs["phase"] == "trump":
        wanted = "trump " + best_suit(obs["hand"], table)
        reply["action"] = wanted if wanted in actions else actions[0]
    else:
        reply["action"] = rng.choice(actions)
    return reply


def main() -> int:
    rng = random.Random(os.environ.get("BOT_SEED", "0"))
    table = dict(STANDARD_POINTS)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "welcome":
            table = (msg.get("ruleset_params") or {}).get("points") or table
            print(f"bot.py: seat {msg['seat']} of game {msg['game_id']}", file=sys.stderr)
        elif kind == "decision":
            print(json.dumps(decide(msg, table, rng)), flush=True)
        elif kind == "fault":
            print(f"bot.py: fault: {msg['kind']}: {msg['detail']}", file=sys.stderr)
        elif kind == "game_end":
            print(f"bot.py: game over: {msg['reason']} {msg['scores']}", file=sys.stderr)
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
