"""Soak benchmark (``spark_bench soak``): rooms prompting and steering for a chosen time.

The real stack (``benchmarks.pairing.stack.Stack``: the scripted model server, the IDE under
Daphne with its own SQLite). ``--rooms`` workspaces, one session socket each, loop until
``--minutes`` have passed: prompt an answer (prose, then a ``<write>`` block of the file
``bench/out.py``, about 1,000 tokens at ``--rate`` tokens/s); some turns are steered mid-stream
to another answer (``--steer-share``), some stopped (``--stop-share``); the rest complete.

Recorded:

* per room and turn index, the time per answer of each plain turn (prompt sent -> its
  ``turn.finished`` at the client); the figure is the median of the late turns (the last
  fifth of the turn indexes every room reached) over the early ones (the first fifth, turn 0
  left out as warm-up);
* the Daphne process's RSS every ``--sample-s`` seconds (``/proc/<pid>/status``), and its
  growth over the second half of the run as a least-squares slope, extrapolated to % per
  15 minutes;
* errors: ``error`` events, failed turns, completed turns whose deltas do not add up to the
  scripted answer (loss), turns that did not end within their timeout, closed sockets;
* at the end, each room's file over HTTP against what the turns whose block was ``applied``
  wrote last (a block rolled back by a steer or stop leaves the file as it was);
* CPU seconds of the IDE, the model server and this process (the load generator: its
  socket clients count and timestamp frames and keep no growing list).

``--memtrace`` sends ``SIGUSR1`` to Daphne at the end of each quarter and keeps the reports of
``spark_ide.ops.memtrace`` (effective where that hook is installed in the ASGI module).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil
from websockets.exceptions import ConnectionClosed

from benchmarks import report
from benchmarks.pairing.client import Browser
from benchmarks.pairing.run import WRITE_PATH, bulk, write_body
from benchmarks.pairing.stack import Stack
from spark_ide.modelserver.engines.scripted import split_tokens
from spark_ide.ops.memtrace import ENV_FILE, ENV_SWITCH, ENV_TRACEMALLOC, rss_bytes

SCENARIO = "soak"
QUICK = ["--minutes", "0.5", "--rooms", "10", "--sample-s", "1"]
ANSWERS = 16  # answer variants a0..a15: turn i plays a(i % 16), so consecutive turns differ
STEER_ANSWERS = 8  # what a steer asks for: s0..s7 (other bodies, shorter prose)
PROSE_TOKENS = 300
STEER_PROSE_TOKENS = 60
STEER_SALT = 100
FILES = {"app.py": "def add(a, b):\n    return a + b\n", WRITE_PATH: "# nothing written yet\n"}
TURN_TIMEOUT_S = 60.0
LATE_OVER_EARLY_MAX = 1.05
GROWTH_PER_15_MIN_MAX = 2.0  # percent
MIN_JUDGED_S = 300.0  # the memory trend is judged only over runs at least this long

T = TypeVar("T")


def scripts() -> dict[str, str]:
    texts = {f"a{k}": bulk(PROSE_TOKENS, salt=k, seed=k) for k in range(ANSWERS)}
    texts.update({f"s{k}": bulk(STEER_PROSE_TOKENS, salt=STEER_SALT + k, seed=STEER_SALT + k)
                  for k in range(STEER_ANSWERS)})
    return texts


def body_of(script: str) -> str:
    """The file content the answer ``script`` writes."""
    kind, k = script[0], int(script[1:])
    return write_body(k if kind == "a" else STEER_SALT + k)


# -- the socket client -------------------------------------------------------------------------


@dataclass(eq=False)
class TurnSeen:
    """One turn as the client saw it: counts and times, never the frames themselves."""

    id: str
    script: str
    steered_from: str | None
    started_at: float
    first_delta: asyncio.Future[float]
    done: asyncio.Future[dict[str, Any]]
    last_delta_at: float | None = None
    frames: int = 0
    chars: int = 0
    applied: bool = False


class SoakBrowser(Browser):
    """A session socket that keeps no growing list: each event updates the turn it belongs
    to (counts and timestamps) and wakes whoever waits for it."""

    def __init__(self, ws: Any) -> None:
        self.turns: dict[str, TurnSeen] = {}
        self.next_script = ""
        self.next_started: asyncio.Future[TurnSeen] | None = None
        self.errors: list[str] = []
        self.applied_script: str | None = None  # the last answer whose block was applied
        self.text_frames = 0
        super().__init__(ws)

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                if isinstance(message, bytes):
                    self.binary_frames += 1  # Yjs: counted, never answered
                    continue
                self.text_frames += 1
                self._take(time.monotonic(), json.loads(message))
        except ConnectionClosed as exc:
            self.errors.append(f"socket closed: {exc}")
        finally:
            self._arrived.set()
            for turn in self.turns.values():
                if not turn.done.done():
                    turn.done.set_exception(ConnectionError("the session socket closed"))

    def _take(self, at: float, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "turn.delta":
            turn = self.turns.get(event["turn"])
            if turn is not None:
                turn.frames += 1
                turn.chars += len(event["text"])
                turn.last_delta_at = at
                if not turn.first_delta.done():
                    turn.first_delta.set_result(at)
        elif kind == "edit.status":
            turn = self.turns.get(event["turn"])
            if turn is not None and event.get("path") == WRITE_PATH:
                if event["state"] == "applied":
                    turn.applied, self.applied_script = True, turn.script
                elif event["state"] == "rolled_back" and turn.applied:
                    self.errors.append(f"turn {turn.id}: an applied block was rolled back")
        elif kind == "turn.started":
            turn = TurnSeen(event["turn"], self.next_script, event.get("steered_from"), at,
                            asyncio.get_running_loop().create_future(),
                            asyncio.get_running_loop().create_future())
            self.turns[turn.id] = turn
            if self.next_started is not None and not self.next_started.done():
                self.next_started.set_result(turn)
        elif kind == "turn.finished":
            turn = self.turns.get(event["turn"])
            if turn is not None and not turn.done.done():
                turn.done.set_result({**event, "at": at})
        elif kind == "error":
            self.errors.append(f"error event: {event.get('code')}: {event.get('message')}")
        elif kind == "hello":
            self.events.append((at, event))  # Browser.open waits for it
            self._arrived.set()

    def expect_turn(self, script: str) -> asyncio.Future[TurnSeen]:
        """The next ``turn.started``, which plays ``script``."""
        self.next_script = script
        self.next_started = asyncio.get_running_loop().create_future()
        return self.next_started


# -- one room ----------------------------------------------------------------------------------


@dataclass
class TurnRecord:
    index: int
    action: str  # plain / steer / stop
    seconds: float | None  # plain turns: prompt sent -> turn.finished at the client
    status: str
    server_duration_ms: float | None = None
    steer_ms: float | None = None


@dataclass
class Room:
    number: int
    workspace: str
    browser: SoakBrowser
    rng: random.Random
    texts: dict[str, str]
    rate: float
    records: list[TurnRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def prompt_text(self, script: str) -> str:
        return f"[script:{script}][rate:{self.rate:g}][ttft:0]"

    async def _wait(self, awaitable: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                return await awaitable
        except TimeoutError:
            raise TurnTimeout(f"room {self.number}: no {what} within {TURN_TIMEOUT_S:g} s") from None

    def _check_complete(self, turn: TurnSeen, finished: dict[str, Any]) -> str:
        status = str(finished["status"])
        if status == "failed":
            self.errors.append(f"turn {turn.id} failed: {finished.get('reason')}: {finished.get('error')}")
        elif status == "completed" and turn.chars != len(self.texts[turn.script]):
            self.errors.append(f"turn {turn.id}: {turn.chars} characters, expected {len(self.texts[turn.script])}")
        return status

    async def turn(self, index: int, action: str) -> None:
        browser = self.browser
        script = f"a{index % ANSWERS}"
        started = browser.expect_turn(script)
        sent = await browser.send({"type": "prompt", "text": self.prompt_text(script)})
        turn = await self._wait(started, "turn.started")
        if action == "plain":
            finished = await self._wait(turn.done, "turn.finished")
            status = self._check_complete(turn, finished)
            self.records.append(TurnRecord(index, action, finished["at"] - sent, status,
                                           finished.get("metrics", {}).get("duration_ms")))
            return
        await self._wait(turn.first_delta, "first delta")
        # Somewhere in the answer: in its prose, or in its write block.
        await asyncio.sleep(self.rng.uniform(0.05, 0.9) * self.answer_seconds(script))
        if action == "stop":
            await browser.send({"type": "stop"})
            finished = await self._wait(turn.done, "turn.finished after stop")
            self.records.append(TurnRecord(index, action, None, self._check_complete(turn, finished)))
            return
        steer = f"s{self.rng.randrange(STEER_ANSWERS)}"
        successor = browser.expect_turn(steer)
        await browser.send({"type": "steer", "text": self.prompt_text(steer)})
        old = await self._wait(turn.done, "turn.finished after steer")
        self._check_complete(turn, old)
        # After a steer that raced the answer's end, the steer is a plain prompt.
        new = await self._wait(successor, "steered turn.started")
        finished = await self._wait(new.done, "steered turn.finished")
        status = self._check_complete(new, finished)
        steer_ms = finished.get("metrics", {}).get("steer_ms")
        self.records.append(TurnRecord(index, action, None, status, steer_ms=steer_ms))

    def answer_seconds(self, script: str) -> float:
        return len(split_tokens(self.texts[script])) / self.rate

    async def loop(self, deadline: float, steer_share: float, stop_share: float) -> None:
        index = 0
        try:
            while time.monotonic() < deadline:
                draw = self.rng.random()
                action = "steer" if draw < steer_share else "stop" if draw < steer_share + stop_share else "plain"
                if index == 0:
                    action = "plain"
                await self.turn(index, action)
                # Forget the turns that ended: the client keeps nothing that grows.
                for turn_id in [t for t, seen in self.browser.turns.items() if seen.done.done()]:
                    del self.browser.turns[turn_id]
                index += 1
        except (TurnTimeout, ConnectionError) as exc:
            self.errors.append(str(exc))


class TurnTimeout(Exception):
    """A turn did not reach the next step in time (the room stops there)."""


# -- server resources ---------------------------------------------------------------------------


@dataclass
class Sampler:
    """RSS of the IDE over time, and its CPU seconds against the turns the rooms completed."""

    daphne: psutil.Process
    rooms: list[Room]
    started: float
    samples: list[tuple[float, float]] = field(default_factory=list)  # (s since start, MB)
    cpu: list[tuple[int, float]] = field(default_factory=list)  # (turns ended so far, IDE CPU s)

    def sample(self) -> None:
        self.samples.append((round(time.monotonic() - self.started, 2), rss_bytes(self.daphne.pid) / 1e6))
        self.cpu.append((sum(len(room.records) for room in self.rooms), cpu_seconds(self.daphne)))

    async def run(self, every_s: float) -> None:
        while True:
            self.sample()
            await asyncio.sleep(every_s)


def slope_per_s(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x; None with fewer than 3 points."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else None


def memory_figures(samples: list[tuple[float, float]], seconds: float) -> dict[str, Any]:
    """Growth over the second half (and the first, for comparison) as % per 15 minutes of the
    RSS at the half's start (both from the least-squares line)."""
    def half(lo: float, hi: float) -> dict[str, Any]:
        points = [p for p in samples if lo <= p[0] <= hi]
        slope = slope_per_s(points)
        if slope is None:
            return {"samples": len(points)}
        start = statistics.fmean(p[1] for p in points) - slope * (statistics.fmean(p[0] for p in points) - lo)
        return {
            "samples": len(points), "mb_at_start": round(start, 1), "mb_at_end": round(start + slope * (hi - lo), 1),
            "mb_per_min": round(slope * 60, 3), "percent_per_15_min": round(slope * 900 / start * 100, 2),
        }

    warm = min(seconds * 0.1, 60.0)  # the first turns import code and fill the caches
    return {
        "warm_up_s": round(warm, 1),
        "first_half": half(warm, seconds / 2),
        "second_half": half(seconds / 2, seconds),
        "rss_first_mb": samples[0][1] if samples else None, "rss_last_mb": samples[-1][1] if samples else None,
    }


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


