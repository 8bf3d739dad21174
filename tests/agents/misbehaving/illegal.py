"""Answers every decision with a well-formed action the rules do not allow at that point."""

from _common import RawSeat

seat = RawSeat()
for decision in seat.decisions():
    # `trump S` is never legal in the auction, `pass` never outside it.
    auction = "pass" in decision.legal.actions or any(
        a.startswith("bid ") for a in decision.legal.actions
    )
    seat.reply(decision.request_id, "trump S" if auction else "pass")
