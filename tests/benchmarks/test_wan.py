"""The wan benchmark, tiny: with a known delay added, each transport's first token and turn
take at least the round trips its path needs, so a mis-timed figure fails here. Which
transport is faster by how much is the benchmark's figure, not this test's (an upper bound
on a time fails on a busy machine)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.wan import TRANSPORTS, main

DELAY_MS = 15.0  # one way: a round trip is 30 ms, far above loopback and timer noise
RTT_MS = 2 * DELAY_MS
REPS = 3


def test_each_transport_pays_the_round_trips_of_its_path() -> None:
    report: Any = main(["--reps", str(REPS), "--delay-ms", str(DELAY_MS), "--tokens", "20", "--rate", "2000"])

    json.dumps(report)
    t = report["transports"]
    assert set(t) == set(TRANSPORTS)
    assert all(t[name]["ttft_ms"]["n"] == REPS for name in TRANSPORTS)
    # Warm socket: the request and the first token, one round trip.
    assert t["ws_warm"]["ttft_ms"]["p50"] >= RTT_MS
    # A new WebSocket: TCP handshake, upgrade, then the same: three round trips.
    assert t["ws_new"]["ttft_ms"]["p50"] >= 3 * RTT_MS
    # A new HTTP connection: TCP handshake, then the POST: two.
    assert t["sse_new"]["ttft_ms"]["p50"] >= 2 * RTT_MS
    assert t["sse_keepalive"]["ttft_ms"]["p50"] >= RTT_MS
    generation_ms = report["turn"]["generation_ms"]
    assert generation_ms == pytest.approx(19 / 2000 * 1000)
    for name in TRANSPORTS:
        samples = report["samples_ms"][name]
        # Causality: a turn ends after its first token, and at least a round trip after the
        # engine's schedule (the request went out, the last token came back).
        for ttft, overhead in zip(samples["ttft"], samples["overhead"], strict=True):
            assert overhead + generation_ms >= ttft
            assert overhead >= 0.9 * RTT_MS
    connections = report["new_connections_per_transport"]
    assert connections["ws_warm"] == 0
    assert connections["ws_new"] == connections["sse_new"] == REPS
    assert len(report["rows"]) == 6
    assert set(report["charts"]) == {"wan_ttft_cdf", "wan_overhead"}


@pytest.mark.parametrize("argv", [["--reps", "0"], ["--delay-ms", "-1"], ["--tokens", "0"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
