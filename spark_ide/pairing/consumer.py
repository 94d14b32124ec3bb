"""The session WebSocket (docs/protocol.md §2). Thin: authenticate, parse, check, hand over.

A reconnecting client names the last ``seq`` it holds in the URL (``?after=N``): the room
sends what it missed before the live stream, in one step (see ``live.room``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from redis.exceptions import RedisError

from spark_ide.live.events import CloseCode, ErrorCode, ErrorEvent, Pong, Role, encode
from spark_ide.live.messages import MAX_SEQ, MESSAGES, Invalid, Limits, validate
from spark_ide.live.outbox import Outbox
from spark_ide.live.prompt_queue import MAX_QUEUED
from spark_ide.live.rooms import Rooms
from spark_ide.live.transport import Connection, Place, RoomClosed
from spark_ide.live.turns import CommandKind
from spark_ide.ops import native_memory

from .adapter import ROOMS
from .daphne_writes import daphne_writer
from .lookups import on_lookup_thread
from .services import SocketPlace, socket_place
from .socket_cap import SocketCap
from .ws_auth import authorization, who

log = logging.getLogger(__name__)

HANG_UP_AFTER_S = 0.2


# Each user's open session sockets (SPARK_MAX_SOCKETS_PER_USER): across every server process
# through Redis when REDIS_URL is set, else counted by this process (``socket_cap``).
SOCKETS = SocketCap(settings.REDIS_URL or None)


class RateLimit:
    """A token bucket: ``rate`` messages a second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.at = burst, time.monotonic()

    def allow(self) -> bool:
        return self.wait() == 0.0

    def wait(self) -> float:
        """Take a token if there is one (0.0); else the seconds until there will be."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return (1 - self.tokens) / self.rate
        self.tokens -= 1
        return 0.0


def _connecting(scope: dict[str, Any], session_id: str) -> tuple[Any, Any, str | None]:
    """Who connects (``ws_auth.who``), the session and their role in it (None: none, or no such
    session, or nobody signed in): every read a connect makes, in one trip to a lookup thread."""
    user = who(scope)
    if user is None or not getattr(user, "is_authenticated", False):
        return user, None, None
    place, role = socket_place(session_id, user)
    return user, place, role


_lookup = on_lookup_thread(_connecting)


def _number(query: bytes, name: str) -> int | None:
    """``?after=N`` (the last seq the client holds) or ``?generation=N`` (the document it
    holds): absent on a first connection; nonsense counts as 0 (which resyncs)."""
    values = parse_qs(query.decode("latin-1")).get(name)
    if not values:
        return None
    try:
        return min(max(int(values[0]), 0), MAX_SEQ)
    except ValueError:
        return 0


class SessionConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no types
    # No channel-layer channel per socket: nothing is ever sent to one (rooms use the layer,
    # live.owner). With Redis each would be a SUBSCRIBE and UNSUBSCRIBE on the connection
    # a room's stream is published on, delaying it whenever many sockets come or go.
    channel_layer_alias = "none"
    text_rate = (20.0, 40.0)  # per socket: messages a second, burst (docs/pairing.md)
    binary_rate = (300.0, 600.0)
    room: Place
    conn: Connection

    def __init__(self, *args: Any, rooms: Rooms | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rooms = rooms or ROOMS  # this process's rooms (``as_asgi(rooms=...)``: another set)

    async def connect(self) -> None:
        # One trip to a lookup thread (not the one every room's storage writes share).
        user, session, role = await _lookup(self.scope, self.scope["url_route"]["kwargs"]["session_id"])
        self.scope["user"] = user
        if user is None and authorization(self.scope):
            await self.close(code=int(CloseCode.BAD_TOKEN))  # a wrong token: refused, never a cookie fallback
            return
        if role is None:
            await self.close(code=int(CloseCode.REFUSED))  # before accept: the upgrade is refused
            return
        limit = settings.SPARK_MAX_SOCKETS_PER_USER
        ticket = await SOCKETS.take(user.pk, limit)
        if ticket is None:
            # Accepted only to say why: a refused upgrade carries no message.
            await self.accept()
            refusal = ErrorEvent(ErrorCode.RATE_LIMITED, f"too many open connections: at most {limit} per person; "
                                 "close another tab of this IDE and this one reconnects")
            await self.send(text_data=encode(refusal, 0))
            await self.close(code=int(CloseCode.TOO_MANY_SOCKETS))
            return
        self.counted = ticket
        try:
            await self._open(session, user, Role(role))
        except BaseException:
            SOCKETS.give_back(ticket)  # no disconnect follows a connect that failed
            del self.counted
            raise

    async def _open(self, session: SocketPlace, user: Any, role: Role) -> None:
        await self.accept()
        self.limits = Limits(
            path_chars=settings.SPARK_MAX_PATH_LENGTH, prompt_chars=settings.SPARK_MAX_PROMPT_CHARS
        )
        self.text_limit = RateLimit(*self.text_rate)
        self.binary_limit = RateLimit(*self.binary_rate)
        # Straight to the server's send (channels' ``send`` only wraps it in two more coroutines;
        # a room sends every event to every connection, so this runs per frame per socket).
        # Under Daphne, past even that: each event framed once for every socket, and what
        # waits for a socket written in one go (``daphne_writes``).
        outbox = Outbox(
            lambda text: self.base_send({"type": "websocket.send", "text": text}),
            lambda data: self.base_send({"type": "websocket.send", "bytes": data}),
            writer=daphne_writer(self.base_send) if settings.SPARK_WS_DIRECT_WRITES else None,
            pace_s=settings.SPARK_WS_PACE_MS / 1000,
        )
        self.conn = Connection(
            id=uuid.uuid4().hex, session=str(session.id), user_id=user.pk, username=user.get_username(),
            role=role, outbox=outbox, hang_up=self._hang_up, move=self._move,
        )
        self.outbox_task = asyncio.create_task(outbox.run())
        self.pending: set[asyncio.Task[None]] = set()
        query = self.scope.get("query_string", b"")
        after = _number(query, "after")
        self.conn.generation = _number(query, "generation")
        while True:
            try:
                self.room = await self.rooms.attach(str(session.workspace_id))
            except (OSError, RedisError, DatabaseError) as exc:
                # The cluster's Redis (the room's lease) or the database is not answering: the
                # page tries again after its back-off, without a traceback per attempt.
                log.warning("could not open the room of workspace %s: %s", session.workspace_id, exc)
                self.outbox_task.cancel()
                await self.close(code=int(CloseCode.TRY_AGAIN))
                return
            try:
                await self.room.join(self.conn, after=after)
                break
            except RoomClosed:  # it closed (idle, or its owner went) while we joined: the next
                await asyncio.sleep(0.05)  # attach opens a new one, or finds the next owner

    async def dispatch(self, message: dict[str, Any]) -> None:
        """A socket's messages go straight to their handlers. channels first closes stale
        database connections before every message (and again after a disconnect), a hop to the
        database thread that waits behind the rooms' writes there: a steer waited for them, and
        in a reconnect storm every connect and every disconnect did. Nothing here uses the
        database on that thread (the lookups and the rooms' storage check their connections in
        their own thread calls)."""
        kind = message["type"]
        if kind == "websocket.receive":
            await self.websocket_receive(message)
        elif kind == "websocket.connect":
            await self.websocket_connect(message)
        elif kind == "websocket.disconnect":
            await self.disconnect(message["code"])
            raise StopConsumer()
        else:
            await super().dispatch(message)

    def _hang_up(self) -> None:
        """Close the socket a moment later, so the reason waiting in the outbox leaves first."""
        asyncio.get_running_loop().call_later(HANG_UP_AFTER_S, self._close_now, CloseCode.REFUSED)

    def _move(self) -> None:
        """The room moved to another process: close now, so that the client reconnects (and
        resumes from its last ``seq`` wherever the room is now)."""
        self._close_now(CloseCode.MOVED)

    def _close_now(self, code: int) -> None:
        task = asyncio.ensure_future(self.close(code=int(code)))  # autobahn takes a plain int only
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """channels' ``AsyncConsumer.__call__`` without a channel layer (none is used here), each
        message taken straight from the server's queue and handled in this task. channels wraps
        every ``receive`` in a task of its own and waits for it with ``asyncio.wait``: three
        passes of the event loop between a frame's arrival and its handler (a steer, a
        keystroke) instead of one, each running whatever else was ready."""
        self.scope, self.channel_layer, self.base_send = scope, None, send
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass
        finally:
            # Daphne cancels an application that has not ended 10 s after its socket went
            # (``application_close_timeout``; a connect still waiting in a reconnect storm):
            # no disconnect runs then, and the connection would stay in its room for good,
            # its outbox filling with every turn, its socket counted against its person.
            self._let_go()

    async def disconnect(self, code: int) -> None:
        native_memory.socket_closed()  # many at once (a storm): glibc's kept memory goes back to the system
        self._let_go()

    def _let_go(self) -> None:
        """Give back the socket's place, stop its outbox and leave its room (once)."""
        if hasattr(self, "counted"):
            SOCKETS.give_back(self.counted)
            del self.counted
        if hasattr(self, "outbox_task"):
            self.outbox_task.cancel()
            del self.outbox_task
        if hasattr(self, "conn") and hasattr(self, "room"):
            self.room.leave(self.conn)
            del self.room

    def _error(self, code: ErrorCode, message: str, ref: Any = None) -> None:
        self.room.tell(self.conn, ErrorEvent(code, message, ref))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if bytes_data is not None:
            await self._receive_binary(bytes_data)
            return
        text = text_data or ""
        if len(text.encode()) > settings.SPARK_WS_MAX_MESSAGE_BYTES:
            self._error(ErrorCode.TOO_LARGE, f"messages are limited to {settings.SPARK_WS_MAX_MESSAGE_BYTES} bytes")
            return
        # A page's document.adopted is never dropped: its frames after it would be taken as
        # the old document's (a page sends one now and then; its type comes first).
        if not self.text_limit.allow() and not text.startswith('{"type":"document.adopted"'):
            self._error(ErrorCode.RATE_LIMITED, "too many messages: slow down")
            return
        try:
            message = json.loads(text)
        except (ValueError, RecursionError) as exc:
            # ValueError: JSONDecodeError, and an integer past Python's 4,300 digits;
            # RecursionError: arrays nested deeper than the parser's stack.
            self._error(ErrorCode.MALFORMED_JSON, f"not valid JSON: {str(exc)[:200]}")
            return
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            self._error(ErrorCode.BAD_MESSAGE, "a message is a JSON object with a string 'type'")
            return
        try:
            self._dispatch(message)
        except Invalid as exc:
            self._error(exc.code, exc.message, ref=message["type"][:40])

    async def _receive_binary(self, data: bytes) -> None:
        # Every frame is bounded by SPARK_WS_MAX_MESSAGE_BYTES; a Yjs frame by its own cap too.
        limit = min(settings.SPARK_MAX_YJS_UPDATE_BYTES, settings.SPARK_WS_MAX_MESSAGE_BYTES)
        if len(data) > limit:
            # Refused before the room sees it: the document is unchanged. The sender's copy
            # still holds the edit; the room's reply is the error, which the page shows.
            # ``ref`` "yjs": the page drops what it holds and loads the document again.
            message = f"a document update is limited to {limit} bytes (this one: {len(data)})"
            self._error(ErrorCode.TOO_LARGE, message, ref="yjs")
            return
        # Over the rate, an update waits (and this socket is not read meanwhile) rather than
        # being dropped: a dropped update would leave the sender's copy ahead of everyone's.
        while (delay := self.binary_limit.wait()) > 0:
            await asyncio.sleep(delay)
        refused = self.room.receive_yjs(self.conn, data)
        if refused is not None:
            self.room.tell(self.conn, refused)

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Look the type up in the registry (``live.messages``), check the sender's role, then
        every declared field, and only then hand the checked values to the type's handler."""
        kind = message["type"]
        spec = MESSAGES.get(kind)
        if spec is None:
            raise Invalid(ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind[:40]!r}")
        if self.conn.role not in spec.roles:
            raise Invalid(ErrorCode.FORBIDDEN, f"a {self.conn.role} cannot {kind}")
        HANDLERS[kind](self, validate(spec, message, self.limits))

    def _command(self, kind: CommandKind, **fields: Any) -> None:
        self.room.command(self.conn, kind, **fields)

    def _on_ping(self, values: dict[str, Any]) -> None:
        self.room.tell(self.conn, Pong(id=values["id"], t=round(time.time() * 1000)))

    def _on_prompt(self, values: dict[str, Any]) -> None:
        self._command(
            CommandKind.PROMPT, text=values["text"], effort=values["effort"], path=values["path"],
            range=values["range"], mentions=values["mentions"], exclude=values["exclude"],
        )

    def _on_steer(self, values: dict[str, Any]) -> None:
        self._command(
            CommandKind.STEER, text=values["text"], range=values["range"], mentions=values["mentions"],
            exclude=values["exclude"],
        )

    def _on_context_preview(self, values: dict[str, Any]) -> None:
        self._command(
            CommandKind.CONTEXT_PREVIEW, text=values["text"], path=values["path"], mentions=values["mentions"],
            exclude=values["exclude"],
        )

    def _on_symbols(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.SYMBOLS, path=values["path"])

    def _on_queue_edit(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.QUEUE_EDIT, turn=values["turn"], text=values["text"], mentions=values["mentions"])

    def _on_queue_delete(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.QUEUE_DELETE, turn=values["turn"])

    def _on_queue_move(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.QUEUE_MOVE, turn=values["turn"], position=values["position"])

    def _on_queue_steer(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.QUEUE_STEER, turn=values["turn"])

    def _on_queue_merge(self, values: dict[str, Any]) -> None:
        turns = values["turns"]
        if not 2 <= len(turns) <= MAX_QUEUED or not all(
            isinstance(turn, str) and 0 < len(turn) <= self.limits.id_chars for turn in turns
        ):
            raise Invalid(ErrorCode.BAD_FIELD, f"'turns' must be 2 to {MAX_QUEUED} queued turn ids (strings)", "turns")
        self._command(CommandKind.QUEUE_MERGE, turns=tuple(turns))

    def _on_stop(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.STOP)

    def _on_edit_steer_commit(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.EDIT_STEER_COMMIT, text=values["why"])

    def _on_edit_steer_cancel(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.EDIT_STEER_CANCEL)

    def _on_edit_steer_switch(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.EDIT_STEER_SWITCH, on=values["on"])

    def _on_revert(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.REVERT, turn=values["turn"])

    def _on_restore(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.RESTORE, turn=values["turn"])

    def _on_hunk_keep(self, values: dict[str, Any]) -> None:
        self._review("keep", values)

    def _on_hunk_undo(self, values: dict[str, Any]) -> None:
        self._review("undo", values)

    def _review(self, decision: str, values: dict[str, Any]) -> None:
        block = None if values["all"] else values["block"]
        self._command(CommandKind.REVIEW, turn=values["turn"], block=block, decision=decision)
    def _on_checkpoint_create(self, values: dict[str, Any]) -> None:
        self._command(CommandKind.CHECKPOINT_CREATE, text=values["name"])

    def _on_checkpoint_restore(self, values: dict[str, Any]) -> None:
        if not (values["code"] or values["conversation"]):
            raise Invalid(
                ErrorCode.BAD_FIELD, "'checkpoint.restore' needs 'code' or 'conversation' (or both) true", "code",
            )
        self._command(
            CommandKind.CHECKPOINT_RESTORE, checkpoint=values["checkpoint"], code=values["code"],
            conversation=values["conversation"],
        )

    def _on_run(self, values: dict[str, Any]) -> None:
        tests = values["tests"]
        path = "" if tests else values["path"]
        self.room.run(self.conn, path=path, tests=tests, confirm=values["confirm"])

    def _on_run_input(self, values: dict[str, Any]) -> None:
        self.room.run_input(self.conn, values["run"], values["text"])

    def _on_run_stop(self, values: dict[str, Any]) -> None:
        self.room.run_stop(self.conn, values["run"])

    def _on_document_adopted(self, values: dict[str, Any]) -> None:
        self.room.adopt(self.conn, values["generation"])

    def _on_resume(self, values: dict[str, Any]) -> None:
        """For clients that resume by message rather than ``?after=`` in the URL: what they
        missed before they joined comes now, after live events they may already hold."""
        task = asyncio.create_task(self.room.resume(self.conn, values["after"]))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)


