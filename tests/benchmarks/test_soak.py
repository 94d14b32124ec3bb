"""The soak benchmark on the real stack for a few seconds: three rooms prompt, steer, stop and
type while viewers come and go and every fault class is injected once; no unexpected error,
and each room's files over HTTP and in a fresh join equal the independent replay of what the
load generator did. The soak itself (half a minute in ``make bench``, 30 minutes on its own)
and its rates are the benchmark's: this run checks that it works and what it reports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.soak import FAULTS, main

ROOMS = 3
SAMPLE_S = 0.5
STORM = 50  # reconnects: --storm-rate 200 for --storm-s 0.25
# 7.2 s with a fault every second: the four classes fall at 1-4 s, each before the last 3 s.
SHORT = ["--minutes", "0.12", "--rooms", str(ROOMS), "--rate", "2000", "--sample-s", str(SAMPLE_S),
         "--fault-every-s", "1", "--stall-s", "1", "--storm-rate", "200", "--storm-s", "0.25",
         "--steer-share", "0.25", "--stop-share", "0.2", "--seed", "3"]


@pytest.mark.timeout(180)
def test_a_short_soak_of_rooms_under_faults_loses_nothing() -> None:
    figures: Any = main(SHORT)

    json.dumps(figures)  # the management command prints it as JSON
    errors = figures["errors"]
    assert errors["unexpected"] == 0, errors["first"]
    assert all(check["ok"] for check in figures["final_check"]), figures["final_check"]
    assert len(figures["final_check"]) == ROOMS

    ops = figures["operations"]
    assert ops["steer"] >= 1 and ops["stop"] >= 1 and ops["cut"] >= 1 and ops["plain"] >= ROOMS
    assert ops["blocks_applied"] >= ROOMS and ops["typed_inserts"] >= ROOMS and ops["typed_deletes"] >= 1
    assert ops["yjs_updates_sent"] == ops["typed_inserts"] + ops["typed_deletes"]

    faults = figures["faults"]
    assert set(faults["by_class"]) == set(FAULTS)
    for hostile in faults["hostiles"]:  # every bad frame answered, then Daphne's cap closed it
        assert hostile["answered_with_error"] == hostile["frames"] and hostile["over_daphne_cap_closed_with"]
    assert all(cut["links_cut"] >= 1 and cut["status"] in {"failed", "completed"} for cut in faults["cuts"])
    assert all(stall["caught_up"] and stall["room_events_meanwhile"] > 0 for stall in faults["stalls"])
    for storm in faults["storms"]:
        assert storm["reconnects"] == STORM and storm["hello"] + storm["failed"] == STORM
    assert sum(errors["expected"].values()) >= sum(h["frames"] for h in faults["hostiles"])

    sockets = figures["sockets"]
    assert sockets["opened"] >= STORM and sockets["dropped_abruptly"] >= 1

    samples = figures["rss_samples"]
    assert len(samples) >= 5 and all(mb > 20 for _, mb in samples)
    assert figures["plain_turn_ms"]["min"] >= figures["generation_ms_min"]  # no answer beats the engine
    rows = {row["figure"]: row for row in figures["rows"]}
    assert rows["soak: unexpected errors"]["met"] is True
    assert rows["soak: final documents match the independent replay"]["met"] is True
    assert rows["soak: hostile frames answered with an error"]["met"] is True
    assert rows["soak: IDE server memory growth per hour, second half"]["met"] is None  # too short to judge
    assert "soak: reconnect storm, reconnects served per second" in rows
    assert set(figures["charts"]) == {"soak_time_per_answer", "soak_rss"}


@pytest.mark.parametrize("argv", [["--rooms", "0"], ["--minutes", "0"], ["--steer-share", "0.8", "--stop-share", "0.5"],
                                  ["--storm-rate", "0"], ["--type-every-s", "0"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
