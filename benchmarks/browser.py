"""Browser benchmark (``manage.py spark_bench browser``): what the live page costs the browser.

The real stack (``benchmarks.pairing.stack.Stack``: the scripted model server, the IDE under
Daphne with ``SPARK_EDIT_STYLE=edits``, the bare ``websockets`` relay) and headless Debian
Chromium through Playwright. A probe installed before any page script
(``browser_probe.js``) counts animation frames, long tasks (> 50 ms, PerformanceObserver
``longtask``) and session socket frames, and timestamps what it is asked to watch.

Phases:

* ``rates``: at each ``--rates`` (tokens/s), one answer of prose then a 300-line
  ``<write>`` block lasting about ``--seconds``, prompted from the IDE page's prompt box.
  Models write long lines, so the prose comes in paragraphs of as many words as the rate's
  tokens per second, each on ONE line (1,000 / 5,000 / 20,000 words at 1k / 5k / 20k;
  ``--line-words`` sets one length for every rate), at least one whole paragraph however
  short ``--seconds``; at rates from ``--literal-rate`` on, a ``<write>`` of a file with one
  ``--literal-chars`` (50,000) character string literal on one line comes before the 300-line
  file;
  long tasks, longest gap between animation frames, frames per second, from the prompt until
  the editor shows the file's last line. The same stream played to the baseline page
  (``browser_bare.html``: a socket to the bare relay appending each delta to one text node)
  in the same run. All of it on the idle machine, then again while a second process runs
  one busy thread (``--loads``).
* ``lag``: at ``--lag-rate`` (5,000 tokens/s), ``--lag-turns`` answers each writing a new
  300-line file: from the binary frame that brings the file's last line to the page (the
  probe wraps the page's WebSocket) to the editor holding that line (a MutationObserver on
  the editor). p50 / p95. Each answer's prose is one line.
* ``memory``: a fresh page; turns mixing prose and edit blocks (rewriting a few files) at
  ``--memory-rate`` until ``--memory-tokens`` (100k and 1M) tokens have streamed (the prose
  in lines of ``--memory-line-words`` words); at each
  mark, the JS heap in use after a forced GC (CDP ``HeapProfiler.collectGarbage``, then
  ``Performance.getMetrics``) and the DOM node count.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.pairing.run import random_prose, write_body
from benchmarks.pairing.stack import Stack
from spark_ide.modelserver.engines.scripted import split_tokens

try:
    from playwright.async_api import TimeoutError as PlaywrightTimeout
except ImportError:  # without Playwright the benchmark cannot run; chromium() says so
    PlaywrightTimeout = TimeoutError  # type: ignore[misc,assignment]

HERE = Path(__file__).resolve().parent
PROBE = HERE / "browser_probe.js"
BARE_PAGE = HERE / "browser_bare.html"
CHROMIUM = "/usr/lib/chromium/chromium"
FILES = {"app.py": "def add(a, b):\n    return a + b\n"}
WRITE_FUNCTIONS = 100  # write_body: three lines each, a 300-line file
LOADS = ("idle", "loaded")
PHASES = ("rates", "lag", "memory")
TURN_TIMEOUT_S = 120.0
SHOWN_TIMEOUT_S = 10.0
CLOCKS = {  # figure -> CDP Performance metric (seconds)
    "main_thread_cpu_ms": "ThreadTime", "task_ms": "TaskDuration", "script_ms": "ScriptDuration",
    "layout_ms": "LayoutDuration", "style_ms": "RecalcStyleDuration",
}
# What the editor shows, for an error message.
_EDITOR_STATE = """() => {
    const content = document.querySelector("#editor .cm-content");
    const tile = content && (content.cmTile || content.cmView);
    const view = tile && ((tile.root && tile.root.view) || (tile.rootView && tile.rootView.view));
    const doc = view && view.state.doc;
    return {
        file: document.querySelector("[data-field=file]").textContent,
        tabs: [...document.querySelectorAll("#tabs .tab")].map((tab) => tab.dataset.path),
        lines: doc ? doc.lines : null, last: doc ? doc.line(Math.max(1, doc.lines - 1)).text : null,
        chips: [...document.querySelectorAll("#transcript .chip")].slice(-3).map((chip) => chip.title),
    };
}"""
SETTLE_S = 0.25  # after the editor shows the last line, the window stays open this long
MEMORY_FILES = 3  # the memory phase's edit blocks rewrite these many files, in turn
ISSUE_RATES = (1000, 5000, 20000)  # tokens/s: the rates the issue's long-task targets name
# The issue's targets.
LONG_TASKS_IDLE = (0, 0, 0)  # at ISSUE_RATES, idle machine
LONG_TASKS_LOADED = (0, 0, 5)  # at ISSUE_RATES, one busy thread beside
MAX_GAP_MS = 33.0  # longest gap between animation frames at the top rate: two frames at 60 Hz
# A gap is a whole number of the display's frames (animation frames start on its ticks, 16.67
# ms apart here), read through Chrome's timestamps, coarsened to 0.1 ms: two frames read 33.3
# or 33.4 ms, one dropped frame. The target is met by a gap of at most two frames.
FRAME_MS = 1000 / 60
TIMER_SLACK_MS = 0.2
GAP_LIMIT_MS = round(2 * FRAME_MS + TIMER_SLACK_MS, 2)
LAG_P95_MS = 50.0  # last-line lag at the lag rate
MEMORY_RATIO = 2.0  # heap after 1M tokens / after 100k
LITERAL_CHARS = 50_000  # the one-line string literal of the answers at --literal-rate and above
LAG_LINE_WORDS = 1_000_000  # the lag answers' prose: one line
MEMORY_LINE_WORDS = 5_000
# ~110 s. Answers must last a couple of seconds: what a page does wrong with a growing turn
# (the original page laid out its whole prose every frame) only shows past ~100 KB of it.
QUICK = ["--seconds", "2", "--lag-turns", "8", "--reps", "1", "--memory-prose", "60000"]


def progress(message: str) -> None:
    report.progress("browser", message)


def literal_file(chars: int, salt: int) -> str:
    """A Python file whose second line holds one string literal of ``chars`` hex digits
    (seeded; hex, so that no secret pattern of the watchdog can match inside it)."""
    digits = f"{random.Random(salt).getrandbits(4 * chars):0{chars}x}"[:chars]  # noqa: S311 - not a secret
    return f'# generated\nBLOB = "{digits}"\nSIZE = len(BLOB)\n'


def literal_path(path: str) -> str:
    return path.removesuffix(".py") + "_blob.py"


def answer(prose_tokens: int, path: str, salt: int, line_words: int = 14, literal: int = 0) -> str:
    """Prose in lines of ``line_words`` words, then (with ``literal``) a file holding one line
    of ``literal`` characters, then a whole new file of 300 lines written at ``path``."""
    text = random_prose(prose_tokens, salt, line_words) + "\n"
    if literal:
        text += f'<write path="{literal_path(path)}">\n{literal_file(literal, salt)}</write>\n'
    return text + f'<write path="{path}">\n{write_body(salt, WRITE_FUNCTIONS)}</write>\nDone.\n'


def last_line(salt: int) -> tuple[str, int]:
    """The last line of ``write_body(salt)`` and its number: unique to the file, the one the
    lag waits for."""
    lines = write_body(salt, WRITE_FUNCTIONS).rstrip("\n").split("\n")
    return lines[-1], len(lines)


def tokens(text: str) -> int:
    return len(split_tokens(text))


@dataclass
class Script:
    name: str
    text: str
    path: str
    salt: int

    @property
    def written(self) -> str:
        return write_body(self.salt, WRITE_FUNCTIONS)


class Scripts:
    """Every answer the engine will play, named; made before the stack starts."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self._next_salt = 0

    def add(
        self, kind: str, prose_tokens: int, path: str | None = None, *, line_words: int = 14, literal: int = 0
    ) -> Script:
        salt = self._next_salt
        self._next_salt += 1
        name = f"{kind}-{salt}"
        path = path or f"bench/{kind}_{salt}.py"
        script = Script(name, answer(prose_tokens, path, salt, line_words, literal), path, salt)
        self.texts[name] = script.text
        return script


