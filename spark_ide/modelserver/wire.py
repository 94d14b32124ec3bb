"""OpenAI's shapes for the ``response`` object, output items and ``usage``.

Kept apart from the code that decides *when* to send things, so the field lists can be
checked against OpenAI's reference in one place.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import Message, Tally, ToolCall
from spark_ide.modelserver.request import CreateRequest
from spark_ide.responses_protocol import Status

ItemStatus = Literal["in_progress", "completed", "incomplete"]
Event = tuple[str, dict[str, Any]]  # an event's type and fields, before its sequence number

_ID_PREFIXES = {None: "msg", "custom": "ctc", "function": "fc", "apply_patch": "apc"}
_DELTAS = {
    None: protocol.OUTPUT_TEXT_DELTA,
    "custom": protocol.CUSTOM_TOOL_INPUT_DELTA,
    "function": protocol.FUNCTION_ARGUMENTS_DELTA,
    "apply_patch": protocol.APPLY_PATCH_DIFF_DELTA,
}


# Stands for a delta's text while a delta event's JSON text is made (``OutputItem.delta_frame``).
_PIECE = "\x00"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def event(kind: str, fields: dict[str, Any], sequence_number: int) -> dict[str, Any]:
    """An event as it goes on the wire (``json.dumps`` of this, default spacing)."""
    return {"type": kind, **fields, "sequence_number": sequence_number}


@dataclass
class OutputItem:
    """One item of a response's output: an assistant message (``call`` None) or a tool
    call, whose ``text`` is the call's input, arguments or diff."""

    call: ToolCall | None = None
    text: str = ""
    status: ItemStatus = "in_progress"
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            self.id = new_id(_ID_PREFIXES[self.call.kind if self.call else None])

    @property
    def streamed(self) -> bool:
        """Whether its deltas (and their done event) are sent; a message always streams."""
        return self.call is None or self.call.streamed

    @property
    def delta_type(self) -> str:
        return _DELTAS[self.call.kind if self.call else None]

    def where(self, index: int) -> dict[str, Any]:
        """The fields that place a delta or done event of this item."""
        if self.call is None:
            return {"item_id": self.id, "output_index": index, "content_index": 0}
        return {"item_id": self.id, "output_index": index}

    def delta(self, index: int, text: str) -> Event:
        extra: dict[str, Any] = {"logprobs": []} if self.call is None else {}
        return self.delta_type, {**self.where(index), "delta": text, **extra}

    def delta_frame(self, index: int) -> tuple[str, str]:
        """The JSON text of this item's delta event around its piece: ``head``, then
        ``json.dumps(piece)``, then ``tail``, the sequence number and ``}`` is exactly
        ``json.dumps`` of :func:`event` of :meth:`delta` (a paced answer sends each piece so,
        without building and encoding a dict per token)."""
        kind, fields = self.delta(index, _PIECE)
        head, tail = json.dumps(event(kind, fields, 0)).split(json.dumps(_PIECE))
        return head, tail.removesuffix("0}")

    def opening(self, index: int) -> list[Event]:
        """The events from ``output_item.added`` up to the first delta."""
        events: list[Event] = [(protocol.OUTPUT_ITEM_ADDED, {"output_index": index, "item": self.to_json()})]
        if self.call is None:
            events.append((protocol.CONTENT_PART_ADDED, {**self.where(index), "part": text_part("")}))
        return events

    def closing(self, index: int) -> list[Event]:
        """The events after the last delta, up to ``output_item.done``."""
        where, text, call = self.where(index), self.text, self.call
        if not self.streamed:
            events: list[Event] = []  # the input arrives whole in output_item.done
        elif call is None:
            events = [
                (protocol.OUTPUT_TEXT_DONE, {**where, "text": text, "logprobs": []}),
                (protocol.CONTENT_PART_DONE, {**where, "part": text_part(text)}),
            ]
        elif call.kind == "custom":
            events = [(protocol.CUSTOM_TOOL_INPUT_DONE, {**where, "input": text})]
        elif call.kind == "function":
            events = [(protocol.FUNCTION_ARGUMENTS_DONE, {**where, "name": call.name, "arguments": text})]
        elif call.operation == "delete_file":
            events = []  # nothing streamed, nothing to close
        else:
            events = [(protocol.APPLY_PATCH_DIFF_DONE, {**where, "diff": text})]
        return [*events, (protocol.OUTPUT_ITEM_DONE, {"output_index": index, "item": self.to_json()})]

    def to_json(self) -> dict[str, Any]:
        call = self.call
        if call is None:
            content = [] if self.status == "in_progress" else [text_part(self.text)]
            return message_item(self.id, self.status, content)
        if call.kind == "custom":
            return {"type": protocol.CUSTOM_TOOL_CALL, "id": self.id, "call_id": call.call_id,
                    "name": call.name, "input": self.text}
        if call.kind == "function":
            return {"type": protocol.FUNCTION_CALL, "id": self.id, "call_id": call.call_id,
                    "name": call.name, "arguments": self.text, "status": self.status}
        operation: dict[str, Any] = {"type": call.operation, "path": call.path}
        if call.operation != "delete_file":
            operation["diff"] = self.text
        # OpenAI's apply_patch_call knows only in_progress and completed.
        status = "completed" if self.status == "completed" else "in_progress"
        return {"type": protocol.APPLY_PATCH_CALL, "id": self.id, "call_id": call.call_id,
                "status": status, "operation": operation}

    def message(self) -> Message:
        """The item as the conversation keeps it (a chained request's history)."""
        return Message("assistant", self.text, call=self.call)


@dataclass
class ResponseRecord:
    """Everything the ``response`` object reports, updated as the response runs."""

    request: CreateRequest
    id: str = field(default_factory=lambda: new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: Status = "in_progress"
    items: list[OutputItem] = field(default_factory=list)
    tally: Tally | None = None
    incomplete_reason: str | None = None
    error: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        request = self.request
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "error": self.error,
            "incomplete_details": (
                {"reason": self.incomplete_reason} if self.incomplete_reason else None
            ),
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "model": request.model,
            "output": [item.to_json() for item in self.items] if self.status != "in_progress" else [],
            "parallel_tool_calls": request.parallel_tool_calls,
            "previous_response_id": request.previous_response_id,
            "reasoning": {"effort": request.effort, "summary": None},
            "store": request.store,
            "temperature": request.temperature if request.temperature is not None else 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": request.tool_choice,
            "tools": list(request.tools),
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage(self.tally) if self.tally and self.status != "in_progress" else None,
            "user": None,
            "metadata": {},
        }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def message_item(item_id: str, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def usage(tally: Tally) -> dict[str, Any]:
    return {
        "input_tokens": tally.input_tokens,
        # cache_write_tokens: required by openai-python's ResponseUsage (3.57); we cache nothing
        # the way OpenAI bills, so 0.
        "input_tokens_details": {"cached_tokens": tally.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": tally.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tally.input_tokens + tally.output_tokens,
    }
