"""The live engine's ``Meter`` as Prometheus metrics, and their exposition for ``/metrics``.

Every IDE process writes into the host's metrics directory (``multiproc``); a scrape of any of
them sums all (prometheus_client's multiprocess mode: counters and histograms add up, the
gauges of rooms and sockets are the sum over the processes alive). See docs/operations.md.

No Django here: the adapter hands ``METER`` to the rooms, the ops view calls ``exposition``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import values as prometheus_values
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.multiprocess import MultiProcessCollector

from . import multiproc

TTFT_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
STEER_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

TURNS = Counter("spark_turns", "Turns ended, by status and reason (turn.finished)", ["status", "reason", "model"])
TOKENS = Counter(
    "spark_tokens", "Tokens of ended turns by kind: input (every input token, the cached ones included), "
    "cached_input, output (the provider's count, else estimated)", ["model", "kind"],
)
COST = Counter("spark_cost_usd", "Cost of ended turns in US dollars, by the model's prices (turns of unpriced "
               "models count nothing)", ["model"])
TTFT = Histogram(
    "spark_ttft_seconds", "Time to first token: prompt (or steer) at the server to the answer's first text",
    ["model"], buckets=TTFT_BUCKETS_S,
)
STEER = Histogram(
    "spark_steer_seconds", "Steer latency: steer at the server to the new request sent to the model",
    ["model"], buckets=STEER_BUCKETS_S,
)
ROOMS = Gauge("spark_rooms_active", "Rooms open (one per workspace in use)", multiprocess_mode="livesum")
SOCKETS = Gauge("spark_sockets_active", "Sockets in the rooms' live streams", multiprocess_mode="livesum")
RECONNECTS = Counter(
    "spark_upstream_reconnects", "The way to the model opened again: kind=client (a new model client after "
    "one failed) or resend (a turn's request sent again transparently)", ["kind"],
)
PERSIST_FAILURES = Counter(
    "spark_persist_failures", "Writes that failed after every retry: what=document (an update) or events (the log)",
    ["what"],
)


Labelled = TypeVar("Labelled", Counter, Histogram)


class PrometheusMeter:
    """``spark_ide.live.meter.Meter`` over the metrics above (one per process)."""

    def __init__(self) -> None:
        self._rooms: set[str] = set()
        self._sockets: dict[str, int] = {}
        # prometheus_client's labels() costs more than the write itself: each series once.
        self._series: dict[tuple[MetricWrapperBase, tuple[str, ...]], MetricWrapperBase] = {}

    def _series_of(self, metric: Labelled, *values: str) -> Labelled:
        key = (metric, values)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metric.labels(*values)
        return cast(Labelled, series)

    def turn_finished(
        self, status: str, reason: str, *, model: str, tokens: int, ttft_ms: float | None, steer_ms: float | None,
        input_tokens: int = 0, cached_input_tokens: int = 0, cost_usd: float | None = None,
    ) -> None:
        self._series_of(TURNS, status, reason, model).inc()
        for kind, count in (("input", input_tokens), ("cached_input", cached_input_tokens), ("output", tokens)):
            if count > 0:
                self._series_of(TOKENS, model, kind).inc(count)
        if cost_usd:
            self._series_of(COST, model).inc(cost_usd)
        if ttft_ms is not None:
            self._series_of(TTFT, model).observe(ttft_ms / 1000)
        if steer_ms is not None:
            self._series_of(STEER, model).observe(steer_ms / 1000)

    def room_opened(self, workspace: str) -> None:
        self._rooms.add(workspace)
        ROOMS.set(len(self._rooms))

    def room_closed(self, workspace: str) -> None:
        self._rooms.discard(workspace)
        self._sockets.pop(workspace, None)
        ROOMS.set(len(self._rooms))
        SOCKETS.set(sum(self._sockets.values()))

    def sockets(self, workspace: str, count: int) -> None:
        if count:
            self._sockets[workspace] = count
        else:
            self._sockets.pop(workspace, None)
        SOCKETS.set(sum(self._sockets.values()))

    def upstream_reconnected(self, kind: str) -> None:
        self._series_of(RECONNECTS, kind).inc()

    def persist_failed(self, what: str) -> None:
        self._series_of(PERSIST_FAILURES, what).inc()


METER = PrometheusMeter()


def multiprocess_mode() -> bool:
    """Whether this process writes its metrics into the shared directory (the settings put it
    in the environment before prometheus_client was imported)."""
    return bool(getattr(prometheus_values.ValueClass, "_multiprocess", False))


def exposition(directory: Path) -> bytes:
    """Every process's metrics in ``directory``, summed, in the Prometheus text format."""
    if not multiprocess_mode():
        raise RuntimeError(
            f"prometheus_client was imported before {multiproc.ENV} was set: this process's metrics are not shared"
        )
    multiproc.forget_dead(directory)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return generate_latest(registry)
