"""Opening a Responses WebSocket: the upgrade, its headers, and what a refusal means."""

from __future__ import annotations

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from spark_ide.logsafe import redacting_logger
from spark_ide.upstream.config import BETA_HEADER, ProviderConfig
from spark_ide.upstream.errors import (
    PROVIDER_UNAVAILABLE,
    UpgradeRefused,
    UpstreamError,
    redact,
    status_code_error,
)

MAX_INCOMING_BYTES = 16 * 1024 * 1024

_WIRE_LOG = redacting_logger("spark_ide.upstream.wire")
# Frames received and not yet read (high, low): reading pauses above the first and resumes at
# the second. The connection's reader hands each frame on to its turn's stream at once, so
# this bounds only a burst that arrives while the event loop is busy elsewhere; websockets'
# default (16, 4) paused and resumed the socket (two epoll calls) for every burst of small
# frames, 4-6 % of a busy server's event loop with 20 rooms streaming.
FRAMES_QUEUED = (256, 64)


async def dial(config: ProviderConfig) -> ClientConnection:
    """An open socket to the provider; :class:`UpgradeRefused` for HTTP 426 (use HTTP),
    another :class:`UpstreamError` when no socket can be had."""
    headers: dict[str, str] = {}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    if config.profile.beta_header:
        headers[BETA_HEADER[0]] = BETA_HEADER[1]
    try:
        return await connect(
            config.websocket_url,
            additional_headers=headers,
            open_timeout=config.connect_timeout_s,
            ping_interval=config.ping_interval_s,
            ping_timeout=config.ping_timeout_s,
            max_size=MAX_INCOMING_BYTES,
            max_queue=FRAMES_QUEUED,
            compression=None,  # per-token frames are tiny; deflate only adds latency
            proxy=None,
            logger=_WIRE_LOG,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        if status == 426:
            raise UpgradeRefused(status) from None
        raise status_code_error(status, "WebSocket upgrade refused", key_label=config.key_label) from None
    except (OSError, TimeoutError, InvalidHandshake, ConnectionClosed) as exc:
        detail = redact(f"{type(exc).__name__}: {exc}", config.secrets)
        raise UpstreamError(
            PROVIDER_UNAVAILABLE, f"cannot open {config.websocket_url}: {detail}", retryable=True,
        ) from None
