"""What a page that comes back lacks, and what a new page is shown: the room's recent turn
events kept in memory, the older ones read from storage, and the transcript budget.

A reconnect (``?after=<seq>``) gets the events after its last one, merged as a busy outbox
would merge them; when they are no longer kept (or it holds numbers we never gave out) it
starts over (``resync``) with the recent transcript: the recent turns' events without the raw
deltas of finished turns, newest turns first within a size budget.

The memory log keeps at most ``LOG_KEPT`` events and about ``LiveSettings.replay_bytes`` of
them (``kept_bytes``: a busy room's log fills in a few minutes, then its memory stays flat),
never dropping one that is not stored yet; what is older is read from storage. A kept frame
drops its encoded text once it is ``TEXT_KEPT`` events old (everyone was sent it by then; a
replay encodes it again): the text is a third of a delta's frame.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from .events import EditStatus, Event, TurnDelta, TurnEvent, TurnProse, TurnStarted
from .outbox import Frame, merged
from .store import LiveSettings, StoredEvent

LOG_KEPT = 10_000  # turn events kept in memory for replay at most; older ones are read from storage
TEXT_KEPT = 256  # the newest kept frames keep their encoded text; older ones drop it
# What a kept frame takes besides its text, in bytes: the frame, its event and what the event
# holds besides its text (a delta's 250, a block status's 540, a finished turn's 1,050), the
# mean over the soak's answers (docs/benchmarks.md, "The 30-minute soak, each allocator").
FRAME_BYTES = 360


class StoredEvents(Protocol):
    """Where the room's turn events are stored (``RoomStore``)."""

    async def events_after(self, seq: int, *, limit: int) -> list[StoredEvent]: ...

    async def recent_events(self, *, turns: int, deltas_of: str | None) -> list[StoredEvent]: ...


