"""The session WebSocket (docs/protocol.md §2). Thin: authenticate, parse, check, hand over."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from .hub import Connection, SessionHub
from .outbox import Outbox
from .pilot import Command
from .services import SessionError, role_for, session_get

log = logging.getLogger(__name__)

DRIVER_ROLES = {"owner", "collaborator"}
EFFORTS = {"low", "medium", "high", "xhigh"}
MAX_PROMPT_CHARS = 20_000


class RateLimit:
    """A token bucket: ``rate`` messages a second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.at = burst, time.monotonic()

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class BadMessage(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _text_field(message: dict[str, Any], name: str, *, required: bool = True, limit: int = MAX_PROMPT_CHARS) -> str:
    value = message.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise BadMessage("missing_field", f"'{message['type']}' needs a non-empty string '{name}'")
    if len(value) > limit:
        raise BadMessage("too_long", f"'{name}' is longer than {limit} characters")
    return value


class SessionConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no types
    hub: SessionHub
    conn: Connection

    async def connect(self) -> None:
        user = self.scope.get("user")
        try:
            session = await database_sync_to_async(session_get)(self.scope["url_route"]["kwargs"]["session_id"])
            role = await database_sync_to_async(role_for)(session=session, user=user)
        except SessionError:
            role = None
        if role is None:
            await self.close(code=4403)  # before accept: the upgrade is refused
            return
        await self.accept()
        self.role = role
        self.text_limit = RateLimit(rate=20, burst=40)
        self.binary_limit = RateLimit(rate=300, burst=600)
        self.hub = await SessionHub.attach(session.id, session.workspace_id)
        outbox = Outbox(lambda text: self.send(text_data=text), lambda data: self.send(bytes_data=data))
        assert user is not None
        self.conn = Connection(
            id=uuid.uuid4().hex, user_id=user.pk, username=user.get_username(), role=role, outbox=outbox,
            can_edit=role in DRIVER_ROLES,
        )
        self.outbox_task = asyncio.create_task(outbox.run())
        self._direct({
            "type": "hello", "session": str(session.id), "workspace": str(session.workspace_id),
            "role": role, "user": self.conn.username, "turn": self.hub.pilot.running_turn,
        })
        self.hub.join(self.conn)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "conn"):
            self.hub.leave(self.conn)
            self.outbox_task.cancel()

    def _direct(self, event: dict[str, Any]) -> None:
        """An answer to this connection only; it carries the session's current seq."""
        self.conn.outbox.put_event({**event, "seq": self.hub.seq})

    def _error(self, code: str, message: str, ref: Any = None) -> None:
        event: dict[str, Any] = {"type": "error", "code": code, "message": message}
        if ref is not None:
            event["ref"] = ref
        self._direct(event)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if bytes_data is not None:
            await self._receive_binary(bytes_data)
            return
        text = text_data or ""
        if len(text.encode()) > settings.SPARK_WS_MAX_MESSAGE_BYTES:
            self._error("too_large", f"messages are limited to {settings.SPARK_WS_MAX_MESSAGE_BYTES} bytes")
            return
        if not self.text_limit.allow():
            self._error("rate_limited", "too many messages: slow down")
            return
        try:
            message = json.loads(text)
        except json.JSONDecodeError as exc:
            self._error("malformed_json", f"not valid JSON: {exc}")
            return
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            self._error("bad_message", "a message is a JSON object with a string 'type'")
            return
        try:
            self._dispatch(message)
        except BadMessage as exc:
            self._error(exc.code, exc.message, ref=message.get("type"))

    async def _receive_binary(self, data: bytes) -> None:
        if len(data) > settings.SPARK_WS_MAX_MESSAGE_BYTES:
            self._error("too_large", f"binary messages are limited to {settings.SPARK_WS_MAX_MESSAGE_BYTES} bytes")
            return
        if not self.binary_limit.allow():
            self._error("rate_limited", "too many document updates: slow down")
            return
        refused = self.hub.receive_yjs(self.conn, data)
        if refused == "forbidden":
            self._error("forbidden", f"a {self.role} cannot edit the document")
        elif refused is not None:
            self._error(refused, "the binary message is not a valid Yjs sync or awareness message")

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            raise BadMessage("unknown_type", f"unknown message type {kind[:40]!r}")
        if kind in {"prompt", "steer", "stop", "revert", "run"} and self.role not in DRIVER_ROLES:
            raise BadMessage("forbidden", f"a {self.role} cannot {kind}")
        handler(message)

    def _on_ping(self, message: dict[str, Any]) -> None:
        self._direct({"type": "pong", "id": message.get("id"), "t": round(time.time() * 1000)})

    def _on_prompt(self, message: dict[str, Any]) -> None:
        text = _text_field(message, "text")
        effort = message.get("effort")
        if effort is not None and effort not in EFFORTS:
            raise BadMessage("bad_field", f"'effort' must be one of {sorted(EFFORTS)}")
        path = _text_field(message, "path", required=False, limit=1024)
        self.hub.pilot.submit(Command(kind="prompt", user_id=self.conn.user_id, text=text, effort=effort, path=path))

    def _on_steer(self, message: dict[str, Any]) -> None:
        text = _text_field(message, "text")
        self.hub.pilot.submit(Command(kind="steer", user_id=self.conn.user_id, text=text))

    def _on_stop(self, message: dict[str, Any]) -> None:
        self.hub.pilot.submit(Command(kind="stop", user_id=self.conn.user_id))

    def _on_revert(self, message: dict[str, Any]) -> None:
        turn = _text_field(message, "turn", limit=64)
        self.hub.pilot.submit(Command(kind="revert", user_id=self.conn.user_id, turn=turn))

    def _on_run(self, message: dict[str, Any]) -> None:
        raise BadMessage("not_available", "running code arrives with the sandbox; nothing was run")

    def _on_resume(self, message: dict[str, Any]) -> None:
        after = message.get("after")
        if not isinstance(after, int) or after < 0:
            raise BadMessage("missing_field", "'resume' needs an integer 'after' >= 0")
        events = self.hub.replay(after)
        if events is None:
            self._direct({"type": "resync", "reason": "the events after that seq are no longer kept"})
            return
        for event in events:
            self.conn.outbox.put_event(event)
