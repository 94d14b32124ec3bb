"""autobahn's per-connection debug line is formatted only when it is logged
(``spark_ide.ops.autobahn_debug``): a real autobahn server protocol, its debug level off and on."""

from __future__ import annotations

import contextlib
import time
from pprint import pformat
from typing import Any

import txaio
from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from autobahn.websocket import protocol

from spark_ide.ops.autobahn_debug import Deferred, defer_debug_formatting

txaio_any: Any = txaio  # untyped


class Counting:
    """A value whose pretty-printing is counted."""

    formatted = 0

    def __repr__(self) -> str:
        Counting.formatted += 1
        return "counted"


def _connection_made(debug: bool) -> list[str]:
    """Run autobahn's ``_connectionMade`` on a server protocol (no transport needed for its log
    line); return the debug lines logged."""
    lines: list[str] = []
    factory: Any = WebSocketServerFactory
    factory = factory()
    factory.utf8validateIncoming = Counting()  # one of the options that line prints
    proto: Any = WebSocketServerProtocol()
    proto.factory = factory
    proto.log = txaio_any.make_logger()
    if debug:
        proto.log.debug = lambda fmt, **kw: lines.append(fmt.format(**kw))
    with contextlib.suppress(Exception):  # past the log line it wants a transport: not what is tested
        proto._connectionMade()
    return [line for line in lines if "utf8validateIncoming" in line]


def test_the_debug_line_is_formatted_only_when_logged() -> None:
    assert defer_debug_formatting() and defer_debug_formatting()  # installed, and once only
    Counting.formatted = 0
    assert _connection_made(debug=False) == []
    assert Counting.formatted == 0  # never pretty-printed (it was, for every socket)
    lines = _connection_made(debug=True)
    assert Counting.formatted > 0 and len(lines) == 1  # pformat reads a repr more than once
    assert "'utf8validateIncoming', counted" in lines[0] and lines[0].startswith("\n[")
    timings: Any = getattr(protocol, "Timings")  # noqa: B009 - untyped
    assert str(timings()) == "{}"  # the one caller that needs a str at once


def test_what_it_saves_per_socket() -> None:
    """The option list autobahn prints, pretty-printed vs deferred (printed with ``-s``)."""
    make: Any = WebSocketServerFactory
    factory = make()
    options = [(name, getattr(factory, name, None), "F") for name in WebSocketServerProtocol.CONFIG_ATTRS]
    n = 300
    began = time.perf_counter()
    for _ in range(n):
        pformat(options)
    eager = (time.perf_counter() - began) / n
    began = time.perf_counter()
    for _ in range(n):
        Deferred(pformat, options)
    deferred = (time.perf_counter() - began) / n
    print(f"\nautobahn's debug line per socket: {eager * 1e6:.0f} us formatted, {deferred * 1e6:.2f} us deferred")
    assert str(Deferred(pformat, options)) == pformat(options)
