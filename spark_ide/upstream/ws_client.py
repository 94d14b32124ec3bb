"""The Responses WebSocket client: a warm primary socket, a hot spare, cancel strategies,
transparent reconnects and the HTTP/SSE fallback after a 426."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

from spark_ide.upstream.base import ModelClient
from spark_ide.upstream.config import ProviderConfig
from spark_ide.upstream.connection import Attempt, ResponsesConnection
from spark_ide.upstream.errors import (
    CLIENT_CLOSED,
    CONNECTION_LOST,
    PROVIDER_UNAVAILABLE,
    UpgradeRefused,
    UpstreamError,
)
from spark_ide.upstream.profiles import CancelStrategy, ProviderProfile, Transport
from spark_ide.upstream.request import (
    ResponsesEncoder,
    TurnRequest,
    responses_steer,
    responses_warmup,
)
from spark_ide.upstream.sse import ChatCompletionsClient
from spark_ide.upstream.stream import TurnStream

log = logging.getLogger(__name__)
T = TypeVar("T")


class ResponsesClient(ModelClient):
    def __init__(
        self,
        config: ProviderConfig,
        *,
        warmup_instructions: str = "",
        http_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config
        self._profile = config.profile
        self._warmup_instructions = warmup_instructions
        self._http_transport = http_transport
        self._primary: ResponsesConnection | None = None
        self._primary_task: asyncio.Task[ResponsesConnection] | None = None
        self._spare_task: asyncio.Task[ResponsesConnection] | None = None
        self._fallback: ChatCompletionsClient | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._encoder = ResponsesEncoder()  # each request's items kept encoded for the next one

    @property
    def transport(self) -> Transport:
        return Transport.CHAT_SSE if self._fallback else Transport.RESPONSES_WS

    @property
    def profile(self) -> ProviderProfile:
        return self._fallback.profile if self._fallback else self._profile

    @property
    def model_name(self) -> str:
        return self.config.model

    @property
    def spare_ready(self) -> bool:
        """A warm spare socket is open and can take a re-prompt (the hot-spare strategy)."""
        task = self._spare_task
        return bool(task and task.done() and not task.cancelled() and not task.exception()
                    and task.result().usable)

    async def connect(self) -> None:
        """Open and warm the primary socket (and start warming the spare)."""
        try:
            self._primary = await self._open(warm=True)
        except UpgradeRefused:
            await self._fall_back()
            return
        self._ensure_spare()

    # -- turns ------------------------------------------------------------------------------

    async def start(self, request: TurnRequest) -> TurnStream:
        self._check_open()
        if self._fallback is None:
            stream = self._new_stream(request)
            try:
                connection = await self._primary_connection()
            except UpgradeRefused:
                await self._fall_back()
            else:
                await self._submit(connection, stream)
                return stream
        assert self._fallback is not None
        return await self._fallback.start(request)

    async def steer(self, stream: TurnStream, request: TurnRequest) -> TurnStream:
        self._check_open()
        attempt = stream.handle
        stream.detach()  # (a) nothing of the old turn is yielded from here on
        if not isinstance(attempt, Attempt) or attempt.done or not attempt.connection.alive:
            if self._fallback is not None:
                return await self._fallback.steer(stream, request)
            return await self.start(request)
        connection = attempt.connection
        strategy = self._profile.cancel_strategy
        successor = self._new_stream(request)
        if strategy is CancelStrategy.NATIVE_CANCEL and connection.usable:
            # The socket answers in order: the re-prompt waits behind the old response, which
            # the cancel written right after it ends; it runs as soon as the old one stops.
            await self._submit(connection, successor)
            await connection.cancel(attempt)
            return successor
        if strategy is CancelStrategy.NATIVE_STEER and attempt.response_id is not None:
            body = responses_steer(request, attempt.response_id)
            await connection.submit(body, successor, steer=True)
            return successor
        spare = self._take_spare() if self._profile.keeps_spare else None
        if spare is not None:
            await self._submit(spare, successor)  # (c) re-prompt on the warm spare first
            self._drop(connection)  # (d) closing the old socket ends the old response
            self._promote(spare)
            self._ensure_spare()
            return successor
        return await self._reconnect_and_submit(connection, successor)

    def steers_at_once(self, stream: TurnStream | None) -> bool:
        if self._closed or self._fallback is not None:
            return False
        attempt = stream.handle if stream is not None else None
        if isinstance(attempt, Attempt) and not attempt.done and attempt.connection.alive:
            connection, strategy = attempt.connection, self._profile.cancel_strategy
            if strategy is CancelStrategy.NATIVE_CANCEL and connection.usable:
                return True
            if strategy is CancelStrategy.NATIVE_STEER and attempt.response_id is not None:
                return True
            return self._profile.keeps_spare and self.spare_ready
        primary = self._primary  # a start: on the warm primary
        return primary is not None and primary.usable

    async def close(self) -> None:
        self._closed = True
        pending = [t for t in (self._primary_task, self._spare_task) if t is not None]
        for task in [*pending, *self._tasks]:
            task.cancel()
        await asyncio.gather(*pending, *self._tasks, return_exceptions=True)
        connections = [self._primary, *(_result(t) for t in pending)]
        await asyncio.gather(
            *(c.close() for c in connections if c is not None), return_exceptions=True
        )
        if self._fallback is not None:
            await self._fallback.close()

    # -- stop, resend ------------------------------------------------------------------------

    async def _stop(self, stream: TurnStream, abandon: bool) -> None:
        attempt = stream.handle
        if not isinstance(attempt, Attempt) or attempt.done:
            return
        connection = attempt.connection
        if self._profile.cancel_strategy is CancelStrategy.NATIVE_CANCEL and not abandon:
            connection.request_cancel(attempt)
            return
        self._drop(connection)
        if self._primary is None:
            spare = self._take_spare() if self._profile.keeps_spare else None
            if spare is not None:
                self._promote(spare)
            else:
                self._start_primary_reopen()
        self._ensure_spare()

    async def _resend(self, stream: TurnStream, same_connection: bool, reason: str) -> None:
        if stream.resends >= self.config.max_transparent_resends:
            stream.error(CONNECTION_LOST, f"gave up resending the turn: {reason}", retryable=True)
            return
        stream.resends += 1
        log.info("resending a turn transparently: %s", reason)
        attempt = stream.handle
        if isinstance(attempt, Attempt) and not same_connection:
            self._drop(attempt.connection)
        try:
            if same_connection and isinstance(attempt, Attempt) and attempt.connection.usable:
                connection = attempt.connection
            else:
                connection = await self._primary_connection()
        except UpgradeRefused as exc:
            await self._fall_back()
            stream.error(exc.code, "the provider now refuses WebSockets", retryable=True)
            return
        except UpstreamError as exc:
            stream.error(exc.code, exc.message, retryable=exc.retryable)
            return
        await self._submit(connection, stream)

    # -- connections ------------------------------------------------------------------------

    def _new_stream(self, request: TurnRequest) -> TurnStream:
        return TurnStream(
            request,
            stopper=self._stop,
            resender=self._resend,
            first_byte_timeout_s=self.config.first_byte_timeout_s,
            idle_timeout_s=self.config.idle_timeout_s,
        )

    async def _submit(self, connection: ResponsesConnection, stream: TurnStream) -> None:
        request = stream.request
        previous = request.previous_response_id
        chain = (
            stream.chain_allowed
            and previous is not None
            and (self.config.store or connection.last_response_id == previous)
        )
        body = self._encoder.create(
            request, model=self.config.model, profile=self._profile,
            store=self.config.store, chain=chain,
        )
        stream.chained = chain
        await connection.submit(body, stream)

    async def _primary_connection(self) -> ResponsesConnection:
        for _ in range(2):
            current = self._primary
            if current is not None and current.usable:
                return current
            if current is not None:
                self._primary = None
                current.retire_when_idle()
            spare = self._take_spare() if self._profile.keeps_spare else None
            if spare is not None:
                self._promote(spare)
                self._ensure_spare()
                continue
            return await self._start_primary_reopen()
        return await self._start_primary_reopen()

    async def _reconnect_and_submit(
        self, old: ResponsesConnection, successor: TurnStream
    ) -> TurnStream:
        self._drop(old)
        fresh = await self._open(warm=False)
        self._promote(fresh)
        self._ensure_spare()
        await self._submit(fresh, successor)
        return successor

    def _promote(self, connection: ResponsesConnection) -> None:
        """Make ``connection`` the primary; a previous one finishes its turn, then closes."""
        previous, self._primary = self._primary, connection
        if previous is not None and previous is not connection:
            previous.retire_when_idle()

    def _drop(self, connection: ResponsesConnection) -> None:
        connection.retire()
        if self._primary is connection:
            self._primary = None

    def _start_primary_reopen(self) -> asyncio.Task[ResponsesConnection]:
        if self._primary_task is None or self._primary_task.done():
            self._primary_task = self._background(self._reopen_primary())
        return self._primary_task

    async def _reopen_primary(self) -> ResponsesConnection:
        """Open and warm a new primary in the background, so the next turn finds it warm."""
        connection = await self._open(warm=True)
        self._promote(connection)
        return connection

    def _ensure_spare(self) -> None:
        if self._closed or not self._profile.keeps_spare:
            return
        task = self._spare_task
        if task is None or (task.done() and not self.spare_ready):
            self._spare_task = self._background(self._open(warm=True))

    def _take_spare(self) -> ResponsesConnection | None:
        if not self.spare_ready:
            return None
        assert self._spare_task is not None
        spare = self._spare_task.result()
        self._spare_task = None
        return spare

    def _on_lost(self, connection: ResponsesConnection) -> None:
        if self._closed or (connection.retired and not connection.faulted):
            return
        log.info("upstream socket closed (code %s)", connection.close_code)
        if connection is self._primary:
            self._primary = self._take_spare() if self._profile.keeps_spare else None
            if self._primary is None:
                self._start_primary_reopen()
        self._ensure_spare()

    def _on_aged(self, connection: ResponsesConnection) -> None:
        """``connection`` nears the provider's lifetime limit (60 minutes on OpenAI): warm its
        replacement now, in the background, so no turn waits for a handshake at the rollover.
        A turn running on the old socket finishes there; then the old socket closes."""
        if self._closed or not connection.alive:
            return
        if connection is self._primary:
            log.info("upstream socket is %.0f s old: warming its replacement", connection.age_s)
            self._start_primary_reopen()
        elif self._spare_task is not None and _result(self._spare_task) is connection:
            self._spare_task = None
            connection.retire()
            self._ensure_spare()

    async def _open(self, *, warm: bool) -> ResponsesConnection:
        """Open (and warm) a socket, retrying with jittered backoff on retryable failures."""
        delays = self.config.retry.delays()
        tries = 0
        while True:
            tries += 1
            try:
                return await self._open_once(warm=warm)
            except UpstreamError as exc:
                if isinstance(exc, UpgradeRefused) or not exc.retryable:
                    raise
                delay = next(delays, None)
                if delay is None:
                    raise UpstreamError(
                        PROVIDER_UNAVAILABLE,
                        f"provider unreachable after {tries} {'try' if tries == 1 else 'tries'} ({exc.message})",
                        retryable=True,
                    ) from None
                log.info("upstream open failed (%s); retrying in %.2f s", exc.code, delay)
                await asyncio.sleep(delay)

    async def _open_once(self, *, warm: bool) -> ResponsesConnection:
        connection = await ResponsesConnection.open(self.config, self._on_lost, self._on_aged)
        if warm:
            body = responses_warmup(
                model=self.config.model, instructions=self._warmup_instructions,
                store=self.config.store, edit_style=self.config.dialect,
            )
            try:
                # Bounded like the connect itself, so a server that takes the upgrade but
                # never answers is given up on within the retry budget.
                await connection.warm(body, self.config.connect_timeout_s)
            except BaseException:
                connection.retire()
                raise
        return connection

    async def _fall_back(self) -> None:
        if self._fallback is None:
            log.warning("WebSocket upgrade refused with 426: using HTTP/SSE for this session")
            self._fallback = ChatCompletionsClient(
                self.config, http_transport=self._http_transport
            )
            await self._fallback.connect()

    def _background(self, job: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.create_task(job)
        self._tasks.add(task)
        task.add_done_callback(self._settled)
        return task

    def _settled(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("background upstream open failed: %s", task.exception())

    def _check_open(self) -> None:
        if self._closed:
            raise UpstreamError(CLIENT_CLOSED, "the model client is closed")


def _result(task: asyncio.Task[ResponsesConnection]) -> ResponsesConnection | None:
    if task.done() and not task.cancelled() and task.exception() is None:
        return task.result()
    return None
