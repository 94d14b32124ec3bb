"""A Responses WebSocket whose every answer the test writes, in OpenAI's exact event shapes.

The upstream model is the one part tests may replace. This fake stands where OpenAI's socket
would be, for what our model server's scripted engine does not play: each ``response.create``
is recorded (``requests``) and answered with the next script the test queued (``answer``),
wrapped as OpenAI wraps it: ``response.created`` and ``response.in_progress`` first, every
event with its ``sequence_number``, then ``response.completed`` whose ``output`` lists the
items. Warm-ups (``generate: false``) are answered with an id and no output. As on OpenAI, a
``previous_response_id`` other than the last response of the same socket (``store`` false)
is refused with ``previous_response_not_found``; ``forget()`` makes the socket lose it, as a
reconnect does. Given ``keys``, the upgrade of a socket whose ``Authorization: Bearer`` is none
of them is refused with HTTP 401 and OpenAI's ``invalid_api_key`` body, and a request on a socket
whose key was taken out of ``keys`` since (revoked) is answered with an ``error`` event of status
401; ``bearers`` records the key every upgrade carried, in order.

Scripts are lists of :class:`Item`: a call (``custom_call``, ``function_call``,
``apply_patch_call``) or a ``message``, each streamed in the pieces given.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from spark_ide import responses_protocol as protocol

JSON = dict[str, Any]


@dataclass(frozen=True)
class Item:
    """One output item: ``added`` (the item as announced), the delta event type and pieces,
    the ``.done`` event type and field, and the item whole."""

    added: JSON
    whole: JSON
    delta_type: str | None
    pieces: Sequence[str]
    done_type: str | None = None
    done_field: str = ""


def custom_call(call_id: str, text: str, pieces: Sequence[str] | None = None, *, name: str = "apply_patch") -> Item:
    item = {"type": protocol.CUSTOM_TOOL_CALL, "id": f"ctc_{call_id}", "call_id": call_id, "name": name}
    return Item({**item, "input": ""}, {**item, "status": "completed", "input": text},
                protocol.CUSTOM_TOOL_INPUT_DELTA, _pieces(text, pieces), protocol.CUSTOM_TOOL_INPUT_DONE, "input")


def function_call(call_id: str, arguments: str, pieces: Sequence[str] | None = None, *,
                  name: str = "apply_patch") -> Item:
    item = {"type": protocol.FUNCTION_CALL, "id": f"fc_{call_id}", "call_id": call_id, "name": name}
    return Item({**item, "arguments": ""}, {**item, "status": "completed", "arguments": arguments},
                protocol.FUNCTION_ARGUMENTS_DELTA, _pieces(arguments, pieces), protocol.FUNCTION_ARGUMENTS_DONE,
                "arguments")


def apply_patch_call(call_id: str, operation: str, path: str, diff: str, pieces: Sequence[str] | None = None, *,
                     stream_diff: bool = True) -> Item:
    """A built-in ``apply_patch_call``; ``stream_diff`` False: no diff events (only the item
    done carries the diff), as some streams go."""
    base = {"type": protocol.APPLY_PATCH_CALL, "id": f"apc_{call_id}", "call_id": call_id}
    whole_op: JSON = {"type": operation, "path": path} | ({"diff": diff} if operation != "delete_file" else {})
    added = {**base, "status": "in_progress", "operation": {"type": operation, "path": path}}
    if not stream_diff or operation == "delete_file":
        return Item(added, {**base, "status": "completed", "operation": whole_op}, None, ())
    return Item(added, {**base, "status": "completed", "operation": whole_op}, protocol.APPLY_PATCH_DIFF_DELTA,
                _pieces(diff, pieces), protocol.APPLY_PATCH_DIFF_DONE, "diff")


def message(text: str, pieces: Sequence[str] | None = None) -> Item:
    item = {"type": "message", "id": f"msg_{abs(hash(text)) % 10**8}", "role": "assistant"}
    whole = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return Item({**item, "status": "in_progress", "content": []}, whole, protocol.OUTPUT_TEXT_DELTA,
                _pieces(text, pieces), protocol.OUTPUT_TEXT_DONE, "text")


def _pieces(text: str, pieces: Sequence[str] | None) -> Sequence[str]:
    if pieces is None:
        return [text[i : i + 7] for i in range(0, len(text), 7)]
    assert "".join(pieces) == text, "the pieces must add up to the whole"
    return pieces


@dataclass
class ResponsesSocket:
    """``async with ResponsesSocket() as fake``: ``fake.base_url`` for the client's config."""

    requests: list[JSON] = field(default_factory=list)  # every response.create but warm-ups
    warmups: list[JSON] = field(default_factory=list)  # the generate: false ones
    pace_s: float = 0.0  # a pause before each event of a response (0: all at once)
    closed: int = 0  # sockets the client closed
    # Every completed response's ``usage``, as OpenAI shapes it (None: the response has none).
    usage: JSON | None = field(default_factory=lambda: dict(USAGE))
    scripts: asyncio.Queue[list[Item]] = field(default_factory=asyncio.Queue)
    keys: frozenset[str] = frozenset()  # the keys accepted (empty: any, and none)
    bearers: list[str] = field(default_factory=list)  # the bearer key of each upgrade ("" without one)
    _server: Server | None = None
    _bearer_of: dict[ServerConnection, str] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _last: dict[ServerConnection, str] = field(default_factory=dict)  # each socket's cached response

    def answer(self, *items: Item) -> None:
        """The next response streams these items."""
        self.scripts.put_nowait(list(items))

    def forget(self) -> None:
        """Every socket loses its cached response (a chain on it is refused from now on)."""
        self._last.clear()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def __aenter__(self) -> ResponsesSocket:
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._authorise)
        return self

    def _authorise(self, socket: ServerConnection, request: Request) -> Response | None:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        bearer = key.strip() if scheme.lower() == "bearer" else ""
        self.bearers.append(bearer)
        self._bearer_of[socket] = bearer
        if self._accepted(socket):
            return None
        refusal = socket.respond(401, json.dumps({"error": _key_error(bearer)}) + "\n")
        del refusal.headers["Content-Type"]
        refusal.headers["Content-Type"] = "application/json"
        return refusal

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def _accepted(self, socket: ServerConnection) -> bool:
        return not self.keys or self._bearer_of.get(socket, "") in self.keys

    async def _serve(self, socket: ServerConnection) -> None:
        try:
            async for raw in socket:
                await self._answer(socket, json.loads(raw))
        except ConnectionClosed:
            pass  # the client closed it mid-answer (a stop or a steer does)
        finally:
            self.closed += 1

    async def _answer(self, socket: ServerConnection, body: JSON) -> None:
        if body.get("type") != protocol.CREATE:
            return
        if not self._accepted(socket):
            await socket.send(json.dumps({
                "type": protocol.ERROR, "status": 401, "error": _key_error(self._bearer_of.get(socket, "")),
            }))
            return
        previous = body.get("previous_response_id")
        if previous is not None and self._last.get(socket) != previous:
            await socket.send(json.dumps({
                "type": protocol.ERROR, "status": 400,
                "error": {"type": protocol.INVALID_REQUEST_ERROR, "code": protocol.PREVIOUS_RESPONSE_NOT_FOUND,
                          "message": f"Previous response with id '{previous}' not found.",
                          "param": "previous_response_id"},
            }))
            return
        response_id = f"resp_{next(self._ids)}"
        items: list[Item] = []
        if body.get("generate") is False:
            self.warmups.append(body)
        else:
            self.requests.append(body)
            items = await asyncio.wait_for(self.scripts.get(), 10)
        for event in _response_events(response_id, items, self.usage):
            if self.pace_s:
                await asyncio.sleep(self.pace_s)
            await socket.send(json.dumps(event))
        self._last[socket] = response_id


