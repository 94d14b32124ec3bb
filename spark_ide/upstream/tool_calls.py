"""Tool calls as they stream, the same for both transports.

A transport tells :class:`ToolCallAssembler` what it reads (a call began, more of its input,
its whole input), keyed by whatever identifies a call on its wire (a Responses output index,
a Chat Completions ``tool_calls`` index). The assembler pushes the normalised events into the
turn's stream: ``ToolCallStarted``, ``ToolInputDelta`` (a function call's arguments decoded
to the text of their one string argument as they grow: ``input``, or ``command`` for ``run``,
``dialects.function_argument``), ``ToolCallDone``; the stream keeps the
finished calls for the response's ``Completed``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace

from spark_ide.upstream.dialects import function_argument
from spark_ide.upstream.events import FileOperation, ToolCall, ToolKind
from spark_ide.upstream.partial_json import StringMemberDecoder
from spark_ide.upstream.stream import TurnStream
from spark_ide.upstream.tool_frames import (
    Key,
    ToolDelta,
    ToolFrame,
    ToolInputDone,
    ToolItem,
    ToolItemAdded,
    ToolItemDone,
)

log = logging.getLogger(__name__)



@dataclass
class _Call:
    call: ToolCall  # what is known at the start; input and arguments filled in at the end
    streamed: list[str] = field(default_factory=list)  # the decoded input pushed so far
    raw: list[str] = field(default_factory=list)  # a function call's argument fragments
    decoder: StringMemberDecoder | None = None
    done: bool = False


def function_input(arguments: str, member: str = "input") -> str | None:
    """The ``member`` string of a function call's whole arguments (None: there is none)."""
    try:
        value = json.loads(arguments, strict=False)
    except ValueError:
        return None
    text = value.get(member) if isinstance(value, dict) else None
    return text if isinstance(text, str) else None


class ToolCallAssembler:
    def __init__(self, stream: TurnStream) -> None:
        self._stream = stream
        self._calls: dict[Key, _Call] = {}
        self._order: list[Key] = []

    def __contains__(self, key: Key) -> bool:
        return key in self._calls

    def has_call(self, call_id: str) -> bool:
        return any(c.call.call_id == call_id for c in self._calls.values())

    def start(
        self, key: Key, *, call_id: str, name: str, kind: ToolKind, item_id: str | None = None,
        operation: FileOperation | None = None, path: str | None = None,
    ) -> None:
        """A call began (a second start for the same key is ignored)."""
        if key in self._calls:
            return
        call = ToolCall(call_id=call_id, name=name, kind=kind, input="", item_id=item_id,
                        operation=operation, path=path)
        decoder = StringMemberDecoder(function_argument(name)) if kind == "function" else None
        self._calls[key] = _Call(call, decoder=decoder)
        self._order.append(key)
        self._stream.tool_started(call)

    def delta(self, key: Key, text: str) -> None:
        """More of a call's input as the wire has it (a function call: a JSON fragment)."""
        entry = self._calls.get(key)
        if entry is None or entry.done or not text:
            return
        if entry.decoder is not None:
            entry.raw.append(text)
            text = entry.decoder.feed(text)
        self._push(entry, text)

    def finish(self, key: Key, whole: str | None = None) -> None:
        """A call's input is complete; ``whole``: the input (function: arguments) as the
        provider gave it at the end, if it did."""
        entry = self._calls.get(key)
        if entry is None or entry.done:
            return
        entry.done = True
        streamed = "".join(entry.streamed)
        if entry.call.kind == "function":
            arguments = whole if whole is not None else "".join(entry.raw)
            decoded = function_input(arguments, function_argument(entry.call.name))
            final, call = (streamed if decoded is None else decoded), replace(entry.call, arguments=arguments)
        else:
            final, call = (streamed if whole is None else whole), entry.call
        if final.startswith(streamed):
            self._push(entry, final[len(streamed):])
        else:
            log.warning("tool call %s: the final input differs from what streamed", call.call_id)
        call = replace(call, input=final)
        entry.call = call
        self._stream.tool_done(call)

    def finish_all(self) -> None:
        """The response ended: every call still open is complete with what it has."""
        for key in self._order:
            self.finish(key)

    def _push(self, entry: _Call, text: str) -> None:
        if text:
            entry.streamed.append(text)
            self._stream.tool_input(entry.call.call_id, text)


def apply_tool_frame(calls: ToolCallAssembler, frame: ToolFrame) -> None:
    """What a Responses tool event means for the turn's calls."""
    if isinstance(frame, ToolItemAdded):
        item = frame.item
        calls.start(frame.key, call_id=item.call_id, name=item.name, kind=item.kind,
                    item_id=item.item_id, operation=item.operation, path=item.path)
        calls.delta(frame.key, item.text)  # an item may be announced with input already
    elif isinstance(frame, ToolDelta):
        calls.delta(frame.key, frame.text)
    elif isinstance(frame, ToolInputDone):
        calls.finish(frame.key, frame.text)
    else:  # the item is done: its input is whole (the only source when no delta events came)
        if frame.key not in calls:
            apply_tool_frame(calls, ToolItemAdded(frame.key, replace(frame.item, text="")))
        calls.finish(frame.key, frame.item.text)


def settle_tool_calls(calls: ToolCallAssembler, listed: tuple[ToolItem, ...]) -> None:
    """The response ended: calls its ``output`` lists that never streamed are taken whole, and
    every call still open is complete with what it has."""
    for index, item in enumerate(listed):
        if not calls.has_call(item.call_id):
            apply_tool_frame(calls, ToolItemDone(f"listed:{index}", item))
    calls.finish_all()


@dataclass
class _Waiting:
    """A Chat Completions call seen before its name (kept until the name comes)."""

    call_id: str | None = None
    name: str = ""
    fragments: list[str] = field(default_factory=list)


class ChatToolCalls:
    """Chat Completions' ``delta.tool_calls`` fragments, keyed by their ``index``: the first
    of a call brings its ``id`` and ``function.name``, the others more ``function.arguments``."""

    def __init__(self, stream: TurnStream) -> None:
        self._stream = stream
        self._calls = ToolCallAssembler(stream)
        self._waiting: dict[int, _Waiting] = {}

    def feed(self, fragments: object) -> None:
        if not isinstance(fragments, list):
            return
        for fragment in fragments:
            if not isinstance(fragment, dict):
                continue
            index = fragment.get("index", 0)
            index = index if isinstance(index, int) else 0
            function = fragment.get("function")
            function = function if isinstance(function, dict) else {}
            arguments = function.get("arguments")
            text = arguments if isinstance(arguments, str) else ""
            if index in self._calls:
                self._calls.delta(index, text)
                continue
            waiting = self._waiting.setdefault(index, _Waiting())
            if isinstance(fragment.get("id"), str) and fragment["id"]:
                waiting.call_id = fragment["id"]
            if isinstance(function.get("name"), str):
                waiting.name += function["name"]
            waiting.fragments.append(text)
            if waiting.name:
                self._start(index)

    def finish(self) -> None:
        """The answer ended: calls still waiting for a name start nameless; all are done."""
        for index in list(self._waiting):
            self._start(index)
        self._calls.finish_all()

    def _start(self, index: int) -> None:
        waiting = self._waiting.pop(index)
        call_id = waiting.call_id or f"{self._stream.response_id or 'call'}_{index}"
        self._calls.start(index, call_id=call_id, name=waiting.name, kind="function")
        for text in waiting.fragments:
            self._calls.delta(index, text)
