"""The one report format every benchmark scenario returns, and its summaries.

A scenario's ``main(argv)`` returns a JSON-able dict holding, beside its own detailed figures:

* ``"rows"``: a list of :func:`row` dicts, one per figure the issue sets a target for (or that
  a reader wants in the summary table): what was measured, the baseline measured **in the
  same run** (these machines are noisy: compare ratios), their ratio, the target as text and
  whether it is met (``None``: no target, or the phase did not run);
* ``"charts"``: optional, ``{file stem: chart(...)}``, drawn as PNGs under ``docs/bench/``
  by ``benchmarks.suite`` (``make bench``);
* ``"setup"``: date, CPUs, load average before and after, seconds, sizes.

``benchmarks.suite`` runs every scenario's quick version and writes ``BENCHMARKS.md`` from
the rows. Each scenario module names its quick flags in ``QUICK`` (a list of argv strings).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

Row = dict[str, Any]
Chart = dict[str, Any]
ChartKind = Literal["line", "cdf", "bar"]


def row(
    figure: str,
    measured: float | int | str | None,
    *,
    unit: str = "",
    baseline: float | int | str | None = None,
    ratio: float | None = None,
    target: str = "",
    met: bool | None = None,
    note: str = "",
) -> Row:
    """One line of the summary table. ``ratio`` defaults to measured / baseline when both are
    numbers; ``target`` is how a reader reads it ("<= 2 ms", ">= 0.8x bare")."""
    if ratio is None and _number(measured) and _number(baseline) and baseline:
        ratio = round(float(measured) / float(baseline), 3)  # type: ignore[arg-type]
    return {
        "figure": figure, "measured": measured, "unit": unit, "baseline": baseline, "ratio": ratio,
        "target": target, "met": met, "note": note,
    }


def at_most(value: float | int | None, limit: float) -> bool | None:
    """``value <= limit``; None when nothing was measured."""
    return None if value is None else bool(value <= limit)


def at_least(value: float | int | None, limit: float) -> bool | None:
    """``value >= limit``; None when nothing was measured."""
    return None if value is None else bool(value >= limit)


def chart(
    title: str,
    x_label: str,
    y_label: str,
    series: Mapping[str, Sequence[tuple[float | str, float]] | Sequence[float]],
    *,
    kind: ChartKind = "line",
    log_x: bool = False,
    log_y: bool = False,
    hline: float | None = None,
) -> Chart:
    """A chart for ``docs/bench/``. ``line``: series of (x, y) points; ``cdf``: series of raw
    samples (drawn as their distribution); ``bar``: series of (x, y) drawn as grouped bars.
    ``hline``: a target drawn across."""
    return {
        "title": title, "x_label": x_label, "y_label": y_label, "kind": kind, "log_x": log_x,
        "log_y": log_y, "hline": hline,
        "series": {
            name: [list(p) if isinstance(p, tuple | list) else p for p in points] for name, points in series.items()
        },
    }


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of sorted values."""
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: Iterable[float], digits: int = 3) -> dict[str, float | int]:
    """p50 / p95 / p99 / max / n of the values (``{"n": 0}`` when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}
    return {
        "p50": round(statistics.median(ordered), digits), "p95": round(percentile(ordered, 0.95), digits),
        "p99": round(percentile(ordered, 0.99), digits), "max": round(ordered[-1], digits), "n": len(ordered),
    }


class Setup:
    """What a run notes about itself: ``Setup()`` at the start, ``.finish(**sizes)`` at the end."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.load_before = [round(x, 2) for x in os.getloadavg()]

    def finish(self, **sizes: Any) -> dict[str, Any]:
        return {
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "cpus": os.cpu_count(),
            "python": sys.version.split()[0], "seconds": round(time.monotonic() - self.started, 1),
            # Other work on the machine skews figures: a reader checks this first.
            "load_average_before_after": [self.load_before, [round(x, 2) for x in os.getloadavg()]],
            **sizes,
        }


def progress(scenario: str, message: str) -> None:
    """A line on stderr while a benchmark runs (stdout carries only the JSON)."""
    print(f"[bench {scenario}] {message}", file=sys.stderr, flush=True)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
