"""The pairing benchmark: its figures are well formed and the relay loses nothing (tiny sizes)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from spark_ide.modelserver.engines.scripted import split_tokens
from spark_ide.pairing.bench import added_latency_ms, main, prose
from spark_ide.pairing.bench_client import late_events

TINY = ["--tokens", "400", "--capacity-tokens", "400", "--reps", "1", "--paced-tokens", "150", "--steers", "2"]


def _is_summary(figure: dict[str, Any]) -> bool:
    values = [figure["p50"], figure["p99"], figure["max"]]
    return figure["n"] > 0 and all(math.isfinite(v) for v in values) and values == sorted(values)


@pytest.mark.timeout(240)
def test_it_relays_every_token_and_reports_well_formed_figures() -> None:
    figures = main(TINY)

    json.dumps(figures)  # the management command prints it as JSON
    for name in ("throughput", "capacity"):
        through: Any = figures[name]
        assert through["zero_loss"] is True
        assert through["edit_applied"] is True
        assert through["ide_tokens_per_s"] > 0 and through["bare_tokens_per_s"] > 0
        assert through["ratio"] == pytest.approx(through["ide_tokens_per_s"] / through["bare_tokens_per_s"], abs=1e-3)
    latency: Any = figures["latency_1000_tps"]
    for relay in ("ide", "bare"):
        assert latency[relay]["lossless"] is True
        assert all(_is_summary(latency[relay][part]) for part in ("added_ms", "added_ms_prose", "added_ms_edit_block"))
    steer: Any = figures["steer"]
    assert steer["lossless"] is True
    assert _is_summary(steer["server_steer_ms"]) and steer["server_steer_ms"]["n"] == 2
    assert _is_summary(steer["client_first_token_minus_ttft_ms"])
    assert figures["late_events"] == 0
    verdicts: Any = figures["targets_met"]
    assert set(verdicts) >= {"zero_loss", "ratio_to_bare_0_5", "latency_p99_30ms", "steer_p50_5ms"}
    assert verdicts["zero_loss"] is True


def test_it_times_each_upstream_delta_by_the_client_frame_that_completes_it() -> None:
    upstream = [(1.000, "ab"), (1.001, "cd"), (1.002, ""), (1.003, "e")]
    received = [(1.010, "abc"), (1.020, "de")]

    latencies = added_latency_ms(upstream, received)

    assert [end for end, _ in latencies] == [2, 4, 5]
    assert [ms for _, ms in latencies] == pytest.approx([10.0, 19.0, 17.0])


def test_it_counts_what_a_turn_sends_after_it_finished_except_its_rollback() -> None:
    events = [
        (0.0, {"type": "turn.delta", "turn": "a", "text": "x"}),
        (0.1, {"type": "turn.finished", "turn": "a"}),
        (0.2, {"type": "edit.status", "turn": "a", "state": "rolled_back"}),
        (0.3, {"type": "turn.delta", "turn": "a", "text": "late"}),
        (0.4, {"type": "edit.status", "turn": "a", "state": "applied"}),
        (0.5, {"type": "turn.delta", "turn": "b", "text": "y"}),
    ]

    assert late_events(events) == 2


def test_it_scripts_prose_of_exactly_the_asked_token_count() -> None:
    text = prose(1234)

    assert len(split_tokens(text)) == 1234
    assert not any(line.startswith("<") for line in text.splitlines())
