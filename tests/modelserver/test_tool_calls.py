"""Tool calls over the real socket: each kind streamed with OpenAI's event shapes and order,
follow-ups that answer them (what the server received is in its request log), and the
chains OpenAI refuses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import Job, Message
from spark_ide.modelserver.engines.scripted import split_tokens
from spark_ide.modelserver.script import PatchCall, Say, ScriptError
from spark_ide.modelserver.server import ServerConfig
from tests.support.recording_engine import RecordingEngine, RecordingServer

from .protocol_client import Client, client_for, types_of

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-print('hi')\n+print('hello')\n*** End Patch\n"
DIFF = "@@\n-print('hi')\n+print('hello')\n"
ARGUMENTS = {"input": PATCH}
SCRIPTS: dict[str, Any] = {
    "custom": [
        ["Let me fix it.", {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH, "call_id": "call_c"}],
        "Fixed.",
    ],
    "function": [[{"type": "function_call", "name": "apply_patch", "arguments": ARGUMENTS, "call_id": "call_f"}],
                 "Fixed."],
    "builtin": [
        [
            PatchCall("update_file", "app.py", DIFF, call_id="call_u"),
            {"type": "apply_patch_call", "operation": {"type": "delete_file", "path": "old.py"}, "call_id": "call_d"},
            "Both sent.",
        ],
        ["Round two."],
    ],
    "unnamed": [[{"type": "custom_tool_call", "name": "apply_patch", "input": PATCH}], "ok"],
    "silent": [[{"type": "apply_patch_call", "operation": {"type": "update_file", "path": "app.py", "diff": DIFF},
                 "stream": False}]],
}


@pytest.fixture
async def server() -> AsyncIterator[RecordingServer]:
    async with RecordingServer(RecordingEngine(SCRIPTS, tokens_per_s=20_000, ttft_s=0.0)) as started:
        yield started


@pytest.fixture
async def ws(server: RecordingServer) -> AsyncIterator[Client]:
    async with client_for(server) as connected:
        yield connected


def by_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def output(item_type: str, call_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": item_type, "call_id": call_id, "output": text, **extra}


async def test_a_custom_tool_call_streams_after_the_text_with_openais_events(ws: Client) -> None:
    events = await ws.run("[script:custom]")
    kinds = types_of(events)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    call_at = kinds.index(protocol.OUTPUT_ITEM_ADDED, 3)  # the second item
    # The message closes before the call opens.
    assert kinds[call_at - 3 : call_at] == [
        protocol.OUTPUT_TEXT_DONE, protocol.CONTENT_PART_DONE, protocol.OUTPUT_ITEM_DONE]
    added = events[call_at]
    item_id = added["item"]["id"]
    assert added["output_index"] == 1
    assert added["item"] == {"type": "custom_tool_call", "id": item_id, "call_id": "call_c",
                             "name": "apply_patch", "input": ""}
    assert item_id.startswith("ctc_")
    deltas = by_type(events, protocol.CUSTOM_TOOL_INPUT_DELTA)
    assert "".join(d["delta"] for d in deltas) == PATCH
    assert {frozenset(d) for d in deltas} == {
        frozenset({"type", "item_id", "output_index", "delta", "sequence_number"})}
    assert {(d["item_id"], d["output_index"]) for d in deltas} == {(item_id, 1)}
    done, item_done, completed = events[-3:]
    assert kinds[call_at + 1 : -3] == [protocol.CUSTOM_TOOL_INPUT_DELTA] * len(deltas)
    assert done == {"type": protocol.CUSTOM_TOOL_INPUT_DONE, "item_id": item_id, "output_index": 1,
                    "input": PATCH, "sequence_number": done["sequence_number"]}
    assert item_done["type"] == protocol.OUTPUT_ITEM_DONE and item_done["output_index"] == 1
    assert item_done["item"] == {**added["item"], "input": PATCH}
    assert completed["type"] == protocol.COMPLETED
    message, call = completed["response"]["output"]
    assert message["type"] == "message" and message["content"][0]["text"] == "Let me fix it."
    assert call == item_done["item"]
    assert completed["response"]["usage"]["output_tokens"] == len(split_tokens("Let me fix it." + PATCH))


async def test_a_function_call_streams_its_arguments(ws: Client) -> None:
    events = await ws.run("[script:function]")
    assert types_of(events)[2] == protocol.OUTPUT_ITEM_ADDED  # no message item before it
    added = events[2]["item"]
    assert added == {"type": "function_call", "id": added["id"], "call_id": "call_f", "name": "apply_patch",
                     "arguments": "", "status": "in_progress"}
    assert added["id"].startswith("fc_") and events[2]["output_index"] == 0
    deltas = by_type(events, protocol.FUNCTION_ARGUMENTS_DELTA)
    assert json.loads("".join(d["delta"] for d in deltas)) == ARGUMENTS
    [done] = by_type(events, protocol.FUNCTION_ARGUMENTS_DONE)
    assert (done["item_id"], done["output_index"], done["name"]) == (added["id"], 0, "apply_patch")
    assert json.loads(done["arguments"]) == ARGUMENTS
    assert events[-2]["item"] == {**added, "arguments": done["arguments"], "status": "completed"}
    assert events[-1]["response"]["output"] == [events[-2]["item"]]


async def test_apply_patch_calls_name_the_path_first_and_stream_the_diff(ws: Client) -> None:
    events = await ws.run("[script:builtin]")
    added = by_type(events, protocol.OUTPUT_ITEM_ADDED)
    update, delete = added[0]["item"], added[1]["item"]
    assert update == {"type": "apply_patch_call", "id": update["id"], "call_id": "call_u", "status": "in_progress",
                      "operation": {"type": "update_file", "path": "app.py", "diff": ""}}
    assert delete["operation"] == {"type": "delete_file", "path": "old.py"}
    assert [a["output_index"] for a in added] == [0, 1, 2] and added[2]["item"]["type"] == "message"
    deltas = by_type(events, protocol.APPLY_PATCH_DIFF_DELTA)
    assert {d["item_id"] for d in deltas} == {update["id"]}  # a delete streams no diff
    assert "".join(d["delta"] for d in deltas) == DIFF
    [done] = by_type(events, protocol.APPLY_PATCH_DIFF_DONE)
    assert (done["item_id"], done["output_index"], done["diff"]) == (update["id"], 0, DIFF)
    final = events[-1]["response"]["output"]
    assert final[0] == {**update, "status": "completed", "operation": {**update["operation"], "diff": DIFF}}
    assert final[1] == {**delete, "status": "completed"}
    assert final[2]["content"][0]["text"] == "Both sent."


async def test_an_unstreamed_call_arrives_whole_in_output_item_done(ws: Client) -> None:
    events = await ws.run("[script:silent]")
    assert types_of(events) == [protocol.CREATED, protocol.IN_PROGRESS, protocol.OUTPUT_ITEM_ADDED,
                                protocol.OUTPUT_ITEM_DONE, protocol.COMPLETED]
    assert events[2]["item"]["operation"] == {"type": "update_file", "path": "app.py", "diff": ""}
    assert events[3]["item"]["operation"]["diff"] == DIFF and events[3]["item"]["status"] == "completed"
    assert events[-1]["response"]["usage"]["output_tokens"] == len(split_tokens(DIFF))


async def test_a_follow_up_with_the_outputs_plays_the_next_round(server: RecordingServer, ws: Client) -> None:
    first = await ws.run("[script:builtin]")
    answers = [output("apply_patch_call_output", "call_u", "applied 1 hunk", status="completed"),
               output("apply_patch_call_output", "call_d", "", status="failed")]
    second = await ws.run(answers, previous_response_id=first[-1]["response"]["id"])
    assert second[-1]["type"] == protocol.COMPLETED
    assert second[-1]["response"]["output"][0]["content"][0]["text"] == "Round two."
    follow_up = server.request_log.answered()[-1]
    assert follow_up.response_id == second[-1]["response"]["id"]
    assert follow_up.body["previous_response_id"] == first[-1]["response"]["id"]
    assert follow_up.tool_outputs() == answers
    # The engine saw the calls and their outputs in the conversation.
    job = server.engine.generations[-1].job  # type: ignore[attr-defined]
    assert job is not None
    assert [(m.role, m.output.status if m.output else None) for m in job.messages[-2:]] == [
        ("tool", "completed"), ("tool", "failed")]


async def test_a_client_may_replay_the_whole_history_instead(ws: Client) -> None:
    first = await ws.run("[script:custom]")
    history = [{"type": "message", "role": "user", "content": "[script:custom]"},
               *first[-1]["response"]["output"], output("custom_tool_call_output", "call_c", "Done!")]
    second = await ws.run(history, store=False)
    assert second[-1]["response"]["output"][0]["content"][0]["text"] == "Fixed."


async def test_every_play_draws_a_fresh_call_id_unless_the_script_fixes_one(ws: Client) -> None:
    ids = set()
    for _ in range(2):
        events = await ws.run("[script:unnamed]")
        ids.add(events[-1]["response"]["output"][0]["call_id"])
    assert len(ids) == 2 and all(call_id.startswith("call_") for call_id in ids)


async def test_an_output_for_an_unknown_call_id_gets_openais_error(server: RecordingServer, ws: Client) -> None:
    first = await ws.run("[script:custom]")
    events = await ws.run([output("custom_tool_call_output", "call_nope", "ok")],
                          previous_response_id=first[-1]["response"]["id"])
    error = {"type": "invalid_request_error", "code": None, "param": "input",
             "message": "No tool call found for custom tool call output with call_id call_nope."}
    assert events == [{"type": "error", "status": 400, "error": error}]
    assert server.request_log.entries[-1].error == error
    assert server.request_log.entries[-1].response_id is None


async def test_an_output_of_the_wrong_kind_answers_no_call(ws: Client) -> None:
    first = await ws.run("[script:custom]")
    events = await ws.run([output("function_call_output", "call_c", "ok")],
                          previous_response_id=first[-1]["response"]["id"])
    assert events[-1]["error"]["message"] == "No tool call found for function call output with call_id call_c."


async def test_a_follow_up_that_leaves_a_call_unanswered_is_refused(ws: Client) -> None:
    first = await ws.run("[script:builtin]")
    events = await ws.run([output("apply_patch_call_output", "call_u", "ok", status="completed"),
                           {"role": "user", "content": "go on"}],
                          previous_response_id=first[-1]["response"]["id"])
    assert events == [{"type": "error", "status": 400, "error": {
        "type": "invalid_request_error", "code": None, "param": "input",
        "message": "No tool output found for apply patch call call_d."}}]
    # The refused request changed nothing: answering both still continues the chain.
    answers = [output("apply_patch_call_output", c, "", status="completed") for c in ("call_u", "call_d")]
    again = await ws.run(answers, previous_response_id=first[-1]["response"]["id"])
    assert again[-1]["type"] == protocol.COMPLETED


async def test_a_call_cut_by_a_cancel_stays_in_the_chain_and_needs_its_answer(ws: Client) -> None:
    await ws.create("[rate:200][script:function]")
    await ws.until(protocol.FUNCTION_ARGUMENTS_DELTA)
    await ws.send({"type": protocol.CANCEL})
    cut = (await ws.response())[-1]
    assert cut["type"] == protocol.INCOMPLETE
    [call] = cut["response"]["output"]
    assert call["status"] == "incomplete" and 0 < len(call["arguments"]) < len(json.dumps(ARGUMENTS))
    refused = await ws.run("[say]next[/say]", previous_response_id=cut["response"]["id"])
    assert refused[-1]["error"]["message"] == "No tool output found for function call call_f."
    answer = [output("function_call_output", "call_f", "failed: interrupted by the user"),
              {"role": "user", "content": "[say]next[/say]"}]
    accepted = await ws.run(answer, previous_response_id=cut["response"]["id"])
    assert accepted[-1]["type"] == protocol.COMPLETED


async def test_a_token_limit_inside_a_call_closes_it_incomplete(ws: Client) -> None:
    events = await ws.run("[script:function]", max_output_tokens=3)
    assert events[-1]["type"] == protocol.INCOMPLETE
    [done] = by_type(events, protocol.FUNCTION_ARGUMENTS_DONE)
    assert done["arguments"] == "".join(split_tokens(json.dumps(ARGUMENTS))[:3])
    assert events[-2]["item"]["status"] == "incomplete"


async def test_a_round_past_the_script_fails_the_response(ws: Client) -> None:
    first = await ws.run("[script:function]")
    second = await ws.run([output("function_call_output", "call_f", "ok")],
                          previous_response_id=first[-1]["response"]["id"])
    third = await ws.run([], previous_response_id=second[-1]["response"]["id"])
    assert third[-1]["type"] == protocol.FAILED
    assert third[-1]["response"]["error"] == {
        "code": "script_exhausted", "message": "Script 'function' has 2 round(s); this request would be round 3."}


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([[{"type": "shell_call"}]], "script 'bad', round 1, step 1: type 'shell_call' is not one of"),
        ([[{"type": "custom_tool_call", "name": "apply_patch"}]], "round 1, step 1: input must be a string"),
        ([[PatchCall("delete_file", "a.py", "+x")]], "delete_file carries no diff"),
        ([[{"type": "apply_patch_call", "operation": {"type": "rename", "path": "a"}}]], "operation type 'rename'"),
        ([], "a non-empty list of rounds"),
    ],
)
def test_a_bad_script_is_refused_when_loaded(script: Any, message: str) -> None:
    with pytest.raises(ScriptError, match="script 'bad'") as refused:
        RecordingEngine({"bad": script})
    assert message in str(refused.value)


def test_a_script_in_python_is_the_same_as_in_json() -> None:
    engine = RecordingEngine({"py": [[Say("a"), PatchCall("create_file", "n.py", "+x\n", "c1")]],
                              "json": [["a", {"type": "apply_patch_call", "call_id": "c1",
                                              "operation": {"type": "create_file", "path": "n.py", "diff": "+x\n"}}]]})
    def steps(name: str) -> object:
        return engine.plan(Job(messages=(Message("user", f"[script:{name}]"),))).steps

    assert steps("py") == steps("json")


async def test_a_steer_mid_call_must_answer_the_cut_call() -> None:
    engine = RecordingEngine(SCRIPTS, tokens_per_s=200, ttft_s=0.0)
    async with RecordingServer(engine, ServerConfig(port=0, steer_extension=True)) as server, \
            client_for(server) as ws:
        await ws.create("[script:custom]")
        started = await ws.until(protocol.CUSTOM_TOOL_INPUT_DELTA)
        target = started[0]["response"]["id"]
        steer = {"type": protocol.STEER, "previous_response_id": target}
        await ws.send({**steer, "input": "[say]steered[/say]"})
        cut = (await ws.until(protocol.INCOMPLETE))[-1]
        refused = await ws.response()
        # The steered response's call was cut, not answered: its successor is refused.
        assert cut["response"]["output"][1]["call_id"] == "call_c"
        assert refused[-1]["error"]["message"] == "No tool output found for custom tool call call_c."
        # Steering again with the cut call answered starts the successor.
        await ws.send({**steer, "input": [
            output("custom_tool_call_output", "call_c", "failed: interrupted by the user"),
            {"role": "user", "content": "[say]steered[/say]"}]})
        successor = await ws.response()
    assert successor[-1]["type"] == protocol.COMPLETED
    assert successor[-1]["response"]["output"][0]["content"][0]["text"] == "steered"
    assert len(server.request_log.entries) == 1  # a steer is not a response.create
