"""The WebSocket server: path and bearer checks on the upgrade, one Connection per socket."""

from __future__ import annotations

import hmac
import logging
from http import HTTPStatus
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from spark_ide.logsafe import redacting_logger
from spark_ide.modelserver.config import RESPONSES_PATH, ServerConfig
from spark_ide.modelserver.connection import Connection
from spark_ide.modelserver.engine import Engine
from spark_ide.modelserver.request_log import RequestLog

__all__ = ["ModelServer", "ServerConfig"]

log = logging.getLogger(__name__)
# websockets logs the handshake headers at DEBUG: the client's key must not reach a log.
_WIRE_LOG = redacting_logger("spark_ide.modelserver.wire")

# Frames above max_frame_bytes get an ``error`` event and the socket stays open; this
# multiple is where websockets itself refuses the frame (close 1009), bounding memory.
HARD_FRAME_LIMIT_FACTOR = 4


CLOSE_TIMEOUT_S = 1.0


class ModelServer:
    """Serves the OpenAI Responses WebSocket protocol at ``/v1/responses`` for one engine."""

    def __init__(
        self, engine: Engine, config: ServerConfig | None = None, request_log: RequestLog | None = None
    ) -> None:
        self.engine = engine
        self.config = config or ServerConfig()
        self.request_log = request_log  # set: every response.create is kept there
        self._server: Server | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model server is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        host = self.config.host
        if ":" in host:
            host = f"[{host}]"
        return f"ws://{host}:{self.port}{RESPONSES_PATH}"

    async def start(self) -> None:
        """Load the engine (once), then listen."""
        await self.engine.load()
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=self._check_upgrade,
            max_size=self.config.max_frame_bytes * HARD_FRAME_LIMIT_FACTOR,
            logger=_WIRE_LOG,
            # On shutdown each open connection gets this long to answer our close frame (the
            # default, 10 s, held SIGTERM up that long behind a peer that no longer reads).
            close_timeout=CLOSE_TIMEOUT_S,
        )
        log.info("model server listening on %s", self.url)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await self.engine.close()

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def _check_upgrade(self, connection: ServerConnection, request: Request) -> Response | None:
        if urlsplit(request.path).path.rstrip("/") != RESPONSES_PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "Not found: use /v1/responses\n")
        key = self.config.api_key
        if key is not None:
            offered = request.headers.get("Authorization", "")
            if not hmac.compare_digest(offered.encode(), f"Bearer {key}".encode()):
                return connection.respond(HTTPStatus.UNAUTHORIZED, "Invalid or missing API key\n")
        return None

    async def _handle(self, socket: ServerConnection) -> None:
        await Connection(socket, self.engine, self.config, self.request_log).serve()
