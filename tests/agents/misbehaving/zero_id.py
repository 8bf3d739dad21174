"""Answers every decision twice: first with request id 0, as the stdio bridge sends a line its
bot printed while no decision waited (a JVM's warning at start-up, say), then properly."""

from _common import RawSeat, random_action

seat = RawSeat()
for decision in seat.decisions():
    seat.reply(0, "starting up v1")
    seat.reply(decision.request_id, random_action(decision, seat.rng))
