"""Tool calls over a real Responses socket: each kind's events become the normalised tool
events, ``Completed`` names the calls, and the next round answers them on the chain (or in
full when the chain is gone)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from spark_ide.upstream import (
    Completed,
    Message,
    ProviderConfig,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStarted,
    ToolInputDelta,
    ToolOutput,
    TurnRequest,
    UpstreamEvent,
    open_client,
)
from spark_ide.upstream.base import ModelClient
from spark_ide.upstream.dialects import EditStyle
from tests.support.responses_socket import ResponsesSocket, apply_patch_call, custom_call, function_call, message
from tests.upstream.helpers import API_KEY, FAST_RETRY, collect

PATCH = ("*** Begin Patch\n*** Update File: app.py\n@@ def main():\n-    print('hi')\n"
         "+    print(\"héllo\")\n*** End Patch\n")


@pytest.fixture
async def fake() -> AsyncIterator[ResponsesSocket]:
    async with ResponsesSocket() as socket:
        yield socket


async def client_for(fake: ResponsesSocket) -> ModelClient:
    config = ProviderConfig(provider="openai", base_url=fake.base_url, model="gpt-5.1-codex", api_key=API_KEY,
                            retry=FAST_RETRY, first_byte_timeout_s=10, idle_timeout_s=10)
    return await open_client(config, warmup_instructions="test")


def request(style: EditStyle, text: str = "fix app.py") -> TurnRequest:
    return TurnRequest(instructions="test", input=(Message("user", text),), edit_style=style)


def inputs(events: list[UpstreamEvent], call_id: str) -> str:
    return "".join(e.text for e in events if isinstance(e, ToolInputDelta) and e.call_id == call_id)


async def test_a_custom_call_streams_its_input_and_completed_names_it(fake: ResponsesSocket) -> None:
    client = await client_for(fake)
    try:
        fake.answer(message("Fixing."), custom_call("call_1", PATCH))
        events = await collect(await client.start(request(EditStyle.APPLY_PATCH)))
    finally:
        await client.close()
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.call_id, s.item_id, s.name, s.kind) for s in started] == [
        ("call_1", "ctc_call_1", "apply_patch", "custom")]
    deltas = [e for e in events if isinstance(e, ToolInputDelta)]
    assert len(deltas) > 3 and inputs(events, "call_1") == PATCH  # it streams, not only at the end
    (done,) = [e for e in events if isinstance(e, ToolCallDone)]
    assert done.call_id == "call_1" and done.input == PATCH
    assert events.index(started[0]) < events.index(deltas[0]) < events.index(done)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Fixing."
    final = events[-1]
    assert isinstance(final, Completed) and final.tool_calls == (done.call,)
    sent = fake.requests[0]
    assert sent["tools"][0]["type"] == "custom" and sent["tools"][0]["format"]["syntax"] == "lark"
    assert fake.warmups and all(warm["tools"] == sent["tools"] for warm in fake.warmups)  # the prefix turns start with


async def test_a_function_call_streams_its_decoded_input(fake: ResponsesSocket) -> None:
    arguments = json.dumps({"input": PATCH})  # \" and \u00e9 escapes, cut anywhere below
    pieces = [arguments[i : i + 3] for i in range(0, len(arguments), 3)]
    client = await client_for(fake)
    try:
        fake.answer(function_call("call_f", arguments, pieces))
        events = await collect(await client.start(request(EditStyle.FUNCTION)))
    finally:
        await client.close()
    assert inputs(events, "call_f") == PATCH
    (done,) = [e for e in events if isinstance(e, ToolCallDone)]
    assert done.call.kind == "function" and done.input == PATCH and done.call.arguments == arguments
    assert fake.requests[0]["tools"][0] == {**fake.requests[0]["tools"][0], "type": "function", "name": "apply_patch"}


async def test_built_in_apply_patch_calls_say_the_operation_and_path_first(fake: ResponsesSocket) -> None:
    diff = "@@\n-a\n+b\n"
    client = await client_for(fake)
    try:
        fake.answer(
            apply_patch_call("call_u", "update_file", "src/a.py", diff),
            apply_patch_call("call_c", "create_file", "src/new.py", "+x\n", stream_diff=False),  # no diff events
            apply_patch_call("call_d", "delete_file", "old.py", ""),
        )
        events = await collect(await client.start(request(EditStyle.APPLY_PATCH_BUILTIN)))
    finally:
        await client.close()
    started = [(e.call_id, e.kind, e.operation, e.path) for e in events if isinstance(e, ToolCallStarted)]
    assert started == [("call_u", "apply_patch", "update_file", "src/a.py"),
                       ("call_c", "apply_patch", "create_file", "src/new.py"),
                       ("call_d", "apply_patch", "delete_file", "old.py")]
    assert inputs(events, "call_u") == diff and inputs(events, "call_c") == "+x\n"  # the item's diff, at its end
    final = events[-1]
    assert isinstance(final, Completed)
    assert [(c.call_id, c.input) for c in final.tool_calls] == [("call_u", diff), ("call_c", "+x\n"), ("call_d", "")]
    assert fake.requests[0]["tools"] == [{"type": "apply_patch"}]


async def test_the_next_round_chains_the_outputs_or_sends_every_round_in_full(fake: ResponsesSocket) -> None:
    client = await client_for(fake)
    try:
        first = request(EditStyle.APPLY_PATCH)
        fake.answer(message("Patching."), custom_call("call_1", PATCH))
        done = (await collect(await client.start(first)))[-1]
        assert isinstance(done, Completed) and done.response_id is not None
        (call,) = done.tool_calls
        second = first.next_round(response_id=done.response_id, answer="Patching.", calls=done.tool_calls,
                                  outputs=[ToolOutput(call, "failed: hunk 1: '-    print('hi')' not found")])
        fake.answer(custom_call("call_2", PATCH))
        round2 = await client.start(second)
        assert isinstance((await collect(round2))[-1], Completed) and round2.chained
        chained = fake.requests[-1]
        assert chained["previous_response_id"] == done.response_id
        assert chained["input"] == [{"type": "custom_tool_call_output", "call_id": "call_1",
                                     "output": "failed: hunk 1: '-    print('hi')' not found"}]
        assert chained["tools"][0]["name"] == "apply_patch"  # tools go with every round
        # The chain is gone (a reconnect): the same request goes out again in full, by itself.
        fake.forget()
        fake.answer(message("ok"))
        again = await client.start(second)
        assert isinstance((await collect(again))[-1], Completed) and not again.chained
    finally:
        await client.close()
    full = fake.requests[-1]
    assert "previous_response_id" not in full
    assert [item["type"] for item in full["input"]] == [
        "message", "message", "custom_tool_call", "custom_tool_call_output"]
    assert full["input"][2] == {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": PATCH}


async def test_a_steer_mid_call_goes_out_in_full_with_the_cut_call_answered_failed(fake: ResponsesSocket) -> None:
    fake.pace_s = 0.01
    client = await client_for(fake)
    try:
        first = request(EditStyle.APPLY_PATCH)
        fake.answer(custom_call("call_1", PATCH, [PATCH[i : i + 4] for i in range(0, len(PATCH), 4)]))
        stream = await client.start(first)
        started = await anext(stream)
        assert isinstance(started, ToolCallStarted)
        delta = await anext(stream)
        assert isinstance(delta, ToolInputDelta)  # the call is streaming
        cut = ToolCall(call_id=started.call_id, name=started.name, kind=started.kind, input=delta.text)
        steer = first.next_round(response_id=None, answer="", calls=[cut],
                                 outputs=[ToolOutput(cut, "failed: interrupted by the user", "failed")],
                                 then=[Message("user", "use a dict instead")])
        fake.answer(message("Using a dict."))
        steered = await client.steer(stream, steer)
        assert await collect(stream) == []  # the old answer yields nothing more
        events = await collect(steered)
        assert isinstance(events[-1], Completed) and steered.text == "Using a dict."
    finally:
        await client.close()
    sent = fake.requests[-1]
    assert "previous_response_id" not in sent and not steered.chained
    assert [item["type"] for item in sent["input"]] == [
        "message", "custom_tool_call", "custom_tool_call_output", "message"]
    assert sent["input"][2]["output"] == "failed: interrupted by the user"
    assert fake.closed >= 1  # the old answer's socket was closed, which stops it
