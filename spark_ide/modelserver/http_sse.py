"""Chat Completions over HTTP/SSE for any engine (the transport the wan benchmark compares).

What llama.cpp's server, vLLM or Ollama speak, reduced to what a streaming client needs:

* ``POST /v1/chat/completions`` ``{"model", "messages": [{"role", "content"}], "stream"?,
  "max_tokens"? / "max_completion_tokens"?, "temperature"?}``: with ``"stream": true`` a
  ``text/event-stream`` (chunked) of ``chat.completion.chunk`` objects, ``data: [DONE]`` last;
  otherwise one ``chat.completion`` object. Function tool calls stream as ``tool_calls``
  deltas; assistant ``tool_calls`` and ``role: tool`` messages carry a tool loop
  (:mod:`spark_ide.modelserver.chat`);
* ``POST /v1/responses``: the Responses API over HTTP, the same events as the WebSocket
  (``event: <type>`` / ``data: <json>`` pairs) when ``"stream": true``, else the final
  ``response`` object; stateless (``previous_response_id`` is not found: send the whole
  history), where the Codex CLI goes with ``supports_websockets = false``;
* ``GET /v1/models``: the model list.

HTTP/1.1 with keep-alive (``h11``): a client reuses one connection for every turn, as the
Chat Completions pool of ``spark_ide.upstream.sse`` does. The engine is stopped when the
client closes the connection mid-stream (how these servers cancel). A request the engine
refuses before its first token (an unknown script, a bad directive) gets a JSON error with
status 400 instead of a stream; a failure after the stream began ends it with an ``error``
chunk and ``[DONE]``. With ``api_key`` set, requests need ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from types import TracebackType
from typing import Any, Self

import h11

from spark_ide.modelserver.chat import ChatAnswer, Chunks, chat_usage, next_delta, parse_messages
from spark_ide.modelserver.config import RESPONSES_PATH
from spark_ide.modelserver.engine import CancelToken, Engine, EngineError, Job, Output, Tally
from spark_ide.modelserver.errors import ProtocolError, bad_value, missing, wrong_type
from spark_ide.modelserver.request import decode_object, parse_create, previous_not_found, resolve_job
from spark_ide.modelserver.request_log import Received, RequestLog
from spark_ide.modelserver.responder import Responder
from spark_ide.modelserver.tool_items import check_pairing
from spark_ide.modelserver.wire import ResponseRecord

log = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
MAX_BODY_BYTES = 8 * 1024 * 1024
_READ_BYTES = 65536


class SseModelServer:
    """Serves ``engine`` over HTTP/SSE on ``host:port`` (0: a free port, read ``port``)."""

    def __init__(self, engine: Engine, *, host: str = "127.0.0.1", port: int = 0, model: str = "smollm2",
                 api_key: str | None = None, request_log: RequestLog | None = None) -> None:
        self.engine = engine
        self.request_log = request_log  # set: every chat request is kept there
        self.host = host
        self.model = model
        self.api_key = api_key
        self._port = port
        self._server: asyncio.Server | None = None
        self._handlers: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self.connections = 0  # accepted so far (a keep-alive client makes one)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the SSE server is not started")
        return int(self._server.sockets[0].getsockname()[1])

    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> None:
        await self.engine.load()
        self._server = await asyncio.start_server(self._accept, self.host, self._port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # Cut the connections: each handler sees its socket end and returns (a cancelled
            # handler task would be reported by asyncio's stream callback).
            for writer in self._handlers.values():
                writer.transport.abort()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        await self.engine.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers[task] = writer
        self.connections += 1
        try:
            await _Connection(self, reader, writer).serve()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: nothing to answer
        finally:
            self._handlers.pop(task, None)
            writer.transport.abort()


class _Disconnected(ConnectionError):
    """The client closed the connection while its answer streamed."""


class _Connection:
    """One keep-alive HTTP connection: requests one after another."""

    def __init__(self, server: SseModelServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)

    async def serve(self) -> None:
        while True:
            try:
                event = await self._next_event()
                if isinstance(event, h11.ConnectionClosed):
                    return
                assert isinstance(event, h11.Request)
                body = await self._body()
                await self._route(event, body)
            except h11.RemoteProtocolError as exc:
                if self.http.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    await self._json(exc.error_status_hint, _error_body("invalid_request", str(exc)))
                return
            except _Disconnected:
                return
            if self.http.our_state is h11.MUST_CLOSE or self.http.their_state is h11.MUST_CLOSE:
                return
            self.http.start_next_cycle()

    async def _next_event(self) -> Any:
        while True:
            event = self.http.next_event()
            if event is h11.NEED_DATA:
                self.http.receive_data(await self.reader.read(_READ_BYTES))
                continue
            return event

    async def _body(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            event = await self._next_event()
            if isinstance(event, h11.EndOfMessage):
                return b"".join(parts)
            if isinstance(event, h11.ConnectionClosed):
                raise _Disconnected
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_BODY_BYTES:
                    raise h11.RemoteProtocolError("request body too large", error_status_hint=413)
                parts.append(bytes(event.data))

    async def _route(self, request: h11.Request, body: bytes) -> None:
        path = request.target.decode("latin-1").split("?", 1)[0]
        method = request.method.decode("latin-1")
        if not self._authorised(request):
            await self._json(401, _error_body("invalid_api_key", "Missing or wrong bearer token.",
                                              kind="authentication_error"))
        elif path == MODELS_PATH and method == "GET":
            model = {"id": self.server.model, "object": "model", "created": 0, "owned_by": "spark-ide"}
            await self._json(200, {"object": "list", "data": [model]})
        elif path == CHAT_PATH and method == "POST":
            await self._chat(body)
        elif path == RESPONSES_PATH and method == "POST":
            await self._responses(body)
        elif path in (MODELS_PATH, CHAT_PATH, RESPONSES_PATH):
            await self._json(405, _error_body("method_not_allowed", f"{method} is not allowed on {path}."))
        else:
            await self._json(404, _error_body("not_found", f"No route {path}."))

    def _authorised(self, request: h11.Request) -> bool:
        key = self.server.api_key
        if key is None:
            return True
        for name, value in request.headers:
            if name == b"authorization":
                return hmac.compare_digest(value, f"Bearer {key}".encode())
        return False

    # -- chat completions --------------------------------------------------------------------

    async def _chat(self, body: bytes) -> None:
        received: Received | None = None
        try:
            data = decode_object(body, "body")
            if self.server.request_log is not None:
                received = self.server.request_log.record("chat", data)
            job, stream = self._job(data)
        except ProtocolError as exc:
            if received is not None:
                received.error = exc.body()
            await self._json(exc.status, {"error": exc.body()})
            return
        tally = Tally()
        cancel = CancelToken()
        answer = ChatAnswer()
        outputs = self.server.engine.generate(job, tally, cancel)
        async with aclosing(outputs):
            try:
                try:
                    first = await next_delta(outputs, answer)
                except EngineError as exc:  # refused before any text: a plain error answer
                    error = _error_body(exc.code, exc.message)
                    if received is not None:
                        received.error = error["error"]
                    await self._json(400, error)
                    return
                chunks = Chunks(self.server.model)
                if received is not None:
                    received.response_id = chunks.id
                if stream:
                    await self._stream(chunks, first, outputs, answer, tally, cancel)
                else:
                    await self._whole(chunks, outputs, answer, tally)
            finally:
                cancel.cancel()

    def _job(self, data: dict[str, Any]) -> tuple[Job, bool]:
        model = data.get("model")
        if model is None:
            raise missing("model")
        if model != self.server.model:
            raise ProtocolError("model_not_found", f"The model {model!r} does not exist.", param="model", status=404)
        if "messages" not in data:
            raise missing("messages")
        messages = parse_messages(data["messages"])
        check_pairing(messages, param="messages")
        limit = data.get("max_completion_tokens", data.get("max_tokens"))
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise bad_value("max_tokens", "must be an integer >= 1.")
        temperature = data.get("temperature")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)):
            raise wrong_type("temperature", "a number")
        stream = data.get("stream", False)
        if not isinstance(stream, bool):
            raise wrong_type("stream", "a boolean")
        job = Job(messages=messages, max_output_tokens=limit,
                  temperature=None if temperature is None else float(temperature))
        return job, stream

    async def _stream(
        self, chunks: Chunks, first: dict[str, Any] | None, outputs: AsyncGenerator[Output, None],
        answer: ChatAnswer, tally: Tally, cancel: CancelToken,
    ) -> None:
        await self._open_stream()
        watcher = asyncio.create_task(self._watch_disconnect(cancel))
        try:
            await self._event(chunks.make({"role": "assistant", "content": ""}))
            delta = first
            try:
                while delta is not None:
                    await self._event(chunks.make(delta))
                    delta = await next_delta(outputs, answer)
            except EngineError as exc:
                await self._event({"error": {"code": exc.code, "message": exc.message}})
            else:
                if cancel.is_set() and watcher.done():
                    raise _Disconnected
                finish = answer.finish_reason(tally.hit_token_limit)
                await self._event(chunks.make({}, finish=finish, usage=chat_usage(tally)))
            # One write: a client reading up to the end of the body finds it with [DONE].
            await self._send(h11.Data(data=b"data: [DONE]\n\n"), h11.EndOfMessage())
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _open_stream(self) -> None:
        await self._send(h11.Response(status_code=200, headers=[
            (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
            (b"transfer-encoding", b"chunked"),
        ]))

    # -- responses -----------------------------------------------------------------------------

    async def _responses(self, body: bytes) -> None:
        """``POST /v1/responses``: one response, its events as SSE (``stream: true``) or its
        final ``response`` object. Stateless, like OpenAI with ``store: false``: a
        ``previous_response_id`` is not found; send the whole history instead."""
        received: Received | None = None
        try:
            data = decode_object(body, "body")
            if self.server.request_log is not None:
                received = self.server.request_log.record("http", data)
            request = parse_create(data)
            if request.previous_response_id is not None:
                raise previous_not_found(request.previous_response_id)
            job, _ = resolve_job(request, (self.server.model,), ())
        except ProtocolError as exc:
            if received is not None:
                received.error = exc.body()
            await self._json(exc.status, {"error": exc.body()})
            return
        record = ResponseRecord(request)
        if received is not None:
            received.response_id = record.id
        events: list[dict[str, Any]] = []

        async def keep(event: dict[str, Any]) -> None:
            events.append(event)

        if data.get("stream") is not True:
            await Responder(record, job, self.server.engine, keep).run()
            await self._json(200, events[-1]["response"])
            return
        await self._open_stream()
        responder = Responder(record, job, self.server.engine, self._sse_event)
        watcher = asyncio.create_task(self._watch_disconnect(responder.cancel))
        try:
            await responder.run()
            await self._send(h11.EndOfMessage())
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _sse_event(self, event: dict[str, Any]) -> None:
        payload = json.dumps(event, separators=(",", ":")).encode()
        await self._send(h11.Data(data=b"event: " + event["type"].encode() + b"\ndata: " + payload + b"\n\n"))

    async def _watch_disconnect(self, cancel: CancelToken) -> None:
        """While an answer streams, the client may only close: EOF stops the engine. Bytes it
        sends early (its next request) are kept for after this answer."""
        while True:
            data = await self.reader.read(_READ_BYTES)
            if not data:
                cancel.cancel()
                return
            self.http.receive_data(data)

    async def _whole(
        self, chunks: Chunks, outputs: AsyncGenerator[Output, None], answer: ChatAnswer, tally: Tally
    ) -> None:
        try:
            while await next_delta(outputs, answer) is not None:
                pass
        except EngineError as exc:
            await self._json(500, _error_body(exc.code, exc.message))
            return
        completion = {
            "id": chunks.id, "object": "chat.completion", "created": chunks.created,
            "model": self.server.model,
            "choices": [{"index": 0, "message": answer.message(),
                         "finish_reason": answer.finish_reason(tally.hit_token_limit)}],
            "usage": chat_usage(tally),
        }
        await self._json(200, completion)

    # -- writing -----------------------------------------------------------------------------

    async def _event(self, payload: dict[str, Any]) -> None:
        await self._send(h11.Data(data=b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"))

    async def _json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        await self._send(h11.Response(status_code=status, headers=[
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        ]), h11.Data(data=body), h11.EndOfMessage())

    async def _send(self, *events: Any) -> None:
        data = b"".join(self.http.send(event) or b"" for event in events)
        if data:
            if self.writer.is_closing():
                raise _Disconnected
            self.writer.write(data)
            try:
                await self.writer.drain()
            except ConnectionError:
                raise _Disconnected from None


def _error_body(code: str, message: str, *, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"type": kind, "code": code, "message": message, "param": None}}
