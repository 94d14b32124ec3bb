"""``make bench``'s report: the table, the charts and the merge of a partial run, from a run's
results (each scenario's own smoke test runs the scenario itself)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report, suite
from spark_ide.ops.management.commands.spark_bench import BENCHMARKS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _results() -> dict[str, dict[str, Any]]:
    setup = report.Setup().finish(reps=1)
    return {
        "pairing": {
            "rows": [
                report.row("added latency per prose delta, p50", 0.61, unit="ms", baseline=0.3, target="<= 2 ms",
                           met=report.at_most(0.61, 2.0)),
                report.row("capacity ratio to the bare relay", 0.7, target=">= 0.8", met=report.at_least(0.7, 0.8)),
            ],
            "charts": {
                "pairing_latency": report.chart("Added latency", "ms", "share", {"IDE": [0.5, 0.7, 1.2],
                                                                                "bare": [0.2, 0.3]}, kind="cdf"),
                "rooms_p99": report.chart("Rooms vs p99", "rooms", "p99 ms", {"IDE": [(10, 3.0), (60, 34.0)]},
                                          hline=50.0),
                "wan_overhead": report.chart("Per-turn overhead", "transport", "ms",
                                             {"median": [("warm", 1.0), ("new socket", 100.0)]}, kind="bar"),
            },
            "setup": setup,
            "suite": {"flags": ["--reps", "1"], "seconds": 3.2, "ok": True},
        },
        "soak": {
            "rows": [report.row("the scenario ran", None, met=False, note="exited with status 1")],
            "suite": {"flags": [], "seconds": 1.0, "ok": False, "error": "exited with status 1"},
        },
    }


def test_a_run_writes_the_table_the_charts_and_its_figures(tmp_path: Path) -> None:
    markdown, charts = tmp_path / "BENCHMARKS.md", tmp_path / "bench"
    suite.write(_results(), markdown, charts, "quick", "2026-11-22 20:00 UTC")

    text = markdown.read_text()
    assert "**1 of 3 targets met**" in text
    assert "| pairing | added latency per prose delta, p50 | 0.61 ms | 0.3 ms | 2.033 | <= 2 ms | **yes** |" in text
    assert "| pairing | capacity ratio to the bare relay | 0.7 | — | — | >= 0.8 | **no** |" in text
    assert "failed: exited with status 1" in text
    for stem in ("pairing_latency", "rooms_p99", "wan_overhead"):
        assert (charts / f"{stem}.png").read_bytes().startswith(PNG_MAGIC)
        assert f"(docs/bench/{stem}.png)" in text
    assert json.loads((charts / "latest.json").read_text())["pairing"]["rows"][0]["measured"] == 0.61


def test_a_partial_run_keeps_the_other_scenarios_last_figures(tmp_path: Path) -> None:
    latest = tmp_path / "latest.json"
    latest.write_text(json.dumps(_results()))
    fresh = {"soak": {"rows": [report.row("memory growth", 0.5, unit="%")], "suite": {"ok": True}}}

    merged = suite.merged(latest, fresh)

    assert list(merged) == ["pairing", "soak"]  # the registry's order
    assert merged["soak"] == fresh["soak"]
    assert merged["pairing"]["rows"][0]["measured"] == 0.61


def test_summaries_take_nearest_rank_percentiles() -> None:
    figures = report.summary(float(v) for v in range(1, 101))
    assert figures == {"p50": 50.5, "p95": 95.0, "p99": 99.0, "max": 100.0, "n": 100}
    assert report.summary([]) == {"n": 0}


def test_every_registered_scenario_has_a_quick_version() -> None:
    for name in BENCHMARKS:
        module = importlib.import_module(f"benchmarks.{name}")
        assert callable(module.main), name
        assert isinstance(module.QUICK, list), name


def test_a_scenarios_own_run_replaces_its_figures_and_nothing_else_runs(tmp_path: Path, monkeypatch: Any) -> None:
    """``--result soak=FILE``: the 30-minute soak, run on its own, lands in the report; the
    other scenarios keep their last figures and none of them is run."""
    charts, markdown = tmp_path / "bench", tmp_path / "BENCHMARKS.md"
    charts.mkdir()
    (charts / "latest.json").write_text(json.dumps(_results()))
    own = tmp_path / "soak-30min.json"
    own.write_text(json.dumps({"rows": [report.row("soak: unexpected errors", 0, target="0", met=True)],
                               "setup": {"seconds": 1841.5}}))
    monkeypatch.setattr(suite, "run_scenario", lambda *args: (_ for _ in ()).throw(AssertionError(args)))

    assert suite.main(["--result", f"soak={own}", "--markdown", str(markdown), "--charts", str(charts)]) == 0

    text = markdown.read_text()
    assert "| soak | soak: unexpected errors | 0 | — | — | 0 | **yes** |" in text
    assert "| added latency per prose delta, p50 | 0.61 ms |" in text  # pairing: as it was
    assert "`(its own run: soak-30min.json)` | 1841.5" in text
    (tmp_path / "bad.json").write_text("{}")
    for spec in ("nosuch=x.json", "soak", f"soak={tmp_path / 'bad.json'}", f"soak={tmp_path / 'missing.json'}"):
        with pytest.raises(SystemExit) as refused:
            suite.main(["--result", spec, "--markdown", str(markdown), "--charts", str(charts)])
        assert refused.value.code not in (0, None), spec
