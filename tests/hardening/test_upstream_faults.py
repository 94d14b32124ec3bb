"""Upstream faults against a live room (issue 16, "Faults → Upstream"), one table.

Everything in the IDE runs for real (the consumer, the room, the Pilot, the upstream client
with its sockets); only the far end is ours: the model server with its scripted engine
(local mode, or OpenAI-like with a short connection lifetime) behind a loopback proxy that
refuses, cuts, stalls or slips frames into the stream. Each fault must end the turn
``failed`` with a reason saying what happened and a message within a bounded time — or, where
it can be, recover without the person noticing — with the block in flight rolled back, the
completed block kept, nothing of the turn after its ``turn.finished``, and the next prompt
working. The limits are set short here through the same variables an operator sets.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.server import ModelServer
from tests.pairing.conftest import FILES, Live, LiveClient, connect, say
from tests.pairing.test_steer_stop import FIRST_BLOCK, SECOND_BLOCK, STEERED, assert_nothing_after_finish
from tests.support.recording_engine import RecordingEngine
from tests.support.waits import eventually
from tests.upstream.helpers import StallingProxy

pytestmark = [pytest.mark.django_db(transaction=True)]

KEY = "sk-test-upstream-faults"
LIMIT_S = 1.0  # SPARK_UPSTREAM_FIRST_BYTE_S and SPARK_UPSTREAM_STALL_S in this test
ROLLOVER_S = 1.2  # the OpenAI-like server's connection lifetime (60 minutes on OpenAI)
# The answer: two blocks; util.py is changed at once, then app.py is written over ~2 s
# (1,000 tokens/s), the block in flight when a fault comes mid-turn.
# A short one, for a turn that must fit in the OpenAI-like server's short connection lifetime.
SHORT_SECOND = '<write path="app.py">\nrolled_over = True\n</write>\n'

Inject = Callable[[StallingProxy], Awaitable[None]]


async def refuse(proxy: StallingProxy) -> None:
    await proxy.refuse()


async def cut(proxy: StallingProxy) -> None:
    proxy.cut_all()


async def stall(proxy: StallingProxy) -> None:
    proxy.stall()


def frame(text: str) -> Inject:
    async def inject(proxy: StallingProxy) -> None:
        proxy.inject_text(text)

    return inject


async def wait_for_rollover(proxy: StallingProxy) -> None:
    await asyncio.sleep(ROLLOVER_S + 0.3)  # the server ends the idle sockets meanwhile


@dataclass(frozen=True)
class Fault:
    inject: Inject | None  # None: the fault comes by itself (the server's lifetime limit)
    mid_turn: bool  # injected once the first block is applied and the second streams; else before the prompt
    status: str
    reason: str
    error: str  # in turn.finished.error
    openai_like: bool = False
    second_block: str = SECOND_BLOCK

    @property
    def answer(self) -> str:
        return say(FIRST_BLOCK + self.second_block, rate=1000)


FAULTS = {
    "refused": Fault(refuse, False, "failed", "model_unavailable", "ConnectionRefusedError"),
    "dropped": Fault(cut, True, "failed", "connection_lost", "dropped mid-answer"),
    "first-byte-stall": Fault(stall, False, "failed", "first_byte_timeout", f"no first byte within {LIMIT_S:g} s"),
    "stall-mid-stream": Fault(stall, True, "failed", "stalled", f"no event within {LIMIT_S:g} s"),
    "malformed-json": Fault(frame('{"type": "response.output_text.delta", "delta": '), True,
                            "failed", "model_protocol_error", "not JSON"),
    "not-an-event": Fault(frame(json.dumps(["a", "list"])), True, "failed", "model_protocol_error", "not an object"),
    "unknown-event": Fault(frame(json.dumps({"type": "response.reasoning_summary_text.delta", "delta": "hm"})), True,
                           "completed", "answered", ""),
    "error-event": Fault(frame(json.dumps({"type": "error", "code": "server_error", "message": "the model broke off"})),
                         True, "failed", "model_error", "server_error: the model broke off"),
    "error-event-nested": Fault(
        frame(json.dumps({"type": "error", "status": 500,
                          "error": {"type": "server_error", "code": "overloaded", "message": "try later"}})),
        True, "failed", "model_error", "overloaded: try later",
    ),
    "rollover-idle": Fault(wait_for_rollover, False, "completed", "answered", "", openai_like=True,
                           second_block=SHORT_SECOND),
    "rollover-mid-turn": Fault(None, True, "failed", "connection_expired", "lifetime limit", openai_like=True),
}


@asynccontextmanager
async def model_behind_proxy(
    fault: Fault, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[StallingProxy, RecordingEngine]]:
    config = ServerConfig(
        port=0, api_key=KEY if fault.openai_like else None, cancel_extension=not fault.openai_like,
        lifetime_s=ROLLOVER_S if fault.openai_like else 3600.0,
    )
    engine = RecordingEngine(tokens_per_s=2000.0, ttft_s=0.005)
    async with ModelServer(engine, config) as server:
        proxy = StallingProxy("127.0.0.1", server.port)
        await proxy.start()
        monkeypatch.setenv("SPARK_PROVIDER", "openai" if fault.openai_like else "local")
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.base_url())
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("SPARK_MODEL", "smollm2")
        monkeypatch.setenv("SPARK_UPSTREAM_FIRST_BYTE_S", str(LIMIT_S))
        monkeypatch.setenv("SPARK_UPSTREAM_STALL_S", str(LIMIT_S))
        monkeypatch.setenv("SPARK_UPSTREAM_CONNECT_S", "2")
        monkeypatch.setenv("SPARK_UPSTREAM_CONNECT_TRIES", "1")  # a refusal is reported at once
        try:
            yield proxy, engine
        finally:
            await proxy.stop()


async def prompt(client: LiveClient, text: str) -> str:
    await client.send({"type": "prompt", "text": text})
    event = await client.until(lambda e: e["type"] == "turn.started" and e["prompt"] == text)
    return str(event["turn"])


@pytest.mark.parametrize("name", list(FAULTS))
async def test_an_upstream_fault_ends_the_turn_clearly_and_the_next_prompt_works(
    live: Live, rooms: None, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    fault = FAULTS[name]
    async with model_behind_proxy(fault, monkeypatch) as (proxy, engine):
        client = await connect(live)
        # The room opens its model connection (and the spare, on OpenAI) warm before any prompt.
        await eventually(lambda: len(engine.warmups) == (2 if fault.openai_like else 1))
        await asyncio.sleep(0.1)  # the warm-up's answer through the proxy
        injected_at = time.monotonic()
        if fault.inject is not None and not fault.mid_turn:
            await fault.inject(proxy)
            injected_at = time.monotonic()
        turn = await prompt(client, fault.answer)
        if fault.mid_turn:
            await client.until(lambda e: e["type"] == "edit.status" and e["block"] == 1 and e["state"] == "streaming")
            if fault.inject is not None:
                await fault.inject(proxy)
                injected_at = time.monotonic()
        end = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn, timeout=15)
        took = time.monotonic() - injected_at
        assert (end["status"], end["reason"]) == (fault.status, fault.reason), end
        assert fault.error in end.get("error", ""), end
        # The error names the limit that ended the turn; this bounds only a turn that hangs past
        # it (slack for a loaded machine: how soon a fault ends a turn is not a test's figure).
        if fault.status == "failed":
            assert took < (ROLLOVER_S if fault.inject is None else 0) + LIMIT_S + 5.0, took
        await client.pump(0.3)
        assert_nothing_after_finish(client, turn)
        blocks = {e["block"]: e["state"] for e in client.of("edit.status", turn)}
        if fault.status == "completed":
            assert blocks == {0: "applied", 1: "applied"}
            assert client.text("app.py") == fault.second_block.split("\n", 1)[1].removesuffix("</write>\n")
        elif fault.mid_turn:
            assert blocks == {0: "applied", 1: "rolled_back"}
            assert client.text("util.py") == "X = 2\n"  # the completed block stays
            assert client.text("app.py") == FILES["app.py"]  # the block in flight is gone
        else:
            assert blocks == {}
            assert client.text("util.py") == FILES["util.py"]
        if name == "refused":
            await proxy.listen_again()  # the model is back
        again = await prompt(client, say(STEERED))
        after = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == again, timeout=15)
        assert (after["status"], after["reason"]) == ("completed", "answered"), after
        await client.until_true(lambda: client.text("steered.py") == "steered = True\n")
        print(f"\n{name}: {end['status']} {end['reason']} after {took:.2f} s: {end.get('error', '')}")
        await client.close()