# -- the pages -------------------------------------------------------------------------------


def _prompt(script: Script, rate: float) -> str:
    return f"[script:{script.name}][rate:{rate:g}][ttft:0]"


class Page:
    """One browser page with the probe: the IDE's live page or the bare baseline page."""

    def __init__(self, page: Any, kind: str) -> None:
        self.page = page
        self.kind = kind
        self.cdp: Any = None

    async def clocks(self) -> dict[str, float]:
        """The renderer's main-thread clocks (CDP Performance.getMetrics), in ms. ThreadTime is
        CPU time: unlike wall-clock figures it does not grow when other processes take the cores."""
        if self.cdp is None:
            self.cdp = await self.page.context.new_cdp_session(self.page)
            await self.cdp.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in (await self.cdp.send("Performance.getMetrics"))["metrics"]}
        return {name: metrics[key] * 1000 for name, key in CLOCKS.items()}

    async def finished_count(self) -> int:
        return int(await self.page.evaluate("window.__bench.finished.length"))

    async def send(self, text: str) -> None:
        if self.kind == "bare":
            await self.page.evaluate("(text) => window.__bare.prompt(text)", text)
        else:  # the prompt box's own path, as a person's Enter there (its focus, its submit)
            await self.page.evaluate(
                """(text) => {
                    const form = document.getElementById("prompt");
                    const box = form.querySelector("textarea");
                    box.focus();
                    box.value = text;
                    form.requestSubmit();
                }""",
                text,
            )

    async def play(self, script: Script, rate: float, *, watch: bool) -> dict[str, Any]:
        """Prompt ``script`` at ``rate``; wait for its turn.finished (and, with ``watch``, the
        editor holding the written file's last line). Returns the turn.finished event and
        the watch's timestamps."""
        before = await self.finished_count()
        if watch:
            await self.page.evaluate("([line, number]) => window.__bench.watch(line, number)", last_line(script.salt))
        await self.send(_prompt(script, rate))
        await self.page.wait_for_function(
            "(n) => window.__bench.finished.length > n", arg=before, polling=50, timeout=TURN_TIMEOUT_S * 1000
        )
        finished_at, event = await self.page.evaluate(f"window.__bench.finished[{before}]")
        if event.get("status") != "completed":
            raise RuntimeError(f"{self.kind} page: the turn for {script.name} ended {event.get('status')}: {event}")
        watched: dict[str, Any] = {}
        if watch:
            try:
                await self.page.wait_for_function(
                    "() => window.__bench.needleShownAt !== null", polling=20, timeout=SHOWN_TIMEOUT_S * 1000
                )
                watched = await self.page.evaluate("window.__bench.watched()")
            except PlaywrightTimeout:  # a finding, not a harness failure: counted and shown
                state = await self.page.evaluate(_EDITOR_STATE)
                progress(f"{script.path}: the editor did not show it {SHOWN_TIMEOUT_S:g} s after the turn: {state}")
                watched = {"frameAt": None, "shownAt": None, "binaryBeforeShown": None, "missed": state}
        return {"finished_at": finished_at, "event": event, **watched}

    async def measure(self, script: Script, rate: float, beside: Page | None = None) -> dict[str, Any]:
        """One streamed answer, framed by the probe's recording window (and, with ``beside``, the
        same window on that page: a blank page's frames while this one streams)."""
        before = await self.clocks()
        pages = [self] if beside is None else [self, beside]
        for page in pages:
            await page.page.evaluate("window.__bench.begin()")
        turn = await self.play(script, rate, watch=self.kind == "ide")
        await asyncio.sleep(SETTLE_S)
        window = await self.page.evaluate("window.__bench.end()")
        blank = None if beside is None else await beside.page.evaluate("window.__bench.end()")
        after = await self.clocks()
        gaps = sorted(window["gaps"])
        long_tasks = window["longTasks"]
        metrics = turn["event"].get("metrics") or {}
        return {
            "window_ms": round(window["ms"], 1),
            "frames": window["frames"],
            "fps": round(window["frames"] / (window["ms"] / 1000), 1) if window["ms"] else None,
            "max_gap_ms": round(gaps[-1], 1) if gaps else None,
            "p99_gap_ms": round(report.percentile(gaps, 0.99), 1) if gaps else None,
            "long_tasks": None if long_tasks is None else len(long_tasks),
            "longest_task_ms": None if not long_tasks else round(max(d for _, d in long_tasks), 1),
            "long_task_ms_total": None if long_tasks is None else round(sum(d for _, d in long_tasks), 1),
            # Of them, those that swapped in a server-rendered panel (htmx: history, tree).
            "long_tasks_in_panel_swaps": None if window["swapLongTasks"] is None else len(window["swapLongTasks"]),
            "longest_frame": longest_frame(window["longFrames"]),
            "long_frames": None if window["longFrames"] is None else [_frame(f) for f in window["longFrames"]],
            "panel_swaps_ms": [round(ms, 1) for ms, _ in window["swaps"]],
            **{name: round(after[name] - before[name], 1) for name in CLOCKS},
            "socket_frames": window["socketFrames"],
            "binary_frames": window["binaryFrames"],
            "tokens": tokens(script.text),
            "server_tokens_per_s": metrics.get("tokens_per_s"),
            # From turn.finished at the page to the editor showing the file's last line.
            "settle_ms": round(turn["shownAt"] - turn["finished_at"], 1) if turn.get("shownAt") else None,
            "editor_showed_file": None if self.kind == "bare" else turn.get("shownAt") is not None,
            # The blank page's longest gap meanwhile: the machine's own (the CPU the stream's
            # server, model and browser processes take), with no page work at all.
            "blank_max_gap_ms": round(max(blank["gaps"]), 1) if blank and blank["gaps"] else None,
        }

    async def editor_text(self) -> str | None:
        """The active editor's whole document (CodeMirror keeps its view on the content DOM)."""
        return await self.page.evaluate(  # type: ignore[no-any-return]
            """() => {
                const content = document.querySelector("#editor .cm-content");
                const tile = content && (content.cmTile || content.cmView);
                const view = tile && ((tile.root && tile.root.view) || (tile.rootView && tile.rootView.view));
                return view ? view.state.doc.toString() : null;
            }"""
        )

    async def active_file(self) -> str:
        return str(await self.page.locator("[data-field=file]").text_content() or "")


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"Debian chromium is missing at {CHROMIUM}: run `make browser-deps`")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            yield browser
        finally:
            await browser.close()


