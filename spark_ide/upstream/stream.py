"""A turn's event stream, the same object for every transport.

Transports push facts in (``delta``, ``complete`` ...); the Pilot iterates normalised
events out. Once the stream is cancelled (``cancel`` or a steer) iteration ends at once and
nothing pushed afterwards is ever yielded: that is the zero-stale-events guarantee.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from spark_ide.upstream.errors import TIMEOUT
from spark_ide.upstream.events import (
    Completed,
    ErrorEvent,
    Failed,
    Incomplete,
    Marks,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStarted,
    ToolInputDelta,
    UpstreamEvent,
    Usage,
    is_terminal,
)
from spark_ide.upstream.request import TurnRequest

State = Literal["running", "finished", "cancelled"]


@dataclass(frozen=True, slots=True)
class _Resend:
    """Control item: send the request again (nothing of this turn was yielded yet)."""

    same_connection: bool
    reason: str


class _Wake:
    """Control item: wakes a reader blocked on the queue after a cancel."""


# A text delta as queued: (text, received_at); a tool call's input delta: (text, received_at,
# call_id). Most frames are these; each becomes its event only if it is yielded on its own
# (``TurnStream._event_of``): a consumer that takes the waiting text (``take_waiting_text``)
# joins the strings, and no frame pays for two objects it never needs.
_Text = tuple[str, float]
_Input = tuple[str, float, str]
_Item = UpstreamEvent | _Resend | _Wake | _Text | _Input


# (stream, abandon): abandon=True means the connection is suspect and must be dropped.
Stopper = Callable[["TurnStream", bool], Awaitable[None]]
Resender = Callable[["TurnStream", bool, str], Awaitable[None]]


class TurnStream:
    """Async iterator over one turn's :data:`UpstreamEvent`\\ s; ends after a terminal event."""

    def __init__(
        self,
        request: TurnRequest,
        *,
        stopper: Stopper,
        resender: Resender | None,
        first_byte_timeout_s: float,
        idle_timeout_s: float,
    ) -> None:
        self.request = request
        self.chain_allowed = True
        self.chained = False  # the last send went out as previous_response_id + new input
        self.resends = 0
        self.response_id: str | None = None
        # The provider's count of the response's tokens, from its last event (None: it gave none).
        self.usage: Usage | None = None
        # The transport's record of where this turn is running (set by the client).
        self.handle: object | None = None
        self.sent_at: float | None = None
        self.first_byte_at: float | None = None
        self.first_token_at: float | None = None
        self._last_activity_at: float | None = None
        # What arrived and waits to be taken; the reader waits on ``_waiter`` when it is empty.
        self._queue: deque[_Item] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._next: _Item | None = None  # taken from the queue, not yet yielded
        self._state: State = "running"
        self._pushed_terminal = False
        self._pushed_text = False  # a text delta was pushed (output: no transparent resend)
        self._pushed_tool = False  # a tool event was pushed (output: no transparent resend)
        self._tool_order: list[str] = []  # the calls' ids as they started (output order)
        self._tool_done: dict[str, ToolCall] = {}  # finished calls, for the terminal event
        self._yielded_text: list[str] = []
        self._stopper = stopper
        self._resender = resender
        self._first_byte_timeout_s = first_byte_timeout_s
        self._idle_timeout_s = idle_timeout_s
        # One timer for the stream's deadline (first byte, then idle), armed when the reader
        # first waits and moved on only when it fires: a timer per awaited delta cost ~10 µs
        # of every token at 1,000 tokens/s (wait_for makes a task each time).
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._armed_for = 0.0  # the deadline the timer is set for

    # -- what the Pilot sees -------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    @property
    def text(self) -> str:
        """The text yielded to the consumer so far (what the model wrote, as far as seen)."""
        return "".join(self._yielded_text)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls whose input is complete, in the order they started."""
        return tuple(self._tool_done[c] for c in self._tool_order if c in self._tool_done)

    @property
    def marks(self) -> Marks:
        return self._marks()

    @property
    def waiting(self) -> int:
        """How many events have arrived and wait to be taken (0: the consumer keeps up)."""
        return len(self._queue) + (self._next is not None)

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> UpstreamEvent:
        while self._state == "running":
            item = await self._next_item()
            if self._state != "running":
                break
            if type(item) is tuple:
                event = self._event_of(item)
                if isinstance(event, TextDelta):
                    self._yielded_text.append(event.text)
                return event
            if isinstance(item, _Wake):
                continue
            if isinstance(item, _Resend):
                self.first_byte_at = None  # the marks describe the attempt that answers
                if self._resender is not None:
                    await self._resender(self, item.same_connection, item.reason)
                continue
            assert not isinstance(item, tuple)
            if is_terminal(item):
                self._state = "finished"
                self._disarm()
            return item
        self._disarm()
        raise StopAsyncIteration

    async def cancel(self) -> None:
        """Stop this turn (no re-prompt): nothing more is yielded; upstream is stopped."""
        if self._state != "running":
            return
        self.detach()
        await self._stopper(self, False)

    def detach(self) -> None:
        """Stop yielding at once; the caller takes care of the upstream side."""
        if self._state == "running":
            self._state = "cancelled"
            self._disarm()
            self._put(_Wake())

    # -- what transports call --------------------------------------------------------------

    @property
    def accepting(self) -> bool:
        return self._state == "running" and not self._pushed_terminal

    @property
    def has_output(self) -> bool:
        """True once any text was pushed; a transparent resend is impossible after that."""
        return self._pushed_text or self._pushed_tool

    def mark_sent(self) -> None:
        if self.sent_at is None:
            self.sent_at = time.monotonic()

    def mark_first_byte(self) -> None:
        """Called for every frame of this turn: the first sets the mark, each one counts as
        activity (a reasoning model may send no text for a long time, but it sends frames)."""
        now = time.monotonic()
        self._last_activity_at = now
        if self.first_byte_at is None:
            self.first_byte_at = now

    def delta(self, text: str) -> None:
        if not self.accepting or not text:
            return
        self._push_text(text, time.monotonic())

    def text_frame(self, text: str) -> None:
        """A frame of this turn carrying ``text`` arrived: ``mark_first_byte`` and ``delta`` in
        one step, on one reading of the clock (a transport's read path, once per frame)."""
        now = time.monotonic()
        self._last_activity_at = now
        if self.first_byte_at is None:
            self.first_byte_at = now
        if text and self._state == "running" and not self._pushed_terminal:
            self._push_text(text, now)

    def _push_text(self, text: str, now: float) -> None:
        """Queue ``text``, received at ``now``, as the next ``TextDelta`` (the stream accepts)."""
        self._last_activity_at = now
        if self.first_byte_at is None:
            self.first_byte_at = now
        if self.first_token_at is None:
            self.first_token_at = now
        self._pushed_text = True
        self._put((text, now))

    def tool_started(self, call: ToolCall) -> None:
        if self._tool_event():
            self._tool_order.append(call.call_id)
            self._put(ToolCallStarted(
                call.call_id, call.item_id, call.name, call.kind, call.operation, call.path,
                self.response_id, self._marks(),
            ))

    def tool_input(self, call_id: str, text: str) -> None:
        if text and self._tool_event():
            self._put((text, time.monotonic(), call_id))

    def tool_done(self, call: ToolCall) -> None:
        if self._tool_event():
            self._tool_done[call.call_id] = call
            self._put(ToolCallDone(call, self._marks()))

    def complete(self, usage: Usage | None) -> None:
        if self.accepting:
            self.usage = usage
        self._terminal(Completed(self.response_id, usage, self._marks(), self.tool_calls))

    def incomplete(self, reason: str, usage: Usage | None = None) -> None:
        if self.accepting:
            self.usage = usage
        self._terminal(Incomplete(self.response_id, reason, self._marks(), self.tool_calls))

    def fail(self, code: str, message: str) -> None:
        self._terminal(Failed(self.response_id, code, message, self._marks()))

    def error(self, code: str, message: str, *, retryable: bool) -> None:
        self._terminal(ErrorEvent(code, message, retryable, self._marks()))

    def resend(self, *, same_connection: bool, reason: str) -> None:
        if self.accepting and not self.has_output:
            self._put(_Resend(same_connection, reason))

    # -- internals -------------------------------------------------------------------------

    def _tool_event(self) -> bool:
        """Whether a tool event may be pushed now (marks it as output and activity)."""
        if not self.accepting:
            return False
        self.mark_first_byte()
        if self.first_token_at is None:
            self.first_token_at = time.monotonic()
        self._pushed_tool = True
        return True

    def _terminal(self, event: UpstreamEvent) -> None:
        if self.accepting:
            self.mark_first_byte()
            self._pushed_terminal = True
            self._put(event)

    def take_waiting_text(self, limit: int, most: int | None = None) -> tuple[str, int]:
        """The text of the deltas already waiting, as one piece (up to about ``limit``
        characters; the first other event stays next): a consumer that fell behind takes one
        step for all of them instead of one per token, so the more it falls behind the less
        each token costs it. With how many deltas it holds; ("", 0) when nothing waits (a
        consumer that keeps up). At most ``most`` deltas (None: no count limit)."""
        text, count = self._take_waiting(None, limit, most)
        if text:
            self._yielded_text.append(text)
        return text, count

    def take_waiting_input(self, call_id: str, limit: int, most: int | None = None) -> tuple[str, int]:
        """As :meth:`take_waiting_text`, for the ``ToolInputDelta``\\ s of call ``call_id``."""
        return self._take_waiting(call_id, limit, most)

    def _take_waiting(self, call_id: str | None, limit: int, most: int | None) -> tuple[str, int]:
        """The waiting text deltas (``call_id`` None) or input deltas of call ``call_id``,
        joined, up to the first item that is not one."""
        if self._state != "running":
            return "", 0
        queue = self._queue
        texts: list[str] = []
        size = 0
        while size < limit and (most is None or len(texts) < most):
            if self._next is not None:
                item, self._next = self._next, None
            elif queue:
                item = queue.popleft()
            else:
                break
            if type(item) is not tuple or (item[2] if len(item) == 3 else None) != call_id:
                self._next = item
                break
            texts.append(item[0])
            size += len(item[0])
        return "".join(texts), len(texts)

    def _put(self, item: _Item) -> None:
        self._queue.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _event_of(self, item: _Text | _Input) -> TextDelta | ToolInputDelta:
        """The event a queued text (or input) delta stands for."""
        marks = self._marks(item[1])
        if len(item) == 3:
            return ToolInputDelta(item[2], item[0], marks)
        return TextDelta(item[0], self.response_id, marks)

    async def _next_item(self) -> _Item:
        if self._next is not None:
            item, self._next = self._next, None
            return item
        while True:
            if self._queue:  # at high rates events are usually waiting
                item = self._queue.popleft()
            else:
                if self._overdue() is not None:
                    break
                deadline = self._deadline()
                if self._deadline_timer is None or deadline < self._armed_for:  # (the first byte came)
                    self._arm(deadline)
                item = await self._wait_item()
            if not isinstance(item, _Wake) or self._state != "running":
                return item
            # The deadline timer woke the reader (or a stale wake): look at the deadline again.
        what = "first byte" if self.first_byte_at is None else "event"
        limit = self._first_byte_timeout_s if self.first_byte_at is None else self._idle_timeout_s
        event = ErrorEvent(TIMEOUT, f"no {what} within {limit:g} s", True, self._marks())
        # The late answer must never reach the next turn: stop it upstream.
        self._pushed_terminal = True
        self._disarm()
        await self._stopper(self, True)
        return event

    def _deadline(self) -> float:
        """When this stream times out (monotonic): the first byte's limit from the send, then
        the idle limit from the last frame."""
        if self.first_byte_at is None:
            return (self.sent_at or time.monotonic()) + self._first_byte_timeout_s
        return (self._last_activity_at or time.monotonic()) + self._idle_timeout_s

    def _overdue(self) -> float | None:
        """How far past its deadline the stream is (None: not yet)."""
        late = time.monotonic() - self._deadline()
        return late if late >= 0 else None

    def _arm(self, deadline: float) -> None:
        self._disarm()
        self._armed_for = deadline
        delay = max(0.0, deadline - time.monotonic())
        self._deadline_timer = asyncio.get_running_loop().call_later(delay, self._on_deadline)

    def _on_deadline(self) -> None:
        """The timer fired: frames since moved the deadline on (arm again for it), or the
        stream is overdue (wake the reader, which ends it with a timeout)."""
        self._deadline_timer = None
        if self._state != "running" or self._pushed_terminal:
            return
        if self._overdue() is None:
            self._arm(self._deadline())
        else:  # after what is ready to run now (a frame read in this step of a stalled loop)
            asyncio.get_running_loop().call_soon(self._wake_if_overdue)

    def _wake_if_overdue(self) -> None:
        if self._state != "running" or self._pushed_terminal or self._deadline_timer is not None:
            return
        if self._overdue() is None:
            self._arm(self._deadline())
        else:
            self._put(_Wake())

    def _disarm(self) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    async def _wait_item(self) -> _Item:
        """The next item, once one arrives (the queue is empty)."""
        while not self._queue:
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    def _marks(self, at: float | None = None) -> Marks:
        """The stream's marks for an event received at ``at`` (None: now)."""
        now = time.monotonic() if at is None else at
        sent = self.sent_at if self.sent_at is not None else now
        return Marks(sent, self.first_byte_at, self.first_token_at, now)
