"""A stateless random agent on the raw protocol that saves every ServerMessage it receives.

Written without the SDK, as a bot in another language would be: it keeps no state and plays a
random legal action from each DecisionRequest alone. Each message is appended to CAPTURE_FILE
exactly as it came off the wire (4-byte big-endian length, then the bytes).
"""

from __future__ import annotations

import os
import queue
import random
import struct

import grpc

from arena import wire
from arena.wire import pb


def choose(decision: pb.DecisionRequest, rng: random.Random) -> str:
    legal = decision.legal
    if not legal.HasField("choice"):
        return rng.choice(list(legal.actions))
    c = legal.choice
    optional = [x for x in c.cards if x not in set(c.required)]
    n = rng.randint(c.min_count, c.max_count) - len(c.required)
    return " ".join([c.verb, *c.required, *rng.sample(optional, n)])


def main() -> None:
    token = os.environ["ARENA_SEAT_TOKEN"]
    rng = random.Random(token)
    outgoing: queue.Queue[bytes | None] = queue.Queue()
    live = os.environ.get("LIVE_EVENTS") == "1"  # events as their own messages (opt-in)
    hello = pb.AgentMessage(hello=pb.Hello(seat_token=token, protocol_version=1, live_events=live))
    outgoing.put(hello.SerializeToString())
    with grpc.insecure_channel(os.environ["ARENA_GAME_MASTER"]) as channel:
        play = channel.stream_stream(
            wire.PLAY, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        call = play(iter(outgoing.get, None))
        with open(os.environ["CAPTURE_FILE"], "wb") as capture:
            for raw in call:
                capture.write(struct.pack(">I", len(raw)) + raw)
                msg = pb.ServerMessage.FromString(raw)
                kind = msg.WhichOneof("kind")
                if kind == "decision":
                    action = choose(msg.decision, rng)
                    outgoing.put(wire.reply(msg.decision.request_id, action).SerializeToString())
                elif kind == "game_end":
                    break
        outgoing.put(None)
        call.cancel()


if __name__ == "__main__":
    main()
