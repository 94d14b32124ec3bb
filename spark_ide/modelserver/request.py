"""Parsing client messages (``response.create`` and the extensions) into typed requests.

Fields we do not use (``metadata``, ``stream_id``, ``include`` ...) are tolerated and
ignored, so clients written for OpenAI work unchanged; ``tools``, ``tool_choice`` and
``parallel_tool_calls`` are echoed in the ``response`` object, as OpenAI does (the scripted
engine plays whatever calls its script holds, offered or not).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import Job, Message, Role
from spark_ide.modelserver.errors import ProtocolError, bad_value, missing, wrong_type
from spark_ide.modelserver.tool_items import check_pairing, content_text, tool_message

_ROLES: Mapping[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


@dataclass(frozen=True)
class CreateRequest:
    model: str
    input: tuple[Message, ...]
    instructions: str | None = None
    previous_response_id: str | None = None
    effort: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    store: bool = True
    generate: bool = True
    tools: tuple[Any, ...] = ()
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True

    def continued(self, previous_response_id: str, new_input: tuple[Message, ...]) -> CreateRequest:
        """The same settings applied to a follow-up (how a steer's successor is built);
        the successor always generates, even when it follows a warm-up."""
        return replace(
            self, previous_response_id=previous_response_id, input=new_input, generate=True
        )


@dataclass(frozen=True)
class SteerRequest:
    previous_response_id: str
    input: tuple[Message, ...]
    raw_input: Any


def decode_object(frame: str | bytes, what: str = "frame") -> dict[str, Any]:
    """A frame's (or an HTTP body's) JSON object, or ``invalid_json``."""
    try:
        data = json.loads(frame)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(protocol.INVALID_JSON, f"The {what} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError(protocol.INVALID_JSON, f"The {what} must be a JSON object.")
    return data


def decode_frame(frame: str | bytes) -> dict[str, Any]:
    """A frame's JSON object, or ``invalid_json``; ``type`` must be a string."""
    data = decode_object(frame)
    if "type" not in data:
        raise missing("type")
    if not isinstance(data["type"], str):
        raise wrong_type("type", "a string")
    return data


def parse_create(data: Mapping[str, Any]) -> CreateRequest:
    model = data.get("model")
    if model is None:
        raise missing("model")
    if not isinstance(model, str):
        raise wrong_type("model", "a string")
    return CreateRequest(
        model=model,
        input=parse_input(data.get("input", []), "input"),
        instructions=_optional_str(data, "instructions"),
        previous_response_id=_optional_str(data, "previous_response_id"),
        effort=_effort(data.get("reasoning")),
        max_output_tokens=_max_output_tokens(data.get("max_output_tokens")),
        temperature=_temperature(data.get("temperature")),
        store=_optional_bool(data, "store", default=True),
        generate=_optional_bool(data, "generate", default=True),
        tools=_tools(data.get("tools")),
        tool_choice=data.get("tool_choice") or "auto",
        parallel_tool_calls=_optional_bool(data, "parallel_tool_calls", default=True),
    )


def resolve_job(
    request: CreateRequest, accepted_models: tuple[str, ...], history: tuple[Message, ...]
) -> tuple[Job, tuple[Message, ...]]:
    """The engine's job for a request continuing ``history`` (the chained conversation, or
    nothing), and the conversation it extends; refuses an unknown model and a broken
    tool-call chain."""
    if request.model not in accepted_models:
        raise ProtocolError(
            protocol.MODEL_NOT_FOUND,
            f"The model {request.model!r} does not exist on this server; available:"
            f" {', '.join(accepted_models)}.",
            param="model",
            status=404,
        )
    conversation = history + request.input
    check_pairing(conversation)
    system = (Message("system", request.instructions),) if request.instructions else ()
    job = Job(
        messages=system + conversation,
        max_output_tokens=request.max_output_tokens,
        temperature=request.temperature,
        effort=request.effort,
    )
    return job, conversation


def previous_not_found(previous_response_id: str) -> ProtocolError:
    return ProtocolError(
        protocol.PREVIOUS_RESPONSE_NOT_FOUND,
        f"Previous response with id {previous_response_id!r} not found.",
        param="previous_response_id",
    )


def parse_steer(data: Mapping[str, Any]) -> SteerRequest:
    target = data.get("previous_response_id")
    if target is None:
        raise missing("previous_response_id")
    if not isinstance(target, str):
        raise wrong_type("previous_response_id", "a string")
    if "input" not in data:
        raise missing("input")
    return SteerRequest(target, parse_input(data["input"], "input"), data["input"])


def parse_cancel(data: Mapping[str, Any]) -> str | None:
    """The ``response_id`` to cancel; None means "whatever is running"."""
    return _optional_str(data, "response_id")


def parse_input(value: Any, param: str) -> tuple[Message, ...]:
    """A string is one user message; a list holds message items (content str or parts)."""
    if isinstance(value, str):
        return (Message("user", value),)
    if not isinstance(value, list):
        raise wrong_type(param, "a string or a list of message items")
    return tuple(_message(item, f"{param}[{index}]") for index, item in enumerate(value))


def _message(item: Any, param: str) -> Message:
    if not isinstance(item, dict):
        raise wrong_type(param, "an object")
    kind = item.get("type", "message")
    tool = tool_message(item, param)
    if tool is not None:
        return tool
    if kind != "message":
        raise bad_value(
            f"{param}.type",
            f"unsupported item type {kind!r}; only 'message' and the tool call and output items.",
        )
    role = item.get("role")
    if role is None:
        raise missing(f"{param}.role")
    if role not in _ROLES:
        raise bad_value(f"{param}.role", f"{role!r} is not one of {sorted(_ROLES)}.")
    return Message(_ROLES[role], content_text(item.get("content"), f"{param}.content"))


def _tools(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise wrong_type("tools", "a list of tool definitions")
    return tuple(value)


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise wrong_type(key, "a string")
    return value


def _optional_bool(data: Mapping[str, Any], key: str, *, default: bool) -> bool:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise wrong_type(key, "a boolean")
    return value


def _effort(reasoning: Any) -> str | None:
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        raise wrong_type("reasoning", "an object")
    effort = reasoning.get("effort")
    if effort is None:
        return None
    if effort not in protocol.REASONING_EFFORTS:
        raise bad_value(
            "reasoning.effort", f"{effort!r} is not one of {list(protocol.REASONING_EFFORTS)}."
        )
    return str(effort)


def _max_output_tokens(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type("max_output_tokens", "an integer")
    if value < 1:
        raise bad_value("max_output_tokens", "must be at least 1.")
    return value


def _temperature(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type("temperature", "a number")
    if not 0.0 <= value <= 2.0:
        raise bad_value("temperature", "must be between 0 and 2.")
    return float(value)
