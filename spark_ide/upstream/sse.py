"""Chat Completions over HTTP/SSE (llama.cpp server, vLLM, Ollama, Cerebras, Groq).

One pooled ``httpx.AsyncClient`` with keep-alive per session, so a turn costs no handshake.
A turn is one streamed POST read by a pump task; cancel = cancel the pump, which closes the
HTTP stream (these servers stop generating when the client disconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import httpx
from httpx_sse import EventSource

from spark_ide import responses_protocol as protocol
from spark_ide.upstream.base import ModelClient
from spark_ide.upstream.config import ProviderConfig, http_base_url
from spark_ide.upstream.errors import (
    CLIENT_CLOSED,
    CONNECTION_LOST,
    PROTOCOL_ERROR,
    PROVIDER_UNAVAILABLE,
    TIMEOUT,
    UpstreamError,
    redact,
    status_code_error,
)
from spark_ide.upstream.events import Usage
from spark_ide.upstream.frames import parse_usage
from spark_ide.upstream.profiles import ProviderProfile, Transport, profile_for
from spark_ide.upstream.request import JSONObject, TurnRequest, chat_completion
from spark_ide.upstream.stream import TurnStream
from spark_ide.upstream.tool_calls import ChatToolCalls

log = logging.getLogger(__name__)

# Chat Completions' finish reasons, as the Responses ``incomplete_details`` reason.
_INCOMPLETE_REASONS = {"length": protocol.MAX_OUTPUT_TOKENS, "content_filter": protocol.CONTENT_FILTER}


class ChatCompletionsClient(ModelClient):
    def __init__(
        self,
        config: ProviderConfig,
        *,
        http_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._config = config
        self._profile = profile_for("openai-compatible", config.model)
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._http = httpx.AsyncClient(
            base_url=http_base_url(config.base_url),
            headers=headers,
            # No read timeout here: the stream's first-byte and idle timeouts govern.
            timeout=httpx.Timeout(config.connect_timeout_s, read=None),
            limits=httpx.Limits(max_keepalive_connections=4, keepalive_expiry=300.0),
            transport=http_transport,
        )
        self._pumps: dict[asyncio.Task[None], TurnStream] = {}
        self._closed = False

    @property
    def transport(self) -> Transport:
        return Transport.CHAT_SSE

    @property
    def model_name(self) -> str:
        return self._config.model

    @property
    def profile(self) -> ProviderProfile:
        return self._profile

    async def connect(self) -> None:
        """Open a pooled connection before the first turn (and find out if anyone is there)."""
        try:
            response = await self._http.get("/models")
            await response.aclose()
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from None

    async def start(self, request: TurnRequest) -> TurnStream:
        if self._closed:
            raise UpstreamError(CLIENT_CLOSED, "the model client is closed")
        stream = TurnStream(
            request,
            stopper=self._stop,
            resender=None,
            first_byte_timeout_s=self._config.first_byte_timeout_s,
            idle_timeout_s=self._config.idle_timeout_s,
        )
        body = chat_completion(request, model=self._config.model, profile=self._profile)
        pump = asyncio.create_task(self._pump(stream, body))
        self._pumps[pump] = stream
        pump.add_done_callback(self._forget)
        stream.handle = pump
        return stream

    async def steer(self, stream: TurnStream, request: TurnRequest) -> TurnStream:
        stream.detach()
        successor = await self.start(request)
        await self._stop(stream, True)
        return successor

    async def close(self) -> None:
        self._closed = True
        pumps = list(self._pumps.items())
        for pump, stream in pumps:
            stream.error(CLIENT_CLOSED, "the model client was closed", retryable=False)
            pump.cancel()
        await asyncio.gather(*(pump for pump, _ in pumps), return_exceptions=True)
        await self._http.aclose()

    def _forget(self, pump: asyncio.Task[None]) -> None:
        self._pumps.pop(pump, None)

    async def _stop(self, stream: TurnStream, abandon: bool) -> None:
        pump = stream.handle
        if isinstance(pump, asyncio.Task) and not pump.done():
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump

    async def _pump(self, stream: TurnStream, body: JSONObject) -> None:
        stream.mark_sent()
        try:
            async with self._http.stream("POST", "/chat/completions", json=body) as response:
                stream.mark_first_byte()
                if response.status_code != 200:
                    detail = (await response.aread()).decode("utf-8", "replace")[:300]
                    error = status_code_error(
                        response.status_code, _error_message(detail), key_label=self._config.key_label,
                    )
                    stream.error(error.code, self._redact(error.message),
                                 retryable=error.retryable)
                    return
                await self._read_events(stream, response)
        except httpx.TimeoutException as exc:
            stream.error(TIMEOUT, self._redact(str(exc) or "HTTP timeout"), retryable=True)
        except (httpx.ConnectError, httpx.UnsupportedProtocol) as exc:
            error = self._unavailable(exc)
            stream.error(error.code, error.message, retryable=True)
        except httpx.TransportError as exc:
            stream.error(CONNECTION_LOST, self._redact(f"stream broke: {exc}"), retryable=True)

    async def _read_events(self, stream: TurnStream, response: httpx.Response) -> None:
        finish: str | None = None
        usage: Usage | None = None
        done = False
        calls = ChatToolCalls(stream)
        async for event in EventSource(response).aiter_sse():
            stream.mark_first_byte()  # activity: keeps the idle timeout from firing
            if done:
                # The turn is over; the body is read to its end all the same, or httpx closes
                # the pooled connection and the next turn pays a new handshake.
                continue
            if event.data.strip() == "[DONE]":
                done = True
                self._finish(stream, calls, finish, usage)
                continue
            try:
                chunk = json.loads(event.data)
            except ValueError:
                stream.error(PROTOCOL_ERROR, "malformed SSE data (not JSON)", retryable=True)
                return
            if not isinstance(chunk, dict):
                stream.error(PROTOCOL_ERROR, "malformed SSE data (not an object)", retryable=True)
                return
            if "error" in chunk:
                code, message = _chunk_error(chunk["error"])
                stream.error(code, self._redact(message), retryable=False)
                return
            if isinstance(chunk.get("id"), str):
                stream.response_id = chunk["id"]
            finish = _apply_choices(stream, calls, chunk.get("choices")) or finish
            usage = parse_usage(chunk.get("usage")) or usage
        if done:
            return
        if finish is None:
            stream.error(CONNECTION_LOST, "stream ended without [DONE]", retryable=True)
            return
        self._finish(stream, calls, finish, usage)

    @staticmethod
    def _finish(stream: TurnStream, calls: ChatToolCalls, finish: str | None, usage: Usage | None) -> None:
        """``finish_reason`` ``stop`` or ``tool_calls`` completes the answer (with its calls)."""
        calls.finish()
        if finish in _INCOMPLETE_REASONS:
            stream.incomplete(_INCOMPLETE_REASONS[finish], usage)
        else:
            stream.complete(usage)

    def _unavailable(self, exc: Exception) -> UpstreamError:
        detail = self._redact(f"{type(exc).__name__}: {exc}")
        return UpstreamError(PROVIDER_UNAVAILABLE, f"cannot reach {self._http.base_url}: {detail}",
                             retryable=True)

    def _redact(self, text: str) -> str:
        return redact(text, self._config.secrets)


def _apply_choices(stream: TurnStream, calls: ChatToolCalls, choices: object) -> str | None:
    finish: str | None = None
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            stream.delta(delta["content"])
        if isinstance(delta, dict) and "tool_calls" in delta:
            calls.feed(delta["tool_calls"])
        if isinstance(choice.get("finish_reason"), str):
            finish = choice["finish_reason"]
    return finish


def _chunk_error(raw: object) -> tuple[str, str]:
    if isinstance(raw, dict):
        code = raw.get("code") or raw.get("type") or "error"
        return str(code), str(raw.get("message", ""))
    return "error", str(raw)


def _error_message(body: str) -> str:
    """The provider's message from an error body, else the (clipped) body itself."""
    with contextlib.suppress(ValueError):
        data = json.loads(body)
        if isinstance(data, dict):
            error = data.get("error", data)
            if isinstance(error, dict) and error.get("message"):
                return str(error["message"])
            if isinstance(data.get("detail"), str):
                return str(data["detail"])
    return body
