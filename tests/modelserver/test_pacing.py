"""Paced answers played by the server's pacer (one timer, frames written at once) send the
same events, byte for byte in their encoding, as the engine's ``generate`` iterated."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from websockets.frames import Frame, Opcode

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.connection import SocketWriter, text_frame
from spark_ide.modelserver.engine import CancelToken, Job, Output, Tally, ToolCall
from spark_ide.modelserver.engines.scripted import ScriptedEngine, split_tokens
from spark_ide.modelserver.pacing import TimedEngine, Timetable
from spark_ide.modelserver.wire import OutputItem, ResponseRecord, event

from .protocol_client import client_for, running_server

TRICKY = 'Tabs\tand "quotes", back\\slashes, é, 😀, \u2028, a NUL \x00 and\nnew lines. '
SCRIPT = [[
    TRICKY * 3,
    {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n" + TRICKY},
    {"type": "function_call", "name": "run", "arguments": {"cmd": TRICKY}},
    {"type": "apply_patch_call", "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n+x = 'é'\n"}},
    {"type": "apply_patch_call", "operation": {"type": "delete_file", "path": "b.py"}},
    {"type": "custom_tool_call", "name": "quiet", "input": TRICKY, "stream": False},
    "Done: " + TRICKY,
]]
_IDS = re.compile(r'"((?:resp|msg|ctc|fc|apc|call)_[0-9a-f]{48})"')


class Iterated(ScriptedEngine):
    """The scripted engine served through its ``generate`` (a subclass overriding it)."""

    async def generate(self, job: Job, tally: Tally, cancel: CancelToken) -> AsyncGenerator[Output, None]:
        async for output in super().generate(job, tally, cancel):
            yield output


async def frames_of(engine: ScriptedEngine, text: str, **options: Any) -> list[str]:
    """The raw frames of one response, ids numbered in order of appearance."""
    async with running_server(engine) as server, client_for(server, **options) as client:
        await client.create(text)
        frames: list[str] = []
        while True:
            frame = await asyncio.wait_for(client.socket.recv(), 10)
            assert isinstance(frame, str)
            frames.append(frame)
            if json.loads(frame)["type"] in (protocol.COMPLETED, protocol.INCOMPLETE, protocol.FAILED):
                break
    seen: dict[str, str] = {}
    text_out = "\n".join(frames)
    text_out = _IDS.sub(lambda m: f'"id{seen.setdefault(m.group(1), str(len(seen)))}"', text_out)
    text_out = re.sub(r'"created_at": \d+', '"created_at": 0', text_out)
    return text_out.split("\n")


@pytest.mark.parametrize("compression", [None, "deflate"])
async def test_the_pacer_sends_what_iterating_generate_sends(compression: str | None) -> None:
    # At an unbounded rate each piece is as long as it may be, so both ways cut the same pieces.
    paced = ScriptedEngine({"s": SCRIPT}, tokens_per_s=1e12, ttft_s=0.0)
    assert isinstance(paced, TimedEngine) and paced.timetable(Job(()), Tally(), 0.0) is not None
    iterated = Iterated({"s": SCRIPT}, tokens_per_s=1e12, ttft_s=0.0)
    assert iterated.timetable(Job(()), Tally(), 0.0) is None  # served through its generate
    options = {"compression": compression}
    frames = await frames_of(paced, "[script:s]", **options)
    assert frames == await frames_of(iterated, "[script:s]", **options)
    # Each frame is json.dumps of its event, default spacing: the IDE's and OpenAI's encoding.
    assert all(frame == json.dumps(json.loads(frame)) for frame in frames)
    deltas = [json.loads(f) for f in frames if json.loads(f)["type"] == protocol.OUTPUT_TEXT_DELTA]
    assert "".join(d["delta"] for d in deltas) == TRICKY * 3 + "Done: " + TRICKY


async def test_paced_deltas_are_due_tokens_on_schedule() -> None:
    engine = ScriptedEngine({"s": "abcd" * 60}, tokens_per_s=500.0, ttft_s=0.0)
    async with running_server(engine) as server, client_for(server, compression=None) as client:
        begun = time.monotonic()
        events = await client.run("[script:s]")
        took = time.monotonic() - begun
    deltas = [e for e in events if e["type"] == protocol.OUTPUT_TEXT_DELTA]
    assert "".join(d["delta"] for d in deltas) == "abcd" * 60
    # 60 tokens at 500/s: the last one is due at 118 ms; a delta holds what is due when sent.
    assert 0.118 <= took < 2.0
    assert sum(len(split_tokens(d["delta"])) for d in deltas) == 60
    numbers = [e["sequence_number"] for e in events]
    assert numbers == list(range(len(events)))


async def test_one_pacer_plays_many_answers_at_once_each_at_its_rate() -> None:
    text = "abcd" * 200  # 200 tokens: 0.2 s at 1,000 tokens/s
    engine = ScriptedEngine({"s": text}, tokens_per_s=1000.0, ttft_s=0.0)
    async with running_server(engine) as server:

        async def one() -> tuple[str, float]:
            async with client_for(server, compression=None) as client:
                begun = time.monotonic()
                events = await client.run("[script:s]")
                return "".join(e["delta"] for e in events if e["type"] == protocol.OUTPUT_TEXT_DELTA), (
                    time.monotonic() - begun
                )

        results = await asyncio.gather(*(one() for _ in range(20)))
    assert all(played == text for played, _ in results)
    assert all(0.199 <= took < 3.0 for _, took in results)


async def test_a_cancel_stops_a_paced_answer_before_its_next_delta() -> None:
    engine = ScriptedEngine({"s": "abcd" * 5000}, tokens_per_s=1000.0, ttft_s=0.0)
    async with running_server(engine) as server, client_for(server, compression=None) as client:
        await client.create("[script:s]")
        events = await client.until(protocol.OUTPUT_TEXT_DELTA)
        response_id = events[0]["response"]["id"]
        await client.send({"type": protocol.CANCEL, "response_id": response_id})
        events += await client.response()
        # The next request waits behind the stopped one and runs once it has ended.
        after = await client.run("[say]next[/say]")
    final = events[-1]
    assert final["type"] == protocol.INCOMPLETE and final["response"]["incomplete_details"]["reason"] == "cancelled"
    played = "".join(e["delta"] for e in events if e["type"] == protocol.OUTPUT_TEXT_DELTA)
    # What was sent is all the answer holds: nothing was taken after the stop.
    assert final["response"]["output"][0]["content"][0]["text"] == played
    assert final["response"]["usage"]["output_tokens"] == len(played) // 4 < 5000
    assert after[-1]["type"] == protocol.COMPLETED and "".join(
        e["delta"] for e in after if e["type"] == protocol.OUTPUT_TEXT_DELTA) == "next"


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 70000])
def test_text_frames_are_what_websockets_makes(size: int) -> None:
    payload = ("é" * size).encode()[:size]
    assert text_frame(payload) == Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=[])


@pytest.mark.parametrize("call", [None, ToolCall("custom", "call_1", "apply_patch"), ToolCall("function", "c", "run")])
@pytest.mark.parametrize("piece", ["", "abcd", TRICKY, "\x00", '"\\u0000"'])
def test_a_delta_frame_is_json_dumps_of_the_delta_event(call: ToolCall | None, piece: str) -> None:
    item = OutputItem(call=call)
    head, tail = item.delta_frame(3)
    kind, fields = item.delta(3, piece)
    assert f"{head}{json.dumps(piece)}{tail}{41}}}" == json.dumps(event(kind, fields, 41))


async def test_the_time_to_first_token_counts_from_when_the_request_is_taken_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Announcing the response (response.created, response.in_progress) overlaps the TTFT, as
    a served model's prefill does: the timetable's clock starts before they are made."""
    announced: list[float] = []
    made = ResponseRecord.to_json

    def to_json(record: ResponseRecord) -> dict[str, Any]:
        announced.append(asyncio.get_running_loop().time())
        return made(record)

    class Spy(ScriptedEngine):
        def timetable(self, job: Job, tally: Tally, begun: float) -> Timetable | None:
            self.begun = begun
            return super().timetable(job, tally, begun)

    monkeypatch.setattr(ResponseRecord, "to_json", to_json)
    engine = Spy(tokens_per_s=1000.0, ttft_s=0.05)
    async with running_server(engine) as server, client_for(server, compression=None) as client:
        sent = asyncio.get_running_loop().time()
        events = await client.run("[say]hi[/say]")
    assert [e["type"] for e in events][:2] == [protocol.CREATED, protocol.IN_PROGRESS]
    assert sent <= engine.begun <= announced[0]  # before response.created was made


