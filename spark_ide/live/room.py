"""The room: one per workspace, shared by every session and participant of it.

It holds the workspace's live document (the server's Yjs peer: ``doc_rules``), numbers the
turn events (one ``seq`` per room; an owner's epoch sits in the high bits, so a later owner's
numbers are always greater), keeps the recent ones for replay (``replay``), and sends
everything through its pipeline (document updates persisted first) and transport. Its Pilot
runs the model. Joins and presence are ``presence``'s; replacing the document is
``replacement``'s; other threads reach its files through ``room_files``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from pycrdt import Doc, create_sync_message

from .background import Background
from .doc_rules import LiveDocument, YjsIntake
from .edit_steer import EDIT_STEER_KINDS, EditSteering
from .events import ErrorCode, ErrorEvent, Event, FinishReason, TurnEvent, TurnFinished, WorkspaceSettings
from .model_runs import ModelRuns
from .outbox import Frame
from .pilot import Pilot
from .pipeline import Pipeline
from .presence import Arrivals, PresenceBoard
from .reopen import reopened
from .replacement import Replacements
from .replay import ReplayLog
from .room_files import RoomFiles
from .room_guard import RoomGuard
from .runs import RoomRuns, confirmation_needed
from .scan_process import start_scan_process
from .store import LiveSettings, RoomStore
from .transport import Connection, LocalTransport, RoomClosed, Transport
from .turns import Command, CommandKind

log = logging.getLogger(__name__)

SLOW_CLOSE_STEP_S = 5.0  # a step of a room's close that takes longer is logged

EPOCH_BITS = 32


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
        self.document = LiveDocument(self._on_doc_change)
        self.epoch = 0
        self._on_closed = on_closed
        self._loop = asyncio.get_running_loop()  # rooms are made on the loop that serves them
        self._idle_close: asyncio.TimerHandle | None = None
        self._turns_unchecked = 0  # turns finished since the document's size was last looked at
        self._compact_soon: asyncio.Handle | None = None
        self._closed = False
        self._done = asyncio.Event()  # set once closing has finished
        self._background = Background()
        self.pipeline = Pipeline(
            store=store, transport=self.transport, settings=settings,
            document_state=lambda: self.doc.get_update(), texts=self.texts,
            on_failed=self._storage_failed, on_recovered=self._storage_recovered,
            moved_back=lambda frame, past: self.log.moved_back(frame, past),
            http_changes=lambda: self.files.http_changes(),
        )
        self.guard = RoomGuard(
            texts=self.texts, publish=self.publish, announce=self.announce, read_mode=store.guard_mode,
            settings=settings.guard, busy=lambda: self.pilot.running_turn is not None,
        )
        self.runs = RoomRuns(
            store=store, settings=settings, texts=self.texts, announce=self.announce, publish=self.publish,
        )
        model_runs = ModelRuns(
            self.runs, texts=self.texts, high_findings=self.guard.high_findings,
            budget=settings.run_output_to_model,
        )
        self.pilot = Pilot(
            document=lambda: self.doc, texts=self.texts, publish=self.publish, announce=self.announce, store=store,
            guard=self.guard, settings=settings, runs=model_runs,
        )
        self.steering = EditSteering(  # steering by editing: every person's update passes by it
            running=lambda: self.pilot.running, submit=self.pilot.submit, announce=self.announce, tell=self.tell,
            document=lambda: self.doc, idle_ms=settings.edit_steer_idle_ms,
            plain=settings.prompt_style.steer_as_request,
        )
        self.files = RoomFiles(self.document, store_log=self.pipeline.store_log)  # for other threads
        self.log = ReplayLog(
            store=store, settings=settings, sent=lambda: self.pipeline.sent_seq,
            stored=lambda: self.pipeline.stored_seq, running=lambda: self.running_turn,
        )
        self.intake = YjsIntake(self.document, limits=settings.limits, relay=self._relay_awareness)
        self.replacements = Replacements(
            self.document, workspace=workspace, store=store, limits=settings.limits,
            may_replace=lambda: not self._closed and not self._turn_began(), replaced=self.pilot.document_replaced,
        )
        self.presence = PresenceBoard(
            self.transport, announce=self.announce, measured=lambda count: settings.meter.sockets(workspace, count),
        )
        self.arrivals = Arrivals(
            self, document=self.document, log=self.log, replacements=self.replacements, transport=self.transport,
            presence=self.presence, sent=lambda: self.pipeline.sent_seq,
        )

    @property
    def doc(self) -> Doc[Any]:
        return self.document.doc

    @doc.setter
    def doc(self, doc: Doc[Any]) -> None:  # the Pilot's ``Stage`` declares it a plain attribute
        raise AttributeError("the room's document changes only by a replacement (Room.replace_document)")

    @property
    def generation(self) -> int:
        """Which document the room holds (``replace_document`` makes the next one)."""
        return self.document.generation

    @property
    def seq(self) -> int:
        return self.log.seq

    @property
    def running_turn(self) -> str | None:
        return self.pilot.running_turn

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        state = await self.store.open()
        self.document.load(state.document, state.generation)
        self.epoch = state.epoch
        self.log.start(state.epoch << EPOCH_BITS, state.unfinished)
        self.pipeline.sent_seq = self.log.seq
        await self.guard.read_rules()
        if self.guard.rules.active:
            start_scan_process()  # now, not under the first stream that writes code
        self.guard.changed()  # the files as they are: their diagnostics
        self.pipeline.start()
        for turn in state.unfinished:
            self.pilot.announce_lost(turn)
        conversation = await reopened(self.store, self.settings.prompt_style)
        if conversation is not None:  # the model carries on the conversation the room had
            self.pilot.checkpoints.set_conversation(conversation)
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
        self.presence.stop()
        if self._compact_soon is not None:
            self._compact_soon.cancel()
        self.replacements.let_go()
        self.steering.close()
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
        frame = Frame(event, self.log.seq + 1)
        self.log.keep(frame)
        if isinstance(event, TurnFinished):
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
        if kind in EDIT_STEER_KINDS:
            self.steering.command(conn, kind, **fields)
            return
        self.pilot.submit(Command(
            kind=kind, session=conn.session, user_id=conn.user_id, author=conn.username,
            reply=lambda event: self.tell(conn, event), **fields,
        ))

    # -- the document ------------------------------------------------------------------------

    def texts(self) -> dict[str, str]:
        return self.document.texts()

    def receive_yjs(self, conn: Connection, message: bytes) -> ErrorEvent | None:
        """A binary frame from ``conn``; returns the error to answer when it is refused."""
        if conn.generation is not None and conn.generation != self.generation:
            return self.replacements.receive_stale(conn, message)
        return self.steering.receiving(conn, message, self.intake.receive)

    def adopt(self, conn: Connection, generation: int) -> None:
        """``conn``'s page holds the room's document now (``document.adopted``): its binary
        frames from here on are of it."""
        if generation == self.generation:
            conn.generation = generation

    def replace_document(self) -> None:
        """Replace the document by a new one rebuilt from its files' text, once everything
        before is saved and sent (the pipeline's step): ``live.replacement``."""
        self.pipeline.put_replace(self.replacements.prepare, self.replacements.take)

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

    def _turn_began(self) -> bool:
        """A turn writes into the document: no replacement now; the turn's end looks again."""
        if self.pilot.running_turn is None:
            return False
        self._turns_unchecked = self.settings.replace_check_turns
        return True

    def _on_doc_change(self, update: bytes) -> None:
        self.intake.grew(update)
        self.pipeline.put_update(update)
        self.guard.changed()

    def _relay_awareness(self, message: bytes, sender: Connection) -> None:
        self.transport.raw(message, skip=sender)

    # -- participants (``live.presence``) ----------------------------------------------------

    async def join(self, conn: Connection, *, after: int | None) -> None:
        """Bring ``conn`` up to date, then into the live stream (``Arrivals.join``)."""
        await self.arrivals.join(conn, after=after)

    async def resume(self, conn: Connection, after: int) -> None:
        await self.arrivals.resume(conn, after)

    def leave(self, conn: Connection) -> None:
        self.transport.remove(conn)
        if self._closed:
            return
        self.presence.changed()
        if not self.transport.members():
            self._idle_close = self._loop.call_later(self.settings.idle_close_s, self._close_if_idle)

    def members(self) -> list[Connection]:
        return self.transport.members()

    # What a join asks of the room (``presence.Host``).

    async def current_policy(self) -> Event | None:
        return await self.pilot.current_policy()  # a course's AI rules (None outside one)

    def standing(self) -> list[Event]:
        chosen = self.pilot.models.chosen()  # the model the next turn runs on (docs/models.md)
        return ([] if chosen is None else [chosen]) + list(self.guard.diagnostics())

    def going_on(self) -> list[Event]:
        queue = self.pilot.queue_state()  # the prompts waiting (``live.prompt_queue``)
        return ([] if (run := self.runs.started) is None else [run]) + ([] if queue is None else [queue])

    def opening(self) -> None:
        if self._closed:
            raise RoomClosed(self.workspace)
        if self._idle_close is not None:
            self._idle_close.cancel()
            self._idle_close = None

    def _close_if_idle(self) -> None:
        self._idle_close = None
        if not self.transport.members() and not self.pilot.busy:
            self._background.spawn(self.close())

    def expel(self, user_id: int) -> None:
        """Hang up on every connection of ``user_id`` (removed from the workspace); callable
        from any thread."""
        self._loop.call_soon_threadsafe(self.expel_now, user_id)

    def expel_now(self, user_id: int) -> None:
        for conn in self.transport.members():
            if conn.user_id == user_id:
                self.tell(conn, ErrorEvent(ErrorCode.FORBIDDEN, "you were removed from this workspace"))
                self.leave(conn)
                conn.hang_up()

    def model_changed(self) -> None:
        """The workspace's model was switched (docs/models.md): the next turn runs on it, its
        socket opens now, every page is told. Callable from any thread."""
        self._loop.call_soon_threadsafe(self.model_changed_now)

    def model_changed_now(self) -> None:
        if not self._closed:
            self.pilot.model_changed()

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

    def settings_changed(self, changed: Mapping[str, Any], by: str) -> None:
        """``by`` changed the workspace's settings: every page is told (``workspace.settings``);
        callable from any thread."""
        self._loop.call_soon_threadsafe(self.settings_changed_now, dict(changed), by)

    def settings_changed_now(self, changed: Mapping[str, Any], by: str) -> None:
        if not self._closed:
            self.announce(WorkspaceSettings(changed=changed, by=by))

    # -- code runs (live.runs) ------------------------------------------------------------

    def run(self, conn: Connection, *, path: str, tests: bool, confirm: bool = False) -> None:
        """Run ``path`` (or the tests) in the sandbox; with high-severity watchdog findings in
        the files, only once the person confirms (``confirm``: they were shown the findings)."""
        if not confirm and (high := self.guard.high_findings()):
            self.tell(conn, confirmation_needed(high, path=path, tests=tests))
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

    # -- storage failures (the pipeline's ``on_failed`` and ``on_recovered``) ------------------

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
            stored = await self.log.recent_stored()
        except Exception:
            log.warning("could not read the stored transcript for a resync", exc_info=True)
            stored = None
        for conn in self.transport.members():
            self.arrivals.resync(conn, stored, reason)
            conn.outbox.put_raw(create_sync_message(self.doc))
