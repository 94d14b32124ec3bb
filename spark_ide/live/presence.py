"""Who is in the room: a connection's join (brought up to date, then into the live stream),
its catch-up after a join without ``?after``, a resync, and the presence list.

A joining connection gets, in one step with nothing in between: ``hello``, the document
(sync step 1 and 2), what it missed (or a ``resync`` and the recent transcript), and only
then the live stream. So a reconnect can neither miss nor repeat an event.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any, Protocol

from pycrdt import Doc, create_sync_message

from .doc_rules import LiveDocument
from .events import DocumentReplaced, Event, Hello, Participant, Presence, Resync
from .outbox import Frame
from .replacement import Replacements, unmerged
from .replay import ReplayLog
from .store import StoredEvent
from .transport import Connection, Transport

PRESENCE_EVERY_S = 0.1  # presence is announced at most this often: a reconnect storm is not n² frames
RESYNC_REASON = "the events since you left are no longer kept"


class Host(Protocol):
    """What a join needs of its room besides its document and its log."""

    workspace: str
    epoch: int

    @property
    def closed(self) -> bool: ...

    @property
    def running_turn(self) -> str | None: ...

    async def current_policy(self) -> Event | None:
        """A course's AI rules (None outside one)."""

    def standing(self) -> list[Event]:
        """What a page is told before the document: the watchdog's diagnostics."""

    def going_on(self) -> list[Event]:
        """What a page is told after its catch-up: the run going on, if any."""

    def opening(self) -> None:
        """A connection is about to join (raises ``RoomClosed`` once the room closed)."""


class PresenceBoard:
    """Announce who is here: at once if the last announcement is ``PRESENCE_EVERY_S`` old,
    else once when it is, with whoever is here then. Every join and leave asks; in a
    reconnect storm each one announcing to everyone would be a frame per pair of sockets."""

    def __init__(self, transport: Transport, *, announce: Callable[[Event], None],
                 measured: Callable[[int], None]) -> None:
        self._transport = transport
        self._announce = announce
        self._measured = measured  # the number of sockets, for the meter
        self._loop = asyncio.get_running_loop()
        self._at = float("-inf")  # when presence was last announced (loop time)
        self._later: asyncio.TimerHandle | None = None
        self._stopped = False
        self._joined = 0  # sockets that joined since the room opened

    def joined(self) -> None:
        self._joined += 1
        self.changed()

    def changed(self) -> None:
        if self._later is not None or self._stopped:
            return  # one is due: it will list whoever is here by then
        wait = self._at + PRESENCE_EVERY_S - self._loop.time()
        if wait > 0:
            self._later = self._loop.call_later(wait, self._tell)
        else:
            self._tell()

    def stop(self) -> None:
        self._stopped = True
        if self._later is not None:
            self._later.cancel()

    def _tell(self) -> None:
        self._later = None
        if self._stopped:
            return
        self._at = self._loop.time()
        members = self._transport.members()
        keys = [(conn.user_id, conn.username, conn.role) for conn in members]
        sockets = dict.fromkeys(keys, 0)  # a person's tabs count once, in the order they came
        for key in keys:
            sockets[key] += 1
        people = tuple(Participant.of(*key, connections=count) for key, count in sockets.items())
        self._announce(Presence(participants=people, joined=self._joined))
        self._measured(len(members))


class Arrivals:
    """Connections joining the room and catching up."""

    def __init__(
        self, host: Host, *, document: LiveDocument, log: ReplayLog, replacements: Replacements,
        transport: Transport, presence: PresenceBoard, sent: Callable[[], int],
    ) -> None:
        self._host = host
        self._document = document
        self._log = log
        self._replacements = replacements
        self._transport = transport
        self._presence = presence
        self._sent = sent

    async def join(self, conn: Connection, *, after: int | None) -> None:
        """Bring ``conn`` up to date, then into the live stream (see the module docstring)."""
        stored = await self._log.stored_for(after)
        resync = after is not None and self._log.catch_up(after, stored) is None
        if resync:
            stored = await self._log.recent_stored()
        policy = await self._host.current_policy()
        held = conn.generation  # the page's document, when it holds one (``?generation=``)
        current = self._document.generation
        previous = None if held is None or held == current else await self._replacements.previous_for(held)
        self._host.opening()
        # From here to the end nothing awaits: no event can slip between replay and live.
        # The cut is what the pipeline has sent: events published but still in the pipeline
        # (behind a document update being saved) reach this connection from the transport.
        sent = self._sent()
        conn.outbox.put_frame(Frame(Hello(
            session=conn.session, workspace=self._host.workspace, role=conn.role, user=conn.username,
            turn=self._host.running_turn, epoch=self._host.epoch, generation=self._document.generation,
        ), sent))
        for event in ([policy] if policy is not None else []) + self._host.standing():
            conn.outbox.put_frame(Frame(event, sent))
        self._send_document(conn, held, previous, sent)
        frames = None if resync else self._log.catch_up(after, stored)
        if frames is None:
            self.resync(conn, stored if resync else None, RESYNC_REASON)
        else:
            for frame in frames:
                conn.outbox.put_frame(frame)
        for event in self._host.going_on():
            conn.outbox.put_frame(Frame(event, sent))  # a run is going on: its panel, its stdin
        conn.joined_at = sent
        self._transport.add(conn)
        self._presence.joined()

    def _send_document(self, conn: Connection, held: int | None, previous: Doc[Any] | None, sent: int) -> None:
        document = self._document
        if held is None or held == document.generation:
            conn.generation = document.generation
            conn.outbox.put_raw(create_sync_message(document.doc))
            conn.outbox.put_raw(document.state_message())
            return
        # The page holds a replaced document: asked what it has of that one (what it typed
        # offline, merged as text), then given the room's to adopt.
        if previous is not None and self._replacements.kept(previous):
            conn.outbox.put_raw(create_sync_message(previous))
        else:  # what it typed offline, if anything, cannot be merged: it is told so
            conn.outbox.put_frame(Frame(unmerged(), sent))
        state = base64.b64encode(document.doc.get_update()).decode()
        conn.outbox.put_frame(Frame(DocumentReplaced(generation=document.generation, state=state), sent))

    async def resume(self, conn: Connection, after: int) -> None:
        """A client that joined without ``?after`` asks for what it missed before joining:
        the events up to the moment it joined (it has the live ones after that)."""
        stored = await self._log.stored_for(after)
        frames = self._log.catch_up(after, stored, upto=conn.joined_at)
        if frames is None:
            recent = await self._log.recent_stored()
            self.resync(conn, recent, RESYNC_REASON)
            return
        for frame in frames:
            if frame.seq <= conn.joined_at:
                conn.outbox.put_frame(frame)

    def resync(self, conn: Connection, stored: list[StoredEvent] | None, reason: str) -> None:
        """``conn`` starts over: it drops its transcript and gets the recent one again."""
        conn.outbox.put_frame(Frame(Resync(reason=reason), self._log.seq))
        for frame in self._log.transcript(stored):
            conn.outbox.put_frame(frame)
