"""Says Hello with protocol version 99; prints REFUSED <CODE> when the game master refuses."""

from _common import RawSeat

seat = RawSeat(version=99)
for _ in seat.messages():
    print("WELCOMED", flush=True)
    break
