"""Parse Responses WebSocket frames into a small closed set of shapes.

Only the facts the client acts on are kept; unknown but well-formed event types become
:class:`Other` (ignored, so newer servers keep working). Anything that is not a JSON object
with a string ``type``, or a known event whose fields have the wrong types, raises
:class:`MalformedFrame`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import orjson

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.events import Usage
from spark_ide.upstream.tool_frames import (
    MalformedToolFrame,
    ToolFrame,
    ToolItem,
    parse_tool_frame,
    parse_tool_item,
)


class MalformedFrame(ValueError):
    """A frame from the server that breaks the protocol."""


@dataclass(frozen=True, slots=True)
class Created:
    response_id: str


@dataclass(frozen=True, slots=True)
class Delta:
    text: str


@dataclass(frozen=True, slots=True)
class Done:
    status: protocol.FinalStatus
    response_id: str | None
    reason: str = ""
    code: str = ""
    message: str = ""
    usage: Usage | None = None
    tool_items: tuple[ToolItem, ...] = ()  # the calls ``response.output`` lists


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    code: str
    message: str
    status: int | None = None


@dataclass(frozen=True, slots=True)
class SteerAccepted:
    response_id: str | None


@dataclass(frozen=True, slots=True)
class SteerFailed:
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Other:
    type: str


Frame = Created | Delta | Done | ErrorFrame | SteerAccepted | SteerFailed | ToolFrame | Other


def parse_frame(raw: str | bytes) -> Frame:
    frame = read_frame(raw)
    return Delta(frame) if isinstance(frame, str) else frame


def loads(raw: str) -> object:
    """``json.loads`` of a frame, by orjson (a frame of 1.6 KB in 1 us, 4 with ``json``: it was
    a tenth of the relay's loop at full speed); what orjson refuses and ``json`` takes (a lone
    surrogate escape, NaN) is read by ``json``, so the two read the same frames. (orjson reads
    an integer past 64 bits as a float, which the checks below refuse as a wrong type.)"""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def read_frame(raw: str | bytes) -> str | Frame:
    """As ``parse_frame``, with a ``response.output_text.delta`` (nearly every frame of an
    answer) given as its text alone: a transport's read path builds no object for it."""
    if isinstance(raw, bytes):
        raise MalformedFrame("binary frame on a Responses socket")
    try:
        obj = loads(raw)
    except ValueError as exc:
        raise MalformedFrame(f"frame is not JSON: {exc}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise MalformedFrame("frame is not an object with a string 'type'")
    kind: str = obj["type"]
    if kind == protocol.OUTPUT_TEXT_DELTA:
        delta = obj.get("delta")
        if not isinstance(delta, str):
            raise MalformedFrame("output_text.delta without a string 'delta'")
        return delta
    if kind == protocol.CREATED:
        response_id = _response(obj).get("id")
        if not isinstance(response_id, str):
            raise MalformedFrame("response.created without response.id")
        return Created(response_id)
    if kind in protocol.FINAL_STATUSES or kind == protocol.DONE:
        return _parse_done(kind, _response(obj))
    if kind == protocol.ERROR:
        return _parse_error(obj)
    if kind == protocol.STEER_ACCEPTED:
        response_id = obj.get("response_id", _response(obj, required=False).get("id"))
        return SteerAccepted(response_id if isinstance(response_id, str) else None)
    if kind == protocol.STEER_FAILED:
        refusal = _parse_error(obj)
        return SteerFailed(refusal.code, refusal.message)
    try:
        tool = parse_tool_frame(kind, obj)
    except MalformedToolFrame as exc:
        raise MalformedFrame(str(exc)) from None
    return Other(kind) if tool is None else tool


def _response(obj: dict[str, object], *, required: bool = True) -> dict[str, object]:
    response = obj.get("response")
    if isinstance(response, dict):
        return response
    if required:
        raise MalformedFrame(f"{obj['type']} without a 'response' object")
    return {}


def _parse_done(kind: str, response: dict[str, object]) -> Done:
    status = protocol.FINAL_STATUSES.get(kind) or str(response.get("status", "completed"))
    raw_id = response.get("id")
    response_id = raw_id if isinstance(raw_id, str) else None
    usage = parse_usage(response.get("usage"))
    if status == "completed":
        return Done("completed", response_id, usage=usage, tool_items=_tool_items(response))
    if status in ("incomplete", "cancelled"):
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return Done("incomplete", response_id, reason=str(reason or status), usage=usage,
                    tool_items=_tool_items(response))
    if status == "failed":
        error = response.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return Done("failed", response_id, code=str(code or "failed"), message=str(message or ""))
    raise MalformedFrame(f"final event with unknown status {status!r}")


def _tool_items(response: dict[str, object]) -> tuple[ToolItem, ...]:
    output = response.get("output")
    if not isinstance(output, list):
        return ()
    try:
        items = (parse_tool_item(raw) for raw in output if isinstance(raw, dict))
        return tuple(item for item in items if item is not None)
    except MalformedToolFrame as exc:
        raise MalformedFrame(f"response.output: {exc}") from None


def _parse_error(obj: dict[str, object]) -> ErrorFrame:
    """Accept both documented shapes: flat, and nested under ``error`` with an HTTP status."""
    nested = obj.get("error")
    source = nested if isinstance(nested, dict) else obj
    code = source.get("code") or source.get("type") or "error"
    message = source.get("message") or ""
    status = obj.get("status")
    return ErrorFrame(str(code), str(message), status if isinstance(status, int) else None)


def parse_usage(raw: object) -> Usage | None:
    """A ``usage`` object of either API: Responses (``input_tokens``, ``output_tokens``,
    ``input_tokens_details.cached_tokens``) or Chat Completions (``prompt_tokens``,
    ``completion_tokens``, ``prompt_tokens_details.cached_tokens``); None when it has no
    whole-number counts."""
    if not isinstance(raw, dict):
        return None
    input_tokens = raw.get("input_tokens", raw.get("prompt_tokens"))
    output_tokens = raw.get("output_tokens", raw.get("completion_tokens"))
    if not isinstance(input_tokens, int) or not isinstance(output_tokens, int):
        return None
    details = raw.get("input_tokens_details", raw.get("prompt_tokens_details"))
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    cached_tokens = cached if isinstance(cached, int) and not isinstance(cached, bool) and cached > 0 else 0
    return Usage(input_tokens, output_tokens, min(cached_tokens, max(input_tokens, 0)))
