"""One client socket: its FIFO of work, its cached last response, its lifetime.

Two tasks share the socket. The *reader* parses frames and queues work; it handles the
extensions (``response.cancel``, ``response.steer``) at once because they must reach a
response that is already running. The *worker* takes the queue in order, one response at
a time, like OpenAI's socket: a second ``response.create`` waits behind the running one,
and errors for queued messages come out in the order the messages went in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver import errors
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engine import Engine, Job, Message
from spark_ide.modelserver.errors import ProtocolError
from spark_ide.modelserver.request import (
    CreateRequest,
    decode_frame,
    parse_cancel,
    parse_create,
    parse_steer,
    previous_not_found,
    resolve_job,
)
from spark_ide.modelserver.request_log import Received, RequestLog
from spark_ide.modelserver.responder import Responder
from spark_ide.modelserver.wire import ResponseRecord, new_id

log = logging.getLogger(__name__)

Work = CreateRequest | ProtocolError


@dataclass(frozen=True)
class Queued:
    """A unit of work, with the request log's entry for the frame it came from (if any)."""

    work: Work
    received: Received | None = None


@dataclass(frozen=True)
class CachedResponse:
    """The last finished response: its full conversation, so a chained request can rebuild
    the prompt (instructions are not inherited, as with OpenAI)."""

    responder: Responder
    conversation: tuple[Message, ...]

    @property
    def id(self) -> str:
        return self.responder.id


class SocketWriter:
    """The socket's synchronous side (``pacing.FrameWriter``): a frame is written now, as
    ``send`` writes it before it waits for the buffer to drain. The pacer writes paced deltas
    through it; every other event goes through it too while the buffer is below its
    high-water mark (``send``, with its own machinery, waits for the drain otherwise).

    Without extensions (no ``permessage-deflate``; the IDE's client offers none) the frame
    is made here, header and text, and handed to the transport in one write: a server's
    frame is not masked, so it is exactly what websockets makes, for a tenth of the CPU.
    With an extension websockets makes it.
    """

    def __init__(self, socket: ServerConnection) -> None:
        self._socket = socket

    def ready(self) -> bool:
        transport = self._socket.transport
        return transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[1]

    async def drained(self) -> None:
        await self._socket.drain()  # returns once the transport resumes writing

    def write(self, frame: str) -> None:
        socket = self._socket
        protocol = socket.protocol
        if protocol.state is not State.OPEN:  # closing: the reader sees it and ends the connection
            raise ConnectionClosed(protocol.close_rcvd, protocol.close_sent, protocol.close_rcvd_then_sent)
        if protocol.extensions:
            protocol.send_text(frame.encode())
            socket.send_data()
        else:
            socket.transport.write(text_frame(frame.encode()))


