"""What the scale benchmarks (``fanout``, ``rooms``) share: CPU clocks of the stack's
processes, each socket's added latency, and the ramp that finds the largest load within a
p99 limit for the IDE and the bare relay, level by level, alternating.

Both relays are measured by the same cheap client (``client.Watcher``) against the same
frame tap, so the load generator's cost (reported as its CPU share) is the same for both;
the ratio of the two largest loads is the figure that counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks import report
from benchmarks.pairing.client import Watcher
from benchmarks.pairing.run import added_latency_ms
from benchmarks.pairing.stack import Stack, Tapped, tap_deltas
from benchmarks.report import progress, summary
from spark_ide.live.events import Event
from spark_ide.modelserver.engines.scripted import split_tokens

RELAYS = ("ide", "bare")
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)


class Clocks:
    """CPU time of the stack's processes and of this one (the load generator) over a window."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._wall = 0.0
        self._own = 0.0
        self._cpu: dict[str, float] = {}

    def start(self) -> None:
        self._cpu = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self._own = time.process_time()
        self._wall = time.monotonic()

    def stop(self) -> dict[str, float]:
        """Seconds of wall and CPU time per process, and each one's share of the machine."""
        wall = time.monotonic() - self._wall
        cpus = os.cpu_count() or 1
        used = {name: cpu_seconds(pid) - self._cpu[name] for name, pid in self.pids.items()}
        used["generator"] = time.process_time() - self._own
        out = {"wall_s": round(wall, 3)}
        for name, seconds in used.items():
            out[f"{name}_cpu_s"] = round(seconds, 3)
            out[f"{name}_cpu_share"] = round(seconds / (wall * cpus), 3) if wall > 0 else 0.0
        return out


def server_pids(stack: Stack, relay: str) -> dict[str, int]:
    """The processes whose CPU a measurement of ``relay`` ("ide" or "bare") reads."""
    return {"server": stack.pids["daphne" if relay == "ide" else "relay"], "modelserver": stack.pids["modelserver"]}


def answers_by_text(frames: list[Tapped]) -> dict[str, list[tuple[float, str]]]:
    """The tapped model answers, each as its deltas ``(time, text)``, keyed by its whole text."""
    by_item: dict[str, list[tuple[float, str]]] = {}
    for at, item, delta in tap_deltas(frames):
        by_item.setdefault(item, []).append((at, delta))
    return {"".join(text for _, text in deltas): deltas for deltas in by_item.values()}


@dataclass
class Received:
    """What the sockets of one measured turn got, against what the model sent."""

    latencies_ms: list[float] = field(default_factory=list)
    sockets: int = 0
    lossy_sockets: int = 0  # sockets whose deltas do not concatenate to the model's answer
    frames: int = 0
    tokens: int = 0  # tokens delivered, summed over the sockets

    def add(
        self, watcher: Watcher, mark: int, upstream: list[tuple[float, str]] | None, expected: str, tokens: int
    ) -> None:
        received = watcher.deltas_since(mark)
        self.sockets += 1
        self.frames += len(received)
        self.tokens += tokens
        if upstream is None or "".join(text for _, text in received) != expected:
            self.lossy_sockets += 1
            return
        self.latencies_ms.extend(ms for _, ms in added_latency_ms(upstream, received))


def level_figures(received: Received, usage: dict[str, float]) -> dict[str, Any]:
    """A level's figures; the server's CPU per 1,000 tokens counts each token once per socket
    it reached (the load-independent side of a level: CPU time shifts less with other work
    on the machine than latency does)."""
    figures = summary(received.latencies_ms)
    return {
        "added_ms": figures, "sockets": received.sockets, "lossy_sockets": received.lossy_sockets,
        "frames_per_socket": round(received.frames / max(received.sockets, 1), 1), "tokens": received.tokens,
        "server_cpu_ms_per_1k_tokens": round(usage["server_cpu_s"] * 1e6 / max(received.tokens, 1), 3), **usage,
    }


