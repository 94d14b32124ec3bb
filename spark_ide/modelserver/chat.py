"""Chat Completions shapes: the messages a request carries and the answer's deltas.

Messages: ``system``/``developer``/``user`` with ``content`` (a string or text parts), an
``assistant`` message whose ``content`` may be null and which may carry ``tool_calls``
(``[{id, type: "function", function: {name, arguments}}]``), and ``tool`` messages
answering one call each (``tool_call_id``, ``content``).

The answer streams ``delta.content`` for text and ``delta.tool_calls`` for function calls:
the first chunk of a call carries ``{index, id, type: "function", function: {name,
arguments: ""}}``, the next ones ``{index, function: {arguments: <fragment>}}``; a
response that called a tool finishes with ``finish_reason: "tool_calls"``. Chat
Completions has no custom or apply_patch calls: a script playing one fails the request.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from spark_ide.modelserver.engine import (
    EngineError,
    Message,
    MessageStart,
    Output,
    Piece,
    Role,
    Tally,
    ToolCall,
    ToolOutput,
)
from spark_ide.modelserver.errors import bad_value, missing, wrong_type
from spark_ide.modelserver.tool_items import content_text
from spark_ide.modelserver.wire import new_id

UNSUPPORTED_TOOL_CALL = "unsupported_tool_call"
_ROLES: Mapping[str, Role] = {"system": "system", "developer": "system", "user": "user"}


def parse_messages(value: Any) -> tuple[Message, ...]:
    if not isinstance(value, list) or not value:
        raise wrong_type("messages", "a non-empty list of messages")
    parsed: list[Message] = []
    for index, message in enumerate(value):
        parsed.extend(_message(message, f"messages[{index}]"))
    return tuple(parsed)


def _message(message: Any, param: str) -> list[Message]:
    if not isinstance(message, dict):
        raise wrong_type(param, "an object")
    role = message.get("role")
    if role is None:
        raise missing(f"{param}.role")
    if role in _ROLES:
        return [Message(_ROLES[role], content_text(message.get("content"), f"{param}.content"))]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str):
            where = f"{param}.tool_call_id"
            raise missing(where) if call_id is None else wrong_type(where, "a string")
        text = content_text(message.get("content"), f"{param}.content")
        return [Message("tool", text, output=ToolOutput("function", call_id))]
    if role != "assistant":
        raise bad_value(f"{param}.role", f"{role!r} is not one of assistant, developer, system, tool, user.")
    content = message.get("content")
    parsed = [] if content is None else [Message("assistant", content_text(content, f"{param}.content"))]
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise wrong_type(f"{param}.tool_calls", "a list")
    if not parsed and not calls:
        raise missing(f"{param}.content")
    return parsed + [_call(call, f"{param}.tool_calls[{index}]") for index, call in enumerate(calls)]


def _call(call: Any, param: str) -> Message:
    if not isinstance(call, dict):
        raise wrong_type(param, "an object")
    function = call.get("function")
    if not isinstance(function, dict):
        raise missing(f"{param}.function")
    fields = {"id": call.get("id"), "function.name": function.get("name"),
              "function.arguments": function.get("arguments")}
    for key, value in fields.items():
        if not isinstance(value, str):
            raise missing(f"{param}.{key}") if value is None else wrong_type(f"{param}.{key}", "a string")
    return Message("assistant", function["arguments"], call=ToolCall("function", call["id"], function["name"]))


class ChatAnswer:
    """Turns an engine's output into chunk deltas, keeping the whole answer."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: list[tuple[ToolCall, list[str]]] = []
        self._in_call = False

    def delta(self, output: Output) -> dict[str, Any] | None:
        """The ``delta`` of the chunk for this output (None: nothing to send)."""
        if isinstance(output, MessageStart):
            self._in_call = False
            return None
        if isinstance(output, ToolCall):
            if output.kind != "function":
                raise EngineError(
                    UNSUPPORTED_TOOL_CALL,
                    f"Chat Completions streams function calls only; the script plays a {output.kind} call.",
                )
            self.calls.append((output, []))
            self._in_call = True
            opened = {"name": output.name, "arguments": ""}
            return {"tool_calls": [{"index": len(self.calls) - 1, "id": output.call_id, "type": "function",
                                    "function": opened}]}
        assert isinstance(output, Piece)
        if self._in_call:
            self.calls[-1][1].append(output.text)
            return {"tool_calls": [{"index": len(self.calls) - 1, "function": {"arguments": output.text}}]}
        self.text += output.text
        return {"content": output.text}

    def finish_reason(self, hit_token_limit: bool) -> str:
        if hit_token_limit:
            return "length"
        return "tool_calls" if self.calls else "stop"

    def message(self) -> dict[str, Any]:
        """The whole answer as a ``chat.completion`` message."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text if self.text or not self.calls else None}
        if self.calls:
            message["tool_calls"] = [
                {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": "".join(parts)}}
                for call, parts in self.calls
            ]
        return message


class Chunks:
    """``chat.completion.chunk`` objects of one answer (one id, one creation time)."""

    def __init__(self, model: str) -> None:
        self.id = new_id("chatcmpl")
        self.created = int(time.time())
        self.model = model

    def make(self, delta: dict[str, Any], *, finish: str | None = None, usage: dict[str, Any] | None = None
             ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            chunk["usage"] = usage
        return chunk


async def next_delta(outputs: AsyncGenerator[Output, None], answer: ChatAnswer) -> dict[str, Any] | None:
    """The next chunk delta of the answer (None at its end); markers that send nothing are
    taken in passing."""
    async for output in outputs:
        delta = answer.delta(output)
        if delta is not None:
            return delta
    return None


def chat_usage(tally: Tally) -> dict[str, Any]:
    return {"prompt_tokens": tally.input_tokens, "completion_tokens": tally.output_tokens,
            "total_tokens": tally.input_tokens + tally.output_tokens,
            "prompt_tokens_details": {"cached_tokens": tally.cached_tokens}}
