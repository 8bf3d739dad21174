#!/usr/bin/env python3
"""A minimal Sixty-three bot for the stdio bridge: JSON lines in, JSON lines out, no gRPC.

`arena stdio-agent -- python3 minimal_bot.py` holds the seat on the game master and writes
one JSON object per line to this program's stdin (docs/protocol-json.md); the bot answers each
"decision" line with one reply line on stdout. Logs go to stderr: stdout is the protocol.
Try it:

    arena play --seat 'arena stdio-agent -- python3 docs/examples/stdio/minimal_bot.py' \
               --seat greedy --seat random --seat greedy
"""

import json
import sys


def decide(obs, legal):
    """One decision: (action text, note)."""
    choice = legal["choice"]
    if choice is not None:  # give / keep: choose cards, between min_count and max_count
        required = choice["required"]
        others = [c for c in choice["cards"] if c not in required]
        extra = max(0, choice["min_count"] - len(required))
        return " ".join([choice["verb"], *required, *others[:extra]]), ""

    actions = legal["actions"]  # every legal action, canonical order
    hand = obs["hand"]
    longest = max("SHDC", key=lambda suit: sum(card[1] == suit for card in hand))
    if obs["phase"] == "auction":
        bids = [a for a in actions if a.startswith("bid ")]
        length = sum(card[1] == longest for card in hand)
        if "pass" in actions and (length < 5 or not bids):
            return "pass", ""
        return bids[0], f"{length} cards in {longest}"
    if obs["phase"] == "trump":
        return f"trump {longest}", ""
    return actions[0], ""  # play: the first legal card


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "decision":
        action, note = decide(msg["observation"], msg["legal"])
        reply = {"request_id": msg["request_id"], "action": action, "note": note}
        print(json.dumps(reply), flush=True)  # one line per decision, flushed
    elif msg["type"] == "fault":
        print(f"fault: {msg['kind']}: {msg['detail']}", file=sys.stderr)
    elif msg["type"] == "game_end":
        break
