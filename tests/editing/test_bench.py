from __future__ import annotations

import json

from spark_ide.editing import bench


def test_it_reports_engine_and_baseline_figures_from_one_run() -> None:
    report = bench.main(["--lines", "300", "--blocks", "4", "--repeat", "2"])
    assert json.loads(json.dumps(report)) == report
    assert report["same_result_as_baseline"] is True
    engine = report["engine"]
    baseline = report["baseline_str_replace"]
    assert isinstance(engine, dict) and isinstance(baseline, dict)
    for clock in ("wall", "cpu"):
        assert engine[clock]["tokens_per_s_median"] > 0
        assert engine[clock]["latency_ms_p99_median"] >= engine[clock]["latency_ms_p50_median"]
        assert baseline[clock]["seconds_median"] >= 0
    meets = report["meets_targets"]
    assert isinstance(meets, dict) and set(meets) == {"wall", "cpu"}
    assert report["tokens"] == len(
        bench.tokenize(bench.build_stream(bench.build_edits(bench.build_file(300), 4)), 4)
    )


def test_its_edits_are_unique_in_the_generated_file() -> None:
    text = bench.build_file(5000)
    for old, _ in bench.build_edits(text, 20):
        assert text.count(old) == 1
