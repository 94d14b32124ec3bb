"""Event normalisation: every documented frame shape, both error shapes, malformed input."""

from __future__ import annotations

import json

import pytest

from spark_ide.upstream.events import Usage
from spark_ide.upstream.frames import (
    Created,
    Delta,
    Done,
    ErrorFrame,
    MalformedFrame,
    Other,
    SteerAccepted,
    SteerFailed,
    loads,
    parse_frame,
    parse_usage,
    read_frame,
)
from spark_ide.upstream.tool_frames import ToolDelta, ToolInputDone, ToolItem, ToolItemAdded, ToolItemDone


def frame(**fields: object) -> str:
    return json.dumps(fields)


def test_it_reads_a_text_delta() -> None:
    raw = frame(type="response.output_text.delta", delta="def ", item_id="m", output_index=0,
                content_index=0, sequence_number=4)
    assert parse_frame(raw) == Delta("def ")
    assert read_frame(raw) == "def "  # a transport's read path: the text alone


def test_the_read_path_checks_a_text_delta_as_the_parser_does() -> None:
    raw = frame(type="response.output_text.delta", delta=3)
    for read in (parse_frame, read_frame):
        with pytest.raises(MalformedFrame):
            read(raw)
    created = frame(type="response.created", response={"id": "resp_1"})
    assert read_frame(created) == parse_frame(created) == Created("resp_1")


def test_it_reads_the_response_id_from_created() -> None:
    raw = frame(type="response.created", response={"id": "resp_1", "status": "in_progress"})
    assert parse_frame(raw) == Created("resp_1")


def test_it_reads_completed_with_usage() -> None:
    raw = frame(type="response.completed",
                response={"id": "resp_1", "status": "completed",
                          "usage": {"input_tokens": 7, "output_tokens": 3}})
    assert parse_frame(raw) == Done("completed", "resp_1", usage=Usage(7, 3))


def test_usage_counts_the_cached_input_of_either_api() -> None:
    responses = {"input_tokens": 1_200, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 50,
                 "output_tokens_details": {"reasoning_tokens": 10}, "total_tokens": 1_250}
    assert parse_usage(responses) == Usage(1_200, 50, 800)
    chat = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320,
            "prompt_tokens_details": {"cached_tokens": 256}}
    assert parse_usage(chat) == Usage(300, 20, 256)
    assert parse_usage({"prompt_tokens": 3, "completion_tokens": 2}) == Usage(3, 2, 0)  # no details: none cached
    # Details that make no sense count no cached input, or at most all of it.
    for details in ({"cached_tokens": "many"}, {"cached_tokens": -4}, {"cached_tokens": True}, "x", None):
        assert parse_usage({"input_tokens": 9, "output_tokens": 1, "input_tokens_details": details}) == Usage(9, 1, 0)
    assert parse_usage({"input_tokens": 9, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 99}}) == (
        Usage(9, 1, 9))
    assert parse_usage({"input_tokens": "9", "output_tokens": 1}) is None
    assert parse_usage(None) is None


def test_it_reads_the_incomplete_reason() -> None:
    raw = frame(type="response.incomplete",
                response={"id": "r", "incomplete_details": {"reason": "max_output_tokens"}})
    assert parse_frame(raw) == Done("incomplete", "r", reason="max_output_tokens")


def test_it_reads_failed_with_its_error() -> None:
    raw = frame(type="response.failed",
                response={"id": "r", "error": {"code": "server_error", "message": "boom"}})
    assert parse_frame(raw) == Done("failed", "r", code="server_error", message="boom")


@pytest.mark.parametrize(
    ("status", "expected"),
    [("completed", Done("completed", "r")),
     ("cancelled", Done("incomplete", "r", reason="cancelled")),
     ("failed", Done("failed", "r", code="failed"))],
)
def test_it_treats_response_done_as_final(status: str, expected: Done) -> None:
    assert parse_frame(frame(type="response.done", response={"id": "r", "status": status})) \
        == expected


def test_it_reads_the_flat_error_shape() -> None:
    raw = frame(type="error", code="previous_response_not_found", message="gone", param="x")
    assert parse_frame(raw) == ErrorFrame("previous_response_not_found", "gone")


def test_it_reads_the_nested_error_shape() -> None:
    raw = frame(type="error", status=400,
                error={"type": "invalid_request_error",
                       "code": "websocket_connection_limit_reached", "message": "60 min"})
    assert parse_frame(raw) == ErrorFrame("websocket_connection_limit_reached", "60 min", 400)


def test_it_reads_steer_answers() -> None:
    assert parse_frame(frame(type="response.steer.accepted", response_id="r")) \
        == SteerAccepted("r")
    refused = frame(type="response.steer.failed",
                    error={"code": "previous_response_not_found", "message": "no"})
    assert parse_frame(refused) == SteerFailed("previous_response_not_found", "no")