def text_frame(payload: bytes) -> bytes:
    """A final, unmasked text frame (RFC 6455 5.2) carrying ``payload``."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 65536:
        return b"\x81\x7e" + size.to_bytes(2, "big") + payload
    return b"\x81\x7f" + size.to_bytes(8, "big") + payload


class Connection:
    def __init__(
        self,
        socket: ServerConnection,
        engine: Engine,
        config: ServerConfig,
        request_log: RequestLog | None = None,
    ) -> None:
        self._socket = socket
        self._engine = engine
        self._config = config
        self._log = request_log
        self._writer = SocketWriter(socket)
        self._queue: deque[Queued] = deque()
        self._queued = asyncio.Event()
        self._current: Responder | None = None
        self._last: CachedResponse | None = None

    async def serve(self) -> None:
        worker = asyncio.create_task(self._work())
        try:
            async with asyncio.timeout(self._config.lifetime_s):
                async for frame in self._socket:
                    await self._on_frame(frame)
        except TimeoutError:
            await self._stop_worker(worker)
            await self._end_lifetime()
        except ConnectionClosed:
            pass
        finally:
            # Closing the socket stops generation: cancelling the worker closes the
            # engine's iterator, which sets the cancel token.
            await self._stop_worker(worker)

    async def _send(self, event: dict[str, Any]) -> None:
        frame = json.dumps(event)
        if self._writer.ready():
            self._writer.write(frame)  # as send writes it, without its async machinery
        else:
            await self._socket.send(frame)  # written, then waits for the buffer to drain

    async def _stop_worker(self, worker: asyncio.Task[None]) -> None:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
            await worker

    async def _end_lifetime(self) -> None:
        limit = ProtocolError(
            protocol.CONNECTION_LIMIT_REACHED,
            f"This connection reached its {self._config.lifetime_s:g} s lifetime limit;"
            " open a new connection to continue.",
        )
        with contextlib.suppress(ConnectionClosed):
            await self._send(limit.event())
            await self._socket.close(1000, "connection lifetime limit reached")

    # -- reader -----------------------------------------------------------------------

    async def _on_frame(self, frame: str | bytes) -> None:
        received: Received | None = None
        try:
            size = len(frame) if isinstance(frame, bytes) else len(frame.encode())
            if size > self._config.max_frame_bytes:
                raise ProtocolError(
                    protocol.MESSAGE_TOO_LARGE,
                    f"The frame has {size} bytes; the limit is {self._config.max_frame_bytes}.",
                    status=413,
                )
            data = decode_frame(frame)
            kind = data["type"]
            if kind == protocol.CREATE:
                if self._log is not None:
                    received = self._log.record("websocket", data)
                self._enqueue(parse_create(data), received=received)
            elif kind == protocol.CANCEL and self._config.cancel_extension:
                self._cancel(parse_cancel(data))
            elif kind == protocol.STEER and self._config.steer_extension:
                await self._steer(data)
            else:
                raise errors.bad_value("type", f"unknown client event {kind!r}.")
        except ProtocolError as exc:
            self._enqueue(exc, received=received)

    def _enqueue(self, work: Work, *, first: bool = False, received: Received | None = None) -> None:
        queued = Queued(work, received)
        if first:
            self._queue.appendleft(queued)
        else:
            self._queue.append(queued)
        self._queued.set()

    def _cancel(self, target: str | None) -> None:
        current = self._current
        if current is not None and target in (None, current.id):
            if current.request_stop(protocol.CANCELLED):
                return  # the responder answers with response.incomplete
            self._enqueue(_not_active(current.id), first=True)
        elif target is None:
            self._enqueue(_not_active(None), first=True)
        elif self._last is not None and self._last.id == target:
            self._enqueue(_not_active(target), first=True)
        else:
            self._enqueue(
                ProtocolError(
                    protocol.RESPONSE_NOT_FOUND,
                    f"No response with id {target!r} on this connection.",
                    param="response_id",
                    status=404,
                )
            )

    async def _steer(self, data: dict[str, Any]) -> None:
        steer = parse_steer(data)
        current, last = self._current, self._last
        if current is not None and current.id == steer.previous_response_id:
            # Stops the response if it is still streaming; either way the worker starts
            # the successor from ``steer_input`` once the response has ended.
            current.steer_input.extend(steer.input)
            current.request_stop(protocol.STEERED)
            target = current
        elif current is None and last is not None and last.id == steer.previous_response_id:
            target = last.responder
            self._enqueue(target.record.request.continued(target.id, steer.input), first=True)
        else:
            refusal = ProtocolError(
                protocol.PREVIOUS_RESPONSE_NOT_FOUND,
                f"Response {steer.previous_response_id!r} is not running on this connection.",
                param="previous_response_id",
            )
            await self._send(
                {
                    "type": protocol.STEER_FAILED,
                    "steer": {
                        "previous_response_id": steer.previous_response_id,
                        "input": steer.raw_input,
                    },
                    "error": refusal.body(),
                    "sequence_number": 0,
                }
            )
            return
        await self._send(
            {
                "type": protocol.STEER_ACCEPTED,
                "steer": {
                    "id": new_id("steer"),
                    "previous_response_id": steer.previous_response_id,
                    "input": steer.raw_input,
                },
                "sequence_number": target.next_sequence_number(),
            }
        )

    # -- worker -----------------------------------------------------------------------

    async def _next_work(self) -> Queued:
        while not self._queue:
            self._queued.clear()
            await self._queued.wait()
        return self._queue.popleft()

    async def _work(self) -> None:
        while True:
            queued = await self._next_work()
            work, received = queued.work, queued.received
            try:
                if isinstance(work, ProtocolError):
                    raise work
                job, conversation = self._resolve(work)
            except ProtocolError as exc:
                if received is not None:
                    received.error = exc.body()
                await self._send(exc.event())
                continue
            await self._respond(work, job, conversation, received)

    def _resolve(self, request: CreateRequest) -> tuple[Job, tuple[Message, ...]]:
        history: tuple[Message, ...] = ()
        if request.previous_response_id is not None:
            last = self._last
            if last is None or last.id != request.previous_response_id:
                raise previous_not_found(request.previous_response_id)
            history = last.conversation
        return resolve_job(request, self._config.accepted_models, history)

    async def _respond(
        self,
        request: CreateRequest,
        job: Job,
        conversation: tuple[Message, ...],
        received: Received | None,
    ) -> None:
        record = ResponseRecord(request)
        if received is not None:
            received.response_id = record.id
        responder = Responder(record, job, self._engine, self._send, self._writer)
        self._current = responder
        try:
            await responder.run()
        finally:
            self._current = None
        if record.status in ("completed", "incomplete"):
            self._last = CachedResponse(responder, conversation + responder.reply())
        if responder.steer_input:
            successor = request.continued(record.id, tuple(responder.steer_input))
            self._enqueue(successor, first=True)


def _not_active(response_id: str | None) -> ProtocolError:
    what = f"Response {response_id!r} is not" if response_id else "No response is"
    return ProtocolError(
        protocol.CANCEL_NOT_ACTIVE,
        f"{what} in progress; nothing to cancel.",
        param="response_id",
    )
