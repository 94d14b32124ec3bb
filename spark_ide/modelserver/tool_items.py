"""Tool calls and tool outputs in a conversation: reading them from input items, and the
rule OpenAI enforces on a chain - every call answered, every output answering a call.

Input items (the Responses API's shapes):

* the model's own calls, sent back when a client replays the whole history:
  ``custom_tool_call`` {call_id, name, input}, ``function_call`` {call_id, name,
  arguments}, ``apply_patch_call`` {call_id, operation: {type, path, diff}};
* the client's answers: ``custom_tool_call_output`` / ``function_call_output`` {call_id,
  output} (``output`` a string or a list of text parts) and ``apply_patch_call_output``
  {call_id, status: completed|failed, output?}.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import Message, PatchOperation, ToolCall, ToolKind, ToolOutput
from spark_ide.modelserver.errors import ProtocolError, bad_value, missing, wrong_type

CALL_TYPES: Mapping[str, ToolKind] = {
    protocol.CUSTOM_TOOL_CALL: "custom",
    protocol.FUNCTION_CALL: "function",
    protocol.APPLY_PATCH_CALL: "apply_patch",
}
OUTPUT_TYPES: Mapping[str, ToolKind] = {
    protocol.CUSTOM_TOOL_CALL_OUTPUT: "custom",
    protocol.FUNCTION_CALL_OUTPUT: "function",
    protocol.APPLY_PATCH_CALL_OUTPUT: "apply_patch",
}
# How OpenAI's error messages name each kind of call.
CALL_WORDS: Mapping[ToolKind, str] = {
    "custom": "custom tool call",
    "function": "function call",
    "apply_patch": "apply patch call",
}
_OPERATIONS = get_args(PatchOperation)
_TEXT_PARTS = ("input_text", "output_text", "text")


def tool_message(item: Mapping[str, Any], param: str) -> Message | None:
    """The conversation entry of a tool call or tool output item; None for other types."""
    kind = str(item.get("type"))
    if kind in CALL_TYPES:
        return _call(item, CALL_TYPES[kind], param)
    if kind in OUTPUT_TYPES:
        return _output(item, OUTPUT_TYPES[kind], param)
    return None


def _call(item: Mapping[str, Any], kind: ToolKind, param: str) -> Message:
    call_id = _string(item, "call_id", param)
    if kind == "custom":
        return Message("assistant", _string(item, "input", param),
                       call=ToolCall(kind, call_id, _string(item, "name", param)))
    if kind == "function":
        return Message("assistant", _string(item, "arguments", param),
                       call=ToolCall(kind, call_id, _string(item, "name", param)))
    operation = item.get("operation")
    if not isinstance(operation, Mapping):
        raise missing(f"{param}.operation") if operation is None else wrong_type(f"{param}.operation", "an object")
    op_type = operation.get("type")
    if op_type not in _OPERATIONS:
        raise bad_value(f"{param}.operation.type", f"{op_type!r} is not one of {list(_OPERATIONS)}.")
    path = _string(operation, "path", f"{param}.operation")
    diff = "" if op_type == "delete_file" else _string(operation, "diff", f"{param}.operation")
    return Message("assistant", diff, call=ToolCall(kind, call_id, operation=op_type, path=path))


def _output(item: Mapping[str, Any], kind: ToolKind, param: str) -> Message:
    call_id = _string(item, "call_id", param)
    status = None
    if kind == "apply_patch":
        status = item.get("status")
        if status is None:
            raise missing(f"{param}.status")
        if status not in protocol.TOOL_OUTPUT_STATUSES:
            raise bad_value(f"{param}.status", f"{status!r} is not one of {list(protocol.TOOL_OUTPUT_STATUSES)}.")
        output = item.get("output") or ""
    elif "output" not in item:
        raise missing(f"{param}.output")
    else:
        output = item["output"]
    return Message("tool", content_text(output, f"{param}.output"), output=ToolOutput(kind, call_id, status))


def content_text(content: Any, param: str) -> str:
    """A message's content or a tool output: a string, or a list of text parts joined."""
    if content is None:
        raise missing(param)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise wrong_type(param, "a string or a list of content parts")
    texts = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        if not isinstance(part, Mapping) or part.get("type") not in _TEXT_PARTS:
            raise bad_value(where, "only text parts (input_text, output_text) are supported.")
        text = part.get("text")
        if not isinstance(text, str):
            raise wrong_type(f"{where}.text", "a string")
        texts.append(text)
    return "".join(texts)


def _string(item: Mapping[str, Any], key: str, param: str) -> str:
    value = item.get(key)
    if value is None:
        raise missing(f"{param}.{key}")
    if not isinstance(value, str):
        raise wrong_type(f"{param}.{key}", "a string")
    return value


@dataclass(frozen=True)
class Unpaired:
    """A break of the pairing rule: an output with no call before it (``orphan``), or a
    call never answered."""

    kind: ToolKind
    call_id: str
    orphan: bool


def unpaired(conversation: Iterable[Message]) -> Unpaired | None:
    """The first call without an output after it, or output without a call before it."""
    open_calls: dict[str, ToolKind] = {}
    for message in conversation:
        if message.call is not None:
            open_calls[message.call.call_id] = message.call.kind
        elif message.output is not None:
            answered = message.output
            if open_calls.get(answered.call_id) != answered.kind:
                return Unpaired(answered.kind, answered.call_id, orphan=True)
            del open_calls[answered.call_id]
    for call_id, kind in open_calls.items():
        return Unpaired(kind, call_id, orphan=False)
    return None


def check_pairing(conversation: Iterable[Message], param: str = "input") -> None:
    """Refuse a conversation as OpenAI's Responses API does (``invalid_request_error``,
    param ``input``, code null, OpenAI's wording)."""
    problem = unpaired(conversation)
    if problem is None:
        return
    words = CALL_WORDS[problem.kind]
    if problem.orphan:
        message = f"No tool call found for {words} output with call_id {problem.call_id}."
    else:
        message = f"No tool output found for {words} {problem.call_id}."
    raise ProtocolError(None, message, param=param)