BUNDLE_ROUTE = "**/static/dist/main.js"
_bundle: Path | None = None  # --bundle: the IDE pages get this build of the page code instead


async def _context(browser: Any) -> Any:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    await context.add_init_script(path=str(PROBE))
    if _bundle is not None:
        bundle = _bundle
        await context.route(BUNDLE_ROUTE, lambda route: route.fulfill(path=str(bundle), content_type="text/javascript"))
    return context


def _watch_errors(page: Any, kind: str, errors: list[str]) -> None:
    page.on("pageerror", lambda exc: errors.append(f"{kind}: {exc}"))


async def ide_page(browser: Any, stack: Stack, errors: list[str]) -> Page:
    """A signed-in page on a new workspace's live session, live."""
    workspace_id, _ = await stack.session(FILES)
    context = await _context(browser)
    page = await context.new_page()
    _watch_errors(page, "ide", errors)
    await page.goto(await stack.login_url("bench"))
    await page.wait_for_url(f"{stack.ide_url}/")
    await page.goto(f"{stack.ide_url}/w/{workspace_id}/")
    await page.locator("[data-field=connection]", has_text="live").wait_for(timeout=60_000)
    return Page(page, "ide")


@asynccontextmanager
async def serve_bare_page() -> AsyncIterator[str]:
    """The baseline page over HTTP on loopback (Chromium lets only a loopback page open a
    loopback socket); yields its URL. Every request gets the page."""
    body = BARE_PAGE.read_bytes()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
    response = (head + "Connection: close\r\n\r\n").encode() + body

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(response)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()
        await server.wait_closed()


