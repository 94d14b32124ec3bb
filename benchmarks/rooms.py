"""Many rooms at once (``manage.py spark_bench rooms``).

The pairing benchmark's stack (``benchmarks.pairing.stack``: model server, frame tap, the IDE
under Daphne in one process, the bare relay). R rooms, each its own workspace and session
with one socket (the bare relay: R sockets, each with its own model socket), each driven by
its own scripted answer of ``--tokens`` tokens (a long prose line, a code block, short
lines: ``pairing.run.mixed``) at 1,000 tokens/s, all at once. For
each upstream delta of each room: when its socket held the delta's last character minus when
the tap saw its frame.

R rises through ``--levels`` (IDE and bare alternating, the rooms of a level kept for the
next); a relay stops at the first level whose p99 passes ``--limit-ms`` or where a socket
lost text. The figures: the largest R within the limit and its ratio to the bare relay's; the
server's CPU milliseconds per 1,000 tokens relayed (its ``/proc/<pid>/stat`` clock over the
answers); the load generator's own CPU share beside each (it shares the 2 cores).

``--databases sqlite,postgres`` (the quick run's) ramps the IDE on each database in turn, a
stack of its own each, PostgreSQL on a fresh database at 127.0.0.1:5432: a row per database;
when PostgreSQL cannot be reached its row says "not measured" and why.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
from typing import Any

from benchmarks import report
from benchmarks.pairing.client import Watcher
from benchmarks.pairing.run import FILES, PACED_RATE, mixed
from benchmarks.pairing.scale import (
    cpu_row,
    measure_level,
    parse_ramp,
    raise_open_files,
    ramp,
    ramp_figures,
    ramp_parser,
    server_pids,
)
from benchmarks.pairing.stack import Stack, fresh_postgres_database

SCENARIO = "rooms"
LEVELS = (5, 10, 20, 40, 60, 80, 100, 130, 160, 200, 250, 300, 400)
QUICK = ["--tokens", "1000", "--budget-s", "30", "--databases", "sqlite,postgres"]
LIMIT_MS = 50.0
TARGET_RATIO = 0.8
OPEN_BATCH = 20  # rooms opened at once while a level fills up


def script(room: int) -> str:
    return f"room-{room}"


def answer(room: int, tokens: int) -> str:
    """Room ``room``'s answer: its own text (the tap tells the rooms' answers apart by it), a
    long prose line, a code block and short lines (``mixed``)."""
    return f"room {room} says: {mixed(tokens, salt=room)}"


class Side:
    """One relay's rooms, one socket each."""

    def __init__(self, name: str, stack: Stack, texts: dict[str, str]) -> None:
        self.name, self.stack, self.texts = name, stack, texts
        self.sockets: list[Watcher] = []
        self.pids = server_pids(stack, name)

    async def _open(self) -> Watcher:
        if self.name == "ide":
            _, ws_url = await self.stack.session(FILES)
            watcher = await Watcher.open(ws_url, self.stack.token, ready_marker=b'"presence"')
        else:
            watcher = await Watcher.open(self.stack.relay_url)
        async with asyncio.timeout(60):
            await watcher.ready.wait()  # joined: the transcript is in
        # Warm, as a room is once someone used it: the first turn, the model link.
        watcher.send({"type": "prompt", "text": "[say]warm up[/say][rate:1e6][ttft:0]"})
        await watcher.until_finished(1)
        return watcher

    async def fill(self, count: int) -> None:
        while len(self.sockets) < count:
            batch = min(OPEN_BATCH, count - len(self.sockets))
            self.sockets += await asyncio.gather(*(self._open() for _ in range(batch)))
        for watcher in self.sockets:
            watcher.frames.clear()
        if closed := sum(w.closed for w in self.sockets):
            raise ConnectionError(f"{closed} {self.name} sockets were closed by the server")

    async def measure(self, count: int) -> dict[str, Any]:
        await self.fill(count)

        async def drive() -> None:
            for room, watcher in enumerate(self.sockets):
                watcher.send({"type": "prompt", "text": f"[script:{script(room)}][rate:{PACED_RATE}][ttft:0]"})

        return await measure_level(
            self.stack, self.pids, self.sockets, drive, lambda room: self.texts[script(room)]
        )

    def close(self) -> None:
        for watcher in self.sockets:
            watcher.close()


DATABASES = {"sqlite": "SQLite (the embedded default)", "postgres": "PostgreSQL"}
POSTGRES_NAME = "spark_bench_rooms"  # the fresh database ``--databases ...,postgres`` makes


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """One ramp on each of ``args.databases``; the first measured one's figures at the top
    (its rows first), every one's under ``databases``."""
    setup = report.Setup()
    levels = [n for n in args.levels if n <= args.max]
    texts = {script(room): answer(room, args.tokens) for room in range(levels[-1])}
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    measured: dict[str, dict[str, Any]] = {}
    for database in args.databases:
        if database == "postgres":
            try:
                url = fresh_postgres_database(args.postgres or POSTGRES_NAME)
            except Exception as exc:  # no server, no driver: said in its row
                measured[database] = {"database": DATABASES[database], "not_measured": _why(exc)}
                continue
        else:
            url = ""
        measured[database] = await _ramp_on(url, texts, levels, args)
        measured[database]["database"] = DATABASES[database]
    first = next((figures for figures in measured.values() if "not_measured" not in figures), None)
    figures = dict(first) if first is not None else {}
    figures["databases"] = measured
    figures["rows"] = [row for one in measured.values() for row in rows(one, args.limit_ms)]
    figures["charts"] = {}
    for database, one in measured.items():
        if "not_measured" not in one:
            suffix = "" if one is first else f"_{database}"
            figures["charts"].update({f"{stem}{suffix}": chart for stem, chart in charts(one, args.limit_ms).items()})
    figures["setup"] = setup.finish(
        tokens=args.tokens, rate=PACED_RATE, limit_ms=args.limit_ms, levels=levels, databases=args.databases,
    )
    return figures


