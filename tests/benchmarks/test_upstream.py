"""The upstream benchmark: with a known delay added, each figure shows the round trips the
path it times must take (and the hot spare none), so a mis-timed figure fails here."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.upstream import main

DELAY_MS = 15.0  # one way: a round trip is 30 ms, far above loopback and timer noise
RTT_MS = 2 * DELAY_MS


def test_each_figure_takes_the_round_trips_its_path_needs() -> None:
    report: Any = main(["--reps", "2", "--delay-ms", str(DELAY_MS), "--no-netem-probe"])

    assert report["network"]["added_rtt_ms"] == RTT_MS
    assert report["network"]["netns_netem"] == "not probed"
    ttft = report["ttft_ms"]
    assert ttft["warm_socket"]["n"] == ttft["fresh_connection"]["n"] == 2
    # Warm: the request and its first token, one round trip. Fresh: TCP handshake, WebSocket
    # upgrade, then the same, three round trips.
    assert RTT_MS <= ttft["warm_socket"]["min"] < 2 * RTT_MS
    assert ttft["fresh_connection"]["min"] >= 3 * RTT_MS
    sent = report["cancel_to_new_request_sent_ms"]
    assert sent["hot_spare"]["p99"] < RTT_MS / 2  # the spare is open: nothing to wait for
    assert sent["reconnect"]["min"] >= 2 * RTT_MS  # TCP handshake and upgrade first
    assert sent["native_cancel_local"]["p99"] < RTT_MS / 2  # cancel and re-prompt, no wait
    first_token = report["steer_to_new_first_token_ms"]
    for path in ("hot_spare", "native_cancel_local"):
        assert first_token[path]["min"] >= RTT_MS
    assert first_token["reconnect"]["min"] >= 3 * RTT_MS


@pytest.mark.parametrize("argv", [["--reps", "0"], ["--delay-ms", "-1"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
