"""One room watched by many sockets (``manage.py spark_bench fanout``).

The pairing benchmark's stack (``benchmarks.pairing.stack``: model server, frame tap, the IDE
under Daphne in one process, the bare relay). One IDE session is watched by N sockets, all
joined with the owner's API token (a person's tabs, or everyone who came by invite: the room
treats them the same); the bare relay runs its fan-out mode (``/watch/<name>``: the sockets
share one model socket and each event is encoded once). A driving socket prompts an answer of
``--tokens`` tokens of prose at 1,000 tokens/s; for each upstream delta and each watcher, the
added latency is when the watcher held its last character minus when the tap saw its frame.

N rises through ``--levels`` (IDE and bare alternating, the watchers of a level kept for the
next); a relay stops at the first level whose p99 passes ``--limit-ms`` or where a watcher
lost text. The figure is the largest N within the limit, and its ratio to the bare relay's.
Watchers are ``client.Watcher``: they only time and keep frames, JSON is parsed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

from benchmarks import report
from benchmarks.pairing.client import Browser, Watcher, play
from benchmarks.pairing.run import FILES, PACED_RATE, prose
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
from benchmarks.pairing.stack import Stack

SCENARIO = "fanout"
LEVELS = (10, 25, 50, 100, 200, 300, 400, 500, 650, 800, 1000, 1300, 1600, 2000)
QUICK = ["--tokens", "1000", "--budget-s", "30"]
LIMIT_MS = 100.0
TARGET_RATIO = 0.8
CONNECT_BATCH = 50  # sockets opened at once while a level fills up
SETTLE_S = 0.5  # after the last socket of a level joined, before the answer starts


class Side:
    """One relay's room: its driving socket and its watchers."""

    def __init__(self, name: str, url: str, token: str | None, driver: Browser, stack: Stack, text: str) -> None:
        self.name, self.url, self.token, self.driver, self.stack, self.text = name, url, token, driver, stack, text
        self.watchers: list[Watcher] = []
        # What a joined socket has received last of its join: the IDE's join ends with a
        # presence event (after the transcript), the bare relay's is its hello.
        self.joined = b'"presence"' if name == "ide" else b'"hello"'
        self.pids = server_pids(stack, name)

    async def fill(self, count: int) -> None:
        while len(self.watchers) < count:
            batch = min(CONNECT_BATCH, count - len(self.watchers))
            self.watchers += await asyncio.gather(
                *(Watcher.open(self.url, self.token, ready_marker=self.joined) for _ in range(batch))
            )
        async with asyncio.timeout(60):
            for watcher in self.watchers:
                await watcher.ready.wait()
        await asyncio.sleep(SETTLE_S)  # the last joins' presence events reach everyone
        if closed := sum(w.closed for w in self.watchers):
            raise ConnectionError(f"{closed} {self.name} watchers were closed by the server")

    async def measure(self, count: int) -> dict[str, Any]:
        await self.fill(count)

        async def drive() -> None:
            await play(self.driver, f"[script:fanout][rate:{PACED_RATE}][ttft:0]")

        figures = await measure_level(self.stack, self.pids, self.watchers, drive, lambda _: self.text)
        self.driver.events.clear()
        return figures

    def close(self) -> None:
        for watcher in self.watchers:
            watcher.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    setup = report.Setup()
    text = prose(args.tokens, salt=7)
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    async with Stack({"fanout": text}) as stack:
        _, ws_url = await stack.session(FILES)
        ide = Side("ide", ws_url, stack.token, await Browser.open(ws_url, stack.token), stack, text)
        bare_url = f"{stack.relay_url}watch/{SCENARIO}"
        bare = Side("bare", bare_url, None, await Browser.open(bare_url), stack, text)
        try:
            for side in (ide, bare):  # warm: the first turn, imports, connections
                await play(side.driver, f"[say]warm up[/say][rate:{PACED_RATE}][ttft:0]")
            ramps = await ramp(
                SCENARIO, [n for n in args.levels if n <= args.max],
                {"ide": ide.measure, "bare": bare.measure}, args.limit_ms, args.budget_s,
            )
        finally:
            for side in (ide, bare):
                side.close()
                await side.driver.close()
    figures = ramp_figures(ramps)
    figures["rows"] = rows(figures, args.limit_ms)
    figures["charts"] = charts(figures, args.limit_ms)
    figures["setup"] = setup.finish(tokens=args.tokens, rate=PACED_RATE, limit_ms=args.limit_ms, levels=args.levels)
    return figures


def rows(figures: dict[str, Any], limit_ms: float) -> list[report.Row]:
    ide, bare, ratio = figures["ide"], figures["bare"], figures["ratio"]
    note = (
        f"IDE stopped: {ide['stopped']}; bare stopped: {bare['stopped']}; generator CPU share at the "
        f"largest N: IDE {_share(ide)}, bare {_share(bare)}"
    )
    return [
        report.row(
            f"one room, N watchers at {PACED_RATE:,} tokens/s: largest N with p99 added latency <= {limit_ms:g} ms",
            ide["largest"], unit="sockets", baseline=bare["largest"], ratio=ratio,
            target=f">= {TARGET_RATIO}x bare", met=report.at_least(ratio, TARGET_RATIO), note=note,
        ),
        *filter(None, [cpu_row(figures, "watchers")]),
    ]


def _share(side: dict[str, Any]) -> str:
    level = next((f for f in side["levels"] if f["level"] == side["largest"]), None)
    return "-" if level is None else f"{level['generator_cpu_share']:.0%}"


def charts(figures: dict[str, Any], limit_ms: float) -> dict[str, report.Chart]:
    series = {
        name: [(f["level"], f["added_ms"]["p99"]) for f in figures[name]["levels"] if f["added_ms"].get("n")]
        for name in ("ide", "bare")
    }
    return {"fanout_p99": report.chart(
        f"One room, N watchers at {PACED_RATE:,} tokens/s", "watchers (N)", "p99 added latency (ms)", series,
        log_y=True, hline=limit_ms,
    )}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = ramp_parser(f"spark_bench {SCENARIO}", __doc__.split("\n\n")[0], "watchers", LEVELS, LIMIT_MS)
    return parse_ramp(parser, argv)


def main(argv: list[str]) -> dict[str, Any]:
    raise_open_files()
    return asyncio.run(run(parse(argv)))