def _why(exc: Exception) -> str:
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return f"PostgreSQL not reachable at 127.0.0.1:5432 ({type(exc).__name__}: {first_line})"[:240]


async def _ramp_on(
    database_url: str, texts: dict[str, str], levels: list[int], args: argparse.Namespace,
) -> dict[str, Any]:
    """The IDE (on ``database_url``; "": SQLite) and the bare relay ramped up ``levels``."""
    async with Stack(texts, database_url=database_url) as stack:
        ide, bare = Side("ide", stack, texts), Side("bare", stack, texts)
        try:
            measures = {"ide": ide.measure, "bare": bare.measure}
            ramps = await ramp(SCENARIO, levels, measures, args.limit_ms, args.budget_s)
        finally:
            ide.close()
            bare.close()
    return ramp_figures(ramps)


def _at_largest(side: dict[str, Any]) -> dict[str, Any] | None:
    return next((f for f in side["levels"] if f["level"] == side["largest"]), None)


def rows(figures: dict[str, Any], limit_ms: float) -> list[report.Row]:
    figure = (f"rooms at {PACED_RATE:,} tokens/s each, one socket each, on {figures['database']}: largest count "
              f"with p99 <= {limit_ms:g} ms")
    if "not_measured" in figures:
        return [report.row(figure, None, unit="rooms", target=f">= {TARGET_RATIO}x bare",
                           note=f"not measured: {figures['not_measured']}")]
    ide, bare, ratio = figures["ide"], figures["bare"], figures["ratio"]
    at_ide, at_bare = _at_largest(ide), _at_largest(bare)

    def share(level: dict[str, Any] | None) -> str:
        return "-" if level is None else f"{level['generator_cpu_share']:.0%}"

    out = [
        report.row(
            figure, ide["largest"], unit="rooms", baseline=bare["largest"], ratio=ratio,
            target=f">= {TARGET_RATIO}x bare",
            met=report.at_least(ratio, TARGET_RATIO),
            note=f"IDE stopped: {ide['stopped']}; bare stopped: {bare['stopped']}; generator CPU share at the "
            f"largest count: IDE {share(at_ide)}, bare {share(at_bare)}",
        ),
    ]
    cpu = cpu_row(figures, "rooms")
    if cpu is not None:
        cpu["figure"] += f", on {figures['database']}"
    return out + ([cpu] if cpu is not None else [])


def charts(figures: dict[str, Any], limit_ms: float) -> dict[str, report.Chart]:
    p99 = {
        name: [(f["level"], f["added_ms"]["p99"]) for f in figures[name]["levels"] if f["added_ms"].get("n")]
        for name in ("ide", "bare")
    }
    cpu = {
        name: [(f["level"], f["server_cpu_ms_per_1k_tokens"]) for f in figures[name]["levels"]]
        for name in ("ide", "bare")
    }
    return {
        "rooms_p99": report.chart(
            f"Rooms at {PACED_RATE:,} tokens/s each, on {figures['database']}", "rooms", "p99 added latency (ms)", p99,
            log_y=True, hline=limit_ms,
        ),
        "rooms_cpu": report.chart(
            f"Server CPU per 1,000 tokens relayed, on {figures['database']}", "rooms", "CPU ms per 1,000 tokens", cpu,
        ),
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = ramp_parser(f"spark_bench {SCENARIO}", __doc__.split("\n\n")[0], "rooms", LEVELS, LIMIT_MS)
    parser.add_argument("--postgres", metavar="NAME", default="",
                        help="run the IDE on this PostgreSQL database, made afresh on 127.0.0.1:5432 (default: SQLite; "
                        f"with --databases: the PostgreSQL ramp's database, default {POSTGRES_NAME})")
    parser.add_argument("--databases", metavar="LIST", default="",
                        help="the IDE's databases, one ramp each in this run: comma-separated, of "
                        f"{', '.join(DATABASES)} (PostgreSQL on a fresh database; when the server cannot be "
                        "reached its row says so); default: sqlite, or postgres with --postgres")
    args = parse_ramp(parser, argv)
    if args.postgres and not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", args.postgres):
        parser.error("--postgres must be a plain PostgreSQL name: lower-case letters, digits, _")
    databases = [name for name in args.databases.split(",") if name] or ["postgres" if args.postgres else "sqlite"]
    if unknown := [name for name in databases if name not in DATABASES]:
        parser.error(f"--databases: unknown {', '.join(unknown)} (known: {', '.join(DATABASES)})")
    if len(set(databases)) != len(databases):
        parser.error("--databases names each database once")
    args.databases = databases
    return args


def main(argv: list[str]) -> dict[str, Any]:
    raise_open_files()
    return asyncio.run(run(parse(argv)))

