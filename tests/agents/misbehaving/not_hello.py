"""Opens with a Reply instead of a Hello (argv[1] "reply"), or with garbage bytes ("bytes")."""

import sys

from _common import RawSeat

from arena import wire

mode = sys.argv[1] if len(sys.argv) > 1 else "reply"
first = wire.reply(1, "pass").SerializeToString() if mode == "reply" else b"\xff\xfe\x00junk"
seat = RawSeat(first=first)
for _ in seat.messages():
    print("WELCOMED", flush=True)
    break