async def blank_page(browser: Any, errors: list[str]) -> Page:
    """A page that draws nothing, with the probe: its frames while another page streams show
    what the machine alone does to the gaps between frames."""
    context = await _context(browser)
    page = await context.new_page()
    _watch_errors(page, "blank", errors)
    await page.set_content("<!doctype html><title>blank</title><p>blank</p>")
    await page.add_script_tag(path=str(PROBE))
    return Page(page, "blank")


async def bare_page(browser: Any, url: str, relay_url: str, errors: list[str]) -> Page:
    context = await _context(browser)
    page = await context.new_page()
    _watch_errors(page, "bare", errors)
    await page.goto(f"{url}?ws={relay_url}")
    await page.wait_for_function("window.__bare.ready", polling=50, timeout=30_000)
    return Page(page, "bare")


@contextmanager
def busy_thread(on: bool) -> Iterator[None]:
    """A second process spinning one thread (a test run, another tab) while the block runs."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(timeout=10)


# -- phases ----------------------------------------------------------------------------------


def _longest_note(runs: list[dict[str, Any]]) -> str:
    """Where the IDE page's longest frame of these runs went, for a row's note."""
    frames = [run["longest_frame"] for run in runs if run.get("longest_frame")]
    if not frames:
        return "no frame over 50 ms"
    frame = max(frames, key=lambda entry: entry["ms"])
    parts = ", ".join(f"{invoker} {ms:g}" for invoker, ms, *_ in frame["scripts"][:4])
    layout = frame["style_and_layout_ms"]
    return f"its longest frame {frame['ms']:g} ms: {parts or 'no script'}; style and layout {layout:g}"


def longest_frame(frames: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The longest frame over 50 ms (Long Animation Frames) of a window: its length, its style
    and layout, and the scripts that ran in it, longest first (what a long gap was made of)."""
    if not frames:
        return None
    return _frame(max(frames, key=lambda entry: entry["ms"]))


