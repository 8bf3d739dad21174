"""Plays N (argv[1], default 3) decisions, prints HUNG, then stops answering (to be SIGKILLed)."""

import sys
import time

from _common import RawSeat, random_action

n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
seat = RawSeat()
for i, decision in enumerate(seat.decisions()):
    if i == n:
        print("HUNG", flush=True)
        time.sleep(3600)
    seat.reply(decision.request_id, random_action(decision, seat.rng))
