"""Reconnect storms only, and the IDE's RSS after each (issue 16: what a storm leaves behind).

The soak's storm (``benchmarks.soak``, ``Load.storm``) without the rest of the soak: the real
stack (``benchmarks.pairing.stack.Stack``), ``--rooms`` rooms whose owners keep prompting
answers (``--busy``, so that long-lived memory is allocated between and during the storms, as
in the soak), then ``--storms`` storms, one room each in turn: ``--reconnects`` viewer sockets
at ``--rate`` a second, each resuming with ``?after=<seq>``, taken to its ``hello`` and dropped
(every other one without a close frame), spread over 60 viewer accounts.

Sampled: the IDE's RSS before each storm, its peak during it, ``--settle-s`` after its last
socket ended, and (``--trim-check``) after asking the IDE for a memory report, which runs
``gc.collect()`` and then ``malloc_trim(0)`` (``SPARK_MEMTRACE_TRIM``, ``spark_ide.ops.memtrace``),
with glibc's counters from each report; ``--final-report``: one such report at the end only
(the reports' collection changes what the next storm finds). ``--server-trim off`` runs the IDE with its own trim off
(``SPARK_MALLOC_TRIM=0``, ``spark_ide.ops.native_memory``), to compare.

``python -m benchmarks.storms --storms 6`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.pairing.client import Browser, Watcher, play
from benchmarks.pairing.stack import Stack
from benchmarks.soak import FILES, scripts
from spark_ide.ops.memtrace import ENV_FILE, ENV_SWITCH, ENV_TRIM
from spark_ide.ops.native_memory import ENV_TRIM as ENV_SERVER_TRIM
from spark_ide.ops.native_memory import rss_bytes

VIEWERS = 60
HELLO_TIMEOUT_S = 15.0
_TRIM_LINE = re.compile(r"malloc_trim\(0\): rss ([\d.]+) -> ([\d.]+) MB .* in ([\d.]+) ms")
_GC_LINE = re.compile(r"gc.collect\(\): (\d+) unreachable objects freed in (\d+) ms .*rss now ([\d.]+) MB")
_HEAD_LINE = re.compile(r"memtrace report \d+ pid \d+ at [\d.]+ rss ([\d.]+) MB")
_ALLOC_LINE = re.compile(r"glibc allocator: in use ([\d.]+) MB, free but kept ([\d.]+) MB")


class Owner:
    """A room's owner prompting one answer after another until told to stop."""

    def __init__(self, browser: Browser, number: int) -> None:
        self.browser = browser
        self.number = number
        self.turns = 0
        self.seq = 0

    async def loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            script = f"a{self.turns % 16}"
            await play(self.browser, f"room-{self.number:02d}. [script:{script}][rate:1000][ttft:0]")
            self.turns += 1
            self.seq = max((int(e.get("seq") or 0) for _, e in self.browser.events[-50:]), default=self.seq)
            self.browser.events.clear()  # nothing grows in the load generator


def smaps(pid: int) -> dict[str, float]:
    """The process's resident memory by kind of mapping, MB (``/proc/<pid>/smaps``): files
    (code, libraries), the main heap (``[heap]``, glibc's main arena), anonymous mappings of
    64 MB or more (glibc's thread arenas reserve 64 MB each), of 1 MB up to that (pymalloc's
    1 MB arenas, large mmap-ed blocks, thread stacks) and the rest."""
    sizes: dict[str, float] = {"file": 0.0, "heap": 0.0, "anon_64mb_regions": 0.0, "anon_1_64mb": 0.0,
                               "anon_small": 0.0}
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return sizes
    kind = "anon_small"
    for line in text.splitlines():
        head = line.split(maxsplit=5)
        if "-" in head[0] and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            name = head[5] if len(head) > 5 else ""
            span = end - start
            if name == "[heap]":
                kind = "heap"
            elif name.startswith("/"):
                kind = "file"
            elif span >= 60 << 20:
                kind = "anon_64mb_regions"
            elif span >= 1 << 20:
                kind = "anon_1_64mb"
            else:
                kind = "anon_small"
        elif head[0] == "Rss:":
            sizes[kind] += int(head[1]) / 1024
    return {k: round(v, 1) for k, v in sizes.items()}


async def visit(url: str, token: str, abrupt: bool) -> float | None:
    began = time.monotonic()
    try:
        async with asyncio.timeout(HELLO_TIMEOUT_S):
            watcher = await Watcher.open(url, token, timeout=HELLO_TIMEOUT_S)
            await watcher.ready.wait()
    except (OSError, TimeoutError):
        return None
    took = time.monotonic() - began
    if abrupt:
        watcher.abort()
    else:
        watcher.close()
    return took


async def storm(url: str, tokens: list[str], count: int, rate: float, pid: int) -> dict[str, Any]:
    began = time.monotonic()
    tasks = []
    peak = 0
    for k in range(count):
        await asyncio.sleep(max(0.0, began + k / rate - time.monotonic()))
        tasks.append(asyncio.create_task(visit(url, tokens[k % len(tokens)], k % 2 == 0)))
        if k % 20 == 0:
            peak = max(peak, rss_bytes(pid))
    gathered = asyncio.gather(*tasks)
    while not gathered.done():
        peak = max(peak, rss_bytes(pid))
        await asyncio.wait({gathered}, timeout=0.25)
    hellos = [t for t in gathered.result() if t is not None]
    took = time.monotonic() - began
    return {"hello": len(hellos), "failed": count - len(hellos), "seconds": round(took, 2),
            "served_per_s": round(len(hellos) / took, 1), "peak_mb": round(peak / 1e6, 1)}


