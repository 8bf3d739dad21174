"""Answers with garbage: raw bytes that are no AgentMessage (argv[1] "bytes", the default), a
Reply whose action text is no action ("text") or one naming a request never sent ("wrong_id")."""

import sys

from _common import RawSeat, random_action

mode = sys.argv[1] if len(sys.argv) > 1 else "bytes"
seat = RawSeat()
for decision in seat.decisions():
    if mode == "text":
        seat.reply(decision.request_id, "PLAY the ace of spades, please")
    elif mode == "wrong_id":
        seat.reply(decision.request_id + 1000, random_action(decision, seat.rng))
    else:
        seat.send_bytes(b"\xff\xff\xff\xff garbage \x00\x01\x02")