def _frame(frame: dict[str, Any]) -> dict[str, Any]:
    """A Long Animation Frame as reported: its scripts as [invoker, ms, of which forced style
    and layout ms, function@character in its file], longest first."""
    scripts = sorted(
        ([str(invoker), round(ms, 1), round(forced or 0, 1), str(where)]
         for invoker, ms, forced, where in frame["scripts"]),
        key=lambda s: -float(s[1]),
    )
    return {"ms": round(frame["ms"], 1), "style_and_layout_ms": round(frame["styleAndLayoutMs"], 1), "scripts": scripts}


def _median(values: list[Any]) -> float | None:
    numbers = [v for v in values if v is not None]
    return round(float(statistics.median(numbers)), 1) if numbers else None


async def phase_rates(
    args: argparse.Namespace, ide: Page, bare: Page, plans: dict[tuple[str, float, int], Script], blank: Page,
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for load in args.loads:
        with busy_thread(load == "loaded"):
            if load == "loaded":
                await asyncio.sleep(0.5)  # the spinner is up and scheduled
            for rate in args.rates:
                runs: dict[str, list[dict[str, Any]]] = {"ide": [], "bare": []}
                for rep in range(args.reps):
                    script = plans[(load, rate, rep)]
                    for page in (bare, ide):
                        runs[page.kind].append(await page.measure(script, rate, beside=blank))
                        run = runs[page.kind][-1]
                        progress(
                            f"{load} {rate:g} tok/s {page.kind}: {run['long_tasks']} long tasks, "
                            f"max gap {run['max_gap_ms']} ms, {run['fps']} fps, "
                            f"main thread {run['main_thread_cpu_ms']} ms CPU"
                        )
                results.setdefault(load, {})[f"{rate:g}"] = {
                    kind: {
                        "long_tasks": _median([r["long_tasks"] for r in rs]),
                        "max_gap_ms": _median([r["max_gap_ms"] for r in rs]),
                        "blank_max_gap_ms": _median([r["blank_max_gap_ms"] for r in rs]),
                        "fps": _median([r["fps"] for r in rs]),
                        "main_thread_cpu_ms": _median([r["main_thread_cpu_ms"] for r in rs]),
                        "editor_missed_file": sum(r["editor_showed_file"] is False for r in rs),
                        "runs": rs,
                    }
                    for kind, rs in runs.items()
                }
    return results


async def phase_lag(args: argparse.Namespace, ide: Page, plans: list[Script]) -> dict[str, Any]:
    lags: list[float] = []
    fallback = 0
    checked: list[bool] = []
    missed = 0
    for script in plans:
        turn = await ide.play(script, args.lag_rate, watch=True)
        if turn["shownAt"] is None:
            missed += 1
            checked.append(False)
            continue
        frame_at = turn["frameAt"]
        if frame_at is None:  # the line's bytes were split across frames: the last one before
            frame_at = turn["binaryBeforeShown"]
            fallback += 1
        lags.append(turn["shownAt"] - frame_at)
        checked.append(await ide.editor_text() == script.written and await ide.active_file() == script.path)
    progress(f"lag at {args.lag_rate:g} tok/s: {report.summary(lags)}")
    return {
        "rate": args.lag_rate, "last_line_lag_ms": report.summary(lags), "samples_ms": [round(v, 2) for v in lags],
        "frame_by_last_binary": fallback, "editor_holds_written_file": all(checked), "editor_missed_file": missed,
    }


# Where the page's elements are: the live page's panels (the rest of the page is small).
PANELS = ("#transcript", "#history", "#editor", "#tree", "#tabs", "body")  # body: the whole page in the document
_COUNT_NODES = """(panels) => Object.fromEntries(panels.map((selector) => {
    const box = document.querySelector(selector);
    if (!box) return [selector.replace(/^#/, ""), 0];
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_ALL);
    let count = 0;
    while (walker.nextNode()) count += 1;
    return [selector.replace(/^#/, ""), count];
}))"""


async def _heap(page: Page, cdp: Any) -> dict[str, Any]:
    await cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
    return {
        "js_heap_used_mb": round(metrics["JSHeapUsedSize"] / 1e6, 2), "dom_nodes": int(metrics["Nodes"]),
        "listeners": int(metrics["JSEventListeners"]),
        "nodes_by_panel": await page.page.evaluate(_COUNT_NODES, list(PANELS)),
    }


async def phase_memory(args: argparse.Namespace, page: Page, plans: list[Script]) -> dict[str, Any]:
    cdp = await page.page.context.new_cdp_session(page.page)
    await cdp.send("Performance.enable")
    marks: dict[str, Any] = {"start": {"tokens": 0, **await _heap(page, cdp)}}
    goals = sorted(args.memory_tokens)
    streamed = 0
    began = time.monotonic()
    for turns, script in enumerate(plans, start=1):
        if not goals:
            break
        await page.play(script, args.memory_rate, watch=False)
        streamed += tokens(script.text)
        if streamed >= goals[0]:
            await asyncio.sleep(SETTLE_S)
            goal = goals.pop(0)
            marks[str(goal)] = {"tokens": streamed, "turns": turns, **await _heap(page, cdp)}
            progress(f"memory after {streamed} tokens ({turns} turns): {marks[str(goal)]}")
    reached = sorted(int(k) for k in marks if k != "start")
    small, large = (marks[str(reached[0])], marks[str(reached[-1])]) if len(reached) >= 2 else (None, None)
    ratio = round(large["js_heap_used_mb"] / small["js_heap_used_mb"], 3) if small and large else None
    # The JS heap leaves out the DOM (Blink's own heap): its node count is the page's other half.
    nodes_ratio = round(large["dom_nodes"] / small["dom_nodes"], 3) if small and large else None
    return {
        "marks": marks, "ratio": ratio, "dom_nodes_ratio": nodes_ratio, "rate": args.memory_rate,
        "seconds": round(time.monotonic() - began, 1),
    }


# -- rows and charts -------------------------------------------------------------------------


def _triple(figures: dict[str, Any], load: str, kind: str, key: str, rates: list[float]) -> list[Any]:
    by_rate = figures.get("rates", {}).get(load, {})
    return [by_rate.get(f"{rate:g}", {}).get(kind, {}).get(key) for rate in rates]


def _per_thousand(figures: dict[str, Any]) -> float | None:
    """Median main-thread CPU ms per 1,000 streamed tokens over a page's runs."""
    return _median([r["main_thread_cpu_ms"] * 1000 / r["tokens"] for r in figures["runs"] if r["tokens"]])


def _fmt(values: list[Any]) -> str:
    return " / ".join("-" if v is None else f"{v:g}" for v in values)


def rows(figures: dict[str, Any], rates: list[float]) -> list[report.Row]:
    out: list[report.Row] = []
    label = " / ".join(f"{r / 1000:g}k" for r in rates)
    for load, target in (("idle", LONG_TASKS_IDLE), ("loaded", LONG_TASKS_LOADED)):
        ide = _triple(figures, load, "ide", "long_tasks", rates)
        bare = _triple(figures, load, "bare", "long_tasks", rates)
        # The issue's targets are for 1k / 5k / 20k; another rate takes the target of the
        # nearest of those at or above it.
        limits = [next((t for edge, t in zip(ISSUE_RATES, target, strict=True) if rate <= edge), target[-1])
                  for rate in rates]
        met = None if any(v is None for v in ide) or not ide else all(v <= t for v, t in zip(ide, limits, strict=True))
        where = "idle machine" if load == "idle" else "one busy thread beside"
        out.append(report.row(
            f"long tasks (> 50 ms) at {label} tokens/s, {where}", _fmt(ide), baseline=_fmt(bare),
            target=_fmt(limits), met=met, note="baseline: the bare relay page, same stream, same run",
        ))
    top = max(rates)
    for load in ("idle", "loaded"):
        gap = figures.get("rates", {}).get(load, {}).get(f"{top:g}", {})
        if gap:
            out.append(report.row(
                f"longest gap between animation frames at {top / 1000:g}k tokens/s, {load}",
                gap["ide"]["max_gap_ms"], unit="ms", baseline=gap["bare"]["max_gap_ms"],
                target=f"<= {MAX_GAP_MS:g} ms (2 frames)",
                met=report.at_most(gap["ide"]["max_gap_ms"], GAP_LIMIT_MS),
                note=f"fps {gap['ide']['fps']} (bare {gap['bare']['fps']}); a blank page beside, meanwhile: "
                f"{gap['ide']['blank_max_gap_ms']} ms; {_longest_note(gap['ide']['runs'])}",
            ))
    for rate in rates:
        both = figures.get("rates", {}).get("idle", {}).get(f"{rate:g}", {})
        if both:
            per_k = {kind: _per_thousand(both[kind]) for kind in ("ide", "bare")}
            out.append(report.row(
                f"page main-thread CPU per 1,000 tokens at {rate / 1000:g}k tokens/s", per_k["ide"], unit="ms",
                baseline=per_k["bare"], note="CPU time (CDP ThreadTime), not wall clock: steady under load",
            ))
    lag = figures.get("lag")
    if lag:
        lagged = lag["last_line_lag_ms"]
        out.append(report.row(
            f"editor holds the written file's last line after its frame arrived, p95, {lag['rate'] / 1000:g}k tokens/s",
            lagged.get("p95"), unit="ms", target=f"<= {LAG_P95_MS:g} ms",
            met=report.at_most(lagged.get("p95"), LAG_P95_MS) if not lag["editor_missed_file"] else False,
            note=f"p50 {lagged.get('p50')} ms, n={lagged.get('n')}"
            + (f"; the editor never showed {lag['editor_missed_file']} file(s)" if lag["editor_missed_file"] else ""),
        ))
    memory = figures.get("memory")
    if memory:
        marks = memory["marks"]
        goals = sorted(int(k) for k in marks if k != "start")
        if len(goals) >= 2:
            small, large = marks[str(goals[0])], marks[str(goals[-1])]
            out.append(report.row(
                f"page JS heap after {goals[-1]:,} streamed tokens vs after {goals[0]:,}",
                large["js_heap_used_mb"], unit="MB", baseline=small["js_heap_used_mb"],
                target=f"< {MEMORY_RATIO:g}x, DOM nodes too",
                met=all(r is not None and r < MEMORY_RATIO for r in (memory["ratio"], memory["dom_nodes_ratio"])),
                note=f"DOM nodes {small['dom_nodes']} -> {large['dom_nodes']} ({memory['dom_nodes_ratio']}x)",
            ))
    return out


def charts(figures: dict[str, Any], rates: list[float]) -> dict[str, report.Chart]:
    found = figures.get("rates", {})
    if not found:
        return {}

    def series(key: str) -> dict[str, list[tuple[float, float]]]:
        lines: dict[str, list[tuple[float, float]]] = {}
        for load in found:
            for kind in ("ide", "bare"):
                points = [(rate, v) for rate, v in zip(rates, _triple(figures, load, kind, key, rates), strict=True)
                          if v is not None]
                lines[f"{'IDE' if kind == 'ide' else 'bare page'}, {load}"] = points
        return lines

    return {
        "browser_long_tasks": report.chart(
            "Long tasks (> 50 ms) while streaming", "tokens/s", "long tasks", series("long_tasks"), log_x=True
        ),
        "browser_fps": report.chart("Frames per second while streaming", "tokens/s", "fps", series("fps"), log_x=True),
        "browser_max_frame_gap": report.chart(
            "Longest gap between animation frames", "tokens/s", "ms", series("max_gap_ms"), log_x=True,
            hline=MAX_GAP_MS,
        ),
    }


# -- the run ---------------------------------------------------------------------------------


def plan(args: argparse.Namespace) -> tuple[Scripts, dict[str, Any]]:
    """Every script, made before the engine starts (it reads them from a file)."""
    scripts = Scripts()
    write_tokens = tokens(answer(0, "bench/x.py", 0))
    literal_tokens = tokens(answer(0, "bench/x.py", 0, literal=args.literal_chars)) - write_tokens
    plans: dict[str, Any] = {"warm": [scripts.add("warm", 50), scripts.add("warm", 50)]}
    rate_plans: dict[tuple[str, float, int], Script] = {}
    for load in args.loads:
        for rate in args.rates:
            words = args.line_words or int(rate)
            literal = args.literal_chars if rate >= args.literal_rate else 0
            rest = write_tokens + (literal_tokens if literal else 0)
            paragraph = tokens(random_prose(int(words * 1.7), 0, words).split("\n", 1)[0])  # one whole line of them
            for rep in range(args.reps):
                rate_plans[(load, rate, rep)] = scripts.add(
                    "stream", max(100, paragraph, int(rate * args.seconds) - rest), line_words=words, literal=literal,
                )
    plans["rates"] = rate_plans
    plans["lag"] = [scripts.add("lag", args.lag_prose, line_words=LAG_LINE_WORDS) for _ in range(args.lag_turns)]
    memory: list[Script] = []
    if args.memory_tokens:
        per_turn = args.memory_prose + write_tokens
        for k in range(max(args.memory_tokens) // per_turn + 2):
            memory.append(scripts.add(
                "mem", args.memory_prose, path=f"bench/mem_{k % MEMORY_FILES}.py", line_words=args.memory_line_words,
            ))
    plans["memory"] = memory
    return scripts, plans


async def run(args: argparse.Namespace) -> dict[str, Any]:
    global _bundle
    _bundle = args.bundle
    setup = report.Setup()
    scripts, plans = plan(args)
    figures: dict[str, Any] = {}
    errors: list[str] = []
    async with Stack(scripts.texts) as stack, chromium() as browser, serve_bare_page() as bare_url:
        progress("stack and browser up")
        ide = await ide_page(browser, stack, errors)
        bare = await bare_page(browser, bare_url, stack.relay_url, errors)
        for page, script in zip((ide, bare), plans["warm"], strict=True):
            await page.measure(script, 1000)  # first turn: the editor, languages, the JIT
        if "rates" in args.phases:
            blank = await blank_page(browser, errors)
            figures["rates"] = await phase_rates(args, ide, bare, plans["rates"], blank)
        if "lag" in args.phases and args.lag_turns:
            figures["lag"] = await phase_lag(args, ide, plans["lag"])
        if "memory" in args.phases and args.memory_tokens:
            fresh = await ide_page(browser, stack, errors)
            figures["memory"] = await phase_memory(args, fresh, plans["memory"])
    figures["page_errors"] = errors
    figures["rows"] = rows(figures, args.rates)
    figures["charts"] = charts(figures, args.rates)
    figures["setup"] = setup.finish(
        rates=args.rates, seconds_per_answer=args.seconds, reps=args.reps, loads=args.loads,
        lag_turns=args.lag_turns, memory_tokens=args.memory_tokens, memory_rate=args.memory_rate,
        line_words=args.line_words or "the rate's tokens/s", literal_chars=args.literal_chars,
        literal_rate=args.literal_rate, memory_line_words=args.memory_line_words,
        bundle=str(args.bundle) if args.bundle else "static/dist/main.js",
    )
    return figures


def _numbers(kind: type[float] | type[int]) -> Any:
    def parse(text: str) -> list[Any]:
        try:
            values = [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}") from None
        if not values or any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive numbers: {text!r}")
        return values

    return parse


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_bench browser", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated, of {', '.join(PHASES)}")
    parser.add_argument("--rates", type=_numbers(float), default=[1000.0, 5000.0, 20000.0], help="tokens/s")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of each streamed answer")
    parser.add_argument("--reps", type=int, default=3, help="answers per rate, load and page (medians)")
    parser.add_argument("--line-words", type=int, default=0,
                        help="words per prose line in the rates' answers (default: the rate's tokens/s)")
    parser.add_argument("--literal-chars", type=int, default=LITERAL_CHARS,
                        help="the one-line literal written before the 300-line file (0: none)")
    parser.add_argument("--literal-rate", type=float, default=5000.0,
                        help="answers from this rate on write the literal")
    parser.add_argument("--loads", default=",".join(LOADS), help="idle, loaded (one busy thread beside)")
    parser.add_argument("--lag-rate", type=float, default=5000.0)
    parser.add_argument("--lag-turns", type=int, default=12)
    parser.add_argument("--lag-prose", type=int, default=300, help="prose tokens before each lag answer's block")
    parser.add_argument("--memory-tokens", type=_numbers(int), default=[100_000, 1_000_000])
    parser.add_argument("--memory-rate", type=float, default=100_000.0)
    parser.add_argument("--memory-prose", type=int, default=30_000, help="prose tokens per memory turn")
    parser.add_argument("--memory-line-words", type=int, default=MEMORY_LINE_WORDS, help="words per prose line there")
    parser.add_argument("--bundle", type=Path, help="serve this build of static/dist/main.js (compare two builds)")
    args = parser.parse_args(argv)
    args.phases = [p for p in args.phases.split(",") if p]
    args.loads = [p for p in args.loads.split(",") if p]
    if unknown := (set(args.phases) - set(PHASES)) | (set(args.loads) - set(LOADS)):
        parser.error(f"unknown phases or loads: {', '.join(sorted(unknown))}")
    if args.line_words < 0 or args.literal_chars < 0 or args.memory_line_words < 1:
        parser.error("--line-words and --literal-chars must be >= 0, --memory-line-words >= 1")
    if args.seconds <= 0 or args.reps < 1 or args.lag_turns < 0 or args.lag_rate <= 0 or args.memory_rate <= 0:
        parser.error("--seconds, --reps, --lag-rate and --memory-rate must be positive; --lag-turns >= 0")
    if args.bundle is not None and not args.bundle.is_file():
        parser.error(f"--bundle: no such file: {args.bundle}")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parse(list(sys.argv[1:] if argv is None else argv))))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        import json

        print(json.dumps(main(), indent=2))
