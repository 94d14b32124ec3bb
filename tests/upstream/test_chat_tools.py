"""Function tool calls over Chat Completions: ``tool_calls`` fragments by index become the
same tool events as on the Responses socket, and a round's answer is an assistant message
with its calls plus one ``tool`` message per call."""

from __future__ import annotations

import json

import httpx

from spark_ide.upstream import (
    Completed,
    Message,
    ProviderConfig,
    TextDelta,
    ToolCallDone,
    ToolCallStarted,
    ToolInputDelta,
    ToolOutput,
    TurnRequest,
    UpstreamEvent,
    open_client,
)
from spark_ide.upstream.dialects import EditStyle
from tests.upstream.helpers import collect
from tests.upstream.sse_fixtures import chat_server, chunk, sse_body

PATCH = "*** Begin Patch\n*** Add File: a.txt\n+\"quoted\" ünï\n*** End Patch\n"


def tool_chunk(index: int, arguments: str, *, call_id: str | None = None, name: str | None = None,
               finish: str | None = None) -> dict[str, object]:
    function: dict[str, object] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    fragment: dict[str, object] = {"index": index, "function": function}
    if call_id is not None:
        fragment |= {"id": call_id, "type": "function"}
    return {"id": "chatcmpl-7", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": finish}]}


def config() -> ProviderConfig:
    return ProviderConfig(provider="openai-compatible", base_url="http://llm.test/v1", model="llama")


async def run(body: bytes, request: TurnRequest, seen: list[httpx.Request]) -> list[UpstreamEvent]:
    client = await open_client(config(), http_transport=chat_server(body, seen=seen))
    try:
        return await collect(await client.start(request))
    finally:
        await client.close()


def first_request() -> TurnRequest:
    return TurnRequest(instructions="edit", input=(Message("user", "add a.txt"),), edit_style=EditStyle.FUNCTION)


async def test_two_calls_by_index_stream_decoded_and_complete_with_tool_calls() -> None:
    first, second = json.dumps({"input": PATCH}), json.dumps({"input": "*** Begin Patch\n*** Delete File: b\n"})
    body = sse_body([
        chunk("On it."),
        tool_chunk(0, "", call_id="call_a", name="apply_patch"),
        *(tool_chunk(0, first[i : i + 5]) for i in range(0, len(first), 5)),
        tool_chunk(1, second[:9], call_id="call_b", name="apply_patch"),
        tool_chunk(1, second[9:]),
        chunk(finish="tool_calls"),
    ])
    seen: list[httpx.Request] = []
    events = await run(body, first_request(), seen)
    started = [(e.call_id, e.name, e.kind) for e in events if isinstance(e, ToolCallStarted)]
    assert started == [("call_a", "apply_patch", "function"), ("call_b", "apply_patch", "function")]
    streamed = "".join(e.text for e in events if isinstance(e, ToolInputDelta) and e.call_id == "call_a")
    assert streamed == PATCH
    assert sum(isinstance(e, ToolInputDelta) and e.call_id == "call_a" for e in events) > 5
    done = [e for e in events if isinstance(e, ToolCallDone)]
    assert [(d.call_id, d.input) for d in done] == [("call_a", PATCH), ("call_b", json.loads(second)["input"])]
    final = events[-1]
    assert isinstance(final, Completed) and [c.call_id for c in final.tool_calls] == ["call_a", "call_b"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["On it."]
    sent = json.loads(seen[-1].content)
    assert sent["tools"][0]["type"] == "function" and sent["tools"][0]["function"]["name"] == "apply_patch"
    assert sent["tools"][0]["function"]["parameters"]["required"] == ["input"]


async def test_the_next_round_sends_the_calls_and_one_tool_message_each() -> None:
    arguments = json.dumps({"input": PATCH})
    seen: list[httpx.Request] = []
    events = await run(sse_body([tool_chunk(0, arguments, call_id="call_a", name="apply_patch", finish="tool_calls")]),
                       first_request(), seen)
    final = events[-1]
    assert isinstance(final, Completed)
    (call,) = final.tool_calls
    follow = first_request().next_round(response_id=final.response_id, answer="", calls=final.tool_calls,
                                        outputs=[ToolOutput(call, "applied: a.txt created")])
    await run(sse_body([chunk("Done.", finish="stop")]), follow, seen)
    messages = json.loads(seen[-1].content)["messages"]
    assert messages[1:] == [
        {"role": "user", "content": "add a.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "apply_patch", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "applied: a.txt created"},
    ]


async def test_a_call_without_an_id_gets_one_and_a_whole_call_in_one_chunk_works() -> None:
    fragment = tool_chunk(0, json.dumps({"input": "x"}), name="apply_patch")
    events = await run(sse_body([fragment, chunk(finish="tool_calls")]), first_request(), [])
    (done,) = [e for e in events if isinstance(e, ToolCallDone)]
    assert done.call_id == "chatcmpl-7_0" and done.input == "x"
