"""Plays N (argv[1], default 3) decisions, then the process exits without a word."""

import os
import sys

from _common import RawSeat, random_action

n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
seat = RawSeat()
for i, decision in enumerate(seat.decisions()):
    if i == n:
        os._exit(0)
    seat.reply(decision.request_id, random_action(decision, seat.rng))
