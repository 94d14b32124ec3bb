"""One response, from ``response.created`` to its terminal event.

The responder is the only writer of its response's events, so ordering guarantees are
local: once a stop (cancel or steer) is accepted, no further delta is sent, and the
terminal ``response.incomplete`` follows the last delta.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

from websockets.exceptions import ConnectionClosed

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engine import (
    CancelToken,
    Engine,
    EngineError,
    Job,
    Message,
    Tally,
)
from spark_ide.modelserver.wire import ResponseRecord, text_part

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]


class Responder:
    def __init__(self, record: ResponseRecord, job: Job, engine: Engine, send: Send) -> None:
        self.record = record
        self.job = job
        self.cancel = CancelToken()
        self.stop_reason: str | None = None
        self.steer_input: list[Message] = []
        self._engine = engine
        self._send = send
        self._sequence = 0
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
        await self._send({"type": kind, **fields, "sequence_number": self.next_sequence_number()})

    def request_stop(self, reason: str) -> bool:
        """Accept a stop until the text is complete (after that it raced completion)."""
        if not self._stoppable or self.stop_reason is not None:
            return False
        self.stop_reason = reason
        self.cancel.cancel()
        return True

    async def run(self) -> None:
        tally = Tally()
        self.record.tally = tally
        await self.emit(protocol.CREATED, response=self.record.to_json())
        await self.emit(protocol.IN_PROGRESS, response=self.record.to_json())
        try:
            if not self.record.request.generate:
                await self._engine.prepare(self.job, tally)
            elif self.stop_reason is None:  # a stop may arrive right after response.created
                await self._stream(tally)
        except EngineError as exc:
            if self.stop_reason is None:
                await self._fail(exc)
                return
        except ConnectionClosed:
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
        self.record.has_item = True
        await self.emit(protocol.OUTPUT_ITEM_ADDED, output_index=0, item=self.record.item())
        await self.emit(protocol.CONTENT_PART_ADDED, **self._where(), part=text_part(""))
        pieces = self._engine.generate(self.job, tally, self.cancel)
        async with aclosing(pieces):
            try:
                async for piece in pieces:
                    if self.stop_reason is not None:
                        break
                    self.record.text += piece.text
                    await self.emit(
                        protocol.OUTPUT_TEXT_DELTA, **self._where(), delta=piece.text, logprobs=[]
                    )
            finally:
                # However the loop ended (done, stop, socket closed), the engine must not
                # run on: set the token before the iterator is closed.
                self._stoppable = False
                self.cancel.cancel()

    def _where(self) -> dict[str, Any]:
        return {"item_id": self.record.item_id, "output_index": 0, "content_index": 0}

    async def _finish(self, tally: Tally) -> None:
        record = self.record
        if record.has_item:
            text = record.text
            await self.emit(protocol.OUTPUT_TEXT_DONE, **self._where(), text=text, logprobs=[])
            await self.emit(protocol.CONTENT_PART_DONE, **self._where(), part=text_part(text))
        status: protocol.FinalStatus = "completed"
        if tally.hit_token_limit:
            status = "incomplete"
            record.incomplete_reason = protocol.MAX_OUTPUT_TOKENS
        record.status = status
        if record.has_item:
            await self.emit(protocol.OUTPUT_ITEM_DONE, output_index=0, item=record.item())
        await self.emit(protocol.FINAL_EVENTS[status], response=record.to_json())

    async def _end_interrupted(self, reason: str) -> None:
        # A stopped response gets exactly one more event: its terminal one.
        self.record.status = "incomplete"
        self.record.incomplete_reason = reason
        await self.emit(protocol.INCOMPLETE, response=self.record.to_json())

    async def _fail(self, exc: EngineError) -> None:
        self.record.status = "failed"
        self.record.error = {"code": exc.code, "message": exc.message}
        await self.emit(protocol.FAILED, response=self.record.to_json())