async def test_a_full_socket_buffer_waits_for_the_drain_and_loses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    drains = 0
    drained = SocketWriter.drained

    async def counted(writer: SocketWriter) -> None:
        nonlocal drains
        drains += 1
        await drained(writer)

    monkeypatch.setattr(SocketWriter, "drained", counted)
    text = "abcd" * 3_000_000  # 12 MB unpaced: far more than the socket buffers hold
    engine = ScriptedEngine({"s": text}, tokens_per_s=1e12, ttft_s=0.0)
    options: dict[str, Any] = {"compression": None, "max_queue": 4, "max_size": None}
    async with running_server(engine) as server, client_for(server, **options) as client:
        await client.create("[script:s]")
        await asyncio.sleep(0.3)  # not reading: the buffers fill, the server waits
        events = await client.response()
    assert drains > 0
    assert "".join(e["delta"] for e in events if e["type"] == protocol.OUTPUT_TEXT_DELTA) == text
    assert events[-1]["type"] == protocol.COMPLETED
    assert [e["sequence_number"] for e in events[1:]] == list(range(1, len(events)))


async def test_a_client_that_goes_away_mid_answer_ends_it_quietly(caplog: pytest.LogCaptureFixture) -> None:
    engine = ScriptedEngine({"s": "abcd" * 5000}, tokens_per_s=1e5, ttft_s=0.0)
    async with running_server(engine) as server:
        for _ in range(5):
            async with client_for(server, compression=None) as client:
                await client.create("[script:s]")
                await client.until(protocol.OUTPUT_TEXT_DELTA)
            await asyncio.sleep(0.05)  # the pacer's next writes meet a closed socket
    assert not [record for record in caplog.records if record.levelname == "ERROR"]
