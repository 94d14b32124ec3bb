"""Watchdog benchmark (issue 15): what reading the model's code costs while it streams.

* **Scan cost per streamed line** (tiers 1-2: secret patterns, statement rules): a realistic
  Python module of ``--lines`` lines, mostly ordinary code with a few flaws, fed to a
  ``guard.FileScanner`` in ``--token-chars`` pieces as the applier commits it; the cost of a
  line is the time of the ``feed`` calls from the end of the line before to its own end.
  Target p99 < 0.5 ms.
* **Stream throughput with the watchdog on vs off**, in the same run, alternating, two ways:

  - *in the room* (the figure the target is for): the IDE under Daphne with our model server
    (the pairing benchmark's stack), two workspaces, one with the watchdog in ``flag`` mode
    (everything but halting: the module holds flaws, which would halt it) and one ``off``;
    the model plays the module as one write block at ``--rate`` tokens/s, far above what the
    room can take, so the turn's ``tokens_per_s`` is the room's own throughput;
  - *the engine alone*: the same answer streamed through the edit engine into a document,
    with ``live.turn_watch.TurnWatch`` reading every chunk's code as the Pilot does (bandit in
    the scan process) and without it: the strict form, nothing else to hide the cost.

  Target on/off >= 0.9.

``manage.py spark_bench guard --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from pycrdt import Doc

from benchmarks import report
from spark_ide.editing import TurnEditor, workspace_files
from spark_ide.guard import FileScanner, bandit_scan
from spark_ide.live.scan_process import bandit_blocks, scan_pool, shutdown_scan_pool
from spark_ide.live.turn_watch import TurnWatch
from spark_ide.live.watchdog import GuardRules

TARGET_LINE_P99_MS = 0.5
TARGET_RATIO = 0.9
QUICK = ["--repeat", "11"]

# Ordinary code, then (rarely) a flaw: what a model writes in a real module.
ORDINARY = [
    "def {name}(items, limit={n}):",
    '    """Return the first {n} items that pass the check."""',
    "    result = []",
    "    for index, item in enumerate(items):",
    "        if index >= limit:",
    "            break",
    "        value = transform(item, factor={n}) + offset",
    '        logger.debug("item %s -> %s", index, value)',
    "        result.append({{'id': item.id, 'value': value, 'tags': sorted(item.tags)}})",
    "    return result",
    "",
    "",
    "class {cls}:",
    "    timeout = {n}",
    "",
    "    def __init__(self, client, *, retries=3):",
    "        self.client = client",
    "        self.retries = retries",
    "",
    "    def fetch(self, key):",
    '        response = self.client.get(f"/items/{{key}}", params={{"limit": self.timeout}})',
    "        response.raise_for_status()",
    "        return response.json()",
    "",
    "",
]
FLAWS = [
    "def lookup(cursor, name):",
    "    cursor.execute(f\"SELECT * FROM users WHERE name = '{{name}}'\")",
    "    return cursor.fetchall()",
    "",
    "",
    "def archive(path):",
    "    subprocess.run('tar czf out.tgz ' + path, shell=True)",
    "",
    "",
]


def build_module(lines: int) -> str:
    out = ["import logging", "import subprocess", "", "logger = logging.getLogger(__name__)", "", ""]
    block = 0
    while len(out) < lines:
        template = FLAWS if block % 20 == 19 else ORDINARY
        out += [line.format(name=f"select_{block}", cls=f"Client{block}", n=block % 50) for line in template]
        block += 1
    return "\n".join(out[:lines]) + "\n"


def pieces(text: str, size: int) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


def line_costs(text: str, size: int) -> tuple[list[float], int]:
    """Seconds spent per completed line (feed calls up to the piece that ends it), findings."""
    scanner = FileScanner("module.py")
    costs: list[float] = []
    spent = 0.0
    found = 0
    for piece in pieces(text, size):
        start = time.perf_counter()
        found += len(scanner.feed(piece))
        spent += time.perf_counter() - start
        for _ in range(piece.count("\n")):
            costs.append(spent / piece.count("\n"))
            spent = 0.0
    found += len(scanner.finish())
    return costs, found


def stream(text: str, size: int, *, watched: bool, pool: ProcessPoolExecutor) -> float:
    """Seconds to stream ``text`` as one write block through the edit engine (and the watchdog)."""
    doc: Doc[Any] = Doc()
    workspace_files(doc)
    editor = TurnEditor(doc, "bench")
    watch = TurnWatch(GuardRules()) if watched else None
    answer = '<write path="module.py">\n' + text + "</write>\n"
    scans: list[Future[Any]] = []
    start = time.perf_counter()
    for piece in pieces(answer, size):
        events = editor.feed(piece)
        code = editor.take_code()
        if watch is not None:
            watch.feed(code, events)
            watch.pending += watch.blocks()
            # As the Pilot does: one scan at a time, at most one every BANDIT_EVERY_S, the
            # blocks completed meanwhile together.
            now = time.monotonic()
            if watch.pending and (not scans or scans[-1].done()) and not watch.scan_wait(now):
                scans.append(pool.submit(bandit_blocks, watch.pending))
                watch.pending, watch.scanned_at = [], now
    events = editor.finish()
    if watch is not None:
        watch.feed(editor.take_code(), events)
    elapsed = time.perf_counter() - start
    for scan in scans:  # the room does not wait for them; they shared the CPU while it streamed
        scan.result()
    return elapsed


async def room_rates(text: str, rate: int, repeat: int) -> dict[str, list[float]]:
    """Tokens/s of the same turn in a workspace with the watchdog on (flag) and off, alternating."""
    from benchmarks.pairing.client import Browser, play
    from benchmarks.pairing.stack import Stack

    answer = '<write path="module.py">\n' + text + "</write>\n"
    rates: dict[str, list[float]] = {"flag": [], "off": []}
    async with Stack({"module": answer}, relay=False) as stack:
        sockets = {}
        for mode in rates:
            workspace, url = await stack.session({"README.md": "bench\n"})
            await stack.manage("shell", "-c", (
                "from spark_ide.workspaces.models import Workspace;"
                f"Workspace.objects.filter(pk='{workspace}').update(guard_mode='{mode}')"
            ))
            sockets[mode] = await Browser.open(url, stack.token)
        try:
            for browser in sockets.values():  # warm-up: the first turn of a room opens and warms it
                await play(browser, f"[script:module][rate:{rate}][ttft:0]")
            for _ in range(repeat):
                for mode, browser in sockets.items():
                    turn = await play(browser, f"[script:module][rate:{rate}][ttft:0]")
                    rates[mode].append(float(turn.finished["metrics"]["tokens_per_s"]))
        finally:
            for browser in sockets.values():
                await browser.close()
    return rates


def main(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="spark_bench guard", description=__doc__)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--token-chars", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rate", type=int, default=200_000, help="the model's tokens/s in the room part")
    parser.add_argument("--room-lines", type=int, default=1000, help="the module's lines in the room part")
    parser.add_argument("--room-repeat", type=int, default=41,
                        help="turns per mode in the room part (a turn is ~70 ms and varies 2-3x from turn to "
                        "turn on a shared 2-core machine: a median of 11 moved by +-0.08)")
    args = parser.parse_args(argv)
    setup = report.Setup()
    text = build_module(args.lines)
    pool = scan_pool()  # the room's scan process, started (bandit loaded) outside the timings
    pool.submit(bandit_scan, "warm.py", "import os\nos.system(x)\n").result()

    p50s, p99s, maxes, found = [], [], [], 0
    on, off = [], []
    for _ in range(args.repeat):
        costs, found = line_costs(text, args.token_chars)
        ordered = sorted(costs)
        p50s.append(report.percentile(ordered, 0.5) * 1000)
        p99s.append(report.percentile(ordered, 0.99) * 1000)
        maxes.append(ordered[-1] * 1000)
        off.append(stream(text, args.token_chars, watched=False, pool=pool))
        on.append(stream(text, args.token_chars, watched=True, pool=pool))
    p99 = statistics.median(p99s)
    tokens = len(pieces('<write path="module.py">\n' + text + "</write>\n", args.token_chars))
    rate_on, rate_off = tokens / statistics.median(on), tokens / statistics.median(off)
    ratio = rate_on / rate_off
    shutdown_scan_pool()
    rooms = asyncio.run(room_rates(build_module(args.room_lines), args.rate, args.room_repeat))
    room_on, room_off = statistics.median(rooms["flag"]), statistics.median(rooms["off"])
    room_ratio = room_on / room_off
    return {
        "benchmark": "guard",
        "lines": args.lines,
        "token_chars": args.token_chars,
        "repeat": args.repeat,
        "room_repeat": args.room_repeat,
        "findings_per_pass": found,
        "load_average_1m": os.getloadavg()[0],
        "line_cost_ms": {"p50": statistics.median(p50s), "p99": p99, "max": statistics.median(maxes)},
        "stream_tokens_per_s": {"watchdog_on": rate_on, "watchdog_off": rate_off},
        "engine_on_over_off": ratio,
        "room_tokens_per_s": {"watchdog_on": room_on, "watchdog_off": room_off, "runs": rooms},
        "room_on_over_off": room_ratio,
        "targets": {"line_cost_ms_p99": TARGET_LINE_P99_MS, "room_on_over_off": TARGET_RATIO},
        "rows": [
            report.row(
                "watchdog scan cost per streamed line (tiers 1-2), p99", round(p99, 4), unit="ms",
                target="< 0.5 ms", met=p99 < TARGET_LINE_P99_MS,
                note=f"p50 {statistics.median(p50s):.4f} ms; {args.lines:,}-line module, "
                f"{args.token_chars}-char pieces",
            ),
            report.row(
                "stream throughput in the room, watchdog on / off", round(room_ratio, 3), unit="x",
                target=">= 0.9", met=room_ratio >= TARGET_RATIO,
                note=f"{room_on:,.0f} vs {room_off:,.0f} tokens/s, medians of {args.room_repeat} turns each "
                f"({args.room_lines:,}-line module at {args.rate:,} tokens/s offered)",
            ),
            report.row(
                "stream throughput, edit engine alone, watchdog on / off", round(ratio, 3), unit="x",
                target="(strict form)", met=None,
                note=f"{rate_on:,.0f} vs {rate_off:,.0f} tokens/s into a document (bandit in the scan process)",
            ),
        ],
        "setup": setup.finish(lines=args.lines, repeat=args.repeat),
    }
