"""Answers on a clock: when each token of a scripted answer is due, and one timer that plays
every paced answer of the server.

A :class:`Timetable` holds an answer's output items and its schedule: the first token is due
``ttft_s`` after the engine took the job up, token *i* (counting every item) ``i / rate`` after
that first token's actual time. Whenever it is asked, it hands over every token of the current
item then due, in one piece of at most ``MAX_PIECE_TOKENS`` (so a stream that fell behind, or
a rate beyond one wake-up per token, sends several tokens in a delta while the average rate
stays exact). The scripted engine's ``generate`` walks it with one timer per wait; the
WebSocket responder plays it through the :class:`Pacer` instead.

The :class:`Pacer` is one timer for all the paced answers of an event loop: at each due time it
writes the frame of every answer then due straight to its socket (a :class:`FrameWriter`),
without waking the answer's task; the task waits once per output item. At 1,000 tokens/s per
answer that is what a token costs: no task wake-up, future or timer of its own, no ``json.dumps``
of a dict (the frame is the item's pre-encoded head and tail around the piece's JSON string),
no awaited ``send``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import weakref
from collections.abc import Callable
from typing import Protocol, cast, runtime_checkable

from spark_ide.modelserver.engine import Job, MessageStart, Tally, ToolCall

# A delta carries at most this many tokens; beyond the rate this allows (several
# hundred thousand tokens/s) the engine falls behind schedule rather than send huge frames.
MAX_PIECE_TOKENS = 256
Item = tuple[ToolCall | MessageStart, list[str]]


class Timetable:
    """An answer's items and when each of their tokens is due (the event loop's clock).

    Walk it: :meth:`begin` when the first token's time has come, then for each item
    :meth:`next_item` (its marker), and :meth:`take` what :meth:`due` allows until
    :attr:`item_done`. Each token taken counts in the tally's ``output_tokens``.
    """

    def __init__(self, items: list[Item], begun: float, ttft_s: float, rate: float, tally: Tally) -> None:
        self.items = items
        self.first_at = begun + ttft_s
        self.rate = rate
        self.tally = tally
        self.start = self.first_at
        self._index = -1
        self._tokens: list[str] = []
        self._done = 0
        self._sent = 0

    def begin(self, now: float) -> None:
        """The first token's time has come (``now``): the schedule counts from here."""
        self.start = now

    def next_item(self) -> ToolCall | MessageStart | None:
        """Move to the next item; its marker, or None after the last."""
        self._index += 1
        if self._index >= len(self.items):
            return None
        marker, self._tokens = self.items[self._index]
        self._done = 0
        return marker

    @property
    def item_done(self) -> bool:
        return self._done >= len(self._tokens)

    def due(self, now: float) -> int:
        """How many tokens of the current item are due at ``now`` (at most ``MAX_PIECE_TOKENS``)."""
        return min(len(self._tokens) - self._done, int((now - self.start) * self.rate) + 1 - self._sent,
                   MAX_PIECE_TOKENS)

    def take(self, count: int) -> str:
        """The next ``count`` tokens of the current item, as one piece."""
        done = self._done
        piece = "".join(self._tokens[done : done + count])
        self._done = done + count
        self._sent += count
        self.tally.output_tokens += count
        return piece

    def next_due(self) -> float:
        """When the next token is due."""
        return self.start + self._sent / self.rate


@runtime_checkable
class TimedEngine(Protocol):
    """An engine whose answers run on a known schedule (the scripted engine): a responder
    that can write frames at once plays its :class:`Timetable` through the :class:`Pacer`
    instead of iterating ``generate``. Both walk the same timetable, so the events and the
    pieces are the same either way; played, the time to first token counts from when the
    responder took the request up (``generate`` counts from when it is called, after
    ``response.created`` and ``response.in_progress`` went out)."""

    def timetable(self, job: Job, tally: Tally, begun: float) -> Timetable | None:
        """The answer to ``job`` (raising ``EngineError`` as ``generate`` would), its time to
        first token counted from ``begun`` (when the responder took the request up, before it
        sent ``response.created``: the time a served model's prefill overlaps); None: serve
        this engine through ``generate``."""
        ...


_TIMED: dict[type, bool] = {}


def timed(engine: object) -> TimedEngine | None:
    """``engine`` if it is a :class:`TimedEngine` (checked once per class: an ``isinstance``
    of a runtime protocol reads the class's attributes each time)."""
    kind = type(engine)
    known = _TIMED.get(kind)
    if known is None:
        known = _TIMED[kind] = isinstance(engine, TimedEngine)
    return cast(TimedEngine, engine) if known else None


class FrameWriter(Protocol):
    """A socket's synchronous side, for the pacer."""

    def ready(self) -> bool:
        """False while the socket's buffer is above its high-water mark (flow control)."""
        ...

    async def drained(self) -> None:
        """Return once the buffer has drained (at once if it is not above the mark)."""
        ...

    def write(self, frame: str) -> None:
        """Write one text frame now; raises ``ConnectionClosed`` if the socket is not open."""
        ...


class Playing:
    """One item's tokens being played: ``piece(text)`` takes each piece taken (it writes the
    frame); ``finished`` resolves when the item is out or its socket's buffer is full (False;
    ``paused`` tells them apart: the waiting task lets the buffer drain, then plays on), is
    stopped (True, through the response's cancel token) or its write fails (the exception)."""

    def __init__(self, timetable: Timetable, writer: FrameWriter, piece: Callable[[str], None],
                 finished: asyncio.Future[bool]) -> None:
        self.timetable = timetable
        self.writer = writer
        self.piece = piece
        self.finished = finished
        self.paused = False

    def tick(self, now: float) -> float | None:
        """Hand over what is due at ``now``; when to come back (None: the item is over)."""
        finished = self.finished
        if finished.done():  # stopped, or the task waiting for it went away
            return None
        if not self.writer.ready():  # the due tokens wait, and go out together
            self.paused = True
            finished.set_result(False)
            return None
        timetable = self.timetable
        due = timetable.due(now)
        if due > 0:
            try:
                self.piece(timetable.take(due))
            except Exception as exc:  # the waiting task raises it
                finished.set_exception(exc)
                return None
        if timetable.item_done:
            finished.set_result(False)
            return None
        return timetable.next_due()


class Pacer:
    """One timer for the paced answers of an event loop (:func:`pacer`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[tuple[float, int, Playing]] = []
        self._order = itertools.count()  # ties keep the order of arrival
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    def play(self, playing: Playing) -> None:
        """Start playing: what is due now is written at once."""
        at = playing.tick(self._loop.time())
        if at is not None:
            self._push(at, playing)

    def _push(self, at: float, playing: Playing) -> None:
        heapq.heappush(self._heap, (at, next(self._order), playing))
        self._arm()

    def _arm(self) -> None:
        at = self._heap[0][0]
        timer = self._timer
        if timer is not None:
            if self._timer_at <= at:
                return
            timer.cancel()
        self._timer_at = at
        self._timer = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._timer = None
        heap, now = self._heap, self._loop.time()
        due: list[Playing] = []
        while heap and heap[0][0] <= now:
            due.append(heapq.heappop(heap)[2])
        for playing in due:
            at = playing.tick(now)
            if at is not None:
                heapq.heappush(heap, (at, next(self._order), playing))
        if heap:
            self._arm()


_PACERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pacer] = weakref.WeakKeyDictionary()


def pacer() -> Pacer:
    """The running event loop's pacer."""
    loop = asyncio.get_running_loop()
    found = _PACERS.get(loop)
    if found is None:
        found = _PACERS[loop] = Pacer(loop)
    return found
