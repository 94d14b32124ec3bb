"""Session sockets written pre-framed under Daphne (issue 26: one room, hundreds of watchers).

Through the ASGI ``send`` every message to every socket goes through Daphne's ``handle_reply``
(a coroutine), its protocol's ``serverSend`` (the text encoded to UTF-8 again), autobahn's
``sendMessage`` (framing, counters, a debug line built per call) and one Twisted write: per
frame and per socket. A room's event is the same bytes for all of its sockets, so
``live.outbox`` frames it once (``live.wsframe``) and hands each socket what waits for it in
one list; ``DaphneWriter`` writes that list to the connection at once (to its socket when
Twisted holds nothing for it, else to Twisted's buffer behind what waits there), where
autobahn's own frames (pings, the close) go too, in the order written.

The seam is the ``send`` Daphne gives the application: ``functools.partial(server.handle_reply,
protocol)``, reached directly (token sockets) or through Channels' session middleware (cookie
sockets: its ``send`` acts on HTTP responses only). Anything else (another ASGI server, the
test communicator, a wrapper we do not know) gets no writer and keeps the ASGI ``send``.
So does a socket whose frames autobahn would build differently: ``permessage-deflate``
negotiated (each socket compresses with its own context; Daphne never offers it), masked or
fragmented server frames, autobahn's frame or octet logging, or a socket not open.

What is not done on this path: autobahn's traffic counters (Daphne reads none) and its and
Daphne's per-message debug lines. A message over Daphne's ``--websocket-max-message-size``
is written (autobahn refuses to send one, raising into the sender: the socket's outbox would
stop; the limit is meant for what clients send). ``SPARK_WS_DIRECT_WRITES=0`` turns it off.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_told: set[str] = set()  # what this process said about its sockets (once each)


def _once(key: str, message: str, *args: object) -> None:
    if key not in _told:
        _told.add(key)
        log.info(message, *args)


def daphne_protocol(send: Callable[..., Any]) -> Any | None:
    """The Daphne WebSocket protocol behind the ASGI ``send`` (module docstring), or None."""
    server_module, protocol_module = sys.modules.get("daphne.server"), sys.modules.get("daphne.ws_protocol")
    if server_module is None or protocol_module is None:
        return None  # not running under Daphne (importing it would install its reactor)
    sessions = sys.modules.get("channels.sessions")
    for _ in range(3):
        if isinstance(send, functools.partial):
            owner = getattr(send.func, "__self__", None)
            if (
                isinstance(owner, server_module.Server) and getattr(send.func, "__name__", "") == "handle_reply"
                and len(send.args) == 1 and not send.keywords
                and isinstance(send.args[0], protocol_module.WebSocketProtocol)
            ):
                return send.args[0]
            return None
        owner = getattr(send, "__self__", None)
        if sessions is not None and isinstance(owner, sessions.InstanceSessionWrapper) and (
            getattr(send, "__name__", "") == "send"
        ):
            send = owner.real_send  # channels' session wrapper: it acts on HTTP responses only
            continue
        return None
    return None


def unusual(protocol: Any) -> str:
    """Why autobahn would frame this socket's messages otherwise ("" when it would not)."""
    if protocol.state != protocol.STATE_OPEN:
        return "the socket is not open"
    if getattr(protocol, "_perMessageCompress", None) is not None:
        return "permessage-deflate was negotiated"
    if protocol.maskServerFrames or protocol.autoFragmentSize or not protocol.factory.isServer:
        return "autobahn masks or fragments its frames"
    if protocol.logFrames or protocol.logOctets or protocol.trackTimings:
        return "autobahn logs or times its frames"
    return ""


def _plain_tcp(transport: Any) -> bool:
    """Twisted's own TCP connection (not TLS, not a test's transport): its socket can be sent to."""
    tcp = sys.modules.get("twisted.internet.tcp")
    return tcp is not None and isinstance(transport, tcp.Connection) and hasattr(transport, "writeSomeData")


class DaphneWriter:
    """``live.outbox.Writer`` over a Daphne connection: pre-framed frames, one write.

    On a plain TCP connection whose Twisted buffer is empty (a reader that keeps up) the bytes
    go to the socket at once (Twisted's ``writeSomeData``, what its own write does once the loop
    finds the socket writable) and only what the kernel did not take is left to Twisted: no
    registering for writability and no callback per socket per round. Else (data already
    buffered, TLS, closing) one ``writeSequence``, behind what waits: the order is kept."""

    __slots__ = ("_open", "_tcp", "connections", "protocol")

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.connections: dict[Any, dict[str, Any]] = protocol.server.connections  # Daphne's, by protocol
        self._open = protocol.STATE_OPEN
        self._tcp = _plain_tcp(protocol.transport)

    def write(self, frames: list[bytes]) -> None:
        protocol = self.protocol
        if protocol.state != self._open:
            return  # closing or closed: autobahn sends no message then, nor Daphne
        connection = self.connections.get(protocol)
        if connection is None or connection.get("disconnected"):
            return
        if protocol.send_queue:  # autobahn holds data back to write in order: behind it
            for frame in frames:
                protocol.sendData(frame)
            return
        transport = protocol.transport
        if (
            self._tcp and transport.connected and not transport.disconnecting and not transport.dataBuffer
            and not transport._tempDataBuffer
        ):
            data = frames[0] if len(frames) == 1 else b"".join(frames)
            sent = transport.writeSomeData(data)
            if not isinstance(sent, int) or sent < 0:
                sent = 0  # the connection is lost: Twisted's own write meets it and closes it
            if sent < len(data):
                transport.write(data[sent:])
            return
        transport.writeSequence(frames)


def daphne_writer(send: Callable[..., Any]) -> DaphneWriter | None:
    """A writer for the socket behind ``send``, once it is accepted; None: ``send`` stays its way."""
    protocol = daphne_protocol(send)
    if protocol is None:
        return None
    why = unusual(protocol)
    if why:
        _once(why, "a session socket is written through Daphne's send, frame by frame: %s", why)
        return None
    _once("on", "session sockets are written pre-framed: each event framed once for every socket")
    return DaphneWriter(protocol)
