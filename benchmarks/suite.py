"""``make bench``: every scenario's quick version, one after another, then ``BENCHMARKS.md``.

``python -m benchmarks.suite [--full] [--only a,b] [--result name=FILE] [--markdown BENCHMARKS.md]
[--charts docs/bench]``

Each scenario runs as ``manage.py spark_bench <name> <its QUICK flags>`` in its own process
(one scenario's crash or leak cannot skew the next; they never run at the same time, since
they would share the two cores). Its JSON goes to ``docs/bench/latest.json``; its ``rows``
make the summary table of ``BENCHMARKS.md`` and its ``charts`` the PNGs beside the JSON. A
scenario that fails is reported as such in the table, and the suite exits non-zero; a
target that is missed is a finding, not a failure of the suite.

``--result soak=soak.json`` takes a scenario's figures from a run made on its own
(``manage.py spark_bench soak > soak.json``: the 30-minute soak, say) instead of running it;
the table's run line names the file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django
from django.core.exceptions import ImproperlyConfigured

from benchmarks.report import Chart, Row, progress, row
from spark_ide.ops.management.commands.spark_bench import BENCHMARKS

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = {"full": 3600.0, "quick": 300.0}


def quick_flags(name: str) -> list[str]:
    """The scenario's ``QUICK`` flags; none when its module cannot even be imported (its run
    then fails with the reason)."""
    try:
        module = importlib.import_module(f"benchmarks.{name}")
    except ImportError:
        return []
    except ImproperlyConfigured:  # it uses Django's models at import: settings first
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "spark_ide.settings")
        django.setup()
        module = importlib.import_module(f"benchmarks.{name}")
    return list(getattr(module, "QUICK", []))


def run_scenario(name: str, flags: Sequence[str], timeout_s: float) -> dict[str, Any]:
    """One scenario in its own process; its JSON, or a record of how it failed."""
    started = time.monotonic()
    command = [sys.executable, "manage.py", "spark_bench", name, *flags]
    progress("suite", f"{name}: {' '.join(flags) or '(defaults)'}")
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and command
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=None, timeout=timeout_s, check=False,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        return _failed(name, flags, started, f"did not finish within {timeout_s:.0f} s")
    if done.returncode != 0:
        return _failed(name, flags, started, f"exited with status {done.returncode} (its log is above)")
    try:
        figures: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return _failed(name, flags, started, "printed no JSON")
    figures["suite"] = {"flags": list(flags), "seconds": round(time.monotonic() - started, 1), "ok": True}
    return figures


def from_file(name: str, path: Path) -> dict[str, Any]:
    """A scenario's figures from its own run's JSON (``--result``), as the suite records them."""
    try:
        figures: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--result {name}={path}: not a scenario's JSON ({exc})") from None
    if not isinstance(figures, dict) or not isinstance(figures.get("rows"), list):
        raise SystemExit(f"--result {name}={path}: no rows in it")
    seconds = figures.get("setup", {}).get("seconds", "")
    figures["suite"] = {"flags": [f"(its own run: {path.name})"], "seconds": seconds, "ok": True}
    return figures


def _failed(name: str, flags: Sequence[str], started: float, why: str) -> dict[str, Any]:
    progress("suite", f"{name} FAILED: {why}")
    return {
        "rows": [row("the scenario ran", None, met=False, note=why)],
        "suite": {"flags": list(flags), "seconds": round(time.monotonic() - started, 1), "ok": False, "error": why},
    }


# -- the report ------------------------------------------------------------------------------


def _cell(value: object, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        text = f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.0f}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = str(value)
    return f"{text} {unit}".strip()


def _met(value: bool | None) -> str:
    return {True: "**yes**", False: "**no**", None: ""}[value]


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| scenario | figure | measured | baseline (same run) | ratio | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, figures in results.items():
        for item in figures.get("rows", []):
            unit = item.get("unit", "")
            figure = item["figure"] + (f" ({item['note']})" if item.get("note") else "")
            lines.append(
                f"| {name} | {figure} | {_cell(item['measured'], unit)} | {_cell(item.get('baseline'), unit)} "
                f"| {_cell(item.get('ratio'))} | {item.get('target', '')} | {_met(item.get('met'))} |"
            )
    return lines


def _all_rows(results: dict[str, dict[str, Any]]) -> list[Row]:
    return [item for figures in results.values() for item in figures.get("rows", [])]


def markdown(results: dict[str, dict[str, Any]], charts: dict[str, str], mode: str, started: str) -> str:
    rows = _all_rows(results)
    judged = [item for item in rows if item.get("met") is not None]
    met = sum(1 for item in judged if item["met"])
    load = os.getloadavg()
    out = [
        "# Benchmarks",
        "",
        f"Written by `make bench` (`benchmarks/suite.py`, the {mode} version of every scenario) on "
        f"{started}: {os.cpu_count()} CPUs, load average {load[0]:.2f} at the end. Do not edit by hand: "
        "how each scenario measures is in [docs/benchmarks.md](docs/benchmarks.md), every figure of the run in "
        "[docs/bench/latest.json](docs/bench/latest.json). Baselines are measured in the same run (these "
        "machines are noisy: compare ratios). Run one scenario with `manage.py spark_bench <scenario> --help`.",
        "",
        f"**{met} of {len(judged)} targets met** in this run.",
        "",
        "## Summary",
        "",
        *table(results),
        "",
    ]
    if charts:
        out += ["## Charts", ""]
        for stem, title in charts.items():
            out += [f"**{title}**", "", f"![{title}](docs/bench/{stem}.png)", ""]
    out += [
        "## Runs", "", "| scenario | date | flags | seconds | load average before → after |", "|---|---|---|---|---|",
    ]
    for name, figures in results.items():
        suite = figures.get("suite", {})
        setup = figures.get("setup", {})
        loads = setup.get("load_average_before_after")
        load_text = f"{loads[0][0]} → {loads[1][0]}" if loads else ""
        status = "" if suite.get("ok", True) else f" — failed: {suite.get('error')}"
        out.append(f"| {name} | {setup.get('date', '')} | `{' '.join(suite.get('flags', [])) or '(defaults)'}` "
                   f"| {suite.get('seconds', '')}"
                   f"{status} | {load_text} |")
    out.append("")
    return "\n".join(out)


def draw(stem: str, spec: Chart, directory: Path) -> None:
    """One chart as ``<directory>/<stem>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    kind = spec["kind"]
    series: dict[str, list[Any]] = spec["series"]
    if kind == "cdf":
        for name, samples in series.items():
            ordered = sorted(float(v) for v in samples)
            if ordered:
                axes.step(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], where="post", label=name)
    elif kind == "bar":
        labels = list(dict.fromkeys(str(x) for points in series.values() for x, _ in points))
        width = 0.8 / max(len(series), 1)
        for index, (name, points) in enumerate(series.items()):
            values = dict((str(x), float(y)) for x, y in points)
            axes.bar([i + index * width for i in range(len(labels))], [values.get(label, 0.0) for label in labels],
                     width, label=name)
        axes.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(labels))], labels)
    else:
        for name, points in series.items():
            axes.plot([float(x) for x, _ in points], [float(y) for _, y in points], marker="o", label=name)
    if spec.get("hline") is not None:
        axes.axhline(float(spec["hline"]), color="grey", linestyle="--", linewidth=1, label="target")
    if spec.get("log_x"):
        axes.set_xscale("log")
    if spec.get("log_y"):
        axes.set_yscale("log")
    axes.set_title(spec["title"], fontsize=10)
    axes.set_xlabel(spec["x_label"])
    axes.set_ylabel(spec["y_label"])
    axes.grid(alpha=0.3)
    if len(series) > 1 or spec.get("hline") is not None:
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(directory / f"{stem}.png")
    plt.close(figure)


