"""Answers with garbage: raw bytes that are no AgentMessage (argv[1] "bytes", the default) or
a Reply whose action text is no action ("text")."""

import sys

from _common import RawSeat

mode = sys.argv[1] if len(sys.argv) > 1 else "bytes"
seat = RawSeat()
for decision in seat.decisions():
    if mode == "text":
        seat.reply(decision.request_id, "PLAY the ace of spades, please")
    else:
        seat.send_bytes(b"\xff\xff\xff\xff garbage \x00\x01\x02")
