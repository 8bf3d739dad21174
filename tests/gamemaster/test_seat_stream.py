"""The writing side of a seat's Play stream: writes start at once, in order, one at a time."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from arena.gamemaster.server import _SeatStream


class _FakeContext:
    """context.write as grpc.aio has it: a coroutine that waits for the send to complete."""

    def __init__(self) -> None:
        self.started: list[bytes] = []
        self.sends: list[asyncio.Future[None]] = []

    async def write(self, data: bytes) -> None:
        self.started.append(data)
        send = asyncio.get_running_loop().create_future()
        self.sends.append(send)
        await send


def _stream() -> tuple[_SeatStream, _FakeContext]:
    context = _FakeContext()
    return _SeatStream(cast(Any, context)), context


def test_a_write_starts_in_the_step_that_puts_it_and_the_next_waits_for_it() -> None:
    async def main() -> None:
        stream, context = _stream()
        stream.put_nowait(b"one")
        assert context.started == [b"one"]  # no loop iteration needed
        stream.put_nowait(b"two")
        stream.put_nowait(None)
        await asyncio.sleep(0)
        assert context.started == [b"one"]  # one write in flight at a time
        context.sends[0].set_result(None)
        await asyncio.sleep(0)
        assert context.started == [b"one", b"two"]
        assert not stream.closed.done()  # None closes only after the writes before it
        context.sends[1].set_result(None)
        await asyncio.wait_for(stream.closed, 1)

    asyncio.run(main())


def test_a_failed_write_fails_closed_and_drops_what_waits() -> None:
    async def main() -> None:
        stream, context = _stream()
        stream.put_nowait(b"one")
        stream.put_nowait(b"two")
        context.sends[0].set_exception(ConnectionError("gone"))
        try:
            await asyncio.wait_for(stream.closed, 1)
        except ConnectionError:
            pass
        else:
            raise AssertionError("closed should have failed")
        stream.put_nowait(b"three")
        assert context.started == [b"one"]

    asyncio.run(main())


def test_messages_put_after_the_handler_has_gone_are_dropped() -> None:
    async def main() -> None:
        stream, context = _stream()
        stream.put_nowait(b"one")
        stream.put_nowait(b"two")
        stream.closed.cancel()  # the Play handler was cancelled (the agent went away)
        context.sends[0].set_result(None)
        await asyncio.sleep(0)
        stream.put_nowait(b"three")
        await asyncio.sleep(0)
        assert context.started == [b"one"]

    asyncio.run(main())
