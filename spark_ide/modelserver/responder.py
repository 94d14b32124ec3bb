"""One response, from ``response.created`` to its terminal event.

The responder is the only writer of its response's events, so ordering guarantees are
local: once a stop (cancel or steer) is accepted, no further delta is sent, and the
terminal ``response.incomplete`` follows the last delta.

Output items open as the engine's output reaches them: a piece with no item open starts
an assistant message, a :class:`ToolCall` or :class:`MessageStart` closes the open item
(its done events) and opens the next one, so ``output_index`` counts the items in order.

Given a :class:`~spark_ide.modelserver.pacing.FrameWriter` (the WebSocket server's) and an
engine whose answers run on a timetable (the scripted engine), the responder plays the
timetable itself: the pieces of each item are written by the loop's
:class:`~spark_ide.modelserver.pacing.Pacer` as they fall due, and this task waits once per
item instead of once per piece. The events are the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from json.encoder import encode_basestring_ascii
from typing import Any

from websockets.exceptions import ConnectionClosed

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import (
    CancelToken,
    Engine,
    EngineError,
    Job,
    Message,
    Piece,
    Tally,
    ToolCall,
)
from spark_ide.modelserver.pacing import FrameWriter, Playing, Timetable, pacer, timed
from spark_ide.modelserver.wire import Event, ItemStatus, OutputItem, ResponseRecord, event

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]


class Responder:
    def __init__(
        self, record: ResponseRecord, job: Job, engine: Engine, send: Send, writer: FrameWriter | None = None
    ) -> None:
        self.record = record
        self.job = job
        self.cancel = CancelToken()
        self.stop_reason: str | None = None
        self.steer_input: list[Message] = []
        self._engine = engine
        self._send = send
        self._writer = writer
        self._sequence = 0
        self._taken_at = 0.0
        # A response can be stopped from its creation until its text is complete; a
        # warm-up produces no text and is never stopped.
        self._stoppable = record.request.generate

    @property
    def id(self) -> str:
        return self.record.id

    def next_sequence_number(self) -> int:
        number = self._sequence
        self._sequence += 1
        return number

    async def emit(self, kind: str, **fields: Any) -> None:
        await self._send(event(kind, fields, self.next_sequence_number()))

    def request_stop(self, reason: str) -> bool:
        """Accept a stop until the text is complete (after that it raced completion)."""
        if not self._stoppable or self.stop_reason is not None:
            return False
        self.stop_reason = reason
        self.cancel.cancel()
        return True

    async def run(self) -> None:
        # When the request was taken up: a timed engine's time to first token counts from
        # here, as a served model's prefill runs while the server announces the response.
        self._taken_at = asyncio.get_running_loop().time()
        tally = Tally()
        self.record.tally = tally
        announced = self.record.to_json()  # the same object in both events
        await self.emit(protocol.CREATED, response=announced)
        await self.emit(protocol.IN_PROGRESS, response=announced)
        try:
            if not self.record.request.generate:
                await self._engine.prepare(self.job, tally)
            elif self.stop_reason is None:  # a stop may arrive right after response.created
                await self._stream(tally)
        except EngineError as exc:
            if self.stop_reason is None:
                await self._fail(exc)
                return
        except (ConnectionClosed, ConnectionError):  # the client went away: nothing to answer
            raise
        except Exception:
            # A bug in an engine must end this response, not the whole connection.
            log.exception("engine failed on response %s", self.id)
            await self._fail(EngineError("server_error", "The engine failed unexpectedly."))
            return
        if self.stop_reason is not None:
            await self._end_interrupted(self.stop_reason)
        else:
            await self._finish(tally)

    async def _stream(self, tally: Tally) -> None:
        writer, engine, timetable = self._writer, timed(self._engine), None
        if writer is not None and engine is not None:
            try:
                timetable = engine.timetable(self.job, tally, self._taken_at)
            except BaseException:
                self._ended()
                raise
        if writer is None or timetable is None:
            await self._iterate(tally)
            return
        try:
            await self._play(timetable, writer)
        finally:
            self._ended()

    def _ended(self) -> None:
        """However the text ended (done, stop, failure, socket closed), the engine must not
        run on, and a stop that comes now is too late."""
        self._stoppable = False
        self.cancel.cancel()

    async def _iterate(self, tally: Tally) -> None:
        outputs = self._engine.generate(self.job, tally, self.cancel)
        async with aclosing(outputs):
            try:
                async for output in outputs:
                    if self.stop_reason is not None:
                        break
                    if isinstance(output, Piece):
                        item = self._open_item() or await self._start_item(OutputItem())
                        item.text += output.text
                        if item.streamed:
                            await self._emit_all([item.delta(len(self.record.items) - 1, output.text)])
                    else:
                        await self._close_item("completed")
                        call = output if isinstance(output, ToolCall) else None  # else MessageStart
                        await self._start_item(OutputItem(call=call))
            finally:
                self._ended()  # before the iterator is closed

    async def _play(self, timetable: Timetable, writer: FrameWriter) -> None:
        """The timetable's items, each one's pieces written by the pacer as they fall due."""
        loop = asyncio.get_running_loop()
        if await self.cancel.wait_until(timetable.first_at):
            return
        timetable.begin(loop.time())
        while (marker := timetable.next_item()) is not None:
            if self.stop_reason is not None:
                return
            await self._close_item("completed")
            item = await self._start_item(OutputItem(call=marker if isinstance(marker, ToolCall) else None))
            if not timetable.item_done and await self._play_item(item, timetable, writer):
                return

    async def _play_item(self, item: OutputItem, timetable: Timetable, writer: FrameWriter) -> bool:
        """Play the open item's tokens; True if the response was stopped meanwhile."""
        parts: list[str] = []
        piece: Callable[[str], None] = parts.append
        if item.streamed:
            head, tail = item.delta_frame(len(self.record.items) - 1)
            # json.dumps of a str is this function (ensure_ascii), without dumps' own checks.
            dumps, write = encode_basestring_ascii, writer.write

            def send_piece(text: str) -> None:
                parts.append(text)
                write(f"{head}{dumps(text)}{tail}{self.next_sequence_number()}}}")

            piece = send_piece

        try:
            while True:
                finished: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
                playing = Playing(timetable, writer, piece, finished)
                self.cancel.attach(finished)
                try:
                    pacer().play(playing)
                    stopped = await finished
                finally:
                    self.cancel.detach(finished)
                    finished.cancel()  # if this task was cancelled: the pacer drops the item
                if stopped or not playing.paused:
                    return stopped
                await writer.drained()  # as send waits for the drain
        finally:
            item.text += "".join(parts)

    def _open_item(self) -> OutputItem | None:
        items = self.record.items
        return items[-1] if items and items[-1].status == "in_progress" else None

    async def _start_item(self, item: OutputItem) -> OutputItem:
        self.record.items.append(item)
        await self._emit_all(item.opening(len(self.record.items) - 1))
        return item

    async def _close_item(self, status: ItemStatus) -> None:
        item = self._open_item()
        if item is not None:
            item.status = status
            await self._emit_all(item.closing(len(self.record.items) - 1))

    async def _emit_all(self, events: list[Event]) -> None:
        for kind, fields in events:
            await self.emit(kind, **fields)

    async def _finish(self, tally: Tally) -> None:
        record = self.record
        status: protocol.FinalStatus = "completed"
        if tally.hit_token_limit:
            status = "incomplete"
            record.incomplete_reason = protocol.MAX_OUTPUT_TOKENS
        await self._close_item("completed" if status == "completed" else "incomplete")
        record.status = status
        await self.emit(protocol.FINAL_EVENTS[status], response=record.to_json())

    def reply(self) -> tuple[Message, ...]:
        """The response's output as the conversation keeps it (for a chained request)."""
        return tuple(item.message() for item in self.record.items)

    def _cut_open_item(self) -> None:
        item = self._open_item()
        if item is not None:
            item.status = "incomplete"

    async def _end_interrupted(self, reason: str) -> None:
        # A stopped response gets exactly one more event: its terminal one.
        self._cut_open_item()
        self.record.status = "incomplete"
        self.record.incomplete_reason = reason
        await self.emit(protocol.INCOMPLETE, response=self.record.to_json())

    async def _fail(self, exc: EngineError) -> None:
        self._cut_open_item()
        self.record.status = "failed"
        self.record.error = {"code": exc.code, "message": exc.message}
        await self.emit(protocol.FAILED, response=self.record.to_json())