class ReplayLog:
    """The room's turn events for replay. ``sent()`` is the last seq the pipeline has sent
    (what is still in the pipeline reaches a page from the transport); ``stored()`` the last
    seq in storage (the log keeps every event after it, whatever its size); ``running()`` is
    the turn going on, if any."""

    def __init__(
        self, *, store: StoredEvents, settings: LiveSettings,
        sent: Callable[[], int], stored: Callable[[], int], running: Callable[[], str | None],
    ) -> None:
        self._store = store
        self._settings = settings
        self._sent = sent
        self._stored = stored
        self._running = running
        self._frames: deque[Frame] = deque()
        self.bytes = 0  # the kept frames' ``kept_bytes``
        self.floor = 0  # replay from memory covers every event after this seq
        self.seq = 0  # the last seq given out (an owner's epoch in the high bits)
        self._recent_turns: deque[str] = deque(maxlen=settings.transcript_turns)
        self._replayed: tuple[int, int, int, list[Frame]] | None = None  # the last catch-up (_from_memory)

    def start(self, seq: int, unfinished: Iterable[str]) -> None:
        """The room opened at ``seq`` (its epoch's first); ``unfinished`` turns were going on
        when its last owner stopped."""
        self.floor = self.seq = seq
        self._recent_turns.extend(unfinished)

    def keep(self, frame: Frame) -> None:
        """A turn event just published, numbered ``seq + 1``."""
        self.seq = frame.seq
        frames = self._frames
        frames.append(frame)
        self.bytes += kept_bytes(frame.event)
        if len(frames) > TEXT_KEPT:
            frames[-TEXT_KEPT - 1].forget_text()
        stored = self._stored()
        while len(frames) > LOG_KEPT or (self.bytes > self._settings.replay_bytes and frames[0].seq <= stored):
            dropped = frames.popleft()
            self.bytes -= kept_bytes(dropped.event)
            self.floor = dropped.seq
        if isinstance(frame.event, TurnStarted):
            self._recent_turns.append(frame.event.turn)

    def moved_back(self, frame: Frame, past: int) -> None:
        """``frame``, the last event kept, was renumbered to go out before the ``past`` events
        kept before it (``live.pipeline``): it takes its place among them, so the log stays in
        ``seq`` order."""
        frames = self._frames
        if frames and frames[-1] is frame and 0 < past < len(frames):
            frames.pop()
            frames.insert(len(frames) - past, frame)

    @property
    def kept(self) -> int:
        """How many events the memory log holds."""
        return len(self._frames)

    async def stored_for(self, after: int | None) -> list[StoredEvent]:
        """What must come from storage to bring a client from ``after`` up to the memory log."""
        if after is None:
            return await self.recent_stored()
        if after >= self.floor:
            return []
        return await self._store.events_after(after, limit=self._settings.replay_limit + 1)

    async def recent_stored(self) -> list[StoredEvent]:
        return await self._store.recent_events(turns=self._settings.transcript_turns, deltas_of=self._running())

    def catch_up(self, after: int | None, stored: list[StoredEvent], upto: int | None = None) -> list[Frame] | None:
        """The frames a client that holds everything up to ``after`` lacks, up to ``upto`` (by
        default what the pipeline has sent); None: resync."""
        if after is None:
            return self.transcript(stored)
        if after > self.seq:
            return None  # numbers we never gave out: another server's, or a bad client
        older = [entry for entry in stored if entry.seq <= self.floor]
        if any(entry.first_seq <= after for entry in older):
            return None  # it holds part of a merged run: it cannot be cut where it stopped
        sent = self._sent() if upto is None else min(upto, self._sent())
        events, recent = self._from_memory(after, sent)
        if len(older) + events > self._settings.replay_limit:
            return None
        return [Frame(entry.event, entry.seq) for entry in older] + recent

    def _from_memory(self, after: int, sent: int) -> tuple[int, list[Frame]]:
        """How many kept events follow ``after`` up to ``sent``, and those frames merged as a
        busy outbox would merge them (``live.outbox.merged``). The pages of a room that
        reconnect together (a server restart, a network blip) hold the same last seq: the
        last answer is kept for them."""
        kept = self._replayed
        if kept is not None and kept[0] == after and kept[1] == sent:
            return kept[2], kept[3]
        tail: list[Frame] = []
        for frame in reversed(self._frames):  # newest first: a reconnect lacks only the last few
            if frame.seq <= after:
                break
            if frame.seq <= sent:
                tail.append(frame)
        tail.reverse()
        frames = merged(tail)
        self._replayed = (after, sent, len(tail), frames)
        return len(tail), frames

    def transcript(self, stored: list[StoredEvent] | None) -> list[Frame]:
        """A new page's transcript: the recent turns' events, without the raw deltas of
        finished turns (the prose and block statuses tell the story; the running turn's
        deltas are kept so its text has no gap), newest turns first within a size budget."""
        # A stored run of deltas may begin at or before the memory log's floor and end after
        # it: it is taken whole, and the memory log's frames it holds are not.
        older = [entry for entry in stored or () if entry.first_seq <= self.floor]
        after = max((entry.seq for entry in older), default=self.floor)
        frames = [Frame(entry.event, entry.seq) for entry in older]
        turns = {frame.event.turn for frame in frames if isinstance(frame.event, TurnStarted)}
        turns.update(self._recent_turns)
        sent = self._sent()  # what is still in the pipeline comes from the transport
        frames += [
            frame for frame in self._frames
            if after < frame.seq <= sent and isinstance(frame.event, TurnEvent) and frame.event.turn in turns
        ]
        running = self._running()
        frames = [frame for frame in frames if not isinstance(frame.event, TurnDelta) or frame.event.turn == running]
        return within_budget(frames, running, self._settings.transcript_bytes)


def within_budget(frames: list[Frame], running: str | None, budget: int) -> list[Frame]:
    """The frames of the newest turns whose text fits ``budget`` characters (whole turns only:
    a turn's text is never cut, and older turns stop at the first that does not fit), and
    always those of the running turn. A turn's text is its deltas and prose and the code its
    fences' final statuses carry (``detail.code``)."""
    size: dict[str, int] = {}
    for frame in frames:
        event = frame.event
        assert isinstance(event, TurnEvent)
        size[event.turn] = size.get(event.turn, 0) + len(text_of(event)) + 100
    kept = {running} if running is not None else set()
    for turn in reversed(list(size)):  # in order of first appearance, so newest last
        if turn != running:
            budget -= size[turn]
            if budget < 0:
                break
            kept.add(turn)
    return [frame for frame in frames if isinstance(frame.event, TurnEvent) and frame.event.turn in kept]


def text_of(event: Event) -> str:
    """A turn event's text: a delta's or prose's, the code a fence's final status carries
    (``detail.code``); "" for the others."""
    if isinstance(event, TurnDelta | TurnProse):
        return event.text
    if isinstance(event, EditStatus) and isinstance(code := event.detail.get("code"), str):
        return code
    return ""


def kept_bytes(event: Event) -> int:
    """About what a frame of ``event`` takes in the memory log once its encoded text is
    dropped (what ``LiveSettings.replay_bytes`` counts)."""
    return FRAME_BYTES + len(text_of(event))
