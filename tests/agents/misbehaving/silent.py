"""Says Hello, then never answers a decision (every decision times out)."""

from _common import RawSeat

seat = RawSeat()
for _ in seat.messages():
    pass
