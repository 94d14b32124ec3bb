"""A model client whose every answer the test writes by hand, through the real ``TurnStream``.

The upstream model is the one part tests may replace: this fake stands where the provider's
socket would be. Each ``start``/``steer`` hands the test a ``TurnStream`` to push deltas and
endings into (``stream.delta``, ``complete``, ``incomplete``, ``fail``, ``error``; a tool call
with ``play_tool_call``), or raises what a refused connection raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from spark_ide.upstream import (
    ModelClient,
    ProviderProfile,
    ToolCall,
    TurnRequest,
    TurnStream,
    UpstreamError,
    profile_for,
)
from spark_ide.upstream.catalogue import ModelEntry
from spark_ide.upstream.profiles import Transport
from spark_ide.upstream.tool_calls import ToolCallAssembler


def play_tool_call(stream: TurnStream, call: ToolCall, pieces: Sequence[str] | None = None, *,
                   finish: bool = True) -> ToolCallAssembler:
    """Push ``call`` into ``stream`` as a transport does: started, its input in ``pieces`` (a
    function call's: fragments of its JSON ``arguments``; default: the whole at once), then
    done unless ``finish`` is False (the returned assembler takes more: ``delta``/``finish``
    with the call id as key). ``stream.complete`` then names the call in ``Completed``."""
    calls = ToolCallAssembler(stream)
    calls.start(call.call_id, call_id=call.call_id, name=call.name, kind=call.kind, item_id=call.item_id,
                operation=call.operation, path=call.path)
    whole = call.arguments if call.kind == "function" else call.input
    for piece in [whole] if pieces is None else pieces:
        calls.delta(call.call_id, piece)
    if finish:
        calls.finish(call.call_id, whole)
    return calls


@dataclass
class FakeModel:
    """What the IDE asked, and the streams the test answers through."""

    streams: asyncio.Queue[TurnStream] = field(default_factory=asyncio.Queue)
    requests: list[TurnRequest] = field(default_factory=list)
    stopped: list[TurnStream] = field(default_factory=list)  # streams the IDE stopped upstream
    refuse: list[UpstreamError] = field(default_factory=list)  # raised by the next start/steer calls
    hold_starts: asyncio.Event | None = None  # set: each start waits for it before its request goes
    at_once: bool = False  # what ``steers_at_once`` answers (a warm socket: the re-prompt goes first)
    on_steer: Callable[[], None] | None = None  # called as each steer's request goes
    connects: int = 0
    closed: int = 0

    async def connect(self, instructions: str, workspace: str | None = None) -> ModelClient:
        """``adapter.connect_model``'s part (``workspace``: the room's, whose owner's key is
        not used here)."""
        self.connects += 1
        return FakeClient(self)

    async def connect_entry(self, entry: ModelEntry, instructions: str, **_: object) -> ModelClient:
        """``connect`` for a catalogue entry, as a room asks (``pairing.adapter.connect_entry``)."""
        return await self.connect(instructions)

    async def next_stream(self, timeout: float = 5.0) -> TurnStream:
        return await asyncio.wait_for(self.streams.get(), timeout)


class FakeClient(ModelClient):
    def __init__(self, model: FakeModel) -> None:
        self.model = model

    @property
    def transport(self) -> Transport:
        return Transport.RESPONSES_WS

    @property
    def profile(self) -> ProviderProfile:
        return profile_for("local", "smollm2")

    def _stream(self, request: TurnRequest) -> TurnStream:
        if self.model.refuse:
            raise self.model.refuse.pop(0)
        self.model.requests.append(request)
        stream = TurnStream(request, stopper=self._stop, resender=None, first_byte_timeout_s=30, idle_timeout_s=30)
        stream.mark_sent()
        self.model.streams.put_nowait(stream)
        return stream

    async def _stop(self, stream: TurnStream, finished: bool) -> None:
        if not finished:
            self.model.stopped.append(stream)

    async def start(self, request: TurnRequest) -> TurnStream:
        if self.model.hold_starts is not None:
            await self.model.hold_starts.wait()
        return self._stream(request)

    def steers_at_once(self, stream: TurnStream | None) -> bool:
        return self.model.at_once

    async def steer(self, stream: TurnStream, request: TurnRequest) -> TurnStream:
        if self.model.on_steer is not None:
            self.model.on_steer()
        new = self._stream(request)
        stream.detach()
        self.model.stopped.append(stream)
        return new

    async def close(self) -> None:
        self.model.closed += 1
