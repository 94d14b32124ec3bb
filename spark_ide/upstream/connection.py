"""One Responses WebSocket and the requests sent on it.

A socket runs one response at a time and answers requests in the order they were sent,
so frames are routed by position: deltas and final events belong to the oldest unfinished
request; an ``error`` belongs to the oldest request that has not started (a running
response ends with ``response.failed``, never with ``error``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.backoff import is_retryable_close
from spark_ide.upstream.config import ProviderConfig
from spark_ide.upstream.dial import FrameSocket, dial
from spark_ide.upstream.errors import (
    AUTHENTICATION_FAILED,
    CLIENT_CLOSED,
    CONNECTION_EXPIRED,
    CONNECTION_LOST,
    PROTOCOL_ERROR,
    TIMEOUT,
    UpstreamError,
    key_refused,
)
from spark_ide.upstream.frames import (
    Created,
    Done,
    ErrorFrame,
    Frame,
    MalformedFrame,
    SteerFailed,
    read_frame,
)
from spark_ide.upstream.request import JSONObject
from spark_ide.upstream.stream import TurnStream
from spark_ide.upstream.tool_calls import ToolCallAssembler, apply_tool_frame, settle_tool_calls
from spark_ide.upstream.tool_frames import ToolDelta, ToolInputDone, ToolItemAdded, ToolItemDone

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Attempt:
    """One request on one socket: a turn's stream, or a warm-up waiting for its id."""

    connection: ResponsesConnection
    stream: TurnStream | None
    warm: asyncio.Future[str] | None = None
    response_id: str | None = None
    deltas: int = 0
    cancel_wanted: bool = False
    cancel_sent_at_delta: int | None = None
    done: bool = False
    steer: bool = field(default=False)
    tools: ToolCallAssembler | None = None  # the response's tool calls as they stream


LostCallback = Callable[["ResponsesConnection"], None]