def test_it_passes_unknown_event_types_through_as_other() -> None:
    assert parse_frame(frame(type="response.reasoning.delta", delta="x")) \
        == Other("response.reasoning.delta")


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1, 2]",
        frame(kind="response.created"),
        frame(type=5),
        frame(type="response.output_text.delta", delta=None),
        frame(type="response.created", response={"status": "in_progress"}),
        frame(type="response.completed"),
        frame(type="response.done", response={"id": "r", "status": "exploded"}),
        b"\x00\x01",
    ],
)
def test_it_rejects_malformed_frames(raw: str | bytes) -> None:
    with pytest.raises(MalformedFrame):
        parse_frame(raw)


# -- tool calls -------------------------------------------------------------------------------


def test_it_reads_each_kind_of_tool_call_item() -> None:
    custom = frame(type="response.output_item.added", output_index=1, sequence_number=3,
                   item={"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "apply_patch",
                         "input": ""})
    assert parse_frame(custom) == ToolItemAdded(1, ToolItem("custom", "ctc_1", "call_1", "apply_patch", ""))
    builtin = frame(type="response.output_item.done", output_index=0,
                    item={"type": "apply_patch_call", "id": "apc_1", "call_id": "call_2", "status": "completed",
                          "operation": {"type": "create_file", "path": "a.py", "diff": "+x\n"}})
    assert parse_frame(builtin) == ToolItemDone(
        0, ToolItem("apply_patch", "apc_1", "call_2", "apply_patch", "+x\n", "create_file", "a.py"))
    function = frame(type="response.output_item.added", output_index=2,
                     item={"type": "function_call", "id": "fc_1", "call_id": "call_3", "name": "apply_patch",
                           "arguments": ""})
    assert parse_frame(function) == ToolItemAdded(2, ToolItem("function", "fc_1", "call_3", "apply_patch", ""))


def test_it_reads_the_input_deltas_and_dones_of_each_kind() -> None:
    for kind in ("custom_tool_call_input", "function_call_arguments", "apply_patch_call_operation_diff"):
        delta = frame(type=f"response.{kind}.delta", item_id="i", output_index=4, delta="*** ", obfuscation="x")
        assert parse_frame(delta) == ToolDelta(4, "*** ")
    assert parse_frame(frame(type="response.custom_tool_call_input.done", item_id="i", output_index=4,
                             input="all")) == ToolInputDone(4, "all")
    assert parse_frame(frame(type="response.function_call_arguments.done", item_id="i",
                             arguments="{}")) == ToolInputDone("i", "{}")  # no index: the item id names it


def test_other_items_and_the_calls_a_response_lists() -> None:
    reasoning = frame(type="response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1"})
    assert parse_frame(reasoning) == Other("response.output_item.added")
    listed = frame(type="response.completed", response={"id": "r", "status": "completed", "output": [
        {"type": "message", "id": "m", "content": []},
        {"type": "custom_tool_call", "id": "c", "call_id": "call_1", "name": "apply_patch", "input": "P"}]})
    listed_call = ToolItem("custom", "c", "call_1", "apply_patch", "P")
    assert parse_frame(listed) == Done("completed", "r", tool_items=(listed_call,))


@pytest.mark.parametrize(
    "raw",
    [frame(type="response.output_item.added", output_index=0, item={"type": "custom_tool_call", "name": "x"}),
     frame(type="response.output_item.added", output_index=0,
           item={"type": "apply_patch_call", "call_id": "c", "operation": {"type": "rename_file", "path": "a"}}),
     frame(type="response.output_item.added", output_index=0,
           item={"type": "apply_patch_call", "call_id": "c", "operation": {"type": "create_file"}}),
     frame(type="response.custom_tool_call_input.delta", output_index=0, delta=5),
     frame(type="response.function_call_arguments.delta", delta="x"),
     frame(type="response.output_item.done", output_index=0),
     frame(type="response.completed", response={"id": "r", "output": [{"type": "function_call", "call_id": "c"}]})],
)
def test_a_tool_event_that_breaks_the_protocol_is_malformed(raw: str) -> None:
    with pytest.raises(MalformedFrame):
        parse_frame(raw)


@pytest.mark.parametrize("raw", [
    '{"a": "\\ud800"}',  # a lone surrogate escape: orjson refuses it
    '{"a": NaN, "b": -Infinity}',
    '{"a": "\\ud83d\\ude00", "b": [1, 2.5, null, true], "c": {"d": "e\\n"}}',
    '{"a": 1, "a": 2}',
])
def test_a_frame_is_read_as_json_reads_it(raw: str) -> None:
    assert json.dumps(loads(raw)) == json.dumps(json.loads(raw))


def test_a_text_delta_with_a_lone_surrogate_is_read_as_before() -> None:
    assert read_frame('{"type": "response.output_text.delta", "delta": "a\\ud800b"}') == "a\ud800b"


def test_a_number_past_64_bits_where_a_string_belongs_is_a_malformed_frame() -> None:
    raw = '{"type": "response.created", "response": {"id": 12345678901234567890123}}'
    with pytest.raises(MalformedFrame):
        read_frame(raw)
