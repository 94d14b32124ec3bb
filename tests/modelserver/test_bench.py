from __future__ import annotations

import json

from spark_ide.modelserver.bench import Run, main, percentile


def test_it_measures_ttft_decode_rate_and_gaps() -> None:
    run = Run(started=10.0, arrivals=[10.5, 10.6, 10.7, 10.9])
    assert abs(run.ttft_s - 0.5) < 1e-9
    assert abs(run.decode_tps - 3 / 0.4) < 1e-9
    assert [round(gap, 6) for gap in run.gaps_s] == [0.1, 0.1, 0.2]


def test_percentile_picks_from_the_sorted_values() -> None:
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0
    assert percentile([5.0, 1.0, 3.0], 0.99) == 5.0


def test_the_scripted_benchmark_returns_json_figures() -> None:
    results = main(["--no-llama", "--scripted-tokens", "2000"])
    json.dumps(results)
    scripted = results["scripted"]
    assert isinstance(scripted, dict)
    assert scripted["max"]["tokens"] == 2000
    assert scripted["at_50k"]["tokens"] == 2000
    assert scripted["at_50k"]["tokens_per_s"] > 0
    assert scripted["server_ttft_ms_median"] > 0
    assert results["llama"] == {"skipped": "--no-llama"}
