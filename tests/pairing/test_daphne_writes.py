"""Session sockets written pre-framed under Daphne (``pairing.daphne_writes``, ``live.wsframe``).

The frames are autobahn's own, byte for byte; the writer finds Daphne's protocol behind the
ASGI ``send`` (directly or through Channels' session middleware) and nothing else; a socket
whose frames autobahn would build otherwise (permessage-deflate) keeps the ASGI ``send``;
and end to end, under a real Daphne, every page gets every event, in order, and the document.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from autobahn.twisted import websocket as autobahn_twisted
from autobahn.websocket import compress
from autobahn.websocket.protocol import PreparedMessage
from channels.sessions import InstanceSessionWrapper
from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol
from twisted.internet import testing
from websockets.asyncio.client import connect

from benchmarks.pairing.stack import Stack
from spark_ide.live.wsframe import binary_frame, text_frame, ws_frame
from spark_ide.pairing.daphne_writes import DaphneWriter, daphne_protocol, unusual
from tests.support.peer import Peer, say

# Untyped libraries: reached through Any.
AUTOBAHN: Any = autobahn_twisted
COMPRESS: Any = compress
TWISTED_TESTING: Any = testing

HANDSHAKE = (
    b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:9\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
)


def accept_deflate(offers: list[Any]) -> Any:
    return next((COMPRESS.PerMessageDeflateOfferAccept(o) for o in offers
                 if isinstance(o, COMPRESS.PerMessageDeflateOffer)), None)


def opened(*, deflate: bool = False) -> tuple[Any, Any]:
    """A real autobahn server protocol after a real handshake (a client offering compression),
    over a transport that keeps what is written."""
    factory = AUTOBAHN.WebSocketServerFactory("ws://127.0.0.1:9")
    factory.protocol = AUTOBAHN.WebSocketServerProtocol
    if deflate:
        factory.setProtocolOptions(perMessageCompressionAccept=accept_deflate)
    protocol = factory.buildProtocol(None)
    transport = TWISTED_TESTING.StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(HANDSHAKE)
    assert protocol.state == protocol.STATE_OPEN
    transport.clear()
    protocol.server = SimpleNamespace(connections={protocol: {}})  # Daphne's table of its connections
    return protocol, transport


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65_535, 65_536, 70_000])
@pytest.mark.parametrize("binary", [False, True])
def test_a_frame_is_autobahns_byte_for_byte(size: int, binary: bool) -> None:
    payload = bytes(i % 251 for i in range(size))
    expected = PreparedMessage(payload, binary, applyMask=False, doNotCompress=True).payloadHybi
    assert ws_frame(payload, binary=binary) == expected


def test_what_the_writer_writes_is_what_autobahn_would_send() -> None:
    ours, ours_out = opened()
    theirs, theirs_out = opened()
    assert unusual(ours) == ""  # the client offered compression; this server does not take it
    messages: list[tuple[bytes, bool]] = [
        (json.dumps({"type": "turn.delta", "text": "héllo"}, ensure_ascii=False).encode(), False),
        (b"\x00\x01\x02" * 100, True), (b"x" * 70_000, False),
    ]
    DaphneWriter(ours).write([
        text_frame(payload.decode()) if not binary else binary_frame(payload) for payload, binary in messages
    ])
    for payload, binary in messages:
        theirs.sendMessage(payload, isBinary=binary)
    assert ours_out.value() == theirs_out.value()


def test_nothing_is_written_once_the_socket_closes_or_daphne_let_it_go() -> None:
    protocol, out = opened()
    writer = DaphneWriter(protocol)
    protocol.server.connections[protocol]["disconnected"] = 1.0
    writer.write([text_frame("{}")])
    assert out.value() == b""
    del protocol.server.connections[protocol]["disconnected"]
    protocol.sendClose(code=1000)
    out.clear()
    writer.write([text_frame("{}")])
    assert out.value() == b""


def test_a_socket_that_negotiated_compression_is_framed_by_autobahn() -> None:
    protocol, _ = opened(deflate=True)
    assert unusual(protocol) == "permessage-deflate was negotiated"


def test_the_writer_finds_daphnes_protocol_and_nothing_else() -> None:
    server = Server(application=None, endpoints=["tcp:port=0:interface=127.0.0.1"])  # not started
    protocol = WebSocketProtocol()
    send = functools.partial(server.handle_reply, protocol)
    assert daphne_protocol(send) is protocol
    # A cookie socket: Channels' session middleware wraps the send (it acts on HTTP responses).
    wrapper = InstanceSessionWrapper({"type": "websocket", "cookies": {}}, send)
    assert daphne_protocol(wrapper.send) is protocol

    async def other_server(message: dict[str, Any]) -> None:  # another ASGI server, a test's communicator
        pass

    assert daphne_protocol(other_server) is None
    assert daphne_protocol(functools.partial(other_server)) is None
    assert daphne_protocol(functools.partial(server.handle_reply, object())) is None


# -- end to end: a real Daphne, real sockets ------------------------------------------------

CODE = "".join(f"def step_{i}(value):\n    return value * {i}\n\n" for i in range(12))
ANSWER = (
    " ".join(f"word{i}" for i in range(300)) + "\n" + f'<write path="notes/steps.py">\n{CODE}</write>\n'
    + "Done: twelve steps.\n"
)


def seqs_rise(events: list[dict[str, Any]]) -> bool:
    numbered = [e["seq"] for e in events if e["type"].startswith(("turn.", "edit."))]
    return numbered == sorted(numbered) and len(set(numbered)) == len(numbered)


@pytest.mark.processes
@pytest.mark.parametrize("direct", ["1", "0"])
async def test_every_page_gets_every_event_in_order_and_the_document(direct: str) -> None:
    settings = {"SPARK_LOG_LEVEL": "INFO", "SPARK_WS_DIRECT_WRITES": direct}
    async with Stack({}, relay=False, settings=settings) as stack:
        _, ws_url = await stack.session({"app.py": "print('hi')\n"})
        driver = Peer("driver", stack.token)
        viewers = [Peer(f"viewer-{i}", stack.token) for i in range(4)]
        for peer in (driver, *viewers):
            await peer.open(ws_url)  # websockets offers permessage-deflate: Daphne declines it
        assert driver.ws is not None and not driver.ws.protocol.extensions
        async with connect(ws_url, additional_headers={"Authorization": f"Token {stack.token}"},
                           compression=None) as plain:  # and one that offers nothing
            await driver.send({"type": "prompt", "text": say(ANSWER, rate=4000)})
            for peer in (driver, *viewers):
                done = await peer.until(lambda e: e["type"] == "turn.finished", timeout=60)
                assert done["status"] == "completed", done
            plain_text = []
            while True:
                message = await asyncio.wait_for(plain.recv(), 30)
                if isinstance(message, str):
                    event = json.loads(message)
                    if event["type"] == "turn.finished":
                        break
                    if event["type"] == "turn.delta":
                        plain_text.append(event["text"])
        assert "".join(plain_text) == ANSWER
        for peer in (driver, *viewers):
            assert peer.joined("turn.delta") == ANSWER, peer.name
            assert seqs_rise(peer.events), peer.name
            await peer.until_true(lambda p=peer: p.text("notes/steps.py") == CODE)
        log = (Path(stack.dir) / "daphne.log").read_text(errors="replace")
        said = "session sockets are written pre-framed" in log
        assert said == (direct == "1")
        assert "Traceback" not in log
        await asyncio.gather(*(peer.close() for peer in (driver, *viewers)))
