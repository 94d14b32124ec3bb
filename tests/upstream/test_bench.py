"""The benchmark runs end to end and reports medians, p99 and ratios (no speed asserted)."""

from __future__ import annotations

import pytest

from spark_ide.upstream.bench import main


def test_it_reports_every_figure_with_a_baseline() -> None:
    report = main(["--reps", "2", "--delay-ms", "1", "--no-netem-probe"])
    assert report["repetitions"] == 2
    ttft = report["ttft_ms"]
    assert isinstance(ttft, dict)
    for side in ("warm_socket", "fresh_connection"):
        assert set(ttft[side]) == {"median", "p99", "min", "n"}
        assert ttft[side]["n"] == 2
    assert "reduction" in ttft and "fresh_over_warm" in ttft
    cancel = report["cancel_to_new_request_sent_ms"]
    assert isinstance(cancel, dict)
    assert {"hot_spare", "reconnect", "native_cancel_local", "reconnect_over_hot_spare"} <= set(cancel)
    network = report["network"]
    assert isinstance(network, dict)
    assert network["added_rtt_ms"] == 2.0
    assert network["netns_netem"] == "not probed"


@pytest.mark.parametrize("argv", [["--reps", "0"], ["--delay-ms", "-1"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
