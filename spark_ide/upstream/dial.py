"""Opening a Responses WebSocket: the upgrade, its headers, and what a refusal means."""

from __future__ import annotations

import logging
from collections.abc import Callable

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.protocol import Event, State

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
log = logging.getLogger(__name__)


_TEXT, _PING, _PONG = 0x1, 0x9, 0xA


class FrameSocket(ClientConnection):
    """A client socket that hands each whole text message to ``on_message`` as it is parsed,
    in the protocol's own callback, when one is set: no queue, no ``recv`` and no task switch
    per frame (a model writes a frame per token). What it cannot hand on so (a fragmented
    message, a binary one, text that is not UTF-8, anything before ``on_message`` is set, and
    every message after one of those until ``recv`` has taken it) takes websockets' own way,
    to the reader's ``recv``, which calls ``taken`` for each: messages keep their order.

    The steady state parses the frames itself (``_take_frames``): whole unfragmented text
    frames, pings (answered) and pongs (acknowledged), the frames of an open socket. The first
    frame of any other kind (a close, a fragment, a binary or oversized frame, reserved bits,
    a mask, text that is not UTF-8), and everything after it, go to websockets' parser, which
    handles them as it always does; it takes over at a frame boundary and keeps the socket
    from then on. websockets' generator parser and its ``Frame`` objects cost ~6 us a frame."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.on_message: Callable[[str], None] | None = None
        self._queued = 0  # whole messages given to websockets' queue and not yet taken
        self._fragmented = False  # a message given to the queue has more frames to come
        # None: websockets parses (until its own buffer is empty at a moment ``on_message`` is
        # set); True: ``_take_frames`` does; False: websockets does, for good.
        self._parsing: bool | None = None
        self._partial = bytearray()  # the start of a frame ``_take_frames`` has not all of yet

    def data_received(self, data: bytes) -> None:
        if self._parsing is None and self._may_parse():
            self._parsing = True
        if self._parsing:
            self._take_frames(data)
        else:
            super().data_received(data)

    def _in_order(self) -> bool:
        """A whole message may go to ``on_message`` now: nothing waits in websockets' queue."""
        return self.on_message is not None and self.response is not None and not self._queued and not self._fragmented

    def _may_parse(self) -> bool:
        """websockets is between frames with nothing waiting: the frames may be parsed here."""
        if not self._in_order():
            return False
        buffered = getattr(getattr(self.protocol, "reader", None), "buffer", None)  # its stream's
        return buffered is not None and len(buffered) == 0 and self.protocol.state is State.OPEN

    def _take_frames(self, data: bytes) -> None:
        partial = self._partial
        if partial:
            partial += data
            buffer: bytes | bytearray = partial
        else:
            buffer = data
        size, at = len(buffer), 0
        while size - at >= 2:
            first, second = buffer[at], buffer[at + 1]
            length, start = second & 0x7F, at + 2
            if length == 126:
                if size - at < 4:
                    break
                length, start = int.from_bytes(buffer[at + 2 : at + 4], "big"), at + 4
            elif length == 127:
                if size - at < 10:
                    break
                length, start = int.from_bytes(buffer[at + 2 : at + 10], "big"), at + 10
            opcode = first & 0x0F
            if (
                first & 0xF0 != 0x80 or second & 0x80 or length > MAX_INCOMING_BYTES  # FIN only, unmasked
                or (opcode != _TEXT and (opcode not in (_PING, _PONG) or length > 125))
            ):
                self._hand_over(buffer[at:])
                return
            end = start + length
            if end > size:
                break
            payload = bytes(buffer[start:end])
            if opcode == _TEXT:
                try:
                    text = payload.decode()
                except UnicodeDecodeError:
                    self._hand_over(buffer[at:])
                    return
                at = end
                self._handle(text)
            elif opcode == _PING:
                at = end
                self.protocol.send_pong(payload)
                self.send_data()
            else:
                at = end
                self.acknowledge_pings(payload)
        if buffer is partial:
            del partial[:at]
        elif at < size:
            partial += buffer[at:]

    def _hand_over(self, rest: bytes | bytearray) -> None:
        """websockets parses from here on, starting with ``rest`` (a frame's start)."""
        self._parsing = False
        data = bytes(rest)
        self._partial = bytearray()
        super().data_received(data)

    def _handle(self, text: str) -> None:
        handler = self.on_message
        assert handler is not None
        try:
            handler(text)
        except Exception:
            log.exception("an upstream message's handler failed: dropping the socket")
            self.transport.abort()

    def taken(self) -> None:
        """The reader took a message from ``recv``."""
        self._queued -= 1

    def process_event(self, event: Event) -> None:
        if isinstance(event, Frame) and event.opcode is Opcode.TEXT and event.fin and self._in_order():
            try:
                text = str(event.data, "utf-8")
            except UnicodeDecodeError:
                pass  # websockets' own way fails the connection (1007)
            else:
                self._handle(text)
                return
        if isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            self._fragmented = not event.fin
            self._queued += event.fin
        super().process_event(event)


async def dial(config: ProviderConfig) -> FrameSocket:
    """An open socket to the provider; :class:`UpgradeRefused` for HTTP 426 (use HTTP),
    another :class:`UpstreamError` when no socket can be had."""
    headers: dict[str, str] = {}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    if config.profile.beta_header:
        headers[BETA_HEADER[0]] = BETA_HEADER[1]
    try:
        socket = await connect(
            config.websocket_url,
            create_connection=FrameSocket,
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
    assert isinstance(socket, FrameSocket)
    return socket
