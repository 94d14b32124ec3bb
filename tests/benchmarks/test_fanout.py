"""The fanout benchmark on the real stack at tiny sizes: every watcher of the room gets every
token, through the IDE and the bare relay, and the figures obey causality and the ramp's rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.fanout import main
from benchmarks.pairing.scale import Clocks, cpu_seconds

LEVELS = [2, 5]
TINY = ["--tokens", "150", "--levels", ",".join(map(str, LEVELS)), "--budget-s", "60"]


def check_ramp(figures: dict[str, Any], levels: list[int], limit_ms: float) -> None:
    """What both scale benchmarks' ramps must show (shared with test_rooms)."""
    json.dumps(figures)  # the management command prints it as JSON
    for relay in ("ide", "bare"):
        ramp: Any = figures[relay]
        measured = [level["level"] for level in ramp["levels"]]
        assert measured == levels[: len(measured)] and measured
        within = 0
        for level in ramp["levels"]:
            assert level["lossy_sockets"] == 0, f"{relay} at {level['level']}: a socket lost text"
            assert level["sockets"] == level["level"]
            added = level["added_ms"]
            # One figure per upstream delta per socket; a socket holds a delta after the tap saw it.
            assert added["n"] >= level["sockets"] and 0 <= added["p50"] <= added["p95"] <= added["p99"] <= added["max"]
            assert 0 < level["generator_cpu_share"] <= 1 and 0 < level["server_cpu_share"] <= 1
            if added["p99"] <= limit_ms and within == measured.index(level["level"]):
                within += 1
        assert ramp["largest"] == (levels[within - 1] if within else 0)
    if figures["bare"]["largest"]:
        assert figures["ratio"] == round(figures["ide"]["largest"] / figures["bare"]["largest"], 3)
    assert figures["rows"][0]["measured"] == figures["ide"]["largest"]
    assert figures["setup"]["load_average_before_after"]


@pytest.mark.timeout(180)
def test_every_watcher_gets_every_token_and_the_ramp_keeps_its_rule() -> None:
    figures = main(TINY)

    check_ramp(figures, LEVELS, figures["setup"]["limit_ms"])
    assert set(figures["charts"]) == {"fanout_p99"}


def test_the_clocks_read_this_process() -> None:
    clocks = Clocks({"me": __import__("os").getpid()})
    clocks.start()
    sum(i * i for i in range(300_000))  # burn some CPU
    usage = clocks.stop()

    assert usage["me_cpu_s"] >= 0 and usage["generator_cpu_s"] > 0
    assert cpu_seconds(__import__("os").getpid()) > 0
