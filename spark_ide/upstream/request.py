"""What the Pilot asks for in one turn, and how it is written for each wire format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.errors import BAD_REQUEST, UpstreamError
from spark_ide.upstream.profiles import EFFORTS, Effort, ProviderProfile

Role = Literal["user", "assistant", "system", "developer"]
JSONObject = dict[str, object]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    text: str


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
    input: tuple[Message, ...]
    effort: Effort | None = None
    previous_response_id: str | None = None
    full_context: tuple[Message, ...] = ()
    max_output_tokens: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.input:
            raise UpstreamError(BAD_REQUEST, "a turn needs at least one input message")
        if self.effort is not None and self.effort not in EFFORTS:
            raise UpstreamError(BAD_REQUEST, f"effort must be one of {EFFORTS}")
        if self.max_output_tokens is not None and self.max_output_tokens <= 0:
            raise UpstreamError(BAD_REQUEST, "max_output_tokens must be positive")

    @property
    def conversation(self) -> tuple[Message, ...]:
        return self.full_context or self.input


def responses_create(
    request: TurnRequest, *, model: str, profile: ProviderProfile, store: bool, chain: bool
) -> JSONObject:
    """A ``response.create`` message; ``chain`` sends only the new input on the previous id."""
    body: JSONObject = {
        "type": protocol.CREATE,
        "model": model,
        "instructions": request.instructions,
        "store": store,
    }
    if chain and request.previous_response_id:
        body["previous_response_id"] = request.previous_response_id
        body["input"] = [_input_item(m) for m in request.input]
    else:
        body["input"] = [_input_item(m) for m in request.conversation]
    effort = _effort(request, profile)
    if effort is not None:
        body["reasoning"] = {"effort": effort}
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.metadata:
        body["metadata"] = dict(request.metadata)
    return body


def responses_warmup(*, model: str, instructions: str, store: bool) -> JSONObject:
    """``generate: false``: the server prepares state and answers with a response id only."""
    return {
        "type": protocol.CREATE,
        "model": model,
        "instructions": instructions,
        "input": [],
        "store": store,
        "generate": False,
    }


def responses_steer(request: TurnRequest, running_response_id: str) -> JSONObject:
    return {
        "type": protocol.STEER,
        "previous_response_id": running_response_id,
        "input": [_input_item(m) for m in request.input],
    }


def chat_completion(request: TurnRequest, *, model: str, profile: ProviderProfile) -> JSONObject:
    messages: list[JSONObject] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend({"role": _chat_role(m.role), "content": m.text} for m in request.conversation)
    body: JSONObject = {"model": model, "messages": messages, "stream": True}
    effort = _effort(request, profile)
    if effort is not None:
        body["reasoning_effort"] = effort
    if request.max_output_tokens is not None:
        body["max_tokens"] = request.max_output_tokens
    return body


def _input_item(message: Message) -> JSONObject:
    return {"type": "message", "role": message.role, "content": message.text}


def _chat_role(role: Role) -> str:
    return "system" if role == "developer" else role


def _effort(request: TurnRequest, profile: ProviderProfile) -> str | None:
    if request.effort is None or profile.effort_values is None:
        return None
    return profile.effort_values.get(request.effort)
