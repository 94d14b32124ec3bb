"""The soak benchmark on the real stack for one minute (issue 16's 60-second soak): ten rooms
prompt, steer, stop and type while viewers come and go and every fault class is injected once
or more; no unexpected error, and each room's files over HTTP and in a fresh join equal the
independent replay of what the load generator did."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.soak import FAULTS, main

MINUTE = ["--minutes", "1", "--rooms", "10", "--sample-s", "1", "--storm-s", "0.5", "--stall-s", "5",
          "--steer-share", "0.2", "--stop-share", "0.15", "--seed", "3"]


@pytest.mark.timeout(240)
def test_a_minute_of_rooms_under_faults_loses_nothing() -> None:
    figures: Any = main(MINUTE)

    json.dumps(figures)  # the management command prints it as JSON
    errors = figures["errors"]
    assert errors["unexpected"] == 0, errors["first"]
    assert all(check["ok"] for check in figures["final_check"]), figures["final_check"]
    assert len(figures["final_check"]) == 10

    ops = figures["operations"]
    assert ops["steer"] >= 1 and ops["stop"] >= 1 and ops["cut"] >= 1 and ops["plain"] >= 10
    assert ops["blocks_applied"] >= 10 and ops["typed_inserts"] >= 10 and ops["typed_deletes"] >= 1
    assert ops["yjs_updates_sent"] == ops["typed_inserts"] + ops["typed_deletes"]

    faults = figures["faults"]
    assert set(faults["by_class"]) == set(FAULTS)
    for hostile in faults["hostiles"]:  # every bad frame answered, then Daphne's cap closed it
        assert hostile["answered_with_error"] == hostile["frames"] and hostile["over_daphne_cap_closed_with"]
    assert all(cut["links_cut"] >= 1 and cut["status"] in {"failed", "completed"} for cut in faults["cuts"])
    assert all(stall["caught_up"] and stall["room_events_meanwhile"] > 0 for stall in faults["stalls"])
    for storm in faults["storms"]:
        assert storm["reconnects"] == 100 and storm["hello"] + storm["failed"] == 100
        assert storm["opened_rate_per_s"] >= 150  # the load generator kept the asked pace
    assert sum(errors["expected"].values()) >= sum(h["frames"] for h in faults["hostiles"])

    sockets = figures["sockets"]
    assert sockets["opened"] >= 33 + 100 and sockets["dropped_abruptly"] >= 10

    samples = figures["rss_samples"]
    assert len(samples) >= 30 and all(mb > 20 for _, mb in samples)
    assert figures["memory"]["second_half"]["samples"] >= 10
    assert figures["plain_turn_ms"]["min"] >= figures["generation_ms_min"]  # no answer beats the engine
    rows = {row["figure"]: row for row in figures["rows"]}
    assert rows["soak: unexpected errors"]["met"] is True
    assert rows["soak: final documents match the independent replay"]["met"] is True
    assert rows["soak: hostile frames answered with an error"]["met"] is True
    assert "soak: reconnect storm, reconnects served per second" in rows
    assert set(figures["charts"]) == {"soak_time_per_answer", "soak_rss"}


@pytest.mark.parametrize("argv", [["--rooms", "0"], ["--minutes", "0"], ["--steer-share", "0.8", "--stop-share", "0.5"],
                                  ["--storm-rate", "0"], ["--type-every-s", "0"], ["--bogus"]])
def test_it_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
