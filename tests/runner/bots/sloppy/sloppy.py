"""Test agent (stdio): its first answer is a debug line, the others are the fallback."""

import json
import sys

answered = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "game_end":
        break
    if msg["type"] == "decision":
        reply = {"request_id": msg["request_id"], "action": msg["legal"]["fallback"]}
        print("debug: thinking" if answered == 0 else json.dumps(reply), flush=True)
        answered += 1
