"""What the live engine tells an operator's metrics, as a small protocol.

The room, its Pilot and pipeline call a ``Meter`` at the moments that matter (a turn ended, a
steer re-prompted, a write failed ...). The engine imports no metrics library: the Django side
gives it an implementation through ``LiveSettings.meter`` (``spark_ide.ops.metrics`` writes
Prometheus metrics); the default, ``NO_METER``, does nothing.

Every method is called on the room's event loop and must return at once without raising.
"""

from __future__ import annotations

from typing import Protocol


class Meter(Protocol):
    def turn_finished(
        self, status: str, reason: str, *, model: str, tokens: int, ttft_ms: float | None, steer_ms: float | None,
        input_tokens: int = 0, cached_input_tokens: int = 0, cost_usd: float | None = None,
    ) -> None:
        """A turn ended (``turn.finished``): its status and reason, the model it ran on ("" if
        none answered), its output tokens, time to first token (None: no text came) and, for
        a turn a steer started, ms from the steer reaching the server to its request sent;
        its input tokens (the cached ones among them) and its cost in US dollars (None: the
        model's prices are unknown)."""

    def room_opened(self, workspace: str) -> None:
        """This process now holds the workspace's room."""

    def room_closed(self, workspace: str) -> None:
        """The room let go (its sockets are no longer counted). May come for a room never opened."""

    def sockets(self, workspace: str, count: int) -> None:
        """The room has ``count`` sockets in its live stream now (after each join and leave)."""

    def upstream_reconnected(self, kind: str) -> None:
        """The way to the model was opened again: ``client`` (a new model client after one
        failed for good) or ``resend`` (a turn's request sent again transparently, after its socket closed or
        refused it)."""

    def persist_failed(self, what: str) -> None:
        """A write failed after every retry: ``document`` (an update) or ``events`` (the log)."""


class NullMeter:
    """Counts nothing (tests, tools, a room without an operator)."""

    def turn_finished(
        self, status: str, reason: str, *, model: str, tokens: int, ttft_ms: float | None, steer_ms: float | None,
        input_tokens: int = 0, cached_input_tokens: int = 0, cost_usd: float | None = None,
    ) -> None:
        pass

    def room_opened(self, workspace: str) -> None:
        pass

    def room_closed(self, workspace: str) -> None:
        pass

    def sockets(self, workspace: str, count: int) -> None:
        pass

    def upstream_reconnected(self, kind: str) -> None:
        pass

    def persist_failed(self, what: str) -> None:
        pass


NO_METER: Meter = NullMeter()
