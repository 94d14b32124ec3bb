"""A server process asked to stop (SIGTERM from a service manager, Ctrl+C) closes its rooms
first: each ends its running turn (``turn.finished``, reason ``shutdown``), writes what waits
to be stored, gives its lease back and tells its replicas (docs/cluster.md, "When the owner
goes"), so another process takes the room over at once instead of once the lease expires;
then the sockets it counted against their users' caps are given back in Redis.

Daphne runs the ASGI application on a Twisted reactor over asyncio: the closing is a
"before shutdown" trigger, which the reactor waits for (at most ``CLOSE_LIMIT_S``).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from spark_ide.live.rooms import Rooms

from .adapter import unmarked_context
from .socket_cap import SocketCap

log = logging.getLogger(__name__)

CLOSE_LIMIT_S = 10.0  # a service manager's stop timeout is longer (systemd: 90 s)


async def close_rooms(rooms: Rooms, sockets: SocketCap, limit_s: float = CLOSE_LIMIT_S) -> None:
    """Close every room of this process, then wait for the sockets given back to reach Redis."""
    try:
        await asyncio.wait_for(rooms.close_all(), limit_s)
    except TimeoutError:
        log.warning("shutdown: the rooms took over %.0f s to close; the rest is left to the lease", limit_s)
    except Exception:
        log.exception("shutdown: closing the rooms failed")
    try:
        await asyncio.wait_for(sockets.settled(), limit_s)
    except TimeoutError:
        log.warning("shutdown: Redis did not take back the sockets' counts; they expire")


def close_rooms_at_shutdown(rooms: Rooms, sockets: SocketCap) -> bool:
    """Have the running reactor close ``rooms`` before it stops; False where there is none
    (not under Daphne: a test, a management command)."""
    if "twisted.internet.reactor" not in sys.modules:
        return False  # importing it here would install a reactor of our own
    from twisted.internet import reactor
    from twisted.internet.defer import Deferred

    def close() -> Deferred[Any]:
        # The trigger runs in the context of whatever code the stop signal interrupted.
        closing = asyncio.get_running_loop().create_task(close_rooms(rooms, sockets), context=unmarked_context())
        return Deferred.fromFuture(closing)

    running: Any = reactor  # its zope interface reads to mypy as a method without ``self``
    running.addSystemEventTrigger("before", "shutdown", close)
    return True
