"""Plumbing shared by the misbehaving agents: a raw Play stream without the SDK's manners.

Each script in this directory breaks the protocol in one way, for tests/gamemaster. They read
ARENA_GAME_MASTER and ARENA_SEAT_TOKEN like real agents.
"""

from __future__ import annotations

import os
import queue
import random
import sys
from collections.abc import Iterator

import grpc

from arena import wire
from arena.wire import pb


class RawSeat:
    """One Play stream that sends whatever bytes the script wants."""

    def __init__(
        self,
        token: str | None = None,
        version: int = wire.PROTOCOL_VERSION,
        first: bytes | None = None,
    ) -> None:
        address = os.environ["ARENA_GAME_MASTER"]
        token = os.environ["ARENA_SEAT_TOKEN"] if token is None else token
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self.channel = grpc.insecure_channel(address)
        stub = self.channel.stream_stream(
            wire.PLAY,
            request_serializer=lambda b: b,
            response_deserializer=pb.ServerMessage.FromString,
        )
        hello = pb.AgentMessage(
            hello=pb.Hello(seat_token=token, protocol_version=version, agent_name="misbehaving")
        )
        self.send_bytes(first if first is not None else hello.SerializeToString())
        self.call = stub(iter(self._out.get, None))
        self.rng = random.Random(os.environ.get("ARENA_SEAT_TOKEN", ""))

    def send_bytes(self, data: bytes) -> None:
        self._out.put(data)

    def reply(self, request_id: int, action: str, note: str = "") -> None:
        self.send_bytes(wire.reply(request_id, action, note).SerializeToString())

    def messages(self) -> Iterator[pb.ServerMessage]:
        """Every message until GameEnd; a refusal prints REFUSED <CODE> and exits 0."""
        try:
            for msg in self.call:
                yield msg
                if msg.WhichOneof("kind") == "game_end":
                    # Closed here, as the SDK does: a call still open when the interpreter
                    # exits can deadlock grpc's finalizer against its polling thread (the
                    # agent then hangs until killed) if the stream's status arrives just then.
                    self.close()
                    return
        except grpc.RpcError as exc:
            print(f"REFUSED {exc.code().name} {exc.details()}", flush=True)
            self.close()  # for the same reason: never leave a call open at exit
            sys.exit(0)

    def decisions(self) -> Iterator[pb.DecisionRequest]:
        for msg in self.messages():
            if msg.WhichOneof("kind") == "decision":
                yield msg.decision

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()
        self.channel.close()
        # Let the call's finalizer run now, not during interpreter shutdown.
        del self.call, self.channel


def random_action(decision: pb.DecisionRequest, rng: random.Random) -> str:
    """A random legal action, computed from the request alone (like a stateless bot)."""
    legal = decision.legal
    if not legal.HasField("choice"):
        return rng.choice(list(legal.actions))
    c = legal.choice
    optional = [x for x in c.cards if x not in set(c.required)]
    n = rng.randint(c.min_count, c.max_count) - len(c.required)
    return " ".join([c.verb, *c.required, *rng.sample(optional, n)]).strip()
