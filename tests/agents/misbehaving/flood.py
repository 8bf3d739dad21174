"""Floods the game master with replies that answer nothing.

argv[1] "unknown" (default): after each proper answer, 100 replies to request id 0 (no request).
"late": lets its first decision time out, then repeats that expired request id 100 times.
"""

import sys

from _common import RawSeat, random_action

mode = sys.argv[1] if len(sys.argv) > 1 else "unknown"
seat = RawSeat()
for msg in seat.messages():
    kind = msg.WhichOneof("kind")
    if mode == "late":
        if kind == "fault" and msg.fault.kind == "timeout":
            for _ in range(100):
                seat.reply(msg.fault.request_id, msg.fault.fallback)
        elif kind == "decision" and msg.decision.request_id > 1:
            pass  # keep quiet: the flood of late replies is what this agent is for
    elif kind == "decision":
        seat.reply(msg.decision.request_id, random_action(msg.decision, seat.rng))
        for _ in range(100):
            seat.reply(0, "pass")
