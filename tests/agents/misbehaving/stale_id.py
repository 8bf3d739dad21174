"""Answers the first decision properly, then every later one with that first request's id."""

from _common import RawSeat, random_action

seat = RawSeat()
first = None
for decision in seat.decisions():
    if first is None:
        first = decision.request_id
    seat.reply(first, random_action(decision, seat.rng))