async def measure_level(
    stack: Stack, pids: dict[str, int], sockets: Sequence[Watcher], drive: Callable[[], Awaitable[None]],
    expected: Callable[[int], str], pool: list[float] | None = None,
) -> dict[str, Any]:
    """One level: ``drive()`` starts the answers, every socket's turn is awaited while the tap
    records and the processes' clocks run; then what socket ``i`` got is checked against the
    answer ``expected(i)`` the model sent, and the frames kept are let go. ``pool``: gets every
    added latency measured (for figures over several answers)."""
    tap = stack.tap
    assert tap is not None
    marks = [(w, len(w.frames), w.finished) for w in sockets]
    clocks = Clocks(pids)
    with tap.recorded() as frames:
        clocks.start()
        try:
            await drive()
            await asyncio.gather(*(w.until_finished(finished + 1) for w, _, finished in marks))
        finally:
            usage = clocks.stop()
    answers = answers_by_text(frames)
    received = Received()
    for index, (watcher, mark, _) in enumerate(marks):
        text = expected(index)
        received.add(watcher, mark, answers.get(text), text, len(split_tokens(text)))
        watcher.frames.clear()  # measured: what a level holds stays bounded
    if pool is not None:
        pool.extend(received.latencies_ms)
    return level_figures(received, usage)


Measure = Callable[[int], Awaitable[dict[str, Any]]]


@dataclass
class Ramp:
    """One relay's way up the levels: the largest level within the limit, and every level's figures."""

    levels: list[dict[str, Any]] = field(default_factory=list)
    largest: int = 0
    stopped: str = "the levels ran out"


async def ramp(
    scenario: str, levels: Sequence[int], measures: Mapping[str, Measure], limit_ms: float, budget_s: float
) -> dict[str, Ramp]:
    """Measure each relay at each level, alternating, until its p99 passes ``limit_ms`` (or a
    socket loses text); a relay stops there, and every relay stops when ``budget_s`` is spent."""
    deadline = time.monotonic() + budget_s
    ramps = {name: Ramp() for name in measures}
    active = list(measures)
    for level in levels:
        if time.monotonic() > deadline:
            for name in active:
                ramps[name].stopped = f"the time budget ({budget_s:g} s) ran out before level {level}"
            break
        for name in list(active):
            figures = await measures[name](level)
            figures["level"] = level
            ramps[name].levels.append(figures)
            p99 = figures["added_ms"].get("p99")
            progress(scenario, f"{name} at {level}: p99 {p99} ms, {figures['lossy_sockets']} lossy sockets, "
                     f"generator CPU {figures['generator_cpu_share']:.0%}")
            if figures["lossy_sockets"] or p99 is None or p99 > limit_ms:
                active.remove(name)
                ramps[name].stopped = f"p99 {p99} ms > {limit_ms:g} ms" if not figures["lossy_sockets"] else "loss"
            else:
                ramps[name].largest = level
        if not active:
            break
    return ramps


def ramp_figures(ramps: dict[str, Ramp]) -> dict[str, Any]:
    ide, bare = ramps["ide"].largest, ramps["bare"].largest
    return {
        "ide": vars(ramps["ide"]), "bare": vars(ramps["bare"]),
        "ratio": round(ide / bare, 3) if bare else None,
    }


def cpu_row(figures: dict[str, Any], unit: str) -> report.Row | None:
    """Server CPU per 1,000 tokens delivered (each token counted once per socket), IDE against
    bare, at the largest level both reached within the limit (None: no such level)."""
    common = min(figures["ide"]["largest"], figures["bare"]["largest"])
    at = [next((f for f in figures[side]["levels"] if f["level"] == common), None) for side in RELAYS]
    if at[0] is None or at[1] is None:
        return None
    return report.row(
        f"server CPU per 1,000 tokens delivered, at {common} {unit}", at[0]["server_cpu_ms_per_1k_tokens"], unit="ms",
        baseline=at[1]["server_cpu_ms_per_1k_tokens"],
        note=f"generator CPU share: IDE {at[0]['generator_cpu_share']:.0%}, bare {at[1]['generator_cpu_share']:.0%}; "
        f"server CPU share: IDE {at[0]['server_cpu_share']:.0%}, bare {at[1]['server_cpu_share']:.0%}",
    )


