"""The session socket's messages reach their handler in the pass of the event loop after their
arrival (channels' own loop took three: a task per ``receive``, waited on with
``asyncio.wait``), in the order they came; a disconnect ends the consumer and lets go of it."""

from __future__ import annotations

import asyncio
from typing import Any

from spark_ide.pairing.consumer import SessionConsumer


class Probe(SessionConsumer):
    """The consumer's own loop, with its handlers replaced by a record of what reached them."""

    def __init__(self) -> None:
        super().__init__()
        self.handled: list[dict[str, Any]] = []
        self.let_go = 0

    async def websocket_receive(self, message: dict[str, Any]) -> None:
        self.handled.append(message)

    async def disconnect(self, code: int) -> None:
        self.handled.append({"type": "disconnect", "code": code})

    def _let_go(self) -> None:
        self.let_go += 1


async def test_a_message_is_handled_one_pass_of_the_loop_after_it_arrives_in_order() -> None:
    consumer = Probe()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    task = asyncio.create_task(consumer({"type": "websocket"}, inbox.get, send))
    await asyncio.sleep(0)  # the consumer waits on the server's queue
    frames = [{"type": "websocket.receive", "text": f'{{"type":"ping","id":{n}}}'} for n in range(3)]
    inbox.put_nowait(frames[0])
    await asyncio.sleep(0)
    assert consumer.handled == frames[:1]
    inbox.put_nowait(frames[1])
    inbox.put_nowait(frames[2])
    await asyncio.sleep(0)
    assert consumer.handled == frames

    inbox.put_nowait({"type": "websocket.disconnect", "code": 1001})
    await asyncio.wait_for(task, 1)
    assert consumer.handled[-1] == {"type": "disconnect", "code": 1001}
    assert consumer.let_go == 1  # once, on the way out
    assert consumer.channel_layer is None and consumer.base_send is send


async def test_a_cancelled_consumer_still_lets_go() -> None:
    consumer = Probe()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send(message: dict[str, Any]) -> None:
        pass

    task = asyncio.create_task(consumer({"type": "websocket"}, inbox.get, send))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled() and consumer.let_go == 1
