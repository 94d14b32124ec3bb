"""The room: one per workspace, shared by every session and participant of it.

It holds the workspace's live document (the server's Yjs peer), numbers the turn events
(one ``seq`` per room; an owner's epoch sits in the high bits, so a later owner's numbers
are always greater), keeps the recent ones for replay, and sends everything through its
pipeline (document updates persisted first) and transport. Its Pilot runs the model.

A joining connection gets, in one step with nothing in between: ``hello``, the document
(sync step 1 and 2), what it missed (or a ``resync`` and the recent transcript), and only
then the live stream. So a reconnect can neither miss nor repeat an event.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from pycrdt import (
    Doc,
    Map,
    Subscription,
    Text,
    TransactionEvent,
    UndoManager,
    YMessageType,
    YSyncMessageType,
    create_sync_message,
    handle_sync_message,
)

from spark_ide.editing import workspace_files
from spark_ide.editing.document import (
    document_from_texts,
    document_texts,
    move_file,
    replace_file_if,
    set_file_text,
    sync_step2,
)
from spark_ide.editing.paths import BadPath, beside_path, clean_path, path_conflict
from spark_ide.editing.threeway import take_back

from .background import Background
from .cluster import RoomClosed, bad_binary, malformed_yjs
from .events import (
    DRIVER_ROLES,
    DocumentReplaced,
    EditStatus,
    ErrorCode,
    ErrorEvent,
    Event,
    FinishReason,
    Hello,
    Participant,
    Presence,
    Resync,
    TurnDelta,
    TurnEvent,
    TurnFinished,
    TurnProse,
    TurnStarted,
)
from .outbox import Frame, merged
from .pilot import Pilot
from .pipeline import Pipeline, Replacement
from .room_guard import RoomGuard
from .runs import RoomRuns
from .scan_process import start_scan_process
from .store import LiveSettings, RoomStore, StoredEvent
from .transport import Connection, LocalTransport, Transport
from .turns import Command, CommandKind

log = logging.getLogger(__name__)

T = TypeVar("T")

SLOW_CLOSE_STEP_S = 5.0  # a step of a room's close that takes longer is logged

EPOCH_BITS = 32
LOG_KEPT = 10_000  # turn events kept in memory for replay; older ones are read from storage
READ_TIMEOUT_S = 5.0
ASK_EVERY_S = 1.0  # a connection whose update was refused is asked for what it has at most this often
PRESENCE_EVERY_S = 0.1  # presence is announced at most this often: a reconnect storm is not n² frames
PREVIOUS_KEPT_S = 120.0  # a replaced document is kept in memory this long for what pages still send of it
# A page's edit of a replaced document is merged line by line (difflib, on the room's loop) in
# files up to this size; in a larger one it goes beside the file instead (a merge of 20,000
# equal lines took 50 s).
MERGE_MAX_CHARS = 64 * 1024


class Room:
    def __init__(
        self,
        workspace: str,
        *,
        store: RoomStore,
        settings: LiveSettings,
        transport: Transport | None = None,
        on_closed: Callable[[Room], None] = lambda room: None,
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.settings = settings
        self.transport = transport or LocalTransport()
        self.doc: Doc[Any] = Doc()
        self.epoch = 0
        self.seq = 0
        self.generation = 0  # which document (``replace_document``)
        # The document before the last replacement, while pages may still send what they
        # typed into it (merged as text): (its generation, it); and when it is let go.
        self._previous: tuple[int, Doc[Any]] | None = None
        self._forget_previous: asyncio.TimerHandle | None = None
        self._on_closed = on_closed
        self._log: deque[Frame] = deque()
        self._log_floor = 0  # replay from memory covers every event after this seq
        self._recent_turns: deque[str] = deque(maxlen=settings.transcript_turns)
        self._loop = asyncio.get_running_loop()  # rooms are made on the loop that serves them
        self._loop_thread = threading.get_ident()
        self._idle_close: asyncio.TimerHandle | None = None
        self._state_message: bytes | None = None  # _document_message
        self._doc_watch: Subscription | None = None
        self._turns_unchecked = 0  # turns finished since the document's size was last looked at
        self._compact_soon: asyncio.Handle | None = None
        self._presence_at = float("-inf")  # when presence was last announced (loop time)
        self._presence_later: asyncio.TimerHandle | None = None
        self._replayed: tuple[int, int, int, list[Frame]] | None = None  # the last catch-up (_replay_from_memory)
        self._closed = False
        self._done = asyncio.Event()  # set once closing has finished
        self._background = Background()
        self.pipeline = Pipeline(
            store=store, transport=self.transport, settings=settings,
            document_state=lambda: self.doc.get_update(), texts=self.texts,
            on_failed=self._storage_failed, on_recovered=self._storage_recovered,
        )
        self.guard = RoomGuard(
            texts=self.texts, publish=self.publish, announce=self.announce, read_mode=store.guard_mode,
            settings=settings.guard, busy=lambda: self.pilot.running_turn is not None,
        )
        self.pilot = Pilot(
            document=lambda: self.doc, texts=self.texts, publish=self.publish, announce=self.announce, store=store,
            guard=self.guard, settings=settings,
        )
        self.runs = RoomRuns(store=store, settings=settings, texts=self.texts, announce=self.announce)

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        state = await self.store.open()
        self.doc = Doc()
        self.doc.apply_update(state.document)
        workspace_files(self.doc)
        self.epoch = state.epoch
        self.generation = state.generation
        self.seq = self._log_floor = self.pipeline.sent_seq = state.epoch << EPOCH_BITS
        self._doc_watch = self.doc.observe(self._on_doc_change)
        await self.guard.read_rules()
        if self.guard.rules.active:
            start_scan_process()  # now, not under the first stream that writes code
        self.guard.changed()  # the files as they are: their diagnostics
        self.pipeline.start()
        for turn in state.unfinished:
            self._recent_turns.append(turn)
            self.pilot.announce_lost(turn)
        self.pilot.start()
        self.runs.start()

    async def close(self) -> None:
        """End the running turn, deliver and save what waits, then let go. From the first
        step on, HTTP requests change the stored document instead of this one."""
        if self._closed:
            await self._done.wait()
            return
        self._closed = True
        if self._idle_close is not None:
            self._idle_close.cancel()
        if self._presence_later is not None:
            self._presence_later.cancel()
        if self._compact_soon is not None:
            self._compact_soon.cancel()
        self._let_previous_go()
        try:
            steps = (self.store.close, self.pilot.shutdown, self.guard.close, self.runs.close, self.pipeline.close)
            for step in steps:
                began = time.monotonic()
                await step()
                if (took := time.monotonic() - began) > SLOW_CLOSE_STEP_S:
                    # The workspace's sockets wait for this close (Rooms.attach): say which step held them.
                    log.warning("room %s: closing took %.1f s in %s", self.workspace, took, step.__qualname__)
        finally:
            self._done.set()
            self._on_closed(self)

    async def wait_closed(self) -> None:
        await self._done.wait()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- events ------------------------------------------------------------------------------

    def publish(self, event: TurnEvent) -> None:
        """Number ``event``, keep it for replay and send it to everyone, in order."""
        self.seq += 1
        frame = Frame(event, self.seq)
        self._log.append(frame)
        if len(self._log) > LOG_KEPT:
            self._log_floor = self._log.popleft().seq
        if isinstance(event, TurnStarted):
            self._recent_turns.append(event.turn)
        elif isinstance(event, TurnFinished):
            self._turns_unchecked += 1
            if self._turns_unchecked >= self.settings.replace_check_turns and self._compact_soon is None:
                self._compact_soon = self._loop.call_soon(self._compact_if_worth_it)
        self.pipeline.put_frame(frame)

    def announce(self, event: Event) -> None:
        """An ephemeral event for everyone (presence, a storage error): current seq, not kept."""
        self.pipeline.put_frame(Frame(event, self.seq))

    def tell(self, conn: Connection, event: Event) -> None:
        """An ephemeral answer to one connection."""
        conn.outbox.put_frame(Frame(event, self.seq))

    def command(self, conn: Connection, kind: CommandKind, **fields: Any) -> None:
        """A participant's command for the Pilot (role and fields checked by the consumer);
        what goes wrong with it is told to that connection."""
        self.pilot.submit(Command(
            kind=kind, session=conn.session, user_id=conn.user_id, author=conn.username,
            reply=lambda event: self.tell(conn, event), **fields,
        ))

    def _compact_if_worth_it(self) -> None:
        """Between turns, every ``replace_check_turns`` turns: replace the document if the
        deleted items it keeps make it ``replace_ratio`` times its files and more (settings)."""
        self._compact_soon = None
        if self._closed or self.pilot.running_turn is not None:
            return  # the next turn's end looks again
        self._turns_unchecked = 0
        state = self.doc.get_update()
        text = sum(len(body.encode()) for body in self.texts().values())
        if len(state) > self.settings.replace_ratio * text + self.settings.replace_slack_bytes:
            self.replace_document()

    # -- replacing the document --------------------------------------------------------------

    def replace_document(self) -> None:
        """Replace the document by a new one rebuilt from its files' text, once everything
        before is saved and sent (the pipeline's step): docs/pairing.md, "Replacing the document".

        Every turn rewrites lines in place, and Yjs keeps each replaced line as a deleted item
        between live ones, which it can neither merge nor free: a room open for thousands of
        turns held them all, every join was sent them and every insert walked them. A new
        document (new item ids) holds the text alone. Pages adopt it (``document.replaced``);
        what they sent of the old one meanwhile is merged into the new one as text
        (``_receive_stale``). The kept turns revert as text from then on (``TurnEditor.detach``)."""
        self.pipeline.put_replace(self._prepare_replacement, self._take_replacement)

    def _prepare_replacement(self) -> Replacement | None:
        if self._closed or self._turn_began():
            return None
        texts = self.texts()
        fresh = document_from_texts(texts, "replace")
        return Replacement(
            generation=self.generation + 1, state=fresh.get_update(), previous=self.doc.get_update(),
            doc=fresh, texts=texts,
        )

    def _take_replacement(self, replacement: Replacement) -> bool:
        """The new document, saved, becomes the room's (False: a turn began meanwhile). What
        changed in the old one while it was saved is carried into it as text."""
        if self._closed or self._turn_began():
            return False
        old, fresh = self.doc, replacement.doc
        since = document_texts(old)
        self.pilot.document_replaced(fresh)
        if self._doc_watch is not None:
            old.unobserve(self._doc_watch)
        # The old document goes once nothing holds it: pycrdt's observer holds the document
        # it observes (a cycle through Rust that Python's collector cannot see).
        self.doc = fresh
        self._doc_watch = fresh.observe(self._on_doc_change)
        self._state_message = None
        self.generation = replacement.generation
        self._keep_previous(replacement.generation - 1, old)
        for path in sorted(set(since) | set(replacement.texts)):
            if since.get(path) != replacement.texts.get(path):
                set_file_text(fresh, path, since.get(path), "merge")
        log.info("replaced the document of workspace %s (generation %d): %d -> %d bytes", self.workspace,
                 self.generation, len(replacement.previous), len(replacement.state))
        return True

    def _turn_began(self) -> bool:
        """A turn writes into the document: no replacement now; the turn's end looks again."""
        if self.pilot.running_turn is None:
            return False
        self._turns_unchecked = self.settings.replace_check_turns
        return True

    def _keep_previous(self, generation: int, doc: Doc[Any]) -> None:
        self._let_previous_go()
        self._previous = (generation, doc)
        self._forget_previous = self._loop.call_later(PREVIOUS_KEPT_S, self._let_previous_go)

    def _let_previous_go(self) -> None:
        if self._forget_previous is not None:
            self._forget_previous.cancel()
        self._previous = self._forget_previous = None

    async def _previous_for(self, generation: int) -> Doc[Any] | None:
        """The document of ``generation`` if it is the one before the room's: in memory for a
        while after the replacement, else from storage (None: older, or not kept)."""
        if self._previous is not None and self._previous[0] == generation:
            return self._previous[1]
        if generation != self.generation - 1:
            return None
        try:
            state = await self.store.previous_document(generation)
        except Exception:
            log.warning("could not read the replaced document of workspace %s", self.workspace, exc_info=True)
            return None
        if state is None or generation != self.generation - 1:
            return None
        doc: Doc[Any] = Doc()
        doc.apply_update(state)
        self._keep_previous(generation, doc)
        return doc

    def adopt(self, conn: Connection, generation: int) -> None:
        """``conn``'s page holds the room's document now (``document.adopted``): its binary
        frames from here on are of it."""
        if generation == self.generation:
            conn.generation = generation

    def _receive_stale(self, conn: Connection, message: bytes) -> ErrorEvent | None:
        """A frame of a page that still holds a replaced document: what it typed there is
        merged into the room's document as text (a line-based three-way merge; where it
        clashes with a change made since, the page's version of the file goes beside it).
        A step 1 of the old document needs no answer; its cursors point into the old one."""
        previous = self._previous[1] if self._previous is not None and self._previous[0] == conn.generation else None
        refused = malformed_yjs(message, conn.username, state=None if previous is None else previous.get_state)
        if refused is not None:
            return refused
        if message[0] == YMessageType.AWARENESS or message[1] == YSyncMessageType.SYNC_STEP1:
            return None
        if conn.role not in DRIVER_ROLES:
            return None  # a viewer's step 2 of the old document: a viewer writes nothing
        if previous is None:
            return _unmerged()
        limit = self.settings.limits.max_document_bytes
        if limit is not None and _text_bytes(workspace_files(previous)) + len(message) > limit:
            return ErrorEvent(ErrorCode.TOO_LARGE, f"a workspace's files may hold {limit} bytes together")
        before = document_texts(previous)
        try:
            handle_sync_message(message[1:], previous)
        except (ValueError, RuntimeError) as exc:
            return bad_binary(conn.username, str(exc))
        after = document_texts(previous)
        return self._merge_texts(before, after)

    def _merge_texts(self, base: dict[str, str], mine: dict[str, str]) -> ErrorEvent | None:
        """Carry the change ``base`` -> ``mine`` (a page's edits of a replaced document) into
        the room's document, under the same rules as a person's update."""
        files = workspace_files(self.doc)
        existing = set(files.keys())
        theirs = self.texts()
        changes: dict[str, str | None] = {}
        for path in sorted(set(base) | set(mine)):
            was, now, current = base.get(path), mine.get(path), theirs.get(path)
            if was == now or now == current:
                continue
            if current == was:
                changes[path] = now
            elif now is None:
                continue  # deleted there, changed here since: the change stays
            elif (
                was is not None and current is not None and max(len(was), len(now), len(current)) <= MERGE_MAX_CHARS
                and (merged := take_back(now, was, current)) is not None
            ):
                changes[path] = merged
            else:
                changes[beside_path(path, "mine")] = now  # both changed the same lines: both kept
        if not changes:
            return None
        limit = self.settings.limits.max_document_bytes
        grown = _text_bytes(files) + sum(len((text or "").encode()) - len(theirs.get(path, "").encode())
                                         for path, text in changes.items())
        if limit is not None and grown > limit:
            return ErrorEvent(ErrorCode.TOO_LARGE, f"a workspace's files may hold {limit} bytes together; "
                              f"the edits made before the document was replaced would make them {grown}")
        with self.doc.transaction(origin="merge"):
            for path, text in changes.items():
                set_file_text(self.doc, path, text, "merge")
        return self._enforce_file_rules(files, existing)

    def _document_message(self) -> bytes:
        """The whole document as a sync step 2, encoded once for every join until it changes
        (the pages of a reconnect storm come faster than a turn changes it)."""
        if self._state_message is None:
            self._state_message = sync_step2(self.doc.get_update())
        return self._state_message

    def _on_doc_change(self, event: TransactionEvent) -> None:
        self._state_message = None
        update = bytes(event.update)
        self._grown += len(update)
        self.pipeline.put_update(update)
        self.guard.changed()

    # -- participants ------------------------------------------------------------------------

    async def join(self, conn: Connection, *, after: int | None) -> None:
        """Bring ``conn`` up to date, then into the live stream (see the module docstring)."""
        stored = await self._stored_for(after)
        resync = after is not None and self._catch_up(after, stored) is None
        if resync:
            stored = await self._recent_stored()
        policy = await self.pilot.current_policy()  # a course's AI rules (None outside one)
        held = conn.generation  # the page's document, when it holds one (``?generation=``)
        previous = None if held is None or held == self.generation else await self._previous_for(held)
        if self._closed:
            raise RoomClosed(self.workspace)
        if self._idle_close is not None:
            self._idle_close.cancel()
            self._idle_close = None
        # From here to the end nothing awaits: no event can slip between replay and live.
        # The cut is what the pipeline has sent: events published but still in the pipeline
        # (behind a document update being saved) reach this connection from the transport.
        sent = self.pipeline.sent_seq
        conn.outbox.put_frame(Frame(Hello(
            session=conn.session, workspace=self.workspace, role=conn.role, user=conn.username,
            turn=self.pilot.running_turn, epoch=self.epoch, generation=self.generation,
        ), sent))
        if policy is not None:
            conn.outbox.put_frame(Frame(policy, sent))
        for diagnostics in self.guard.diagnostics():
            conn.outbox.put_frame(Frame(diagnostics, sent))
        if held is None or held == self.generation:
            conn.generation = self.generation
            conn.outbox.put_raw(create_sync_message(self.doc))
            conn.outbox.put_raw(self._document_message())
        else:
            # The page holds a replaced document: asked what it has of that one (what it typed
            # offline, merged as text), then given the room's to adopt.
            if previous is not None and self._previous is not None and self._previous[1] is previous:
                conn.outbox.put_raw(create_sync_message(previous))
            else:  # what it typed offline, if anything, cannot be merged: it is told so
                conn.outbox.put_frame(Frame(_unmerged(), sent))
            state = base64.b64encode(self.doc.get_update()).decode()
            conn.outbox.put_frame(Frame(DocumentReplaced(generation=self.generation, state=state), sent))
        frames = None if resync else self._catch_up(after, stored)
        if frames is None:
            self._resync(conn, stored if resync else None, "the events since you left are no longer kept")
        else:
            for frame in frames:
                conn.outbox.put_frame(frame)
        if (run := self.runs.started) is not None:
            conn.outbox.put_frame(Frame(run, sent))  # a run is going on: its panel, its stdin
        conn.joined_at = sent
        self.transport.add(conn)
        self._presence()

    async def resume(self, conn: Connection, after: int) -> None:
        """A client that joined without ``?after`` asks for what it missed before joining:
        the events up to the moment it joined (it has the live ones after that)."""
        stored = await self._stored_for(after)
        frames = self._catch_up(after, stored, upto=conn.joined_at)
        if frames is None:
            recent = await self._recent_stored()
            self._resync(conn, recent, "the events since you left are no longer kept")
            return
        for frame in frames:
            if frame.seq <= conn.joined_at:
                conn.outbox.put_frame(frame)

    def _resync(self, conn: Connection, stored: list[StoredEvent] | None, reason: str) -> None:
        """``conn`` starts over: it drops its transcript and gets the recent one again."""
        self.tell(conn, Resync(reason=reason))
        for frame in self._transcript(stored):
            conn.outbox.put_frame(frame)

    def leave(self, conn: Connection) -> None:
        self.transport.remove(conn)
        if self._closed:
            return
        self._presence()
        if not self.transport.members():
            self._idle_close = self._loop.call_later(self.settings.idle_close_s, self._close_if_idle)

    def members(self) -> list[Connection]:
        return self.transport.members()

    # -- code runs (live.runs) ------------------------------------------------------------

    def run(self, conn: Connection, *, path: str, tests: bool, confirm: bool = False) -> None:
        """Run ``path`` (or the tests) in the sandbox; with high-severity watchdog findings in
        the files, only once the person confirms (``confirm``: they were shown the findings)."""
        if not confirm and (high := self.guard.high_findings()):
            listed = "; ".join(f"{f.path} {f.message}" for f in high[:5])
            more = f" (and {len(high) - 5} more)" if len(high) > 5 else ""
            self.tell(conn, ErrorEvent(
                ErrorCode.RUN_NEEDS_CONFIRMATION,
                f"the watchdog found {len(high)} high-severity problem{'s' if len(high) > 1 else ''} in the code: "
                f"{listed}{more}. Run it anyway?",
                ref={"path": path, "tests": tests, "findings": [f.as_dict() for f in high]},
            ))
            return
        refused = self.runs.run(conn, path=path, tests=tests)
        if refused is not None:
            self.tell(conn, refused)

    def run_input(self, conn: Connection, run: str, text: str) -> None:
        refused = self.runs.send_input(run, text)
        if refused is not None:
            self.tell(conn, refused)

    def run_stop(self, conn: Connection, run: str) -> None:
        refused = self.runs.stop(run)
        if refused is not None:
            self.tell(conn, refused)

    def expel(self, user_id: int) -> None:
        """Hang up on every connection of ``user_id`` (removed from the workspace); callable
        from any thread."""
        self._loop.call_soon_threadsafe(self.expel_now, user_id)

    def rejoin(self) -> None:
        """Everyone reconnects (their roles changed: a course was archived): callable from any
        thread. The room closes after moving its connections, so that the replicas of other
        processes move theirs too; the first to reconnect opens it again."""
        self._loop.call_soon_threadsafe(self.rejoin_now)

    def rejoin_now(self) -> None:
        if self._closed:
            return
        for conn in self.transport.members():
            conn.move()
        self._background.spawn(self.close())

    def expel_now(self, user_id: int) -> None:
        for conn in self.transport.members():
            if conn.user_id == user_id:
                self.tell(conn, ErrorEvent(ErrorCode.FORBIDDEN, "you were removed from this workspace"))
                self.leave(conn)
                conn.hang_up()

    def _close_if_idle(self) -> None:
        self._idle_close = None
        if not self.transport.members() and not self.pilot.busy:
            self._background.spawn(self.close())

    def _presence(self) -> None:
        """Announce who is here: at once if the last announcement is ``PRESENCE_EVERY_S`` old,
        else once when it is, with whoever is here then. Every join and leave asks; in a
        reconnect storm each one announcing to everyone would be a frame per pair of sockets."""
        if self._presence_later is not None:
            return  # one is due: it will list whoever is here by then
        wait = self._presence_at + PRESENCE_EVERY_S - self._loop.time()
        if wait > 0:
            self._presence_later = self._loop.call_later(wait, self._announce_presence)
        else:
            self._announce_presence()

    def _announce_presence(self) -> None:
        self._presence_later = None
        if self._closed:
            return
        self._presence_at = self._loop.time()
        members = self.transport.members()
        keys = [(conn.user_id, conn.username, conn.role) for conn in members]
        sockets = dict.fromkeys(keys, 0)  # a person's tabs count once, in the order they came
        for key in keys:
            sockets[key] += 1
        people = tuple(Participant.of(*key, connections=count) for key, count in sockets.items())
        self.announce(Presence(participants=people))
        self.settings.meter.sockets(self.workspace, len(members))

    # -- replay ------------------------------------------------------------------------------

    async def _stored_for(self, after: int | None) -> list[StoredEvent]:
        """What must come from storage to bring a client from ``after`` up to the memory log."""
        if after is None:
            return await self._recent_stored()
        if after >= self._log_floor:
            return []
        return await self.store.events_after(after, limit=self.settings.replay_limit + 1)

    async def _recent_stored(self) -> list[StoredEvent]:
        return await self.store.recent_events(turns=self.settings.transcript_turns, deltas_of=self.pilot.running_turn)

    def _catch_up(self, after: int | None, stored: list[StoredEvent], upto: int | None = None) -> list[Frame] | None:
        """The frames a client that holds everything up to ``after`` lacks, up to ``upto`` (by
        default what the pipeline has sent); None: resync."""
        if after is None:
            return self._transcript(stored)
        if after > self.seq:
            return None  # numbers we never gave out: another server's, or a bad client
        older = [entry for entry in stored if entry.seq <= self._log_floor]
        if any(entry.first_seq <= after for entry in older):
            return None  # it holds part of a merged run: it cannot be cut where it stopped
        sent = self.pipeline.sent_seq if upto is None else min(upto, self.pipeline.sent_seq)
        events, recent = self._replay_from_memory(after, sent)
        if len(older) + events > self.settings.replay_limit:
            return None
        return [Frame(entry.event, entry.seq) for entry in older] + recent

    def _replay_from_memory(self, after: int, sent: int) -> tuple[int, list[Frame]]:
        """How many kept events follow ``after`` up to ``sent``, and those frames merged as a
        busy outbox would merge them (``live.outbox.merged``). The pages of a room that
        reconnect together (a server restart, a network blip) hold the same last seq: the
        last answer is kept for them."""
        kept = self._replayed
        if kept is not None and kept[0] == after and kept[1] == sent:
            return kept[2], kept[3]
        tail: list[Frame] = []
        for frame in reversed(self._log):  # newest first: a reconnect lacks only the last few
            if frame.seq <= after:
                break
            if frame.seq <= sent:
                tail.append(frame)
        tail.reverse()
        frames = merged(tail)
        self._replayed = (after, sent, len(tail), frames)
        return len(tail), frames

    def _transcript(self, stored: list[StoredEvent] | None) -> list[Frame]:
        """A new page's transcript: the recent turns' events, without the raw deltas of
        finished turns (the prose and block statuses tell the story; the running turn's
        deltas are kept so its text has no gap), newest turns first within a size budget."""
        frames = [Frame(entry.event, entry.seq) for entry in stored or () if entry.seq <= self._log_floor]
        turns = {frame.event.turn for frame in frames if isinstance(frame.event, TurnStarted)}
        turns.update(self._recent_turns)
        sent = self.pipeline.sent_seq  # what is still in the pipeline comes from the transport
        frames += [
            frame for frame in self._log
            if frame.seq <= sent and isinstance(frame.event, TurnEvent) and frame.event.turn in turns
        ]
        running = self.pilot.running_turn
        frames = [frame for frame in frames if not isinstance(frame.event, TurnDelta) or frame.event.turn == running]
        return within_budget(frames, running, self.settings.transcript_bytes)

    # -- the document ------------------------------------------------------------------------

    def texts(self) -> dict[str, str]:
        return document_texts(self.doc)

    def receive_yjs(self, conn: Connection, message: bytes) -> ErrorEvent | None:
        """A binary frame from ``conn``; returns the error to answer when it is refused."""
        if conn.generation is not None and conn.generation != self.generation:
            return self._receive_stale(conn, message)
        refused = malformed_yjs(message, conn.username, state=self.doc.get_state)
        if refused is not None:
            self._ask_for_missing(conn, message)
            return refused
        if message[0] == YMessageType.AWARENESS:
            self.transport.raw(message, skip=conn)
            return None
        writes = message[1] in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE)
        if writes and conn.role not in DRIVER_ROLES:
            if message[2:] in (b"\x02\x00\x00", b"\x00"):
                return None  # a viewer's step 2 with nothing new: nothing to refuse
            return ErrorEvent(ErrorCode.FORBIDDEN, f"a {conn.role} cannot edit the document")
        files = workspace_files(self.doc)
        before = set(files.keys()) if writes else set()
        try:
            if writes:
                reply, too_large = None, self._apply_within_size(message[1:], files)
            else:
                reply, too_large = handle_sync_message(message[1:], self.doc), None
        except (ValueError, RuntimeError) as exc:  # pycrdt could not decode or integrate it: the client's fault
            self._ask_for_missing(conn, message)
            return bad_binary(conn.username, str(exc))
        except Exception:  # anything else is a bug (ours or pycrdt's): a traceback, and the room goes on
            log.exception("a Yjs message from %s failed", conn.username)
            return bad_binary(conn.username, "failed while applying it")
        if too_large is not None:
            return too_large
        if reply is not None:
            conn.outbox.put_raw(reply)  # pycrdt's reply already starts with the SYNC byte
        return self._enforce_file_rules(files, before) if writes else None

    def _ask_for_missing(self, conn: Connection, message: bytes) -> None:
        """A driver's update was refused (it skipped one the room never got, say): send it the
        room's state vector (sync step 1), so its page answers with everything the room lacks
        and the two converge again. At most once a second per connection: a hostile socket's
        garbage is not answered with a stream of them."""
        writes = len(message) > 1 and message[0] == YMessageType.SYNC and message[1] in (
            YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE,
        )
        now = time.monotonic()
        if writes and conn.role in DRIVER_ROLES and now - conn.asked_at >= ASK_EVERY_S:
            conn.asked_at = now
            conn.outbox.put_raw(create_sync_message(self.doc))

    # The document's size (UTF-8 bytes of all files) when last measured, and an upper bound of
    # what it grew by since: the length of every update the document made (its text is in them).
    _measured: int | None = None
    _grown = 0  # counted by _on_doc_change

    def _apply_within_size(self, message: bytes, files: Map[Text]) -> ErrorEvent | None:
        """Apply a person's update (sync step 2 or update, without the SYNC byte) unless it grows
        the files past ``limits.max_document_bytes`` together: such an update is undone at once
        in a transaction of its own, which reaches every peer, so all converge on the document
        as it was (the sender's copy too), as with ``_enforce_file_rules``.

        Measuring (a length per file) on every keystroke would cost ~2.6 µs a file, so it is
        measured only near the limit: an update adds at most its own length of text, and
        since the last measurement the files grew by at most the length of the updates the
        document made (the model's and HTTP's too; counted by ``_on_doc_change``). Only
        an update that could cross the limit is applied under an undo manager."""
        limit = self.settings.limits.max_document_bytes
        if limit is None:
            handle_sync_message(message, self.doc)
            return None
        if self._measured is None or self._measured + self._grown + len(message) > limit:
            self._measured, self._grown = _text_bytes(files), 0
        if self._measured + self._grown + len(message) <= limit:
            handle_sync_message(message, self.doc)
            return None
        undo = UndoManager(scopes=[files], capture_timeout_millis=0)
        undo.include_origin(SIZE_CHECK)
        with self.doc.transaction(origin=SIZE_CHECK):
            handle_sync_message(message, self.doc)
        grown = _text_bytes(files)
        if grown > limit:
            undo.undo()  # a transaction of the undo manager's own: the room sends it like any change
        self._measured, self._grown = _text_bytes(files), 0
        if grown <= limit:
            return None
        return ErrorEvent(
            ErrorCode.TOO_LARGE,
            f"a workspace's files may hold {limit} bytes together; this edit would make them {grown}: it was undone",
        )

    def _enforce_file_rules(self, files: Map[Text], before: set[str]) -> ErrorEvent | None:
        """A collaborator's files obey the rules HTTP and the model obey: a new file with a bad
        path, or past the file limit, is removed again (every peer converges on that)."""
        added = set(files.keys()) - before
        if not added:
            return None
        refused: list[tuple[str, ErrorEvent]] = []
        limit = self.settings.limits.max_files
        room_for = None if limit is None else max(limit - len(before), 0)
        for path in sorted(added):
            try:
                ok = clean_path(path, max_length=self.settings.limits.max_path_length) == path
            except BadPath as exc:
                refused.append((path, ErrorEvent(ErrorCode.BAD_PATH, f"bad path {path[:80]!r}: {exc}", ref=path)))
                continue
            if not ok:
                refused.append((path, ErrorEvent(ErrorCode.BAD_PATH, f"{path[:80]!r} is not in normal form (NFC)")))
            elif (conflict := path_conflict(path, before | (added - {path}))) is not None:
                refused.append((path, ErrorEvent(ErrorCode.PATH_CONFLICT, conflict, ref=path)))
            elif room_for is not None and room_for <= 0:
                message = f"a workspace holds at most {limit} files; {path[:80]!r} was not kept"
                refused.append((path, ErrorEvent(ErrorCode.TOO_MANY_FILES, message, ref=path)))
            elif room_for is not None:
                room_for -= 1
        if not refused:
            return None
        with self.doc.transaction(origin="rules"):
            for path, _ in refused:
                del files[path]
        return refused[0][1]

    # -- storage failures --------------------------------------------------------------------

    def _storage_failed(self, exc: Exception) -> None:
        self.announce(ErrorEvent(
            ErrorCode.STORAGE_FAILED,
            "Changes cannot be saved right now; the model was stopped. Your edits are kept "
            "and saved as soon as storage answers again.",
        ))
        self.pilot.halt(FinishReason.STORAGE_FAILED, f"the document could not be saved: {exc}")

    def _storage_recovered(self) -> None:
        self.pilot.resume()
        self._background.spawn(self._resync_everyone("storage answered again; the document was saved"))

    async def _resync_everyone(self, reason: str) -> None:
        """Every participant starts over from the stored state: the transcript from the
        event log, the document by a new sync (each side sends what the other lacks)."""
        try:
            stored = await self._recent_stored()
        except Exception:
            log.warning("could not read the stored transcript for a resync", exc_info=True)
            stored = None
        for conn in self.transport.members():
            self._resync(conn, stored, reason)
            conn.outbox.put_raw(create_sync_message(self.doc))

    # -- HTTP requests of other threads reach the document through these ---------------------

    def apply_file(self, path: str, text: str | None) -> None:
        """Apply (path, text, or None to delete) on the room's loop; returns at once."""
        self._loop.call_soon_threadsafe(self.set_file, path, text)

    def set_file(self, path: str, text: str | None) -> None:
        """A file changed over HTTP (on the room's loop)."""
        set_file_text(self.doc, path, text, "http")

    def read_files(self) -> dict[str, str]:
        """Every file's current text, read on the room's loop (the document is not shared)."""
        return self._on_loop(self.texts)

    def replace_file_if(self, path: str, text: str | None, expected: str | None) -> bool:
        """``editing.document.replace_file_if`` on the room's loop: False when ``path`` no longer
        holds ``expected`` (someone typed since it was read)."""
        return self._on_loop(lambda: self.set_file_if(path, text, expected))

    def set_file_if(self, path: str, text: str | None, expected: str | None) -> bool:
        """A conditional change over HTTP (on the room's loop)."""
        return replace_file_if(self.doc, path, text, expected, "http")

    def rename_file(self, path: str, new_path: str) -> str | None:
        """``editing.document.move_file`` on the room's loop: the live text moves, as it is."""
        return self._on_loop(lambda: self.move_file(path, new_path))

    def move_file(self, path: str, new_path: str) -> str | None:
        """A rename over HTTP (on the room's loop)."""
        return move_file(self.doc, path, new_path, "http")

    async def store_events(self) -> None:
        """Every turn event sent so far, stored before this returns (from any loop: a replay's
        request waits for it without holding a thread)."""
        if asyncio.get_running_loop() is self._loop:
            await self.pipeline.store_log()
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.pipeline.store_log(), self._loop))

    def _on_loop(self, work: Callable[[], T]) -> T:
        """``work()`` run on the room's loop, from any thread; waits for its result."""
        if threading.get_ident() == self._loop_thread:
            return work()

        async def run() -> T:
            return work()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=READ_TIMEOUT_S)


