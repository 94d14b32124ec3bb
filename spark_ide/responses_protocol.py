"""The Responses WebSocket protocol's names, spelled once for both of its ends.

Our client (:mod:`spark_ide.upstream`) and our model server (:mod:`spark_ide.modelserver`)
speak the same wire protocol: OpenAI's Responses WebSocket mode plus two extensions of ours
(``response.cancel`` and ``response.steer``). The message types, event types, response
statuses, ``incomplete_details`` reasons and error codes live here, so the two ends cannot
drift apart. Pure Python, no imports from either end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

# -- client messages ----------------------------------------------------------------------

CREATE: Final = "response.create"
CANCEL: Final = "response.cancel"  # our extension; OpenAI treats it as an unknown type
STEER: Final = "response.steer"  # an extension a few OpenAI models accept

# -- server events, in the order a streamed response sends them ----------------------------

CREATED: Final = "response.created"
IN_PROGRESS: Final = "response.in_progress"
OUTPUT_ITEM_ADDED: Final = "response.output_item.added"
CONTENT_PART_ADDED: Final = "response.content_part.added"
OUTPUT_TEXT_DELTA: Final = "response.output_text.delta"
OUTPUT_TEXT_DONE: Final = "response.output_text.done"
CONTENT_PART_DONE: Final = "response.content_part.done"
OUTPUT_ITEM_DONE: Final = "response.output_item.done"
COMPLETED: Final = "response.completed"
INCOMPLETE: Final = "response.incomplete"
FAILED: Final = "response.failed"
DONE: Final = "response.done"  # a generic final event some servers send; its status decides
ERROR: Final = "error"  # a refused message; a running response never ends with it
CUSTOM_TOOL_INPUT_DELTA: Final = "response.custom_tool_call_input.delta"
CUSTOM_TOOL_INPUT_DONE: Final = "response.custom_tool_call_input.done"
FUNCTION_ARGUMENTS_DELTA: Final = "response.function_call_arguments.delta"
FUNCTION_ARGUMENTS_DONE: Final = "response.function_call_arguments.done"
APPLY_PATCH_DIFF_DELTA: Final = "response.apply_patch_call_operation_diff.delta"
APPLY_PATCH_DIFF_DONE: Final = "response.apply_patch_call_operation_diff.done"
STEER_ACCEPTED: Final = "response.steer.accepted"
STEER_FAILED: Final = "response.steer.failed"

# -- output and input items about tools ------------------------------------------------------

MESSAGE_ITEM: Final = "message"
CUSTOM_TOOL_CALL: Final = "custom_tool_call"
FUNCTION_CALL: Final = "function_call"
APPLY_PATCH_CALL: Final = "apply_patch_call"
CUSTOM_TOOL_CALL_OUTPUT: Final = "custom_tool_call_output"
FUNCTION_CALL_OUTPUT: Final = "function_call_output"
APPLY_PATCH_CALL_OUTPUT: Final = "apply_patch_call_output"
# An apply_patch_call_output's status.
TOOL_OUTPUT_STATUSES: Final = ("completed", "failed")

# -- response statuses and how a response ends ---------------------------------------------

FinalStatus = Literal["completed", "incomplete", "failed"]
Status = Literal["in_progress", FinalStatus]

FINAL_EVENTS: Final[Mapping[FinalStatus, str]] = {
    "completed": COMPLETED,
    "incomplete": INCOMPLETE,
    "failed": FAILED,
}
FINAL_STATUSES: Final[Mapping[str, FinalStatus]] = {
    event: status for status, event in FINAL_EVENTS.items()
}

# Reasons in ``incomplete_details``: OpenAI's, then ours for a stopped response.
MAX_OUTPUT_TOKENS: Final = "max_output_tokens"
CONTENT_FILTER: Final = "content_filter"
CANCELLED: Final = "cancelled"
STEERED: Final = "steered"

# ``reasoning.effort`` values a request may carry.
REASONING_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh")

# -- errors ----------------------------------------------------------------------------------

INVALID_REQUEST_ERROR: Final = "invalid_request_error"  # the ``error.type`` of every code below

INVALID_JSON: Final = "invalid_json"
INVALID_VALUE: Final = "invalid_value"
INVALID_TYPE: Final = "invalid_type"
MISSING_PARAMETER: Final = "missing_required_parameter"
MESSAGE_TOO_LARGE: Final = "message_too_large"
MODEL_NOT_FOUND: Final = "model_not_found"
PREVIOUS_RESPONSE_NOT_FOUND: Final = "previous_response_not_found"
RESPONSE_NOT_FOUND: Final = "response_not_found"
CANCEL_NOT_ACTIVE: Final = "response_cancel_not_active"
CONNECTION_LIMIT_REACHED: Final = "websocket_connection_limit_reached"

# Only a cancel message is answered with these: a refused cancel, never a refused request.
CANCEL_REFUSALS: Final = frozenset({CANCEL_NOT_ACTIVE, RESPONSE_NOT_FOUND})

# -- tool calls ----------------------------------------------------------------------------

# A built-in ``apply_patch_call``'s ``operation.type``.
FILE_OPERATIONS: Final = ("create_file", "update_file", "delete_file")
