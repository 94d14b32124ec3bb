"""The security watchdog in the room (issue 15): ``spark_ide.guard`` reads the code, this decides.

Two readers, one set of rules:

* ``TurnWatch`` reads what one turn's blocks commit to their files, as they commit it:
  secret patterns on every completed line and the statement rules on every completed
  statement inline (tiers 1-2 cost microseconds a line), bandit on every completed top-level
  block in the scan process (``scan_pool``). The Pilot asks it after every chunk; a finding
  the rules say halts makes the Pilot stop the stream, roll back the block in flight and re-
  prompt the model with the finding (``Pilot._correct``); the others are flagged in the
  transcript (``guard.finding``).
* ``RoomGuard`` keeps the diagnostics of the document as it is (``guard.diagnostics``, one
  per file: what the editor's lint gutter shows), whoever typed it: a moment after the
  document changes it scans the files that changed (tiers 1-2, in a thread: a 2,000-line
  file takes ~150 ms), and once the document has been quiet a little longer, the full scan
  (bandit and ruff ``S``). While a turn streams it waits: the turn's own watch reads the
  model's code, and the turn's end rescans. People's code is only ever flagged. After each
  turn the full scan runs over the files the turn touched and flags what the stream did not.
  Before a code run it names the high-severity findings, so the run asks for confirmation
  (``Room.run``).

The mode is the workspace's, or its course's (``RoomStore.guard_mode``): ``off``, ``flag``, or
``halt`` (the default: high severity halts, the rest is flagged).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import itertools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, TypeVar

from spark_ide.editing import BlockStatus, CodeText, EditEvent, EditState
from spark_ide.guard import (
    FileScanner,
    Finding,
    GuardMode,
    Severity,
    bandit_scan,
    full_scan,
    merge_findings,
    scan_text,
    wants_bandit,
    warm_up,
)

from .background import Background
from .events import Event, GuardDiagnostics, GuardFinding, TurnEvent

log = logging.getLogger(__name__)

RULES_FRESH_S = 2.0  # the mode read from storage serves this long
CORRECTOR = "watchdog"  # the author of a correction turn (``turn.started.author``, ``turn.finished.by``)


@dataclass(frozen=True, slots=True)
class GuardRules:
    """What the watchdog does: ``mode``; from which severity a model's finding halts the
    stream (``halt_at``, a setting); how many automatic corrections a turn may have before a
    model that repeats the flaw is stopped instead (no loop, no quota burned)."""

    mode: GuardMode = GuardMode.HALT
    halt_at: Severity = Severity.HIGH
    max_corrections: int = 2

    @property
    def active(self) -> bool:
        return self.mode is not GuardMode.OFF

    def halts(self, finding: Finding) -> bool:
        return self.mode is GuardMode.HALT and finding.severity >= self.halt_at


class FullScan(Protocol):
    """The full scan of whole files after a turn (bandit and ruff ``S``): a Celery task on the
    Django side (``spark_ide.pairing.guard``), in a thread where nothing else is set up."""

    async def __call__(self, files: Mapping[str, str]) -> list[Finding]: ...


# -- the scan process ---------------------------------------------------------------------------
#
# bandit is pure Python and slow (~4 ms for a 10-line block, ~1 s for a 2,000-line file). In a
# thread of the server it holds the GIL that the event loop needs: streaming a 2,000-line
# answer with bandit in a thread ran at 0.35x the speed without it (``spark_bench guard``).
# So bandit and the full scan run in one long-lived process of their own, started on first
# use with bandit loaded once (its Python API, not a command per block); the loop only waits.

T = TypeVar("T")
# Below the server: on a busy machine the scan takes about a tenth of a core (nice 19 would leave it
# ~1.5 %: a 30-minute soak's full scans then fell far behind).
SCAN_NICENESS = 10
# While a turn streams, bandit scans of its completed blocks start at most this often; the
# blocks completed meanwhile go together. A trip to the scan process wakes two threads of the
# server's own (the pool's) and the scan competes for the CPU: a trip per block, at a fast
# stream's rate, cost the stream more than all its line scans (`spark_bench guard`). bandit only
# ever reads completed blocks, so this delays what it reports, never what the line tiers halt.
BANDIT_EVERY_S = 0.1
# At most this many characters of a turn's code are kept unread while the stream outruns the
# room (``TurnWatch.feed``): a few dozen lines, read together.
HOLD_CHARS = 4096
_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _start_scan_process() -> None:
    """In the scan process: below the server in the CPU's queue (a scan uses the time the
    server and the model leave; on a busy machine a room's stream comes first), bandit loaded."""
    with contextlib.suppress(OSError):
        os.nice(SCAN_NICENESS)
    warm_up()