# -- the run -----------------------------------------------------------------------------------


def cpu_per_turn(points: list[tuple[int, float]]) -> dict[str, Any]:
    """IDE CPU ms per turn over the first and the last fifth of the run (after a warm-up
    fifth), and their ratio: the late-vs-early figure in CPU time, which other work on the
    machine does not inflate."""
    if len(points) < 10:
        return {}
    fifth = len(points) // 5

    def window(part: list[tuple[int, float]]) -> float | None:
        turns, cpu = part[-1][0] - part[0][0], part[-1][1] - part[0][1]
        return round(cpu * 1000 / turns, 2) if turns > 0 else None

    early, late = window(points[fifth : 2 * fifth + 1]), window(points[-fifth - 1 :])
    return {"early_ms": early, "late_ms": late,
            "late_over_early": round(late / early, 3) if early and late else None}


def early_late(records: list[list[TurnRecord]]) -> dict[str, Any]:
    """Median time per answer of plain turns: late (last fifth of the turn indexes every room
    reached) over early (the first fifth, turn 0 left out)."""
    reached = min((len(r) for r in records), default=0)
    if reached < 6:
        return {"turns_every_room_reached": reached}
    fifth = max(1, reached // 5)
    early = [t.seconds * 1000 for r in records for t in r[1 : 1 + fifth] if t.seconds is not None]
    late = [t.seconds * 1000 for r in records for t in r[reached - fifth : reached] if t.seconds is not None]
    if not early or not late:
        return {"turns_every_room_reached": reached}
    return {
        "turns_every_room_reached": reached, "early_indexes": [1, fifth],
        "late_indexes": [reached - fifth, reached - 1],
        "early_ms": report.summary(early), "late_ms": report.summary(late),
        "late_over_early": round(statistics.median(late) / statistics.median(early), 4),
    }


def per_index(records: list[list[TurnRecord]]) -> list[tuple[float, float]]:
    """(turn index, median time per answer in ms over the rooms' plain turns of that index)."""
    by_index: dict[int, list[float]] = {}
    for room in records:
        for t in room:
            if t.seconds is not None:
                by_index.setdefault(t.index, []).append(t.seconds * 1000)
    return [(i, round(statistics.median(v), 2)) for i, v in sorted(by_index.items())]


def _process(stack: Stack, module: str) -> psutil.Process:
    for process in stack.processes:
        if isinstance(process.args, list) and module in process.args[1:3]:
            return psutil.Process(process.pid)
    raise RuntimeError(f"no {module} process in the stack")


async def _memtrace_dumps(daphne: psutil.Process, seconds: float, path: Path) -> None:
    for quarter in range(1, 5):
        await asyncio.sleep(seconds / 4 - (2 if quarter == 4 else 0))
        with contextlib.suppress(ProcessLookupError):
            os.kill(daphne.pid, signal.SIGUSR1)
        report.progress(SCENARIO, f"memtrace report {quarter} asked for ({path})")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    setup = report.Setup()
    texts = scripts()
    seconds = args.minutes * 60.0
    trace_file = Path(tempfile.gettempdir()) / f"spark-soak-memtrace-{os.getpid()}.txt"
    if args.memtrace:  # Stack passes this process's environment on to Daphne
        os.environ[ENV_SWITCH] = "1"
        os.environ[ENV_FILE] = str(trace_file)
        if args.tracemalloc:
            os.environ[ENV_TRACEMALLOC] = str(args.tracemalloc)
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    async with Stack(texts) as stack:
        daphne, model, me = _process(stack, "daphne"), _process(stack, "spark_ide.modelserver"), psutil.Process()
        rooms: list[Room] = []
        for number in range(args.rooms):
            workspace, url = await stack.session(FILES)
            browser = await SoakBrowser.open(url, stack.token)
            assert isinstance(browser, SoakBrowser)
            rng = random.Random(args.seed * 1000 + number)  # noqa: S311 - a reproducible mix, not a secret
            rooms.append(Room(number, workspace, browser, rng, texts, args.rate))
        report.progress(SCENARIO, f"{args.rooms} rooms up; soaking for {seconds:.0f} s")
        cpu_before = {"ide": cpu_seconds(daphne), "model_server": cpu_seconds(model), "load_generator": cpu_seconds(me)}
        started = time.monotonic()
        sampler = Sampler(daphne, rooms, started)
        sampling = asyncio.create_task(sampler.run(args.sample_s))
        tracing = asyncio.create_task(_memtrace_dumps(daphne, seconds, trace_file)) if args.memtrace else None
        try:
            await asyncio.gather(*(room.loop(started + seconds, args.steer_share, args.stop_share) for room in rooms))
        finally:
            sampling.cancel()
            if tracing is not None:
                tracing.cancel()
        wall = time.monotonic() - started
        sampler.sample()
        cpu = {name: round(cpu_seconds(p) - cpu_before[name], 2)
               for name, p in (("ide", daphne), ("model_server", model), ("load_generator", me))}
        files = []
        for room in rooms:
            expected = body_of(room.browser.applied_script) if room.browser.applied_script else FILES[WRITE_PATH]
            text = await stack.file_text(room.workspace, WRITE_PATH, expected)
            files.append(text == expected)
            await room.browser.close()
        memtrace = trace_file.read_text() if args.memtrace and trace_file.exists() else None
    return figures(args, rooms, sampler, cpu, wall, files, memtrace, setup)


def figures(
    args: argparse.Namespace, rooms: list[Room], sampler: Sampler, cpu: dict[str, float], wall: float,
    files: list[bool], memtrace: str | None, setup: report.Setup,
) -> dict[str, Any]:
    records = [room.records for room in rooms]
    errors = [e for room in rooms for e in room.errors + room.browser.errors]
    trend = early_late(records)
    cpu_turn = cpu_per_turn(sampler.cpu)
    memory = memory_figures(sampler.samples, wall)
    second = memory["second_half"]
    growth = second.get("percent_per_15_min")
    # Over the first minutes each room's replay log (10,000 events) and caches still fill:
    # a short run's growth is warm-up, not a trend.
    judged = growth is not None and wall >= MIN_JUDGED_S
    growth_note = f"RSS {second['mb_at_start']} -> {second['mb_at_end']} MB" if growth is not None else ""
    if growth is not None and not judged:
        growth_note += f"; not judged: runs under {MIN_JUDGED_S / 60:g} minutes are still warming up"
    ratio = trend.get("late_over_early")
    turns = [t for r in records for t in r]
    plain = [t.seconds * 1000 for t in turns if t.seconds is not None]
    actions = {a: sum(1 for t in turns if t.action == a) for a in ("plain", "steer", "stop")}
    cpus = os.cpu_count() or 1
    share = {name: round(s / wall / cpus, 3) for name, s in cpu.items()}
    rows = [
        report.row("soak: late vs early turns, time per answer (median)",
                   trend.get("late_ms", {}).get("p50"), unit="ms", baseline=trend.get("early_ms", {}).get("p50"),
                   ratio=ratio, target=f"<= {LATE_OVER_EARLY_MAX}", met=report.at_most(ratio, LATE_OVER_EARLY_MAX),
                   note=f"{args.rooms} rooms, {wall / 60:.1f} min, {len(turns)} turns"),
        report.row("soak: IDE server memory growth, second half", growth, unit="% per 15 min",
                   baseline=memory["second_half"].get("mb_at_start"),
                   ratio=None, target=f"< {GROWTH_PER_15_MIN_MAX} % per 15 min (flat)",
                   met=growth < GROWTH_PER_15_MIN_MAX if judged and growth is not None else None,
                   note=growth_note),
        report.row("soak: IDE CPU per turn, late vs early", cpu_turn.get("late_ms"), unit="ms",
                   baseline=cpu_turn.get("early_ms"), ratio=cpu_turn.get("late_over_early"),
                   note="the same comparison in CPU time, unaffected by other load"),
        report.row("soak: errors", len(errors), target="0", met=not errors),
        report.row("soak: final files correct", f"{sum(files)}/{len(files)} rooms", target="all",
                   met=all(files) and bool(files)),
        report.row("soak: load generator CPU share", share["load_generator"], unit="of all cores",
                   note=f"IDE {share['ide']}, model server {share['model_server']}"),
    ]
    charts = {
        "soak_time_per_answer": report.chart(
            "Soak: time per answer vs turn index (median over rooms, plain turns)", "turn index", "ms",
            {"time per answer": per_index(records)}),
        "soak_rss": report.chart("Soak: IDE server RSS over time", "s", "MB", {"Daphne RSS": sampler.samples}),
    }
    return {
        "rows": rows, "charts": charts,
        "setup": setup.finish(rooms=args.rooms, minutes=args.minutes, rate=args.rate, steer_share=args.steer_share,
                              stop_share=args.stop_share, sample_s=args.sample_s, seed=args.seed),
        "time_per_answer": trend,
        "ide_cpu_per_turn": cpu_turn,
        "plain_turn_ms": {"min": round(min(plain), 3) if plain else None, **report.summary(plain)},
        # The engine's own schedule: no plain answer can take less (token i is due at i / rate).
        "generation_ms_min": round(min(len(split_tokens(t)) - 1 for n, t in scripts().items() if n[0] == "a")
                                   / args.rate * 1000, 3),
        "memory": memory,
        "turns": {"total": len(turns), **actions, "per_room": [len(r) for r in records]},
        "errors": {"count": len(errors), "first": errors[:10]},
        "files_correct": files,
        "cpu_seconds": cpu, "cpu_share_of_all_cores": share,
        "client_frames": {"text": sum(r.browser.text_frames for r in rooms),
                          "binary": sum(r.browser.binary_frames for r in rooms)},
        "rss_samples": sampler.samples,
        **({"memtrace": memtrace} if memtrace is not None else {}),
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_bench soak", description="Rooms prompting and steering for a while.")
    parser.add_argument("--rooms", type=int, default=10, help="rooms, one session socket each")
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the rooms keep going")
    parser.add_argument("--rate", type=float, default=1000.0, help="engine tokens/s")
    parser.add_argument("--steer-share", type=float, default=0.15, help="share of turns steered mid-answer")
    parser.add_argument("--stop-share", type=float, default=0.1, help="share of turns stopped mid-answer")
    parser.add_argument("--sample-s", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memtrace", action="store_true",
                        help="ask the IDE for spark_ide.ops.memtrace reports (SIGUSR1) each quarter")
    parser.add_argument("--tracemalloc", type=int, default=0,
                        help="with --memtrace: also trace allocations with this many frames (slow)")
    args = parser.parse_args(argv)
    if args.rooms < 1 or args.minutes <= 0 or args.rate <= 0 or args.sample_s <= 0:
        parser.error("--rooms must be >= 1; --minutes, --rate and --sample-s > 0")
    if min(args.steer_share, args.stop_share) < 0 or args.steer_share + args.stop_share > 1:
        parser.error("--steer-share and --stop-share must be >= 0 and add up to at most 1")
    if args.tracemalloc < 0:
        parser.error("--tracemalloc takes a number of frames >= 0")
    return args


def main(argv: list[str]) -> dict[str, Any]:
    return asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    print(json.dumps(main(__import__("sys").argv[1:]), indent=1))
