"""The soak benchmark on the real stack, tiny: rooms prompt, steer and stop for a few seconds
with no error and no loss, each room's file over HTTP is what its last applied block wrote,
no answer beats the engine's own schedule, and the memory figures come from real samples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.soak import main

TINY = ["--minutes", "0.2", "--rooms", "2", "--rate", "4000", "--sample-s", "0.5",
        "--steer-share", "0.35", "--stop-share", "0.3", "--seed", "3"]


@pytest.mark.timeout(180)
def test_rooms_soak_without_errors_and_end_with_the_right_files() -> None:
    figures: Any = main(TINY)

    json.dumps(figures)  # the management command prints it as JSON
    assert figures["errors"] == {"count": 0, "first": []}
    assert figures["files_correct"] == [True, True]
    turns = figures["turns"]
    assert min(turns["per_room"]) >= 4  # with seed 3 the first four turns hold a steer and a stop
    assert turns["steer"] >= 1 and turns["stop"] >= 1 and turns["plain"] >= 4
    assert turns["plain"] + turns["steer"] + turns["stop"] == turns["total"]
    # Causality: an answer cannot arrive faster than the engine plays it.
    assert figures["plain_turn_ms"]["min"] >= figures["generation_ms_min"]
    trend = figures["time_per_answer"]
    assert trend["late_over_early"] > 0
    assert trend["early_ms"]["n"] > 0 and trend["late_ms"]["n"] > 0
    samples = figures["rss_samples"]
    assert len(samples) >= 8 and all(mb > 20 for _, mb in samples)
    assert [t for t, _ in samples] == sorted(t for t, _ in samples)
    assert figures["memory"]["second_half"]["samples"] >= 4
    share = figures["cpu_share_of_all_cores"]
    assert 0 < share["load_generator"] < 1 and 0 < share["ide"] < 1
    assert figures["client_frames"]["text"] > 0
    rows = {row["figure"]: row for row in figures["rows"]}
    assert rows["soak: errors"]["met"] is True
    assert rows["soak: final files correct"]["met"] is True
    assert set(figures["charts"]) == {"soak_time_per_answer", "soak_rss"}


@pytest.mark.parametrize("argv", [["--rooms", "0"], ["--minutes", "0"], ["--steer-share", "0.8", "--stop-share", "0.5"],
                                  ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