def scan_pool() -> ProcessPoolExecutor:
    """The scan process (spawned: the server has threads, and forking it would copy their locks)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_start_scan_process,
            )
        return _pool


def _ready() -> None:
    """Nothing: a first task for the scan process, to have it started."""


def start_scan_process() -> None:
    """Have the scan process started now (a room opening), not at the first block a model
    writes: its start holds the event loop a moment and its bandit load takes the process a
    second, and every room's stream waited behind it (the first level of ``spark_bench
    rooms``: p99 95-270 ms, then 21 ms at the next)."""
    scan_pool().submit(_ready).add_done_callback(_started)


def _started(future: Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("the watchdog's scan process did not start: %s", future.exception())


async def in_scan_process(work: Callable[[], T]) -> T:
    """Run ``work`` (a picklable call: a module function with its arguments) in the scan
    process; a process that died is replaced once."""
    global _pool
    for attempt in (1, 2):
        pool = scan_pool()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, work)
        except BrokenProcessPool:
            log.warning("the watchdog's scan process died; starting another")
            with _pool_lock:
                if _pool is pool:
                    _pool = None
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def shutdown_scan_pool() -> None:
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


async def scan_in_process(files: Mapping[str, str]) -> list[Finding]:
    """The full scan in the scan process (where no Celery worker does it)."""
    return await in_scan_process(functools.partial(full_scan, dict(files)))


Block = tuple[str, int, str]  # a completed top-level block: path, first line, source
_FINAL = frozenset({EditState.APPLIED, EditState.ROLLED_BACK, EditState.FAILED})  # ``EditState.is_final``, hashed

# While a turn streams, bandit reads only blocks holding something one of its checks looks for
# (``guard.wants_bandit``: an import, a call of a risky module, an SQL word, a secret-like name,
# ...): bandit's CPU time is most of the watchdog's, and most blocks of ordinary code have none of
# these. The full scan after the turn reads every line of the touched files, so nothing is left
# unread. That test runs in the scan process too, not in the server: ~10 µs a block, it was a
# fifth of the watch's time on the loop, where sending a block costs less.


def bandit_blocks(blocks: list[Block]) -> list[Finding]:
    """bandit over those of several blocks it has something to look at in, in one call (one trip
    to the scan process for all of them)."""
    found: list[Finding] = []
    for path, first_line, source in blocks:
        if wants_bandit(source):
            found += bandit_scan(path, source, first_line=first_line)
    return found


async def bandit_in_process(blocks: list[Block]) -> list[Finding]:
    return await in_scan_process(functools.partial(bandit_blocks, blocks))


@dataclass(frozen=True)
class GuardSettings:
    halt_at: Severity = Severity.HIGH
    max_corrections: int = 2
    full_scan: FullScan = scan_in_process
    scan_delay_s: float = 0.4  # people's edits: rescan once the document is this long quiet
    scan_max_delay_s: float = 1.5  # and at least this often while someone keeps typing
    full_scan_delay_s: float = 2.0  # and run the full scan once it has been quiet this long

    def rules(self, mode: GuardMode) -> GuardRules:
        return GuardRules(mode=mode, halt_at=self.halt_at, max_corrections=self.max_corrections)


def finding_event(turn: str, finding: Finding, action: str, correction: str | None = None) -> GuardFinding:
    return GuardFinding(
        turn=turn, path=finding.path, line=finding.line, rule=finding.rule, severity=finding.severity.value,
        message=finding.message, action=action, fix=finding.fix, tier=finding.tier.value, correction=correction,
    )


def correction_prompt(findings: Iterable[Finding]) -> str:
    """What the model is told when the watchdog stops it: each finding and the fix to make."""
    lines = [
        f"- {f.path} {f.message}. Fix: {f.fix}" for f in findings
    ]
    return (
        "The security watchdog stopped you: the code you were writing has a high-severity flaw.\n"
        + "\n".join(lines)
        + "\nWrite that code again without the flaw, and go on with the task."
    )


# -- one turn ---------------------------------------------------------------------------------


class TurnWatch:
    """The watchdog over what one turn writes: a scanner per block (each block is a stretch of
    one file, starting at its own line), findings reported once each."""

    def __init__(self, rules: GuardRules) -> None:
        self.rules = rules
        self._scanners: dict[int, FileScanner] = {}
        self._reported: set[object] = set()
        self._lines = False  # a line ended since ``blocks()`` last looked (a block can only end then)
        self.pending: list[Block] = []  # completed blocks waiting for bandit (one scan at a time)
        self.scanning = False
        self.scanned_at = float("-inf")  # when the last bandit scan of this turn's blocks started
        self._held: list[CodeText] = []  # code kept to be read with the next (``feed(behind=True)``)
        self._held_chars = 0

    @property
    def reported(self) -> frozenset[object]:
        return frozenset(self._reported)

    @property
    def holding(self) -> bool:
        """Code is kept unread (``feed(behind=True)``): read it before anything may end its block."""
        return bool(self._held)

    def feed(self, code: list[CodeText], events: Iterable[EditEvent] = (), *, behind: bool = False) -> list[Finding]:
        """The code committed by the last chunk and the blocks' status changes; returns the
        findings not reported before. (Called after every delta: most carry a few characters
        and end no line, and cost only the scanner's note of them.)

        ``behind``: more of the answer is already waiting to be applied (the model writes faster
        than the room applies). The code is then kept and read with the next call's, up to
        ``HOLD_CHARS``, unless a block ended: a scan's fixed costs are paid once for many lines
        (reading a fast stream delta by delta cost it twice what the lines did). A stream the
        room keeps up with is read delta by delta, and the caller reads what is held before
        applying anything that may end its block (``holding``), so a halt still rolls back the
        block it found a flaw in."""
        events = tuple(events)
        if behind and not any(_ends(event) for event in events):
            size = sum(len(piece.text) for piece in code)
            if self._held_chars + size < HOLD_CHARS:
                self._held += code
                self._held_chars += size
                return []
        if self._held:
            code, self._held, self._held_chars = _joined(self._held + code), [], 0
        found: list[Finding] = []
        for piece in code:
            scanner = self._scanners.get(piece.block)
            if scanner is None:
                scanner = self._scanners[piece.block] = FileScanner(piece.path, first_line=piece.first_line)
            if "\n" in piece.text:
                self._lines = True
                found += scanner.feed(piece.text)
            else:
                scanner.feed(piece.text)  # a piece of a line: nothing can be found before it ends
        for event in events:
            if _ends(event):
                done = self._scanners.get(event.block)
                if done is not None and event.state is EditState.APPLIED:
                    found += done.finish()
                    self._lines = True
                elif done is not None:  # failed or rolled back: what it wrote is gone
                    del self._scanners[event.block]
        return self.fresh(found) if found else found

    @property
    def lines_ended(self) -> bool:
        """A line ended since ``blocks()`` last looked: a block may have completed."""
        return self._lines

    def fresh(self, found: Iterable[Finding]) -> list[Finding]:
        """``found`` less what was reported already (by any tier); marks the rest reported."""
        out = []
        for finding in found:
            if finding.key not in self._reported:
                self._reported.add(finding.key)
                out.append(finding)
        return out

    def scan_wait(self, now: float) -> float:
        """Seconds until the next bandit scan of the pending blocks may start (``BANDIT_EVERY_S``
        after the last; ``now``: ``time.monotonic()``)."""
        return max(0.0, self.scanned_at + BANDIT_EVERY_S - now)

    def blocks(self) -> list[Block]:
        """Completed top-level blocks not handed out yet, for bandit (which reads those holding
        something it looks for, ``bandit_blocks``): (path, first line, source)."""
        if not self._lines:
            return []
        self._lines = False
        out = []
        for scanner in self._scanners.values():
            out += [(scanner.path, block.first_line, block.source) for block in scanner.completed_blocks()]
        return out


def _ends(event: EditEvent) -> TypeGuard[BlockStatus]:
    """Whether ``event`` is a block's last status (applied, failed, rolled back...)."""
    return isinstance(event, BlockStatus) and event.state in _FINAL


def _joined(code: list[CodeText]) -> list[CodeText]:
    """``code`` with the consecutive pieces of one block as one piece."""
    out: list[CodeText] = []
    for _, group in itertools.groupby(code, key=lambda piece: piece.block):
        first, *rest = group
        text = first.text + "".join(piece.text for piece in rest)
        out.append(dataclasses.replace(first, text=text) if rest else first)
    return out


# -- the document -----------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass
class _FileState:
    digest: str = ""
    quick: list[Finding] = field(default_factory=list)
    full: list[Finding] = field(default_factory=list)
    full_digest: str = ""  # the text the full scan read (its findings hold while it is unchanged)
    shown: list[dict[str, object]] = field(default_factory=list)


class RoomGuard:
    """The room's diagnostics and its post-turn scan (see the module docstring)."""

    def __init__(
        self,
        *,
        texts: Callable[[], dict[str, str]],
        publish: Callable[[TurnEvent], None],
        announce: Callable[[Event], None],
        read_mode: Callable[[], Awaitable[GuardMode]],
        settings: GuardSettings,
        busy: Callable[[], bool] = lambda: False,
    ) -> None:
        self._texts = texts
        self._publish = publish
        self._announce = announce
        self._read_mode = read_mode
        self._busy = busy  # a turn streams: rescans wait for its end (``turn_ended``)
        self.settings = settings
        self.rules = settings.rules(GuardMode.HALT)
        self._read_at = float("-inf")
        self._reading: asyncio.Task[GuardRules] | None = None
        self._files: dict[str, _FileState] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._full_timer: asyncio.TimerHandle | None = None
        self._first_change: float | None = None
        self._due = 0.0  # when the rescan is due (``changed``)
        self._scanning: asyncio.Task[None] | None = None
        self._again = False
        self._background = Background()
        # Full scans asked for and not started: (turn or None, its paths, what its stream reported).
        # One runs at a time per room, over everything asked meanwhile: on a machine too busy for
        # the scan process to keep up, scans must not pile up (each would hold its files' texts).
        self._full_asked: list[tuple[str | None, frozenset[str], frozenset[object]]] = []
        self._full_running: asyncio.Future[Any] | None = None

    # -- the mode ------------------------------------------------------------------------------

    async def read_rules(self) -> GuardRules:
        """The rules, read again from storage when the last read is stale."""
        if time.monotonic() - self._read_at < RULES_FRESH_S:
            return self.rules
        try:
            mode = await self._read_mode()
        except Exception:
            log.exception("could not read the watchdog's mode; the last one read stays")
            return self.rules
        rules, was_active = self.settings.rules(mode), self.rules.active
        self._read_at = time.monotonic()
        self.rules = rules
        if rules.active != was_active:
            self.changed()  # turned on: scan; turned off: clear the diagnostics
        return rules

    def refresh_rules(self) -> None:
        """Read the mode again in the background once it is stale (while a turn streams)."""
        stale = time.monotonic() - self._read_at >= RULES_FRESH_S
        if stale and (self._reading is None or self._reading.done()):
            self._reading = asyncio.create_task(self.read_rules())

    # -- diagnostics -----------------------------------------------------------------------------

    def changed(self) -> None:
        """The document changed: rescan once it is quiet for a moment (or a while has passed).
        Runs on every document update (a streaming answer makes hundreds a second), so it only
        moves the due time; the one timer there is looks at it when it fires."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._first_change is None:
            self._first_change = now
        self._due = min(now + self.settings.scan_delay_s, self._first_change + self.settings.scan_max_delay_s)
        if self._timer is None:
            self._timer = loop.call_at(self._due, self._start_scan)
        if self._full_timer is not None:
            self._full_timer.cancel()
            self._full_timer = None

    def _start_scan(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._due:  # changed again since this timer was set: wait for quiet
            self._timer = loop.call_at(self._due, self._start_scan)
            return
        self._timer = None
        self._first_change = None
        if self._busy():
            return  # the turn's end rescans
        if self._scanning is not None and not self._scanning.done():
            self._again = True  # one more pass when this one ends
            return
        self._scanning = asyncio.create_task(self._scan())

    async def _scan(self) -> None:
        try:
            await self._scan_once()
        except Exception:
            log.exception("the watchdog's scan failed")
        if self._again:
            self._again = False
            self.changed()
        elif self.rules.active and self._timer is None:
            loop = asyncio.get_running_loop()
            self._full_timer = loop.call_later(self.settings.full_scan_delay_s, self._start_full_scan)

    async def _scan_once(self) -> None:
        texts = self._texts() if self.rules.active else {}
        todo = {path: text for path, text in texts.items() if self._state(path).digest != _digest(text)}
        if todo:
            scanned = await asyncio.to_thread(lambda: {path: scan_text(path, text) for path, text in todo.items()})
            for path, findings in scanned.items():
                state = self._state(path)
                state.digest, state.quick = _digest(todo[path]), findings
                self._show(path, state)
        for path in [path for path in self._files if path not in texts]:
            state = self._files.pop(path)
            if state.shown:
                self._announce(GuardDiagnostics(path=path, findings=()))

    def _start_full_scan(self) -> None:
        """The document has been quiet a while: the full scan of the files it has not read."""
        self._full_timer = None
        if self._busy() or not self.rules.active:
            return
        texts = self._texts()
        paths = frozenset(path for path, text in texts.items() if self._state(path).full_digest != _digest(text))
        if paths:
            self._ask_full(None, paths, frozenset())

    def _state(self, path: str) -> _FileState:
        state = self._files.get(path)
        if state is None:
            state = self._files[path] = _FileState()
        return state

    def _show(self, path: str, state: _FileState) -> None:
        full = state.full if state.full_digest == state.digest else []
        shown = [finding.as_dict() for finding in merge_findings(state.quick, full)]
        if shown != state.shown:
            state.shown = shown
            self._announce(GuardDiagnostics(path=path, findings=tuple(shown)))

    def diagnostics(self) -> list[GuardDiagnostics]:
        """The current diagnostics of every file that has some (for a joining page)."""
        return [
            GuardDiagnostics(path=path, findings=tuple(state.shown))
            for path, state in sorted(self._files.items()) if state.shown
        ]

    def high_findings(self, paths: Iterable[str] | None = None) -> list[Finding]:
        """Findings of high severity in ``paths`` (all files: None) as the files are now: a run
        asks for confirmation when there are any. Files changed since the last scan are scanned
        here (tiers 1-2: fast enough to do inline for a run)."""
        if not self.rules.active:
            return []
        texts = self._texts()
        wanted = texts.keys() if paths is None else [path for path in paths if path in texts]
        out: list[Finding] = []
        for path in wanted:
            state = self._files.get(path)
            text = texts[path]
            if state is not None and state.digest == _digest(text):
                findings = merge_findings(state.quick, state.full if state.full_digest == state.digest else [])
            else:
                findings = scan_text(path, text)
            out += [finding for finding in findings if finding.severity >= Severity.HIGH]
        return out

    # -- after a turn ----------------------------------------------------------------------------

    def turn_ended(self, turn: str, paths: Iterable[str], reported: frozenset[object]) -> None:
        """Rescan the document; run the full scan over the files ``turn`` touched and flag what
        the stream did not."""
        if not self.rules.active:
            return
        self.changed()
        self._ask_full(turn, frozenset(paths), reported)

    def _ask_full(self, turn: str | None, paths: frozenset[str], reported: frozenset[object]) -> None:
        self._full_asked.append((turn, paths, reported))
        if self._full_running is None or self._full_running.done():
            self._full_running = self._background.spawn(self._full())

    async def _full(self) -> None:
        """The full scans asked for, one at a time, each over the files as they are when it
        starts: the diagnostics' second half; after a turn, the findings in its files that its
        stream did not report go to the transcript as flagged."""
        while self._full_asked:
            asked, self._full_asked = self._full_asked, []
            texts = self._texts()
            files = {path: texts[path] for _, paths, _ in asked for path in paths if path in texts}
            if not files:
                continue
            try:
                findings = await self.settings.full_scan(files)
            except Exception:
                log.exception("the watchdog's full scan failed")
                continue
            for path, text in files.items():
                state = self._state(path)
                state.full = [finding for finding in findings if finding.path == path]
                state.full_digest = _digest(text)
                if state.digest == state.full_digest:
                    self._show(path, state)
            for turn, paths, reported in asked:
                if turn is None:
                    continue
                for finding in findings:
                    if finding.path in paths and finding.key not in reported:
                        self._publish(finding_event(turn, finding, "flagged"))

    async def close(self) -> None:
        for timer in (self._timer, self._full_timer):
            if timer is not None:
                timer.cancel()
        for task in (self._scanning, self._reading):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._background.close()
