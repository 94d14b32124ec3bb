"""autobahn's per-connection debug lines, formatted only when they are logged (issue 16).

Under Daphne every WebSocket connection runs autobahn's ``_connectionMade``, which builds its
debug line ``pformat(<the connection's 29 options>)`` before calling ``log.debug`` whether or
not debug lines are logged: about 0.2 ms of the event loop per socket, some 5 % of the loop in a
reconnect storm (a py-spy profile of the soak's storms). ``defer_debug_formatting`` hands
autobahn's module a ``pformat`` whose result formats itself when a log line is written, and
never otherwise; what a debug log shows is unchanged (``Timings.__str__``, the one caller that
needs a string at once, keeps the real ``pformat``). Installed by the ASGI module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Deferred:
    """``pformat(value)``, computed when the log line is written (``str``/``format``)."""

    __slots__ = ("_format", "_value")

    def __init__(self, format_: Callable[[Any], str], value: Any) -> None:
        self._format = format_
        self._value = value

    def __str__(self) -> str:
        return self._format(self._value)

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def defer_debug_formatting() -> bool:
    """Make autobahn's ``pformat`` deferred (module docstring); False without autobahn. Safe to
    call more than once."""
    try:
        from autobahn.websocket import protocol as module
    except ImportError:
        return False
    protocol: Any = module  # it imports pformat for itself: no type says so
    original = protocol.pformat
    if getattr(original, "_spark_deferred", False):
        return True

    def deferred(value: Any) -> Deferred:
        return Deferred(original, value)

    deferred._spark_deferred = True  # type: ignore[attr-defined]
    protocol.pformat = deferred
    # The one use that must give a str at once (``Timings.__str__``) keeps the real one.
    protocol.Timings.__str__ = lambda self: original(self._timings)
    return True
