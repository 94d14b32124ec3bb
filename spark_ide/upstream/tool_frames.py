"""The Responses events of tool calls, parsed into a few shapes (see :mod:`frames`).

A call is an output item (``custom_tool_call``, ``function_call``, ``apply_patch_call``)
announced by ``response.output_item.added``, its input streamed by the kind's delta events
and given whole by their ``.done`` and by ``response.output_item.done``. Frames name a call
by its ``output_index`` (the ``item_id`` when a server leaves the index out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.events import FileOperation, ToolKind

Key = int | str


class MalformedToolFrame(ValueError):
    """A tool event whose fields break the protocol."""


@dataclass(frozen=True, slots=True)
class ToolItem:
    """A tool call output item. ``text``: a custom call's input, a function call's arguments,
    an ``apply_patch_call``'s diff (each "" when the item is only announced)."""

    kind: ToolKind
    item_id: str | None
    call_id: str
    name: str
    text: str
    operation: FileOperation | None = None
    path: str | None = None


@dataclass(frozen=True, slots=True)
class ToolItemAdded:
    key: Key
    item: ToolItem


@dataclass(frozen=True, slots=True)
class ToolItemDone:
    key: Key
    item: ToolItem


@dataclass(frozen=True, slots=True)
class ToolDelta:
    key: Key
    text: str


@dataclass(frozen=True, slots=True)
class ToolInputDone:
    key: Key
    text: str


ToolFrame = ToolItemAdded | ToolItemDone | ToolDelta | ToolInputDone

_KINDS: dict[str, ToolKind] = {
    protocol.CUSTOM_TOOL_CALL: "custom",
    protocol.FUNCTION_CALL: "function",
    protocol.APPLY_PATCH_CALL: "apply_patch",
}
_DELTAS = frozenset({protocol.CUSTOM_TOOL_INPUT_DELTA, protocol.FUNCTION_ARGUMENTS_DELTA,
                     protocol.APPLY_PATCH_DIFF_DELTA})
# Each ``.done`` event and the field holding the whole input.
_DONES = {protocol.CUSTOM_TOOL_INPUT_DONE: "input", protocol.FUNCTION_ARGUMENTS_DONE: "arguments",
          protocol.APPLY_PATCH_DIFF_DONE: "diff"}


def parse_tool_frame(kind: str, obj: dict[str, object]) -> ToolFrame | None:
    """The tool frame ``obj`` is (None: not a tool event, or an item that is not a call)."""
    if kind in _DELTAS:
        return ToolDelta(_key(obj), _text(obj, "delta", required=True))
    if kind in _DONES:
        return ToolInputDone(_key(obj), _text(obj, _DONES[kind], required=True))
    if kind in (protocol.OUTPUT_ITEM_ADDED, protocol.OUTPUT_ITEM_DONE):
        raw = obj.get("item")
        if not isinstance(raw, dict):
            raise MalformedToolFrame(f"{kind} without an 'item' object")
        item = parse_tool_item(raw)
        if item is None:
            return None
        key = _key(obj, item.item_id)
        return ToolItemAdded(key, item) if kind == protocol.OUTPUT_ITEM_ADDED else ToolItemDone(key, item)
    return None


def parse_tool_item(raw: dict[str, object]) -> ToolItem | None:
    """A call output item (as in ``response.output``); None for other item types."""
    kind = _KINDS.get(str(raw.get("type")))
    if kind is None:
        return None
    call_id = raw.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise MalformedToolFrame(f"{raw.get('type')} item without a 'call_id'")
    item_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    if kind == "apply_patch":
        operation = raw.get("operation")
        if not isinstance(operation, dict) or operation.get("type") not in protocol.FILE_OPERATIONS:
            raise MalformedToolFrame("apply_patch_call without a known 'operation.type'")
        path = operation.get("path")
        if not isinstance(path, str):
            raise MalformedToolFrame("apply_patch_call without a string 'operation.path'")
        return ToolItem("apply_patch", cast(str | None, item_id), call_id, "apply_patch",
                        _text(operation, "diff"), cast(FileOperation, operation["type"]), path)
    name = raw.get("name")
    if not isinstance(name, str):
        raise MalformedToolFrame(f"{raw.get('type')} item without a string 'name'")
    text = _text(raw, "input" if kind == "custom" else "arguments")
    return ToolItem(kind, cast(str | None, item_id), call_id, name, text)


def _key(obj: dict[str, object], item_id: str | None = None) -> Key:
    index = obj.get("output_index")
    if isinstance(index, int) and not isinstance(index, bool):
        return index
    named = obj.get("item_id", item_id)
    if isinstance(named, str):
        return named
    raise MalformedToolFrame(f"{obj.get('type')} names no call (no 'output_index' or 'item_id')")


def _text(obj: dict[str, object], name: str, *, required: bool = False) -> str:
    value = obj.get(name)
    if isinstance(value, str):
        return value
    if value is None and not required:
        return ""
    raise MalformedToolFrame(f"{obj.get('type', 'item')} without a string {name!r}")