USAGE: JSON = {
    "input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15,
}


def _response_events(response_id: str, items: list[Item], usage: JSON | None) -> list[JSON]:
    events: list[JSON] = []
    response: JSON = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
    events.append({"type": protocol.CREATED, "response": response})
    events.append({"type": protocol.IN_PROGRESS, "response": response})
    for index, item in enumerate(items):
        events.extend(_item_events(index, item))
    done = {**response, "status": "completed", "output": [item.whole for item in items], "usage": usage}
    events.append({"type": protocol.COMPLETED, "response": done})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def _item_events(index: int, item: Item) -> list[JSON]:
    item_id = item.whole["id"]
    where: JSON = {"item_id": item_id, "output_index": index}
    if item.delta_type == protocol.OUTPUT_TEXT_DELTA:
        where["content_index"] = 0
    events: list[JSON] = [{"type": protocol.OUTPUT_ITEM_ADDED, "output_index": index, "item": item.added}]
    if item.delta_type is not None:
        events.extend({"type": item.delta_type, **where, "delta": piece} for piece in item.pieces)
    if item.done_type is not None:
        events.append({"type": item.done_type, **where, item.done_field: "".join(item.pieces)})
    events.append({"type": protocol.OUTPUT_ITEM_DONE, "output_index": index, "item": item.whole})
    return events


def _key_error(bearer: str) -> JSON:
    """OpenAI's error for a key it does not accept (it shows the key's ends, as here)."""
    shown = f"{bearer[:3]}*****{bearer[-4:]}" if bearer else "none"
    return {"message": f"Incorrect API key provided: {shown}.", "type": "invalid_request_error",
            "param": None, "code": "invalid_api_key"}
