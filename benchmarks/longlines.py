"""Long lines (``manage.py spark_bench longlines``): whatever the model writes, each delta costs
the same.

Models write long lines: a paragraph of prose without a newline, a minified JSON document, a
code file with one huge literal. A stage whose work per delta grows with the line so far
(a search over the line, a copy of it) turns a 10^6-character line into a denial of service.

The pairing stack (``benchmarks.pairing.stack``: the scripted model server behind a frame
tap, the IDE under Daphne), one room, one socket. For each answer kind and each line length
``--lengths`` (100, 10,000 and 1,000,000 characters by default), one turn at each rate
``--rates`` (1,000 and 20,000 tokens/s), measured against the 100-character line of the
same kind and rate in the same run (the baseline):

* ``prose``: prose in lines of the given length (at 10^6 one paragraph);
* ``json``: a ``<write>`` of JSON Lines, each a minified JSON array of the given length;
* ``literal`` (one length): a Python file holding a 50,000-character base64 literal on one
  line, against the same literal cut into 100-character lines.

First, in-process (``stages``): each streaming stage alone, fed the same answers in
4-character deltas (the editor: parser, locator and applier into a Yjs document; the
repetition guard; the watchdog; the event and its JSON frame; an outbox backlog), in
microseconds per delta at each line length against the 100-character line.

Then, per turn of the stack: the server's CPU milliseconds per 1,000 tokens (its ``/proc`` clock over
the turn), the added latency (tap -> socket) p50/p99 per upstream delta, and whether the
answer arrived whole and the written file is whole (read back over HTTP). A length whose
answer would take more than ``--max-turn-s`` at a rate is left out at that rate (the
1,000,000-character line at 1,000 tokens/s takes minutes: ``--full`` keeps it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import random
import signal
import statistics
import time
from typing import Any

from pycrdt import Doc

from benchmarks import report
from benchmarks.pairing.client import Browser, play
from benchmarks.pairing.run import FILES, VOCAB, added_latency_ms, upstream_answer
from benchmarks.pairing.scale import Clocks, server_pids
from benchmarks.pairing.stack import Stack
from spark_ide.editing import TurnEditor, workspace_files
from spark_ide.live.events import Event, TurnDelta, TurnStatus, encode
from spark_ide.live.outbox import Backlog, Frame
from spark_ide.live.repetition import RepetitionGuard
from spark_ide.live.turn_watch import TurnWatch
from spark_ide.live.turns import publish_edits
from spark_ide.live.watchdog import GuardRules
from spark_ide.modelserver.engines.scripted import split_tokens

SCENARIO = "longlines"
LENGTHS = (100, 10_000, 1_000_000)
RATES = (1_000, 20_000)
KINDS = ("prose", "json")
LITERAL_CHARS = 50_000
BASELINE_LENGTH = 100
TARGET_RATIO = 1.2
QUICK = ["--chars", "12000", "--max-turn-s", "30"]


def prose_lines(chars: int, length: int, seed: int) -> str:
    """Prose of ``chars`` characters in lines of ``length`` (the last one shorter), words of
    ``VOCAB`` in a seeded order (no line starts with '<')."""
    rng = random.Random(seed)  # noqa: S311 - seeded text, not secrets
    lines: list[str] = []
    total = 0
    while total < chars:
        words: list[str] = []
        size = -1
        while size < min(length, chars - total):
            word = rng.choice(VOCAB)
            words.append(word)
            size += len(word) + 1
        line = " ".join(words)[:length]
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def json_lines(chars: int, length: int, seed: int) -> str:
    """``chars`` characters of JSON Lines, each line one minified JSON array of about ``length``
    characters, of records that differ from each other (ids, names, scores)."""
    lines: list[str] = []
    total, i = 0, seed * 1_000_000
    while total < chars:
        records: list[str] = []
        size = 1
        while size < min(length, chars - total):
            record = json.dumps({"id": i, "name": f"user{i}", "score": (i * 37) % 101, "ok": i % 3 == 0},
                                separators=(",", ":"))
            records.append(record)
            size += len(record) + 1
            i += 1
        line = "[" + ",".join(records) + "]"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def literal_file(wrap: int | None) -> str:
    """A Python file holding a 50,000-character base64 literal: on one line, or cut into
    ``wrap``-character lines inside parentheses."""
    blob = base64.b64encode(random.Random(5).randbytes(  # noqa: S311 - seeded text
        LITERAL_CHARS * 3 // 4)).decode()
    if wrap is None:
        body = f'BLOB = "{blob}"\n'
    else:
        parts = "".join(f'    "{blob[i : i + wrap]}"\n' for i in range(0, len(blob), wrap))
        body = f"BLOB = (\n{parts})\n"
    return f"import base64\n\n{body}\n\ndef size():\n    return len(base64.b64decode(BLOB))\n"


def answer(kind: str, length: int, chars: int, seed: int) -> tuple[str, str | None, str]:
    """(the answer, the path it writes or None, that file's text)."""
    if kind == "prose":
        return f"Here is the overview.\n{prose_lines(max(chars, length), length, seed)}\nDone.\n", None, ""
    if kind == "json":
        path = f"bench/data_{length}_{seed}.jsonl"
        body = json_lines(max(chars, length), length, seed)
    else:
        path = f"bench/blob_{length}_{seed}.py"
        body = literal_file(None if length > BASELINE_LENGTH else BASELINE_LENGTH)
    return f'Writing the file.\n<write path="{path}">\n{body}</write>\nDone.\n', path, body


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The turns to measure, baseline first in each (kind, rate); each with its script.

    Every answer of one kind and rate has the same size (the longest line that fits in
    ``--max-turn-s`` at that rate, or ``--chars`` if more), so that the baseline streams as
    long as the long lines do: a relay that falls behind over a long answer is not mistaken
    for a cost of the line."""
    turns: list[dict[str, Any]] = []
    for rate in args.rates:
        for kind in args.kinds:
            lengths = [BASELINE_LENGTH, LITERAL_CHARS] if kind == "literal" else args.lengths
            fitting = [length for length in lengths if length == BASELINE_LENGTH or
                       len(split_tokens(answer(kind, length, args.chars, seed=0)[0])) / rate <= args.max_turn_s]
            chars = max(args.chars, *fitting) if kind != "literal" else args.chars
            for length in fitting:
                text, path, body = answer(kind, length, chars, seed=len(turns))
                turns.append({"kind": kind, "length": length, "rate": rate, "script": f"t{len(turns)}",
                              "text": text, "path": path, "body": body, "tokens": len(split_tokens(text))})
    return turns


# -- each stage alone, in this process ------------------------------------------------------

STAGE_DELTA = 4  # characters per delta, as a model's tokens
STAGES = ("editor", "repetition", "watchdog", "events", "outbox")


def _events(edits: list[Any]) -> list[Event]:
    """What the Pilot publishes for the editor's events (``live.turns.publish_edits``)."""
    out: list[Event] = []
    publish_edits(out.append, edits)
    return out


def stage_costs(text: str, budget_s: float) -> dict[str, float]:
    """Microseconds per delta of each stage fed ``text`` (at most ``budget_s`` of it each)."""
    deltas = [text[i : i + STAGE_DELTA] for i in range(0, len(text), STAGE_DELTA)]
    doc: Doc[Any] = Doc()
    workspace_files(doc)
    editor = TurnEditor(doc, "bench")
    guard, watch, backlog = RepetitionGuard(), TurnWatch(GuardRules()), Backlog()
    spent = dict.fromkeys(STAGES, 0.0)
    fed = 0
    clock = time.perf_counter
    for seq, delta in enumerate(deltas):
        began = clock()
        edits = editor.feed(delta)
        code = editor.take_code()
        after_editor = clock()
        guard.feed(delta)
        after_guard = clock()
        if code or edits:
            watch.feed(code, edits)
        after_watch = clock()
        events: list[Event] = [TurnDelta(turn="bench", text=delta), *_events(edits)]
        frames = [Frame.encoded(event, seq, encode(event, seq)) for event in events]
        after_events = clock()
        for frame in frames:
            backlog.add_frame(frame)
        if len(backlog.items) > 64:  # a socket that keeps up: its backlog is taken now and then
            backlog.take()
        ended = clock()
        spent["editor"] += after_editor - began
        spent["repetition"] += after_guard - after_editor
        spent["watchdog"] += after_watch - after_guard
        spent["events"] += after_events - after_watch
        spent["outbox"] += ended - after_events
        fed += 1
        if ended - began > 1.0 or sum(spent.values()) > budget_s:
            break
    return {stage: round(seconds * 1e6 / fed, 3) for stage, seconds in spent.items()} | {"deltas": fed}


def measure_stages(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each answer's stage costs, ``--stage-reps`` times with the lengths taken in turn (a
    moment of load on this machine falls on one rep of each, not on one length): the median
    of each stage."""
    answers = [
        (kind, length, answer(kind, length, args.chars, seed=1)[0])
        for kind in args.kinds
        for length in ([BASELINE_LENGTH, LITERAL_CHARS] if kind == "literal" else args.lengths)
    ]
    reps: list[list[dict[str, float]]] = [[] for _ in answers]
    for rep in range(args.stage_reps):
        for (kind, length, text), costs in zip(answers, reps, strict=True):
            costs.append(stage_costs(text, args.stage_budget_s))
            report.progress(SCENARIO, f"stages, rep {rep + 1}, {kind} lines of {length:,}: {costs[-1]}")
    return [
        {"kind": kind, "length": length, "reps": len(costs), "us_per_delta": {
            stage: round(statistics.median(cost[stage] for cost in costs), 3) for stage in (*STAGES, "deltas")
        }}
        for (kind, length, _), costs in zip(answers, reps, strict=True)
    ]


async def measure(stack: Stack, turn: dict[str, Any]) -> dict[str, Any]:
    workspace_id, ws_url = await stack.session(FILES)
    browser = await Browser.open(ws_url, stack.token)
    try:
        await play(browser, "[say]warm up[/say][rate:1e6][ttft:0]")  # the model link is open
        tap = stack.tap
        assert tap is not None
        clocks = Clocks(server_pids(stack, "ide"))
        with tap.recorded() as frames:
            clocks.start()
            try:
                played = await play(browser, f"[script:{turn['script']}][rate:{turn['rate']}][ttft:0]")
            finally:
                usage = clocks.stop()
    finally:
        await browser.close()
    upstream = upstream_answer(frames, turn["text"])
    whole = played.text == turn["text"] and played.finished.get("status") == TurnStatus.COMPLETED
    samples = added_latency_ms(upstream, played.deltas) if upstream and whole else []
    # Where the slowest deltas were in the answer (a stall at a long line's end shows here).
    worst = [{"at": round(end / len(turn["text"]), 4), "ms": round(ms, 1)}
             for end, ms in sorted(samples, key=lambda sample: -sample[1])[:5]]
    file_whole = None
    if turn["path"] is not None:
        stored = await stack.file_text(workspace_id, turn["path"], turn["body"], timeout=20.0)
        file_whole = stored == turn["body"]
    return {
        "kind": turn["kind"], "length": turn["length"], "rate": turn["rate"], "tokens": turn["tokens"],
        "chars": len(turn["text"]), "whole": whole, "file_whole": file_whole, "latencies": [ms for _, ms in samples],
        "server_cpu_s": usage["server_cpu_s"],
        "server_cpu_share": usage["server_cpu_share"], "generator_cpu_share": usage["generator_cpu_share"],
        "wall_s": usage["wall_s"],
        "frames": len(played.deltas), "worst": worst,
    }


async def measure_pooled(stack: Stack, turn: dict[str, Any], min_samples: int, max_takes: int) -> dict[str, Any]:
    """``turn`` played until its deltas number ``min_samples`` (at most ``max_takes`` times): a
    short turn (the literal at 20,000 tokens/s is some 1,400 deltas) has its p99 in its dozen
    slowest deltas, which one pause of the process (a collection, the file rows written) sets
    alone, in one take and not the next."""
    takes = [await measure(stack, turn)]
    while (takes[-1]["whole"] and sum(len(take["latencies"]) for take in takes) < min_samples
           and len(takes) < max_takes):  # a broken answer has no latencies: not played again
        takes.append(await measure(stack, turn))
    return pooled(takes)


def pooled(takes: list[dict[str, Any]]) -> dict[str, Any]:
    """One turn's takes as one: the deltas' latencies pooled, the server's CPU over all of
    their tokens, whole only if every take was, the five slowest deltas of them all (``tokens``
    and ``chars``: one take's answer; ``frames`` and ``wall_s``: all the takes')."""
    first = takes[0]
    tokens = first["tokens"] * len(takes)
    latencies = [ms for take in takes for ms in take["latencies"]]
    return {
        "kind": first["kind"], "length": first["length"], "rate": first["rate"], "tokens": first["tokens"],
        "chars": first["chars"], "takes": len(takes),
        "whole": all(take["whole"] for take in takes),
        "file_whole": None if first["file_whole"] is None else all(take["file_whole"] for take in takes),
        "added_ms": report.summary(latencies),
        "server_cpu_ms_per_1k_tokens": round(sum(take["server_cpu_s"] for take in takes) * 1e6 / tokens, 3),
        "server_cpu_share": round(statistics.fmean(take["server_cpu_share"] for take in takes), 3),
        "generator_cpu_share": round(statistics.fmean(take["generator_cpu_share"] for take in takes), 3),
        "wall_s": round(sum(take["wall_s"] for take in takes), 3),
        "frames": sum(take["frames"] for take in takes),
        "worst": sorted((w for take in takes for w in take["worst"]), key=lambda w: -w["ms"])[:5],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    setup = report.Setup()
    turns = plan(args)
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    stages = measure_stages(args) if "stages" in args.phases else []
    results: list[dict[str, Any]] = []
    if "stack" not in args.phases:
        turns = []
    async with contextlib.AsyncExitStack() as on_exit:
        stack = await on_exit.enter_async_context(
            Stack({turn["script"]: turn["text"] for turn in turns}, relay=False)) if turns else None
        for turn in turns:
            assert stack is not None
            figures = await measure_pooled(stack, turn, args.min_samples, args.max_takes)
            results.append(figures)
            report.progress(SCENARIO, f"{turn['kind']} lines of {turn['length']:,} at {turn['rate']:,}/s: "
                            f"p99 {figures['added_ms'].get('p99')} ms, CPU {figures['server_cpu_ms_per_1k_tokens']} "
                            f"ms/1k tokens, whole {figures['whole']}, file {figures['file_whole']}")
    figures = {"stages": stages, "turns": results, "rows": stage_rows(stages) + rows(results)}
    figures["setup"] = setup.finish(chars=args.chars, lengths=args.lengths, rates=args.rates,
                                    max_turn_s=args.max_turn_s)
    return figures


def _ratio(value: float | None, baseline: float | None) -> float | None:
    return round(value / baseline, 3) if value is not None and baseline else None


def rows(results: list[dict[str, Any]]) -> list[report.Row]:
    out: list[report.Row] = []
    for result in results:
        if result["length"] == BASELINE_LENGTH:
            continue
        base = next(r for r in results if (r["kind"], r["rate"], r["length"]) ==
                    (result["kind"], result["rate"], BASELINE_LENGTH))
        cpu, base_cpu = result["server_cpu_ms_per_1k_tokens"], base["server_cpu_ms_per_1k_tokens"]
        p99, base_p99 = result["added_ms"].get("p99"), base["added_ms"].get("p99")
        what = (f"a {LITERAL_CHARS:,}-character literal in a Python file" if result["kind"] == "literal"
                else f"{result['kind']} in lines of {result['length']:,} characters")
        whole = result["whole"] and result["file_whole"] is not False
        cpu_ratio = _ratio(cpu, base_cpu)
        out.append(report.row(
            f"long lines: {what} at {result['rate']:,} tokens/s, server CPU per 1,000 tokens", cpu, unit="ms",
            baseline=base_cpu, ratio=cpu_ratio, target=f"<= {TARGET_RATIO}x lines of {BASELINE_LENGTH}, whole",
            met=None if cpu_ratio is None else bool(cpu_ratio <= TARGET_RATIO and whole),
            note=f"answer whole: {result['whole']}, file whole: {result['file_whole']}; {result['tokens']:,} tokens",
        ))
        # Latency: a ratio of p99s near a millisecond is noise; within 1 ms of the baseline counts too.
        met = None if p99 is None or base_p99 is None else bool(p99 <= max(TARGET_RATIO * base_p99, base_p99 + 1.0))
        out.append(report.row(
            f"long lines: {what} at {result['rate']:,} tokens/s, added latency p99", p99, unit="ms",
            baseline=base_p99, ratio=_ratio(p99, base_p99),
            target=f"<= {TARGET_RATIO}x lines of {BASELINE_LENGTH} (or +1 ms)", met=met and whole,
            note=f"p50 {result['added_ms'].get('p50')} ms (baseline {base['added_ms'].get('p50')} ms)",
        ))
    return out


def stage_rows(stages: list[dict[str, Any]]) -> list[report.Row]:
    """One row per answer kind and length: the slowest stage's ratio to its 100-character line."""
    out: list[report.Row] = []
    for result in stages:
        if result["length"] == BASELINE_LENGTH:
            continue
        base = next(r for r in stages if (r["kind"], r["length"]) == (result["kind"], BASELINE_LENGTH))
        ratios = {stage: _ratio(result["us_per_delta"][stage], base["us_per_delta"][stage]) for stage in STAGES}
        worst = max(STAGES, key=lambda stage: ratios[stage] or 0.0)
        total = round(sum(result["us_per_delta"][stage] for stage in STAGES), 3)
        base_total = round(sum(base["us_per_delta"][stage] for stage in STAGES), 3)
        out.append(report.row(
            f"long lines, in-process stages: {result['kind']} in lines of {result['length']:,} characters, "
            "µs per delta (all stages)", total, unit="µs", baseline=base_total,
            target=f"<= {TARGET_RATIO}x lines of {BASELINE_LENGTH}",
            met=report.at_most(_ratio(total, base_total), TARGET_RATIO),
            note=f"slowest against its baseline: {worst} {ratios[worst]}x; per stage: "
            + ", ".join(f"{stage} {result['us_per_delta'][stage]}" for stage in STAGES),
        ))
    return out


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"spark_bench {SCENARIO}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="line lengths, characters")
    parser.add_argument("--rates", default=",".join(map(str, RATES)), help="tokens/s")
    parser.add_argument("--kinds", default=",".join((*KINDS, "literal")), help="answer kinds: prose, json, literal")
    parser.add_argument("--chars", type=int, default=40_000, help="characters per answer at least (a line at most)")
    parser.add_argument("--max-turn-s", type=float, default=60.0, help="leave out a turn scheduled to take longer")
    parser.add_argument("--stage-budget-s", type=float, default=1.0, help="seconds each in-process answer may take")
    parser.add_argument("--stage-reps", type=int, default=3, help="times each in-process answer is fed (medians)")
    parser.add_argument("--min-samples", type=int, default=5_000,
                        help="a turn is played again until its deltas number this many (its p99 pooled)")
    parser.add_argument("--max-takes", type=int, default=4, help="times a turn is played at most")
    parser.add_argument("--phases", default="stages,stack", help="stages (in-process), stack (the IDE under Daphne)")
    parser.add_argument("--full", action="store_true", help="keep every turn, however long")
    args = parser.parse_args(argv)
    try:
        args.lengths = sorted({int(n) for n in args.lengths.split(",") if n} | {BASELINE_LENGTH})
        args.rates = [int(n) for n in args.rates.split(",") if n]
        args.kinds = [kind for kind in args.kinds.split(",") if kind]
        args.phases = {phase for phase in args.phases.split(",") if phase}
    except ValueError:
        parser.error("--lengths and --rates take comma-separated whole numbers")
    if args.full:
        args.max_turn_s = float("inf")
    if not args.phases or not args.phases <= {"stages", "stack"}:
        parser.error("--phases takes stages, stack or both")
    if not args.kinds or not set(args.kinds) <= {*KINDS, "literal"}:
        parser.error("--kinds takes a comma-separated subset of prose, json, literal")
    if min(args.lengths) < 1 or not args.rates or min(args.rates) < 1 or args.chars < 1 or args.stage_reps < 1:
        parser.error("lengths, rates and --chars must be >= 1")
    return args


def main(argv: list[str]) -> dict[str, Any]:
    return asyncio.run(run(parse(argv)))
