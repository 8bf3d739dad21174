"""Answers its first decision with a 1 MiB message (far above the game master's size limit)."""

from _common import RawSeat

seat = RawSeat()
for decision in seat.decisions():
    seat.reply(decision.request_id, "pass", note="x" * (1 << 20))