def ramp_parser(
    prog: str, description: str, unit: str, levels: Sequence[int], limit_ms: float
) -> argparse.ArgumentParser:
    """The flags every scale scenario takes: its answer's size and the ramp of ``unit`` counts."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--tokens", type=int, default=2_000, help="prose tokens per measured answer (at 1,000/s)")
    parser.add_argument("--levels", default=",".join(map(str, levels)), help=f"{unit} counts to try, rising")
    parser.add_argument(f"--max-{unit}", dest="max", type=int, default=levels[-1], help="stop the ramp past this many")
    parser.add_argument("--limit-ms", type=float, default=limit_ms, help="p99 added latency a level must keep")
    parser.add_argument("--budget-s", type=float, default=240.0, help="no new level after this many seconds")
    return parser


def parse_ramp(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parsed and checked ramp flags: ``levels`` a rising list of counts."""
    args = parser.parse_args(argv)
    try:
        args.levels = [int(n) for n in args.levels.split(",") if n]
    except ValueError:
        parser.error("--levels takes comma-separated whole numbers")
    if not args.levels or args.levels != sorted(set(args.levels)) or args.levels[0] < 1:
        parser.error("--levels must rise, from >= 1")
    if not [n for n in args.levels if n <= args.max]:
        parser.error("the --max-... flag is below every level")
    if args.tokens < 1 or args.limit_ms <= 0 or args.budget_s <= 0:
        parser.error("--tokens must be >= 1, --limit-ms and --budget-s > 0")
    return args


def raise_open_files() -> None:
    """Hundreds of sockets on each side: lift this process's (and its children's) soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# -- a socket that checks the order of what it got (fanout across processes) --------------------


def _event_classes(base: type[Event]) -> list[type[Event]]:
    found = []
    for cls in base.__subclasses__():
        found += [cls, *_event_classes(cls)]
    return found


# Events that carry the room's current seq without taking one: every other event's seq rises.
UNNUMBERED = frozenset(
    cls.type for cls in _event_classes(Event) if cls.ephemeral and cls.__module__ == Event.__module__
)


@dataclass
class SeqOrder:
    """What one viewer's events showed, across its connections: the seq of every numbered
    event above the one before (``top``: the highest so far, what a reconnect's ``?after=``
    carries). After a ``resync`` the recent transcript follows, from lower numbers again."""

    top: int = 0
    disorder: int = 0  # numbered events at or below an earlier one: repeated or reordered
    resyncs: int = 0

    def note(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "resync":
            self.resyncs += 1
            self.top = 0
        elif kind not in UNNUMBERED:
            seq = int(event["seq"])
            if seq <= self.top:
                self.disorder += 1
            self.top = max(self.top, seq)


class OrderedWatcher(Watcher):
    """A ``Watcher`` whose frames, once taken, are checked in ``order`` (shared by the
    connections of one viewer), and that notes when its connection ended (``lost_at``).

    A frame read twice would count as out of order, so reading lets go: ``take`` reads the
    frames (from a mark: the ones before it are dropped unread) and clears them, and
    ``deltas_since`` (how ``measure_level`` reads a measured turn) takes them too."""

    def __init__(self, request: bytes, ready_marker: bytes) -> None:
        super().__init__(request, ready_marker)
        self.order = SeqOrder()
        self.lost_at: float | None = None
        self.gone = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost_at = time.monotonic()
        super().connection_lost(exc)
        self.gone.set()

    def take(self, mark: int = 0) -> list[tuple[float, dict[str, Any]]]:
        """The text frames from ``mark`` as ``(arrival, event)``, each noted in ``order``; every
        frame held is let go."""
        events = [(at, json.loads(payload)) for at, payload in self.frames[mark:]]
        self.frames.clear()
        for _, event in events:
            self.order.note(event)
        return events

    def deltas_since(self, mark: int) -> list[tuple[float, str]]:
        return [(at, str(event["text"])) for at, event in self.take(mark) if event["type"] == "turn.delta"]