SIZE_CHECK = "size-check"  # the origin of a person's update applied where it may cross the size limit


def _unmerged() -> ErrorEvent:
    return ErrorEvent(ErrorCode.DOCUMENT_REPLACED, "the document was replaced more than once since this page "
                      "loaded it: anything typed into the old copy while disconnected could not be merged")


def _text_bytes(files: Map[Text]) -> int:
    """The UTF-8 size of every file together (pycrdt counts a text's length in UTF-8 bytes)."""
    return sum(len(text) for text in files.values())


def within_budget(frames: list[Frame], running: str | None, budget: int) -> list[Frame]:
    """The frames of the newest turns whose text fits ``budget`` characters (whole turns only:
    a turn's text is never cut, and older turns stop at the first that does not fit), and
    always those of the running turn. A turn's text is its deltas and prose and the code its
    fences' final statuses carry (``detail.code``)."""
    size: dict[str, int] = {}
    for frame in frames:
        event = frame.event
        assert isinstance(event, TurnEvent)
        if isinstance(event, TurnDelta | TurnProse):
            text = event.text
        elif isinstance(event, EditStatus) and isinstance(code := event.detail.get("code"), str):
            text = code
        else:
            text = ""
        size[event.turn] = size.get(event.turn, 0) + len(text) + 100
    kept = {running} if running is not None else set()
    for turn in reversed(list(size)):  # in order of first appearance, so newest last
        if turn != running:
            budget -= size[turn]
            if budget < 0:
                break
            kept.add(turn)
    return [frame for frame in frames if isinstance(frame.event, TurnEvent) and frame.event.turn in kept]

