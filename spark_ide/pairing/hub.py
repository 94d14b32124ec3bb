"""A live session in this process: its document, its connections, its ordered event stream.

Everything a session sends goes through one ordered pipeline: JSON events get the next
``seq`` and a place in the replay log; document updates are merged, **persisted**, then sent.
Each connection has its own ``Outbox`` (merged, once per frame), so a slow viewer never
slows the Pilot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from pycrdt import (
    Doc,
    TransactionEvent,
    YMessageType,
    YSyncMessageType,
    create_sync_message,
    handle_sync_message,
    merge_updates,
)

from spark_ide.workspaces import documents

from .outbox import Outbox

log = logging.getLogger(__name__)

REPLAY_LOG = 5000
MATERIALIZE_AFTER_S = 0.2
COMPACT_EVERY = 500
IDLE_CLOSE_S = 30.0
READ_TIMEOUT_S = 5.0


@dataclass
class Connection:
    id: str
    user_id: int
    username: str
    role: str
    outbox: Outbox
    # The user's edits: may this connection change the document?
    can_edit: bool = False


class SessionHub:
    _hubs: dict[uuid.UUID, SessionHub] = {}
    _lock: asyncio.Lock | None = None

    def __init__(self, session_id: uuid.UUID, workspace_id: uuid.UUID) -> None:
        self.session_id = session_id
        self.workspace_id = workspace_id
        self.doc: Doc[Any] = Doc()
        self.seq = 0
        self.connections: dict[str, Connection] = {}
        self._log: deque[dict[str, Any]] = deque(maxlen=REPLAY_LOG)
        self._pipeline: asyncio.Queue[dict[str, Any] | bytes] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Future[None]] = set()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._materialize: asyncio.TimerHandle | None = None
        self._idle_close: asyncio.TimerHandle | None = None
        self._since_compact = 0
        self._last_update_id = 0
        self.pilot: Any = None  # the Pilot, set by start()

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    async def attach(cls, session_id: uuid.UUID, workspace_id: uuid.UUID) -> SessionHub:
        """The session's hub in this process, started on first use."""
        if cls._lock is None:
            cls._lock = asyncio.Lock()
        async with cls._lock:
            hub = cls._hubs.get(session_id)
            if hub is None:
                hub = cls(session_id, workspace_id)
                await hub.start()
                cls._hubs[session_id] = hub
            return hub

    @classmethod
    def running(cls, session_id: uuid.UUID) -> SessionHub | None:
        return cls._hubs.get(session_id)

    async def start(self) -> None:
        from .pilot import Pilot  # the Pilot needs the hub; the hub only starts it

        self.doc = await database_sync_to_async(documents.document_load)(self.workspace_id)
        self.doc.observe(self._on_doc_change)
        documents.LIVE.register(self.workspace_id, self)
        self.pilot = Pilot(self)
        self._tasks = [
            asyncio.create_task(self._run_pipeline(), name=f"hub-{self.session_id}"),
            asyncio.create_task(self.pilot.run(), name=f"pilot-{self.session_id}"),
        ]

    async def close(self) -> None:
        SessionHub._hubs.pop(self.session_id, None)
        documents.LIVE.unregister(self.workspace_id)
        await self.pilot.shutdown()
        await self.flush()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._write_files()

    # -- connections -------------------------------------------------------------------------

    def join(self, conn: Connection) -> None:
        if self._idle_close is not None:
            self._idle_close.cancel()
            self._idle_close = None
        self.connections[conn.id] = conn
        # The newcomer gets the whole document: our step 1 (asks for theirs) and step 2.
        conn.outbox.put_raw(create_sync_message(self.doc))
        conn.outbox.put_raw(
            bytes([YMessageType.SYNC, YSyncMessageType.SYNC_STEP2]) + _var_bytes(self.doc.get_update())
        )
        self.publish_presence()

    def leave(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)
        self.publish_presence()
        if not self.connections:
            self._idle_close = self._loop.call_later(IDLE_CLOSE_S, self._close_if_idle)

    def _close_if_idle(self) -> None:
        if not self.connections and not self.pilot.busy:
            self._spawn(self.close())

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def publish_presence(self) -> None:
        people = [{"user": c.username, "role": c.role} for c in self.connections.values()]
        self.publish({"type": "presence", "participants": people})

    # -- events ------------------------------------------------------------------------------

    def publish(self, event: dict[str, Any]) -> dict[str, Any]:
        """Give ``event`` the next seq and send it to everyone (after earlier doc updates)."""
        self.seq += 1
        event = {**event, "seq": self.seq}
        self._log.append(event)
        self._pipeline.put_nowait(event)
        return event

    def replay(self, after: int) -> list[dict[str, Any]] | None:
        """Events after ``after``, or None when they are no longer all in the log."""
        if after >= self.seq:
            return []
        if not self._log or self._log[0]["seq"] > after + 1:
            return None
        return [event for event in self._log if event["seq"] > after]

    def _on_doc_change(self, event: TransactionEvent) -> None:
        self._pipeline.put_nowait(bytes(event.update))

    async def _run_pipeline(self) -> None:
        while True:
            items = [await self._pipeline.get()]
            while not self._pipeline.empty():
                items.append(self._pipeline.get_nowait())
            await self._deliver(items)

    async def flush(self) -> None:
        """Deliver whatever waits in the pipeline now (shutdown, tests)."""
        items = []
        while not self._pipeline.empty():
            items.append(self._pipeline.get_nowait())
        if items:
            await self._deliver(items)

    async def _deliver(self, items: list[dict[str, Any] | bytes]) -> None:
        """Send in order; document updates only once persisted, all of a batch in one write.

        Events before the batch's first update go out at once; the updates are merged and
        written once, then they and the events after them follow in order.
        """
        first = next((i for i, item in enumerate(items) if isinstance(item, bytes)), len(items))
        self._fan_out(items[:first])
        updates = [item for item in items[first:] if isinstance(item, bytes)]
        if updates:
            await self._persist(merge_updates(*updates) if len(updates) > 1 else updates[0])
        self._fan_out(items[first:])

    def _fan_out(self, items: list[dict[str, Any] | bytes]) -> None:
        connections = list(self.connections.values())
        for item in items:
            for conn in connections:
                if isinstance(item, bytes):
                    conn.outbox.put_update(item)
                else:
                    conn.outbox.put_event(item)

    async def _persist(self, update: bytes) -> None:
        self._last_update_id = await database_sync_to_async(documents.document_append)(self.workspace_id, update)
        self._since_compact += 1
        if self._since_compact >= COMPACT_EVERY:
            self._since_compact = 0
            await database_sync_to_async(documents.document_compact)(
                self.workspace_id, self.doc.get_update(), through_id=self._last_update_id
            )
        if self._materialize is None:
            self._materialize = self._loop.call_later(
                MATERIALIZE_AFTER_S, lambda: self._spawn(self._write_files())
            )

    async def _write_files(self) -> None:
        self._materialize = None
        await database_sync_to_async(documents.files_materialize)(self.workspace_id, self.texts())

    # -- the document ------------------------------------------------------------------------

    def texts(self) -> dict[str, str]:
        return documents.document_texts(self.doc)

    def receive_yjs(self, conn: Connection, message: bytes) -> str | None:
        """Handle a binary frame; returns an error code when it is refused."""
        if not message:
            return "malformed_binary"
        kind = message[0]
        if kind == YMessageType.AWARENESS:
            for other in list(self.connections.values()):
                if other.id != conn.id:
                    other.outbox.put_raw(message)
            return None
        if kind != YMessageType.SYNC or len(message) < 2:
            return "malformed_binary"
        sub = message[1]
        if sub in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE) and not conn.can_edit:
            if _is_empty_update(message[2:]):
                return None  # a viewer's step 2 with nothing new: nothing to refuse
            return "forbidden"
        try:
            reply = handle_sync_message(message[1:], self.doc)
        except Exception:  # a malformed update must not take the session down
            log.warning("bad Yjs message from %s", conn.username, exc_info=True)
            return "malformed_binary"
        if reply is not None:
            conn.outbox.put_raw(reply)  # pycrdt's reply already starts with the SYNC byte
        return None

    # -- documents.LiveHolder: other threads (HTTP views) reach the document through these --

    def apply_file(self, path: str, text: str | None) -> None:
        """An HTTP write while we hold the document: apply it here, on our loop."""
        self._loop.call_soon_threadsafe(lambda: documents.set_file_text(self.doc, path, text, origin="http"))

    def read_files(self) -> dict[str, str]:
        """The live texts for an HTTP read, taken on our loop (the document is not shared)."""

        async def read() -> dict[str, str]:
            return self.texts()

        if threading.get_ident() == self._loop_thread:
            return self.texts()
        return asyncio.run_coroutine_threadsafe(read(), self._loop).result(timeout=READ_TIMEOUT_S)


def _var_bytes(data: bytes) -> bytes:
    """``data`` with its y-protocols varUint length prefix."""
    out = bytearray()
    n = len(data)
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            break
    return bytes(out) + data


def _is_empty_update(payload: bytes) -> bool:
    return payload in (b"\x02\x00\x00", b"\x00")