Handler = Callable[[SessionConsumer, dict[str, Any]], None]

HANDLERS: dict[str, Handler] = {
    "ping": SessionConsumer._on_ping,
    "prompt": SessionConsumer._on_prompt,
    "steer": SessionConsumer._on_steer,
    "context.preview": SessionConsumer._on_context_preview,
    "symbols": SessionConsumer._on_symbols,
    "stop": SessionConsumer._on_stop,
    "edit_steer.commit": SessionConsumer._on_edit_steer_commit,
    "edit_steer.cancel": SessionConsumer._on_edit_steer_cancel,
    "edit_steer.switch": SessionConsumer._on_edit_steer_switch,
    "queue.edit": SessionConsumer._on_queue_edit,
    "queue.delete": SessionConsumer._on_queue_delete,
    "queue.move": SessionConsumer._on_queue_move,
    "queue.steer": SessionConsumer._on_queue_steer,
    "queue.merge": SessionConsumer._on_queue_merge,
    "revert": SessionConsumer._on_revert,
    "restore": SessionConsumer._on_restore,
    "hunk.keep": SessionConsumer._on_hunk_keep,
    "hunk.undo": SessionConsumer._on_hunk_undo,
    "checkpoint.create": SessionConsumer._on_checkpoint_create,
    "checkpoint.restore": SessionConsumer._on_checkpoint_restore,
    "run": SessionConsumer._on_run,
    "run.input": SessionConsumer._on_run_input,
    "run.stop": SessionConsumer._on_run_stop,
    "resume": SessionConsumer._on_resume,
    "document.adopted": SessionConsumer._on_document_adopted,
}
if set(HANDLERS) != set(MESSAGES):  # a declared message nobody handles, or the reverse
    raise RuntimeError(f"session messages without a handler or a declaration: {set(HANDLERS) ^ set(MESSAGES)}")
