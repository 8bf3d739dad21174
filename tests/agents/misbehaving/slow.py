"""Answers correctly but SLOW_MS (default 300) late each time: the bank drains, then timeouts."""

import os
import time

from _common import RawSeat, random_action

delay = int(os.environ.get("SLOW_MS", "300")) / 1000
seat = RawSeat()
for decision in seat.decisions():
    time.sleep(delay)
    seat.reply(decision.request_id, random_action(decision, seat.rng))
