"""Answers every decision, each after the first twice: once more with the first request's id
(already answered), then properly. Writes the request id of each fault notice to stderr."""

import sys

from _common import RawSeat, random_action

seat = RawSeat()
first = None
for msg in seat.messages():
    if msg.WhichOneof("kind") == "fault":
        print(f"fault notice for request {msg.fault.request_id}", file=sys.stderr, flush=True)
    if msg.WhichOneof("kind") != "decision":
        continue
    decision = msg.decision
    if first is None:
        first = decision.request_id
        print(f"first request {first}", file=sys.stderr, flush=True)
    else:
        seat.reply(first, random_action(decision, seat.rng))
    seat.reply(decision.request_id, random_action(decision, seat.rng))