def write(results: dict[str, dict[str, Any]], markdown_path: Path, charts_dir: Path, mode: str, started: str) -> None:
    charts_dir.mkdir(parents=True, exist_ok=True)
    for old in charts_dir.glob("*.png"):
        old.unlink()
    titles: dict[str, str] = {}
    for figures in results.values():
        for stem, spec in figures.get("charts", {}).items():
            draw(stem, spec, charts_dir)
            titles[stem] = spec["title"]
    (charts_dir / "latest.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    markdown_path.write_text(markdown(results, titles, mode, started), encoding="utf-8")


def merged(latest: Path, fresh: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last run's results with ``fresh`` in place of theirs, in the registry's order."""
    try:
        kept: dict[str, dict[str, Any]] = json.loads(latest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    kept.update(fresh)
    return {name: kept[name] for name in BENCHMARKS if name in kept}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="each scenario at its defaults, not its quick flags")
    parser.add_argument("--only", default="", help="comma-separated scenarios (default: all)")
    parser.add_argument("--result", action="append", default=[], metavar="NAME=FILE",
                        help="a scenario's JSON from a run made on its own, taken instead of running it")
    parser.add_argument("--markdown", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--charts", type=Path, default=ROOT / "docs" / "bench")
    args = parser.parse_args(argv)
    names = list(BENCHMARKS)
    given: dict[str, Path] = {}
    for spec in args.result:
        name, _, file = spec.partition("=")
        if name not in names or not file:
            parser.error(f"--result takes NAME=FILE with a scenario's name ({', '.join(names)}): {spec!r}")
        given[name] = Path(file)
    if args.only:
        asked = [name for name in args.only.split(",") if name]
        unknown = sorted(set(asked) - set(names))
        if unknown:
            parser.error(f"unknown scenario(s) {', '.join(unknown)}; there are {', '.join(names)}")
        names = [name for name in names if name in asked or name in given]
    mode = "full" if args.full else "quick"
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if given and not args.only:
        names = list(given)  # only the given results replace their scenarios' figures
    results = {
        name: from_file(name, given[name]) if name in given
        else run_scenario(name, [] if args.full else quick_flags(name), TIMEOUT_S[mode])
        for name in names
    }
    failed = [name for name, figures in results.items() if not figures["suite"]["ok"]]
    if args.only or given:  # the other scenarios keep their figures from the last run
        results = merged(args.charts / "latest.json", results)
    write(results, args.markdown, args.charts, mode, started)
    progress("suite", f"wrote {args.markdown.name} and {args.charts}; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
