"""The flags every launch of Daphne passes (``make run``, the deploy units, the benchmark stack).

No Django here: the benchmark stack's helper processes import it without settings.
"""

from __future__ import annotations

# Daphne has no write backpressure: a socket that cannot keep up buffers without bound. Its
# WebSocket ping waits behind that buffer, so a socket more than ~10 s behind misses the
# pong deadline and is closed; the page reconnects with ?after= and catches up or resyncs
# (docs/cluster.md). The deploy units pass the same flags.
SLOW_SOCKETS = ("--ping-interval", "10", "--ping-timeout", "10")
# Daphne rejects a socket its application has not accepted within 5 s, with a 403 "Access
# denied" that looks like a refusal. In a reconnect storm (a restart sends every page back at
# once) connects queue for longer than that and are served in turn: let them wait instead of
# failing (in a 30-minute soak Daphne rejected 73 queued connects so, 65 of them in one storm).
# The deploy units pass it too.
STORM_PATIENCE = ("--websocket_connect_timeout", "30")
