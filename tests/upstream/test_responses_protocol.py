"""The shared protocol names, spelt as OpenAI's Responses WebSocket spells them.

Our client and our model server both take their names from ``spark_ide.responses_protocol``,
so a misspelt name there would still pass every test in which the two talk to each other,
and only fail against OpenAI. Here each name is pinned to its wire spelling.
"""

from __future__ import annotations

from typing import get_args

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.profiles import EFFORTS

WIRE_SPELLING = {
    "CREATE": "response.create",
    "CANCEL": "response.cancel",
    "STEER": "response.steer",
    "CREATED": "response.created",
    "IN_PROGRESS": "response.in_progress",
    "OUTPUT_ITEM_ADDED": "response.output_item.added",
    "CONTENT_PART_ADDED": "response.content_part.added",
    "OUTPUT_TEXT_DELTA": "response.output_text.delta",
    "OUTPUT_TEXT_DONE": "response.output_text.done",
    "CONTENT_PART_DONE": "response.content_part.done",
    "OUTPUT_ITEM_DONE": "response.output_item.done",
    "COMPLETED": "response.completed",
    "INCOMPLETE": "response.incomplete",
    "FAILED": "response.failed",
    "DONE": "response.done",
    "ERROR": "error",
    "CUSTOM_TOOL_INPUT_DELTA": "response.custom_tool_call_input.delta",
    "CUSTOM_TOOL_INPUT_DONE": "response.custom_tool_call_input.done",
    "FUNCTION_ARGUMENTS_DELTA": "response.function_call_arguments.delta",
    "FUNCTION_ARGUMENTS_DONE": "response.function_call_arguments.done",
    "APPLY_PATCH_DIFF_DELTA": "response.apply_patch_call_operation_diff.delta",
    "APPLY_PATCH_DIFF_DONE": "response.apply_patch_call_operation_diff.done",
    "STEER_ACCEPTED": "response.steer.accepted",
    "STEER_FAILED": "response.steer.failed",
    "MESSAGE_ITEM": "message",
    "CUSTOM_TOOL_CALL": "custom_tool_call",
    "FUNCTION_CALL": "function_call",
    "APPLY_PATCH_CALL": "apply_patch_call",
    "CUSTOM_TOOL_CALL_OUTPUT": "custom_tool_call_output",
    "FUNCTION_CALL_OUTPUT": "function_call_output",
    "APPLY_PATCH_CALL_OUTPUT": "apply_patch_call_output",
    "MAX_OUTPUT_TOKENS": "max_output_tokens",
    "CONTENT_FILTER": "content_filter",
    "CANCELLED": "cancelled",
    "STEERED": "steered",
    "INVALID_REQUEST_ERROR": "invalid_request_error",
    "INVALID_JSON": "invalid_json",
    "INVALID_VALUE": "invalid_value",
    "INVALID_TYPE": "invalid_type",
    "MISSING_PARAMETER": "missing_required_parameter",
    "MESSAGE_TOO_LARGE": "message_too_large",
    "MODEL_NOT_FOUND": "model_not_found",
    "PREVIOUS_RESPONSE_NOT_FOUND": "previous_response_not_found",
    "RESPONSE_NOT_FOUND": "response_not_found",
    "CANCEL_NOT_ACTIVE": "response_cancel_not_active",
    "CONNECTION_LIMIT_REACHED": "websocket_connection_limit_reached",
}


def test_every_name_is_spelt_as_on_the_wire() -> None:
    names = {name: value for name, value in vars(protocol).items()
             if name.isupper() and isinstance(value, str)}
    assert names == WIRE_SPELLING


def test_every_final_status_has_its_event() -> None:
    assert protocol.FINAL_EVENTS == {
        "completed": "response.completed",
        "incomplete": "response.incomplete",
        "failed": "response.failed",
    }
    assert set(protocol.FINAL_EVENTS) == set(get_args(protocol.FinalStatus))


def test_only_a_cancel_is_refused_with_a_cancel_refusal() -> None:
    assert sorted(protocol.CANCEL_REFUSALS) == ["response_cancel_not_active", "response_not_found"]


def test_every_effort_the_client_sends_is_one_the_wire_accepts() -> None:
    assert protocol.REASONING_EFFORTS == ("none", "minimal", "low", "medium", "high", "xhigh")
    assert set(EFFORTS) <= set(protocol.REASONING_EFFORTS)
