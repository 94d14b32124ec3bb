"""A room's ordered way out: events leave in ``seq`` order, a document update is persisted
before anyone is sent it, and an event that tells of the document (a block applied, a turn
finished) follows the updates that came before it.

Text on its way (``overtakes``: a turn's deltas and prose, a block's progress) goes out at once
when no event waits before it, even while document updates before it are being saved: what
the model writes reaches the pages as it comes, and the code it writes follows once saved
(the page shows it meanwhile as the block's ghost). Any other event waits for the updates
before it, and the events after it wait behind it (``seq`` order). So a batch's events before
its first update, and its text on its way, go out at once; its updates are merged and written
once (retried on failure), then they and the events that waited follow.

One exception keeps the text of a turn flowing past the end of a block: when all that waits
is block ends of the same turn (final ``edit.status``, waiting for their last update), text of
that turn goes ahead of them, renumbered: it takes the first waiting ``seq`` and they move up
one each (``Frame.renumber``; the room's memory log moves it too, ``moved_back``), so events
still leave in ``seq`` order and the stored log keeps the order they were sent in.
Turn events are written to the stored event log after they were sent, in batches, runs of
deltas merged (``event_log``).

When a write keeps failing the update stays pending (it is never dropped), the room is told
(it reports the error and stops the model) and a timer tries again; when a write succeeds
after a failure the room is told again (it resyncs everyone from the stored state).

A replacement of the document (``put_replace``) is a point in this stream: every update of
the old document is saved and sent before it, the new document is saved whole, and only then
does the room take it and everyone is sent ``document.replaced``; what follows is of the new
document.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pycrdt import merge_updates

from spark_ide.editing.status import IN_FLIGHT_STATES

from .background import Background
from .event_log import EventLog, now_ms
from .events import DocumentReplaced, EditStatus, Event, TurnDelta, TurnProse
from .outbox import Frame, merged
from .retry import with_retries
from .store import LiveSettings, RoomStore
from .transport import Transport

log = logging.getLogger(__name__)

# Text goes ahead of at most this many waiting block ends (``Pipeline._jump``: each is renumbered).
JUMP_MOST = 16
RETRY_LATER_S = (1.0, 2.0, 5.0, 10.0)  # after a batch failed for good: when to try again
# A batch this small goes out as it is: a delta and its prose are the usual batch of a room
# that keeps up, and there is nothing to merge in them.
MERGE_FROM = 3
# The file rows are refreshed at most this often relative to how long the last refresh took
# (at most a tenth of the time spent writing them).
MATERIALIZE_SPACING = 10.0


class _Retry:
    """A pipeline item that only makes the pipeline try its pending writes again."""


class _Stop:
    """The last pipeline item: what came before it is delivered, then the pipeline ends."""


@dataclass(frozen=True)
class Replacement:
    """A new document for the room (``Room.replace_document``): ``state`` is all of it, of
    ``generation``; ``previous`` is all of the document it replaces, as it was when made."""

    generation: int
    state: bytes
    previous: bytes
    doc: Any  # the new pycrdt Doc, not yet the room's
    texts: dict[str, str]  # the files it was made from


@dataclass(frozen=True)
class _Replace:
    """Replace the document here in the stream (``Pipeline.put_replace``)."""

    prepare: Callable[[], Replacement | None]
    swap: Callable[[Replacement], bool]


Item = Frame | bytes | _Retry | _Stop | _Replace


def overtakes(event: Event) -> bool:
    """Text on its way, which may go out before the document updates that came before it
    (the module docstring): a turn's deltas and prose, a block's progress."""
    kind = type(event)
    if kind is TurnDelta or kind is TurnProse:
        return True
    return type(event) is EditStatus and event.state in IN_FLIGHT_STATES


class Pipeline:
    def __init__(
        self,
        *,
        store: RoomStore,
        transport: Transport,
        settings: LiveSettings,
        document_state: Callable[[], bytes],
        texts: Callable[[], Mapping[str, str]],
        on_failed: Callable[[Exception], None],
        on_recovered: Callable[[], None],
        moved_back: Callable[[Frame, int], None] = lambda frame, past: None,
        http_changes: Callable[[], tuple[int, int]] = lambda: (0, 0),
    ) -> None:
        self._store = store
        self._http_changes = http_changes  # (begun, done): RoomFiles.http_changes
        self._transport = transport
        self._settings = settings
        self._document_state = document_state
        self._texts = texts
        self._on_failed = on_failed
        self._on_recovered = on_recovered
        # What waits to be delivered, in order, and the delivering task's wait while nothing
        # does: every published event passes here (at capacity, twice per delta), so a put is
        # an append and the delivery takes the whole list at once (an ``asyncio.Queue`` cost a
        # put and a get per item, with their bookkeeping).
        self._queue: list[Item] = []
        self._ready: asyncio.Future[None] | None = None
        self._pending_update: bytes | None = None  # written and not yet sent: failed so far
        self._held: list[Frame] = []  # events waiting behind the pending update
        # Events put and not yet sent (queued, held, or in the batch being delivered), in order:
        # text on its way goes out at once only when none waits, or ahead of them (``_jump``).
        self._unsent: deque[Frame] = deque()
        self._moved_back = moved_back
        self._failures = 0
        self._since_compact = 0
        # The highest seq handed to the transport: a joining connection is sent the frames up
        # to it, and takes the rest from the transport like everyone (none missed, none twice).
        self.sent_seq = 0
        self._log = EventLog(store=store, settings=settings)  # turn events sent, to be stored
        self._materialize: asyncio.TimerHandle | None = None
        self._materialize_wait = settings.materialize_after_s
        self._materializing = False  # a refresh of the file rows is being written
        self._files_stale = False  # the document changed since the last refresh began
        self._retry: asyncio.TimerHandle | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._background = Background()

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._run()), asyncio.create_task(self._log.run())]

    def put_frame(self, frame: Frame) -> None:
        frame.at = now_ms()  # published now: the event log keeps the time (replay)
        if overtakes(frame.event):
            if not self._unsent:
                self._emit([frame])  # nothing waits before it but document updates being saved
                return
            if self._may_jump(frame):
                self._jump(frame)
                return
        self._unsent.append(frame)
        self._put(frame)

    def _may_jump(self, frame: Frame) -> bool:
        """Whether text on its way may go ahead of what waits: block ends of its own turn alone."""
        unsent = self._unsent
        if len(unsent) > JUMP_MOST:
            return False
        turn = frame.event.turn  # type: ignore[attr-defined]  # text on its way is a turn event
        for waiting in unsent:
            event = waiting.event
            if type(event) is not EditStatus or event.turn != turn or event.state in IN_FLIGHT_STATES:
                return False
        return True

    def _jump(self, frame: Frame) -> None:
        """Send ``frame`` ahead of the block ends that wait, with the first of their numbers;
        each of them takes the next one (the last takes ``frame``'s)."""
        unsent = self._unsent
        seqs = [waiting.seq for waiting in unsent]
        for waiting, seq in zip(unsent, [*seqs[1:], frame.seq], strict=True):
            waiting.renumber(seq)
            # Their time follows their number (the replay plays events in seq order): they go
            # out after ``frame``, and count as published when it was.
            if waiting.at is not None and frame.at is not None:
                waiting.at = max(waiting.at, frame.at)
        frame.renumber(seqs[0])
        self._moved_back(frame, len(unsent))
        self._emit([frame])

    def put_update(self, update: bytes) -> None:
        self._put(update)

    def _put(self, item: Item) -> None:
        self._queue.append(item)
        ready = self._ready
        if ready is not None:
            self._ready = None
            if not ready.done():
                ready.set_result(None)

    def _take(self) -> list[Item]:
        """Everything queued now, in order (the queue is left empty)."""
        items, self._queue = self._queue, []
        return items

    async def _next_items(self) -> list[Item]:
        """What is queued, once something is."""
        while not self._queue:
            self._ready = asyncio.get_running_loop().create_future()
            await self._ready
        return self._take()

    def put_replace(self, prepare: Callable[[], Replacement | None], swap: Callable[[Replacement], bool]) -> None:
        """Replace the document once what is queued now is delivered: ``prepare()`` makes the
        new one (None: not now), it is saved, then ``swap`` makes it the room's (False: not
        any more, a turn began meanwhile) and everyone is told."""
        self._put(_Replace(prepare, swap))

    async def close(self) -> None:
        """Deliver and write what waits, then stop. No write in flight is cancelled: a write
        cancelled while it waits for the database thread never runs (asgiref drops it), so
        an update or a batch of turn events would be lost."""
        delivering = self._tasks[0] if self._tasks else None
        if delivering is not None and not delivering.done():
            self._put(_Stop())
            with contextlib.suppress(Exception):
                await delivering  # what was queued before, written and sent
        await self.flush()  # anything put after the stop (or all, when the pipeline never ran)
        for handle in (self._materialize, self._retry):
            if handle is not None:
                handle.cancel()
        for task in self._tasks:
            task.cancel()  # the event log's writer, waiting or sleeping (its write is shielded)
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._log.close()
        with contextlib.suppress(Exception):
            await self._store.write_files(self._texts())

    async def flush(self) -> None:
        items = self._take()
        if items or self._pending_update is not None:
            await self._deliver(items)

    # -- delivery ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            items = await self._next_items()
            try:
                await self._deliver_in_turn(items)
            except Exception:  # a bug must not end the room's only way out
                log.exception("the room's pipeline failed on a batch")
                # What the batch had not sent is lost: what still waits is held or queued.
                self._unsent = deque([*self._held, *(item for item in self._queue if isinstance(item, Frame))])
            if any(isinstance(item, _Stop) for item in items):
                return

    async def _deliver_in_turn(self, items: list[Item]) -> None:
        """``_deliver``, with a replacement done at its place among the items."""
        for index, item in enumerate(items):
            if isinstance(item, _Replace):
                await self._deliver(items[:index])
                await self._replace(item, items[index + 1 :])
                return
        await self._deliver(items)

    async def _replace(self, item: _Replace, after: list[Item]) -> None:
        """Save the new document, then hand it to the room and tell everyone, in one step.

        Everything queued before the replacement was delivered. Not while an update waits to
        be saved (the storage is failing): the room keeps its document. The new document is
        made from the room's files as they are when its turn comes, so the updates queued
        behind it (of the old document) are in it already, and those that come while it is
        saved the room carries into it as text when it swaps: none of them is sent (pages get
        the new document) nor saved (the new document is). A turn that began meanwhile keeps
        the old document and everything goes on as before. ``after``: the items of this
        batch behind the replacement."""
        replacement = item.prepare() if self._pending_update is None else None
        if replacement is None:
            await self._deliver_in_turn(after)
            return
        try:
            await with_retries(lambda: self._store.replace_document(
                replacement.state, generation=replacement.generation, previous=replacement.previous,
            ), self._settings.persist_retries)
        except Exception:
            log.warning("could not save the replaced document; the room keeps its own", exc_info=True)
            await self._deliver_in_turn(after)
            return
        late = [*after, *self._take()]
        controls = [other for other in late if not isinstance(other, Frame | bytes)]  # stop, retry: back in line
        late = [other for other in late if isinstance(other, Frame | bytes)]
        # From here nothing awaits: the swap, the announcement and the frames that came meanwhile.
        try:
            swapped = item.swap(replacement)
        except Exception:  # a bug: the room keeps its document, storage takes it back below
            log.exception("the room could not take its replaced document")
            swapped = False
        if swapped:
            self._send([frame for frame in late if isinstance(frame, Frame)])
            # The room's document now: the new one with what came while it was saved carried
            # in, so a page's own keystrokes of that moment are in what it adopts.
            state = base64.b64encode(self._document_state()).decode()
            self._emit([Frame(DocumentReplaced(generation=replacement.generation, state=state), self.sent_seq)])
        for other in controls:
            self._put(other)
        if not swapped:
            await self._replace_refused(replacement, late)

    async def _replace_refused(self, replacement: Replacement, late: list[Item]) -> None:
        """A turn began while the new document was saved, and the room kept its own: storage
        takes the room's whole document back (its own generation), then what came meanwhile
        goes on as usual."""
        try:
            await with_retries(lambda: self._store.replace_document(
                self._document_state(), generation=replacement.generation - 1, previous=None,
            ), self._settings.persist_retries)
        except Exception:
            log.error("the stored document is a replacement the room did not take, and could not be "
                      "written back; it is written again at the next compaction", exc_info=True)
            self._since_compact = self._settings.compact_every
        await self._deliver(late)

    async def _deliver(self, items: list[Item]) -> None:
        if self._pending_update is None:
            first = next((i for i, item in enumerate(items) if isinstance(item, bytes)), len(items))
            self._send(items[:first])
            items = items[first:]
        updates = [item for item in items if isinstance(item, bytes)]
        if self._pending_update is not None:
            updates.insert(0, self._pending_update)
        self._held += [item for item in items if isinstance(item, Frame)]
        if updates:
            update = merge_updates(*updates) if len(updates) > 1 else updates[0]
            if not await self._persist(update):
                self._pending_update = update
                # The turn events behind it still go out: they tell what happened to the turn;
                # the document changes follow once they are saved.
                self._send(self._held)
                self._held = []
                return
            recovered = self._pending_update is not None
            self._pending_update = None
            self._transport.update(update)
            if recovered:
                self._on_recovered()
        self._send(self._held)
        self._held = []

    def _send(self, items: list[Item] | list[Frame]) -> None:
        """Send the events among ``items``, which were put and waited (``_unsent``: the
        oldest of them, in their order)."""
        frames = [item for item in items if isinstance(item, Frame)]
        unsent = self._unsent
        for _ in range(min(len(frames), len(unsent))):
            unsent.popleft()
        self._emit(frames)

    def _emit(self, frames: list[Frame]) -> None:
        self._log.add_all([frame for frame in frames if not frame.event.ephemeral])
        # Merged once for the whole room (the outbox's rules): under load a batch holds many
        # deltas, and every connection then gets the same few frames, each encoded once.
        for frame in frames if len(frames) <= MERGE_FROM else merged(frames):
            self._transport.frame(frame)
        if frames:
            self.sent_seq = max(self.sent_seq, frames[-1].seq)

    async def _persist(self, update: bytes) -> bool:
        """Write ``update`` (retrying); False when every try failed."""
        waits = self._settings.persist_retries
        try:
            last_id = await with_retries(lambda: self._store.append_update(update), waits)
        except Exception as exc:
            log.warning("could not save a document update (%d tries): %s", len(waits) + 1, exc)
            self._settings.meter.persist_failed("document")
            self._failures += 1
            if self._failures == 1:
                self._on_failed(exc)
            self._retry_later()
            return False
        self._failures = 0
        await self._after_persist(last_id)
        return True

    def _retry_later(self) -> None:
        if self._retry is None:
            wait = RETRY_LATER_S[min(self._failures - 1, len(RETRY_LATER_S) - 1)]
            self._retry = asyncio.get_running_loop().call_later(wait, self._wake_retry)

    def _wake_retry(self) -> None:
        self._retry = None
        self._put(_Retry())

    async def _after_persist(self, last_id: int) -> None:
        self._since_compact += 1
        if self._since_compact >= self._settings.compact_every:
            self._since_compact = 0
            try:
                await self._store.compact(self._document_state(), through_id=last_id)
            except Exception:
                log.warning("could not compact the document (it stays as updates)", exc_info=True)
        self._files_stale = True
        self._schedule_materialize()

    def _schedule_materialize(self) -> None:
        """A refresh of the file rows, ``_materialize_wait`` from now; one at a time."""
        if self._materialize is None and not self._materializing:
            self._materialize = asyncio.get_running_loop().call_later(self._materialize_wait, self._spawn_materialize)

    def _spawn_materialize(self) -> None:
        self._materialize = None
        self._materializing = True
        self._background.spawn(self._write_files())

    async def _write_files(self) -> None:
        started = time.monotonic()
        self._files_stale = False
        begun, done = self._http_changes()
        try:
            if begun != done:  # a change over HTTP is on its way: its row is newer than the texts
                self._files_stale = True
            elif not await self._store.write_files(self._texts(), lambda: self._http_changes()[0] == begun):
                self._files_stale = True  # one began meanwhile: nothing was kept, read them again
        except Exception:
            log.warning("could not refresh the file rows (the document is saved)", exc_info=True)
        finally:
            self._materializing = False
        # The rows are the files' whole texts: a file the model is writing (a 10^6-character
        # JSON, say) is written again at every refresh, and the database thread every room
        # shares would spend its time on it, the rooms' document updates waiting behind. The
        # next refresh waits MATERIALIZE_SPACING times as long as this one took.
        took = time.monotonic() - started
        self._materialize_wait = max(self._settings.materialize_after_s, MATERIALIZE_SPACING * took)
        if self._files_stale:  # the document changed while they were written
            self._schedule_materialize()

    @property
    def stored_seq(self) -> int:
        """The last turn event stored (``EventLog``)."""
        return self._log.stored_seq

    async def store_log(self) -> None:
        """Every turn event sent so far, stored before this returns (``EventLog.store``)."""
        await self._log.store()
