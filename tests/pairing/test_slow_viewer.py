"""A viewer whose socket stops reading (a stalled laptop, a dead link that TCP has not
noticed) slows nobody else, and once it is too far behind it is closed and resumes.

Daphne under test with short WebSocket ping deadlines (production: 10 s, see
``spark_run.SLOW_SOCKETS``): its ping waits behind what the stalled socket has not read,
so the pong never comes and Daphne closes the socket; the client reconnects with
``?after=`` and catches up or resyncs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from benchmarks.pairing.stack import Stack
from tests.support.peer import Peer, say

pytestmark = pytest.mark.processes

FILES = {"app.py": "print('hi')\n"}
TEXT = " ".join(f"t{i}" for i in range(1500))


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    async with Stack({}, relay=False, daphne_args=("--ping-interval", "1", "--ping-timeout", "1")) as running:
        yield running


async def test_a_stalled_viewer_slows_nobody_and_resumes(stack: Stack) -> None:
    _, ws_url = await stack.session(FILES)
    driver, viewer, stalled = Peer("driver", stack.token), Peer("viewer", stack.token), Peer("stalled", stack.token)
    await driver.open(ws_url)
    await viewer.open(ws_url)
    # The stalled page: it takes the hello, then never reads again (websockets stops
    # reading the connection once a few messages wait unread).
    frozen = await connect(ws_url, additional_headers={"Authorization": f"Token {stack.token}"}, max_queue=4)
    hello = json.loads(await frozen.recv())
    assert hello["type"] == "hello"

    await driver.send({"type": "prompt", "text": say(TEXT, rate=2000)})
    done = await viewer.until(lambda e: e["type"] == "turn.finished", timeout=30)
    assert done["status"] == "completed"
    assert viewer.joined("turn.delta") == driver.joined("turn.delta") == TEXT  # nothing lost, nobody slowed

    # Meanwhile the server closed the stalled socket (its pong deadline passed): when the
    # page reads again it finds what the network held (all of the answer or part of it: the
    # kernel's buffers may hold a short answer whole), then the end of the connection. Had
    # the server not cut it, reading would wait for more until the timeout.
    await asyncio.sleep(3)
    got: list[dict[str, Any]] = [hello]
    with pytest.raises(ConnectionClosed):
        async with asyncio.timeout(10):
            async for message in frozen:
                if isinstance(message, str):
                    got.append(json.loads(message))
    # Coming back: the page reconnects and ends with the whole answer (catch-up or resync).
    stalled.events.extend(got)  # it resumes after the last event it holds
    await stalled.open(ws_url)
    await stalled.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed")
    resynced = any(e["type"] == "resync" for e in stalled.events)
    shown = stalled.joined("turn.delta") if not resynced else stalled.joined("turn.prose")
    assert TEXT in shown or shown == TEXT, "the stalled page came back without the whole answer"
    await asyncio.gather(driver.close(), viewer.close(), stalled.close())