async def trim_report(pid: int, path: Path, reports: int) -> dict[str, Any]:
    """Ask for a memory report (with its trim) and wait for it; what the trim did."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.count("== memtrace report") > reports and "malloc_trim" in text.rsplit("== memtrace report", 1)[-1]:
            last = text.rsplit("== memtrace report", 1)[-1]
            trim, collect = _TRIM_LINE.search(last), _GC_LINE.search(last)
            head = _HEAD_LINE.search("== memtrace report" + last)
            allocs = _ALLOC_LINE.findall(last)
            if trim is None or collect is None or head is None:
                return {"trim": last[-400:]}
            return {"rss_mb": float(head[1]), "gc_freed_objects": int(collect[1]), "gc_ms": int(collect[2]),
                    "after_gc_mb": float(collect[3]),
                    "before_trim_mb": float(trim[1]), "after_trim_mb": float(trim[2]), "trim_ms": float(trim[3]),
                    "glibc_in_use_free_mb": allocs[0] if allocs else None,
                    "glibc_after_trim_mb": allocs[-1] if allocs else None}
        await asyncio.sleep(0.2)
    raise TimeoutError("no memory report within 60 s")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    trace_file = Path(tempfile.gettempdir()) / f"spark-storms-memtrace-{os.getpid()}.txt"
    trace_file.unlink(missing_ok=True)
    if args.trim_check or args.final_report:
        os.environ.update({ENV_SWITCH: "1", ENV_FILE: str(trace_file), ENV_TRIM: "1"})
    os.environ[ENV_SERVER_TRIM] = "1" if args.server_trim == "on" else "0"
    async with Stack(scripts(), relay=False) as stack:
        daphne = psutil.Process(stack.pids["daphne"])
        files = dict(FILES)
        if args.doc_kb:  # a big file: every join gets the whole document (a long-lived room's is large)
            line = "value = compute(items, total)  # a line of a large module\n"
            files["big.py"] = line * (args.doc_kb * 1024 // len(line))
        made = [await stack.session(files) for _ in range(args.rooms)]
        session_ids = [url.rstrip("/").rsplit("/", 1)[-1] for _, url in made]
        tokens = await stack.participants(session_ids, {f"viewer-{k}": "viewer" for k in range(VIEWERS)})
        viewer_tokens = list(tokens.values())
        owners = [Owner(await Browser.open(url, stack.token), n) for n, (_, url) in enumerate(made)]
        stop = asyncio.Event()
        busy = [asyncio.create_task(o.loop(stop)) for o in owners] if args.busy else []
        await asyncio.sleep(args.warm_s)
        rows: list[dict[str, Any]] = []
        reports = 0
        for k in range(args.storms):
            owner = owners[k % len(owners)]
            url = f"{made[owner.number][1]}?after={owner.seq}"
            before = rss_bytes(daphne.pid)
            row: dict[str, Any] = {"storm": k + 1, "at": round(time.time(), 3), "room": owner.number,
                                   "load_1m": round(os.getloadavg()[0], 2),
                                   "before_mb": round(before / 1e6, 1), "smaps_before_mb": smaps(daphne.pid)}
            row.update(await storm(url, viewer_tokens, args.reconnects, args.rate, daphne.pid))
            await asyncio.sleep(args.settle_s)
            after = rss_bytes(daphne.pid)
            row["settled_mb"] = round(after / 1e6, 1)
            row["settled_at"] = round(time.time(), 3)
            row["smaps_mb"] = smaps(daphne.pid)
            row["step_mb"] = round((after - before) / 1e6, 1)
            if args.trim_check:
                row["trim"] = await trim_report(daphne.pid, trace_file, reports)
                reports += 1
            rows.append(row)
            print(json.dumps(row), flush=True)
            await asyncio.sleep(args.gap_s)
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*busy), timeout=30)
        final = rss_bytes(daphne.pid)
        final_report = await trim_report(daphne.pid, trace_file, reports) if args.final_report else None
        for owner in owners:
            await owner.browser.close()
    steps = [r["step_mb"] for r in rows]
    return {
        "args": vars(args), "storms": rows, "final_mb": round(final / 1e6, 1), "final_report": final_report,
        "median_step_mb": statistics.median(steps) if steps else None,
        "first_before_mb": rows[0]["before_mb"] if rows else None,
        "turns": sum(o.turns for o in owners), "load_avg": os.getloadavg(),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.storms", description=__doc__.split("\n\n")[0])
    parser.add_argument("--storms", type=int, default=6)
    parser.add_argument("--reconnects", type=int, default=400, help="sockets per storm")
    parser.add_argument("--rate", type=float, default=200.0, help="reconnects a second")
    parser.add_argument("--rooms", type=int, default=3)
    parser.add_argument("--busy", action=argparse.BooleanOptionalAction, default=True,
                        help="the rooms' owners keep prompting answers throughout")
    parser.add_argument("--doc-kb", type=int, default=0,
                        help="a file of this many kB in each room (the document every joining page is sent)")
    parser.add_argument("--warm-s", type=float, default=10.0, help="turns before the first storm")
    parser.add_argument("--settle-s", type=float, default=5.0, help="after a storm's last socket, before sampling")
    parser.add_argument("--gap-s", type=float, default=3.0, help="after the sample, before the next storm")
    parser.add_argument("--trim-check", action="store_true",
                        help="after each storm, a memory report with malloc_trim(0) (SPARK_MEMTRACE_TRIM)")
    parser.add_argument("--final-report", action="store_true",
                        help="at the end, one memory report: gc.collect(), then malloc_trim(0)")
    parser.add_argument("--server-trim", choices=("on", "off"), default="on",
                        help="the IDE's own trim after sockets close in bulk (SPARK_MALLOC_TRIM)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(parse())), indent=1))
