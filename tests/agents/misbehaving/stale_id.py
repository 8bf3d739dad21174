"""Answers every decision, each after the first twice: once more with the first request's id
(already answered), then properly."""

from _common import RawSeat, random_action

seat = RawSeat()
first = None
for decision in seat.decisions():
    if first is None:
        first = decision.request_id
    else:
        seat.reply(first, random_action(decision, seat.rng))
    seat.reply(decision.request_id, random_action(decision, seat.rng))
