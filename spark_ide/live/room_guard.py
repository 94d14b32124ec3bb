"""The watchdog over the document, whoever typed it (``RoomGuard``).

It keeps the diagnostics of the document as it is (``guard.diagnostics``, one per file: what
the editor's lint gutter shows): a moment after the document changes it scans the files that
changed (tiers 1-2, in a thread: a 2,000-line file takes ~150 ms), and once the document has
been quiet a little longer, the full scan (bandit and ruff ``S``). While a turn streams it
waits: the turn's own watch reads the model's code, and the turn's end rescans. People's code
is only ever flagged. After each turn the full scan runs over the files the turn touched and
flags what the stream did not. Before a code run it names the high-severity findings, so the
run asks for confirmation (``Room.run``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spark_ide.guard import Finding, GuardMode, Severity, merge_findings, scan_text

from .background import Background
from .events import Event, GuardDiagnostics, TurnEvent
from .watchdog import RULES_FRESH_S, GuardRules, GuardSettings, finding_event

log = logging.getLogger(__name__)


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
