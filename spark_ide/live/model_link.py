"""The Pilot's connection to the model: opened and warmed before the first prompt, replaced
after a failure it cannot recover from, closed with the room; and what a failure on the
model's side means for the turn (``upstream_failure``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from spark_ide.upstream import ErrorEvent, Failed, ModelClient, TurnStream, UpstreamError
from spark_ide.upstream import errors as upstream_errors
from spark_ide.upstream.catalogue import ModelEntry, Prices

from .events import FinishReason
from .meter import NO_METER, Meter

log = logging.getLogger(__name__)


class ModelLink:
    def __init__(
        self, connect: Callable[[], Awaitable[ModelClient]], *, meter: Meter = NO_METER,
        entry: ModelEntry | None = None, stamp: Callable[[], Awaitable[str]] | None = None,
    ) -> None:
        self._connect = connect
        self.entry = entry  # the catalogue's entry this link reaches (None: not from the catalogue)
        # What the connection is opened with, as a stamp that changes when that does (the room
        # owner's keys: ``LiveSettings.model_stamp``); None: nothing to watch.
        self._stamp_of = stamp
        self._stamp: str | None = None  # the stamp read before the current client was opened
        self._meter, self._opened = meter, False  # the meter counts every client after the first
        self._client: ModelClient | None = None
        self._connecting: asyncio.Task[ModelClient] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def warm(self) -> None:
        """Start connecting now, so the first prompt finds a warm connection."""
        if self._client is None and (self._connecting is None or self._connecting.done()):
            self._connecting = asyncio.create_task(self._open())
            # A warm-up that fails is retried by the first turn; it must not log as unretrieved.
            self._connecting.add_done_callback(lambda task: task.cancelled() or task.exception())

    @property
    def open_client(self) -> ModelClient | None:
        """The client when it is open (no wait), else None."""
        return self._client

    async def client(self) -> ModelClient:
        """The warm client; raises UpstreamError/OSError when none can be had."""
        if self._client is not None:
            return self._client
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self._open())
        return await self._connecting

    async def refresh(self) -> None:
        """Before a turn: drop the client when what it was opened with changed since (the
        owner added or deleted a key), so the turn opens a new one. A warm-up under way is let
        finish first; a stamp that cannot be read changes nothing."""
        stamp = await self._read_stamp()
        if stamp is None:
            return
        if self._connecting is not None and not self._connecting.done():
            await asyncio.wait({self._connecting})
        if self._client is not None and self._stamp is not None and stamp != self._stamp:
            self.drop()

    async def _read_stamp(self) -> str | None:
        if self._stamp_of is None:
            return None
        try:
            return await self._stamp_of()
        except Exception:
            log.warning("could not read what the model connection is opened with", exc_info=True)
            return None

    async def _open(self) -> ModelClient:
        stamp = await self._read_stamp()
        client = await self._connect()
        self._client, self._stamp = client, stamp
        if self._opened:
            self._meter.upstream_reconnected("client")
        self._opened = True
        return client

    def prices(self) -> Prices | None:
        """The prices of the model this link reaches (None: unknown, its turns' cost is not counted)."""
        return self.entry.prices if self.entry is not None else None

    @property
    def model(self) -> str | None:
        """The model of the current client (None: no client yet)."""
        return self._client.model_name if self._client is not None else None

    def drop(self) -> None:
        """Give up on the client (it failed for good): the next turn opens a new one. The old
        one is closed in the background so none of its sockets linger."""
        client, self._client, self._connecting = self._client, None, None
        if client is not None:
            task = asyncio.create_task(client.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(BaseException):
                await self._connecting
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task


# What a person reads when the model's side failed, by the upstream client's code
# (docs/upstream.md, "Error codes"); the code and its detail follow in brackets.
_UPSTREAM_FAILURES: dict[str, tuple[FinishReason, str]] = {
    upstream_errors.CONNECTION_LOST: (FinishReason.CONNECTION_LOST, "the connection to the model dropped mid-answer"),
    upstream_errors.CONNECTION_EXPIRED: (
        FinishReason.CONNECTION_EXPIRED,
        "the provider closed the model's connection at its time limit mid-answer; the next prompt uses a new one",
    ),
    upstream_errors.PROTOCOL_ERROR: (
        FinishReason.MODEL_PROTOCOL_ERROR, "the model's connection sent something that is not a valid event",
    ),
    upstream_errors.PROVIDER_UNAVAILABLE: (FinishReason.MODEL_UNAVAILABLE, "the model is unavailable"),
    upstream_errors.AUTHENTICATION_FAILED: (FinishReason.PROVIDER_KEY_REJECTED, "the provider refused the key"),
}


def connect_failure(exc: Exception) -> tuple[FinishReason, str]:
    """The reason and message of a turn that could not reach the model: a refused key says
    which (its label is in the message), a missing one what to do; else the model is unavailable."""
    if isinstance(exc, UpstreamError) and exc.code == upstream_errors.AUTHENTICATION_FAILED:
        return FinishReason.PROVIDER_KEY_REJECTED, f"the provider refused the key ({exc})"
    if isinstance(exc, UpstreamError) and exc.code == upstream_errors.KEY_MISSING:
        return FinishReason.PROVIDER_KEY_MISSING, f"no key for the model: {exc.message}"
    return FinishReason.MODEL_UNAVAILABLE, f"the model is unavailable: {exc}"


def upstream_failure(event: Failed | ErrorEvent) -> tuple[FinishReason, str]:
    """The reason and message of a turn the model's side ended: each fault says what happened
    (a timeout before the first byte is not a stall mid-answer); the provider's own errors are
    ``model_error``. The block in flight is rolled back by ``Pilot._finish`` whatever the reason."""
    detail = f"{event.code}: {event.message}"
    if isinstance(event, Failed):
        return FinishReason.MODEL_ERROR, f"the provider reports that the answer failed ({detail})"
    if event.code == upstream_errors.TIMEOUT:
        if event.marks.first_byte_at is None:
            return FinishReason.FIRST_BYTE_TIMEOUT, f"the model did not start answering in time ({detail})"
        return FinishReason.STALLED, f"the model stopped sending mid-answer ({detail})"
    reason, text = _UPSTREAM_FAILURES.get(event.code, (FinishReason.MODEL_ERROR, "the model answered with an error"))
    return reason, f"{text} ({detail})"


async def stop_answer(stream: TurnStream) -> None:
    """Stop ``stream``'s answer upstream, by the provider's strategy; a connection already
    gone has nothing left to stop."""
    with contextlib.suppress(UpstreamError, OSError):
        await stream.cancel()