class ResponsesConnection:
    def __init__(
        self, socket: ClientConnection, config: ProviderConfig, on_lost: LostCallback,
        on_aged: LostCallback | None = None,
    ):
        self.opened_at = time.monotonic()
        # The response the server caches for this socket: the only id we may chain on here.
        self.last_response_id: str | None = None
        self.expired = False  # the server said the lifetime limit is reached
        self.retired = False  # we closed it on purpose (cancel, rollover, shutdown)
        # We closed it because the server broke the protocol or ended a running response with
        # an error: it is lost like a dropped socket (the client replaces it), not retired.
        self.faulted = False
        self._retire_when_idle = False
        self.close_code: int | None = None
        self._closed_by_client = False
        self._socket = socket
        self._config = config
        self._on_lost = on_lost
        self._pending: deque[Attempt] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        if isinstance(socket, FrameSocket):
            socket.on_message = self._dispatch  # frames come in the socket's own callback
        self._reader = asyncio.create_task(self._read())
        self._aged: asyncio.TimerHandle | None = None
        if on_aged is not None:
            self._aged = asyncio.get_running_loop().call_later(self.replace_after_s(config), on_aged, self)

    @staticmethod
    def replace_after_s(config: ProviderConfig) -> float:
        """The age at which a replacement for this socket starts warming: a margin before it
        stops taking turns (``usable``), so the next turn finds the new socket warm. At least
        half its usable life, so a short lifetime (tests) cannot make the client churn."""
        usable_for = config.connection_lifetime_s - config.rollover_margin_s
        return max(usable_for / 2, usable_for - config.rollover_margin_s)

    @classmethod
    async def open(
        cls, config: ProviderConfig, on_lost: LostCallback, on_aged: LostCallback | None = None
    ) -> ResponsesConnection:
        return cls(await dial(config), config, on_lost, on_aged)

    # -- state ----------------------------------------------------------------------------

    @property
    def age_s(self) -> float:
        return time.monotonic() - self.opened_at

    @property
    def alive(self) -> bool:
        return not self._reader.done() and not self.retired

    @property
    def usable(self) -> bool:
        """Alive, and young enough to take a new turn before the provider's lifetime limit."""
        limit = self._config.connection_lifetime_s - self._config.rollover_margin_s
        return self.alive and not self.expired and self.age_s < limit

    @property
    def idle(self) -> bool:
        return not any(not a.done for a in self._pending)

    # -- sending ----------------------------------------------------------------------------

    async def submit(self, body: JSONObject | str, stream: TurnStream, *, steer: bool = False) -> Attempt:
        """Send ``body`` (a message, or its JSON text) for ``stream``."""
        attempt = Attempt(self, stream, steer=steer, tools=ToolCallAssembler(stream))
        stream.handle = attempt
        self._pending.append(attempt)
        stream.mark_sent()
        await self._send(body)
        return attempt

    async def warm(self, body: JSONObject, timeout_s: float) -> str:
        """Send a ``generate: false`` request; the id it answers with is chainable here."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending.append(Attempt(self, None, warm=future))
        await self._send(body)
        try:
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise UpstreamError(TIMEOUT, f"warm-up not answered within {timeout_s:g} s",
                                retryable=True) from None

    def request_cancel(self, attempt: Attempt) -> None:
        """Native cancel: sent now if the response id is known, else once it is."""
        attempt.cancel_wanted = True
        if attempt.response_id is not None and not attempt.done:
            self._send_cancel(attempt)

    async def cancel(self, attempt: Attempt) -> None:
        """``request_cancel``, the cancel written before this returns (not by a task of its
        own, a pass of the event loop later): a steer's re-prompt waits behind the response
        it cancels, so every moment the cancel waits is added to the new answer's first token."""
        attempt.cancel_wanted = True
        if attempt.response_id is not None and not attempt.done:
            attempt.cancel_sent_at_delta = attempt.deltas
            await self._send({"type": protocol.CANCEL, "response_id": attempt.response_id})

    def retire(self) -> None:
        """Close without waiting: closing the socket is what stops a running response."""
        if not self.retired:
            self.retired = True
            self._cancel_aged()
            self._spawn(self._socket.close(1000, "retired by client"))

    def _fault(self) -> None:
        """Close a socket whose server we no longer trust: frames of the response it was
        running would otherwise be routed to the next request sent here."""
        self.faulted = True
        self.retire()

    def _cancel_aged(self) -> None:
        if self._aged is not None:
            self._aged.cancel()
            self._aged = None

    def retire_when_idle(self) -> None:
        """Rollover: let a running response finish here, then close the socket."""
        self._retire_when_idle = True
        if self.idle:
            self.retire()

    async def close(self) -> None:
        self.retired = True
        self._closed_by_client = True
        self._cancel_aged()
        await self._socket.close(1000, "client closed")
        await asyncio.wait({self._reader}, timeout=self._config.connect_timeout_s)

    def _send_cancel(self, attempt: Attempt) -> None:
        attempt.cancel_sent_at_delta = attempt.deltas
        self._spawn(self._send({"type": protocol.CANCEL, "response_id": attempt.response_id}))

    async def _send(self, body: JSONObject | str) -> None:
        try:
            await self._socket.send(body if isinstance(body, str) else json.dumps(body))
        except ConnectionClosed:
            # The reader sees the same close and settles every pending attempt.
            log.debug("send on a closed upstream socket")

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(job)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- receiving ------------------------------------------------------------------------

    async def _read(self) -> None:
        """Until the socket closes: the messages its ``on_message`` does not take (all of them
        on a plain ``ClientConnection``)."""
        socket = self._socket
        frames = socket if isinstance(socket, FrameSocket) else None
        try:
            async for raw in socket:
                if frames is not None:
                    frames.taken()
                self._dispatch(raw)
        except ConnectionClosed:
            pass
        finally:
            self._cancel_aged()
            self.close_code = self._socket.close_code
            self._settle_pending()
            self._on_lost(self)

    def _dispatch(self, raw: str | bytes) -> None:
        try:
            frame = read_frame(raw)
        except MalformedFrame as exc:
            self._protocol_violation(str(exc))
            return
        if isinstance(frame, str):  # a text delta: most frames
            self._on_text(frame)
        elif isinstance(frame, ErrorFrame):
            self._on_error(frame)
        elif isinstance(frame, SteerFailed):
            self._on_steer_failed(frame)
        else:
            self._on_response_frame(frame)

    def _on_text(self, text: str) -> None:
        """A ``response.output_text.delta`` (``read_frame`` gives its text alone): the stream
        marks the frame and takes its text in one step."""
        pending = self._pending
        # Finished requests leave from the front (``_pop``): the head is nearly always first.
        head = pending[0] if pending and not pending[0].done else next((a for a in pending if not a.done), None)
        if head is None:
            return
        head.deltas += 1
        if head.stream is not None:
            head.stream.text_frame(text)
        if head.cancel_wanted and head.cancel_sent_at_delta == 0 and head.deltas == 1:
            # The first cancel may have raced the start of streaming and been refused.
            self._send_cancel(head)

    def _on_response_frame(self, frame: Frame) -> None:
        head = next((a for a in self._pending if not a.done), None)
        if head is None:
            return  # e.g. lifecycle events of nothing we wait for; harmless
        if head.stream is not None:
            head.stream.mark_first_byte()
        if isinstance(frame, Created):
            head.response_id = frame.response_id
            if head.stream is not None:
                head.stream.response_id = frame.response_id
            if head.cancel_wanted:
                self._send_cancel(head)
        elif isinstance(frame, ToolItemAdded | ToolItemDone | ToolDelta | ToolInputDone):
            if isinstance(frame, ToolDelta):
                head.deltas += 1
            if head.tools is not None:
                apply_tool_frame(head.tools, frame)
        elif isinstance(frame, Done):
            self._finish(head, frame)

    def _finish(self, attempt: Attempt, done: Done) -> None:
        self._pop(attempt)
        if done.status != "failed" and done.response_id is not None:
            self.last_response_id = done.response_id
        if attempt.warm is not None:
            if done.status == "completed" and done.response_id and not attempt.warm.done():
                attempt.warm.set_result(done.response_id)
            elif not attempt.warm.done():
                attempt.warm.set_exception(
                    UpstreamError(PROTOCOL_ERROR, f"warm-up ended {done.status}")
                )
        stream = attempt.stream
        if stream is None:
            return
        if attempt.tools is not None and done.status != "failed":
            settle_tool_calls(attempt.tools, done.tool_items)
        if done.status == "completed":
            stream.complete(done.usage)
        elif done.status == "incomplete":
            stream.incomplete(done.reason, done.usage)
        else:
            stream.fail(done.code, done.message)

    def _on_error(self, error: ErrorFrame) -> None:
        if error.status in (401, 403):  # the key was refused (revoked while the socket was open)
            message = key_refused(f"{error.code}: {error.message}", self._config.key_label)
            error = ErrorFrame(AUTHENTICATION_FAILED, message, error.status)
        if error.code in protocol.CANCEL_REFUSALS:
            log.debug("upstream refused a cancel: %s", error.message)
            return
        if error.code == protocol.CONNECTION_LIMIT_REACHED:
            self.expired = True
        target = next((a for a in self._pending if not a.done and a.response_id is None), None)
        if target is None:
            running = next((a for a in self._pending if not a.done), None)
            if running is None:
                log.info("upstream error outside any request: %s", error.code)
            else:
                self._end_running(running, error)
            return
        self._pop(target)
        if target.warm is not None and not target.warm.done():
            target.warm.set_exception(UpstreamError(error.code, error.message))
        stream = target.stream
        if stream is None:
            return
        if error.code == protocol.CONNECTION_LIMIT_REACHED:
            stream.resend(same_connection=False, reason="connection lifetime limit reached")
        elif target.steer:
            # A server without `response.steer` rejects it as an unknown message.
            stream.chain_allowed = False
            stream.resend(same_connection=False, reason=f"steer rejected: {error.code}")
        elif error.code == protocol.PREVIOUS_RESPONSE_NOT_FOUND and stream.chain_allowed:
            stream.chain_allowed = False
            stream.resend(same_connection=True, reason="previous response not on this socket")
        else:
            stream.error(error.code, error.message, retryable=_retryable(error))

    def _end_running(self, attempt: Attempt, error: ErrorFrame) -> None:
        """An ``error`` while a response streams (OpenAI sends one mid-stream when the response
        breaks off, and one at the 60-minute limit): that response is over. Its turn ends with
        the error, or goes out again elsewhere if nothing of it was yielded; the socket is
        dropped, since whatever it still sends of that response would reach the next request."""
        self._pop(attempt)
        if attempt.warm is not None and not attempt.warm.done():
            attempt.warm.set_exception(UpstreamError(error.code, error.message, retryable=True))
        stream = attempt.stream
        if stream is not None:
            expired = error.code == protocol.CONNECTION_LIMIT_REACHED
            if expired and not stream.has_output:
                stream.resend(same_connection=False, reason="connection lifetime limit reached")
            elif expired:
                stream.error(
                    CONNECTION_EXPIRED,
                    "the provider closed the connection at its lifetime limit while the answer was "
                    f"streaming ({error.code})", retryable=True,
                )
            else:
                stream.error(error.code, error.message or "error event from the provider",
                             retryable=_retryable(error))
        log.warning("upstream error ended a running response (%s); dropping the socket", error.code)
        self._fault()

    def _on_steer_failed(self, refusal: SteerFailed) -> None:
        steer = next((a for a in self._pending if a.steer and not a.done), None)
        if steer is None or steer.stream is None:
            return
        self._pop(steer)
        steer.stream.chain_allowed = False
        # The refused steer goes out as a plain request on another socket (the old
        # response may still be running on this one).
        steer.stream.resend(same_connection=False, reason=f"steer refused: {refusal.code}")

    def _protocol_violation(self, detail: str) -> None:
        head = next((a for a in self._pending if not a.done), None)
        if head is not None:
            self._pop(head)
            if head.stream is not None:
                head.stream.error(PROTOCOL_ERROR, f"malformed upstream event: {detail}",
                                  retryable=True)
        log.warning("malformed upstream event, dropping the socket: %s", detail)
        self._fault()

    def _report_closed(self, stream: TurnStream, code: int | None) -> None:
        if self._closed_by_client:
            stream.error(CLIENT_CLOSED, "the model client was closed", retryable=False)
        elif self.expired:
            stream.error(CONNECTION_EXPIRED, "the provider closed the connection at its lifetime limit "
                         f"while the answer was streaming (close code {code})", retryable=True)
        else:
            how = "cut without a close frame" if code in (None, 1006) else f"close code {code}"
            stream.error(CONNECTION_LOST, f"upstream socket closed mid-answer ({how})", retryable=True)

    def _pop(self, attempt: Attempt) -> None:
        attempt.done = True
        while self._pending and self._pending[0].done:
            self._pending.popleft()
        if self._retire_when_idle and self.idle:
            self.retire()

    def _settle_pending(self) -> None:
        code = self.close_code
        # Requests queued behind a response that broke (faulted) never started: send them again.
        retryable = self.expired or self.faulted or (not self.retired and is_retryable_close(code))
        for attempt in self._pending:
            if attempt.done:
                continue
            attempt.done = True
            if attempt.warm is not None and not attempt.warm.done():
                attempt.warm.set_exception(
                    UpstreamError(CONNECTION_LOST, f"socket closed ({code})", retryable=True)
                )
            stream = attempt.stream
            if stream is None or stream.state == "cancelled":
                continue  # a cancelled turn yields nothing more: nobody to tell
            if retryable and not stream.has_output:
                stream.resend(same_connection=False, reason=f"socket closed ({code})")
            else:
                self._report_closed(stream, code)
        self._pending.clear()


def _retryable(error: ErrorFrame) -> bool:
    return error.status is None or error.status >= 500 or error.status == 429
