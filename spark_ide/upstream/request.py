"""What the Pilot asks for in one turn, and how it is written for each wire format."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.dialects import EditStyle, chat_tools, responses_tools
from spark_ide.upstream.errors import BAD_REQUEST, UpstreamError
from spark_ide.upstream.events import ToolCall
from spark_ide.upstream.profiles import EFFORTS, Effort, ProviderProfile

Role = Literal["user", "assistant", "system", "developer"]
ToolStatus = Literal["completed", "failed"]
JSONObject = dict[str, object]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    text: str


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """The IDE's answer to one tool call, for the next request of the tool loop. ``status``
    travels as such for a built-in ``apply_patch_call`` only: ``output`` must say in words
    what applied and what failed, and why, for every kind."""

    call: ToolCall
    output: str
    status: ToolStatus = "completed"

    def __post_init__(self) -> None:
        if self.status not in protocol.TOOL_OUTPUT_STATUSES:
            raise UpstreamError(BAD_REQUEST, f"a tool output's status must be one of {protocol.TOOL_OUTPUT_STATUSES}")


# What a request's input holds: messages, and in the tool loop the calls of earlier rounds
# (full context only) and the outputs answering them.
InputItem = Message | ToolCall | ToolOutput


@dataclass(frozen=True)
class TurnRequest:
    """One turn.

    ``input`` holds only this turn's new items (sent when chaining on
    ``previous_response_id``); ``full_context`` holds the whole conversation including this
    turn's items, sent whenever the chain is not available (no id, another socket, after a
    reconnect, after ``previous_response_not_found``, or on HTTP providers). When
    ``full_context`` is empty, ``input`` is the whole conversation.
    """

    instructions: str
    input: tuple[InputItem, ...]
    effort: Effort | None = None
    previous_response_id: str | None = None
    full_context: tuple[InputItem, ...] = ()
    max_output_tokens: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    # The dialect whose editing tool the request offers: None (explain-only) or a text dialect
    # (``edits``, ``whole-file``) offer no tool.
    edit_style: EditStyle | None = None
    # Whether the ``run`` tool is offered beside the editing tool (a tool dialect only).
    runs: bool = False

    def __post_init__(self) -> None:
        if not self.input:
            raise UpstreamError(BAD_REQUEST, "a turn needs at least one input message")
        if self.effort is not None and self.effort not in EFFORTS:
            raise UpstreamError(BAD_REQUEST, f"effort must be one of {EFFORTS}")
        if self.max_output_tokens is not None and self.max_output_tokens <= 0:
            raise UpstreamError(BAD_REQUEST, "max_output_tokens must be positive")

    @property
    def conversation(self) -> tuple[InputItem, ...]:
        return self.full_context or self.input

    def next_round(
        self, *, response_id: str | None, answer: str, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput],
        then: Sequence[Message] = (),
    ) -> TurnRequest:
        """The request answering a round that ended with ``calls``: chained on ``response_id``
        with only the ``outputs`` (and ``then``: messages after them, e.g. a steer's new
        direction); its full context (sent when the chain is not available, always when
        ``response_id`` is None, as after a cut-off round) is this request's conversation, the
        round's ``answer`` text and calls, the outputs, then ``then``. Every call must have
        exactly one output (a chain with an unanswered call is refused)."""
        answered = [output.call.call_id for output in outputs]
        wanted = [call.call_id for call in calls]
        if sorted(answered) != sorted(wanted) or len(set(wanted)) != len(wanted):
            raise UpstreamError(BAD_REQUEST, f"every tool call needs one output: calls {wanted}, outputs {answered}")
        said: tuple[InputItem, ...] = (Message("assistant", answer),) if answer else ()
        return replace(
            self, input=(*outputs, *then), previous_response_id=response_id,
            full_context=(*self.conversation, *said, *calls, *outputs, *then),
        )


def responses_create(
    request: TurnRequest, *, model: str, profile: ProviderProfile, store: bool, chain: bool
) -> JSONObject:
    """A ``response.create`` message; ``chain`` sends only the new input on the previous id."""
    body = _responses_head(request, model=model, profile=profile, store=store, chain=chain)
    body["input"] = [responses_item(item) for item in _responses_input(request, chain)]
    return body


class ResponsesEncoder:
    """``responses_create`` as the JSON text that is sent, each input item's JSON kept for the
    next request: a conversation's items (the past turns, a tool loop's rounds) are the same in
    every request that carries them, and encoding them again was most of the encoding of a
    steer's re-prompt. Only the items of the last request are kept (its size is bounded by the
    context budget)."""

    def __init__(self) -> None:
        self._items: dict[InputItem, str] = {}

    def create(self, request: TurnRequest, *, model: str, profile: ProviderProfile, store: bool, chain: bool) -> str:
        """``json.dumps(responses_create(...))``, the same message (its ``input`` written last)."""
        kept: dict[InputItem, str] = self._items
        items: dict[InputItem, str] = {}
        parts: list[str] = []
        for item in _responses_input(request, chain):
            try:
                text = kept.get(item)
            except TypeError:  # an item that cannot be a key: written each time
                parts.append(json.dumps(responses_item(item)))
                continue
            if text is None:
                text = json.dumps(responses_item(item))
            items[item] = text
            parts.append(text)
        self._items = items
        head = json.dumps(_responses_head(request, model=model, profile=profile, store=store, chain=chain))
        return f'{head[:-1]}, "input": [{", ".join(parts)}]}}'


def _responses_input(request: TurnRequest, chain: bool) -> tuple[InputItem, ...]:
    """The input a ``response.create`` carries: the new items alone when it chains."""
    return request.input if chain and request.previous_response_id else request.conversation


def _responses_head(
    request: TurnRequest, *, model: str, profile: ProviderProfile, store: bool, chain: bool
) -> JSONObject:
    """A ``response.create`` message without its ``input``."""
    body: JSONObject = {
        "type": protocol.CREATE,
        "model": model,
        "instructions": request.instructions,
        "store": store,
    }
    if chain and request.previous_response_id:
        body["previous_response_id"] = request.previous_response_id
    tools = responses_tools(request.edit_style, runs=request.runs)
    if tools:
        body["tools"] = tools
    effort = _effort(request, profile)
    if effort is not None:
        body["reasoning"] = {"effort": effort}
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.metadata:
        body["metadata"] = dict(request.metadata)
    return body


def responses_warmup(
    *, model: str, instructions: str, store: bool, edit_style: EditStyle | None = None, runs: bool = False,
) -> JSONObject:
    """``generate: false``: the server prepares state and answers with a response id only.
    With the tools turns will offer, so what it prepares is the prefix they start with."""
    body: JSONObject = {
        "type": protocol.CREATE,
        "model": model,
        "instructions": instructions,
        "input": [],
        "store": store,
        "generate": False,
    }
    tools = responses_tools(edit_style, runs=runs)
    if tools:
        body["tools"] = tools
    return body


def responses_steer(request: TurnRequest, running_response_id: str) -> JSONObject:
    return {
        "type": protocol.STEER,
        "previous_response_id": running_response_id,
        "input": [responses_item(item) for item in request.input],
    }


def chat_completion(request: TurnRequest, *, model: str, profile: ProviderProfile) -> JSONObject:
    messages: list[JSONObject] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend(chat_messages(request.conversation))
    body: JSONObject = {"model": model, "messages": messages, "stream": True}
    tools = chat_tools(request.edit_style, runs=request.runs)
    if tools:
        body["tools"] = tools
    effort = _effort(request, profile)
    if effort is not None:
        body["reasoning_effort"] = effort
    if request.max_output_tokens is not None:
        body["max_tokens"] = request.max_output_tokens
    return body


def responses_item(item: InputItem) -> JSONObject:
    """An input item of a Responses request."""
    if isinstance(item, Message):
        return {"type": "message", "role": item.role, "content": item.text}
    if isinstance(item, ToolOutput):
        return _responses_output(item)
    if item.kind == "custom":
        return {"type": protocol.CUSTOM_TOOL_CALL, "call_id": item.call_id, "name": item.name, "input": item.input}
    if item.kind == "function":
        return {"type": protocol.FUNCTION_CALL, "call_id": item.call_id, "name": item.name,
                "arguments": _arguments(item)}
    operation: JSONObject = {"type": item.operation, "path": item.path}
    if item.operation != "delete_file":
        operation["diff"] = item.input
    return {"type": protocol.APPLY_PATCH_CALL, "call_id": item.call_id, "status": "completed", "operation": operation}


def _responses_output(output: ToolOutput) -> JSONObject:
    kind, call_id = output.call.kind, output.call.call_id
    if kind == "apply_patch":
        return {"type": protocol.APPLY_PATCH_CALL_OUTPUT, "call_id": call_id, "status": output.status,
                "output": output.output}
    item_type = protocol.CUSTOM_TOOL_CALL_OUTPUT if kind == "custom" else protocol.FUNCTION_CALL_OUTPUT
    return {"type": item_type, "call_id": call_id, "output": output.output}


def chat_messages(items: Sequence[InputItem]) -> list[JSONObject]:
    """Chat Completions messages: an assistant message carries the tool calls that follow it
    (``tool_calls``), and each output is a ``tool`` message naming its call."""
    messages: list[JSONObject] = []
    for item in items:
        if isinstance(item, Message):
            messages.append({"role": _chat_role(item.role), "content": item.text})
        elif isinstance(item, ToolOutput):
            messages.append({"role": "tool", "tool_call_id": item.call.call_id, "content": item.output})
        else:
            last = messages[-1] if messages else None
            if last is None or last.get("role") != "assistant":
                last = {"role": "assistant", "content": None}
                messages.append(last)
            calls = last.setdefault("tool_calls", [])
            assert isinstance(calls, list)
            calls.append({"id": item.call_id, "type": "function",
                          "function": {"name": item.name, "arguments": _arguments(item)}})
    return messages


def _arguments(call: ToolCall) -> str:
    """A call's arguments as JSON: a function call's own, else its input as ``{"input": ...}``
    (a call made through another dialect, replayed to a provider that knows functions only)."""
    return call.arguments or json.dumps({"input": call.input})


def _chat_role(role: Role) -> str:
    return "system" if role == "developer" else role


def _effort(request: TurnRequest, profile: ProviderProfile) -> str | None:
    if request.effort is None or profile.effort_values is None:
        return None
    return profile.effort_values.get(request.effort)
