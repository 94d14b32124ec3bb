"""The security watchdog in the room (issue 15): ``spark_ide.guard`` reads the code, this decides.

Two readers, one set of rules:

* ``TurnWatch`` reads what one turn's blocks commit to their files, as they commit it: secret
  patterns on every completed line and the statement rules on every completed statement
  inline (tiers 1-2 cost microseconds a line), bandit on every completed top-level block in a
  thread. The Pilot asks it after every chunk; a finding the rules say halts makes the Pilot
  stop the stream, roll back the block in flight and re-prompt the model with the finding
  (``Pilot._correct``); the others are flagged in the transcript (``guard.finding``).
* ``RoomGuard`` keeps the diagnostics of the document as it is (``guard.diagnostics``, one
  per file: what the editor's lint gutter shows), whoever typed it: a moment after the
  document changes it scans the files that changed (tiers 1-2 and bandit, in a thread).
  People's code is only ever flagged. After each turn it runs the full scan (bandit and ruff
  ``S`` over the files the turn touched, a Celery task on the Django side) and flags what it
  finds that the stream did not. Before a code run it names the high-severity findings, so
  the run asks for confirmation (``Room.run``).

The mode is the workspace's, or its course's (``RoomStore.guard_mode``): ``off``, ``flag``, or
``halt`` (the default: high severity halts, the rest is flagged).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from spark_ide.editing import BlockStatus, CodeText, EditEvent, EditState
from spark_ide.guard import FileScanner, Finding, Severity, bandit_scan, full_scan, merge_findings, scan_text

from .background import Background
from .events import Event, GuardDiagnostics, GuardFinding, TurnEvent

log = logging.getLogger(__name__)

RULES_FRESH_S = 2.0  # the mode read from storage serves this long
CORRECTOR = "watchdog"  # the author of a correction turn (``turn.started.author``, ``turn.finished.by``)


class GuardMode(StrEnum):
    OFF = "off"
    FLAG = "flag"
    HALT = "halt"

    @classmethod
    def parse(cls, value: object) -> GuardMode:
        """A stored mode; anything unknown is the safe default (halt)."""
        try:
            return cls(str(value))
        except ValueError:
            return cls.HALT


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


async def scan_in_thread(files: Mapping[str, str]) -> list[Finding]:
    return await asyncio.to_thread(full_scan, dict(files))


@dataclass(frozen=True)
class GuardSettings:
    halt_at: Severity = Severity.HIGH
    max_corrections: int = 2
    full_scan: FullScan = scan_in_thread
    scan_delay_s: float = 0.4  # people's edits: rescan once the document is this long quiet
    scan_max_delay_s: float = 1.5  # and at least this often while it keeps changing (a turn)

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

    @property
    def reported(self) -> frozenset[object]:
        return frozenset(self._reported)

    def feed(self, code: list[CodeText], events: Iterable[EditEvent] = ()) -> list[Finding]:
        """The code committed by the last chunk and the blocks' status changes; returns the
        findings not reported before."""
        found: list[Finding] = []
        for piece in code:
            scanner = self._scanners.get(piece.block)
            if scanner is None:
                scanner = self._scanners[piece.block] = FileScanner(piece.path, first_line=piece.first_line)
            found += scanner.feed(piece.text)
        for event in events:
            if isinstance(event, BlockStatus) and event.state.is_final:
                done = self._scanners.get(event.block)
                if done is not None and event.state is EditState.APPLIED:
                    found += done.finish()
                elif done is not None:  # failed or rolled back: what it wrote is gone
                    del self._scanners[event.block]
        return self.fresh(found)

    def fresh(self, found: Iterable[Finding]) -> list[Finding]:
        """``found`` less what was reported already (by any tier); marks the rest reported."""
        out = []
        for finding in found:
            if finding.key not in self._reported:
                self._reported.add(finding.key)
                out.append(finding)
        return out

    def blocks(self) -> list[tuple[str, int, str]]:
        """Completed top-level blocks not scanned by bandit yet: (path, first line, source)."""
        out = []
        for scanner in self._scanners.values():
            out += [(scanner.path, block.first_line, block.source) for block in scanner.completed_blocks()]
        return out


# -- the document -----------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def quick_scan(path: str, text: str) -> list[Finding]:
    """Tiers 1-3 over one whole file (blocking: the room runs it in a thread)."""
    return merge_findings(scan_text(path, text), bandit_scan(path, text) if _is_python(path) else ())


def _is_python(path: str) -> bool:
    return path.endswith((".py", ".pyw"))


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
    ) -> None:
        self._texts = texts
        self._publish = publish
        self._announce = announce
        self._read_mode = read_mode
        self.settings = settings
        self.rules = settings.rules(GuardMode.HALT)
        self._read_at = float("-inf")
        self._reading: asyncio.Task[GuardRules] | None = None
        self._files: dict[str, _FileState] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._first_change: float | None = None
        self._scanning: asyncio.Task[None] | None = None
        self._again = False
        self._background = Background()

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
        rules = self.settings.rules(mode)
        self._read_at = time.monotonic()
        if rules.active != self.rules.active:
            self.rules = rules
            self.changed()  # turned on: scan; turned off: clear the diagnostics
        self.rules = rules
        return rules

    def refresh_rules(self) -> None:
        """Read the mode again in the background once it is stale (while a turn streams)."""
        stale = time.monotonic() - self._read_at >= RULES_FRESH_S
        if stale and (self._reading is None or self._reading.done()):
            self._reading = asyncio.create_task(self.read_rules())

    # -- diagnostics -----------------------------------------------------------------------------

    def changed(self) -> None:
        """The document changed: rescan once it is quiet for a moment (or a while has passed)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._first_change is None:
            self._first_change = now
        due = min(now + self.settings.scan_delay_s, self._first_change + self.settings.scan_max_delay_s)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(due, self._start_scan)

    def _start_scan(self) -> None:
        self._timer = None
        self._first_change = None
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

    async def _scan_once(self) -> None:
        texts = self._texts()
        if not self.rules.active:
            texts = {}
        todo = {path: text for path, text in texts.items() if self._state(path).digest != _digest(text)}
        scanned = await asyncio.to_thread(lambda: {path: quick_scan(path, text) for path, text in todo.items()})
        for path, findings in scanned.items():
            state = self._state(path)
            state.digest, state.quick = _digest(todo[path]), findings
            self._show(path, state)
        for path in [path for path in self._files if path not in texts]:
            state = self._files.pop(path)
            if state.shown:
                self._announce(GuardDiagnostics(path=path, findings=()))

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
        here (tiers 1-2: fast enough to do inline)."""
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
        """Run the full scan over the files ``turn`` touched; flag what the stream did not."""
        if not self.rules.active:
            return
        texts = self._texts()
        files = {path: texts[path] for path in paths if path in texts}
        if files:
            self._background.spawn(self._full(turn, files, reported))

    async def _full(self, turn: str, files: dict[str, str], reported: frozenset[object]) -> None:
        try:
            findings = await self.settings.full_scan(files)
        except Exception:
            log.exception("the watchdog's full scan failed for turn %s", turn)
            return
        for path, text in files.items():
            state = self._state(path)
            state.full = [finding for finding in findings if finding.path == path]
            state.full_digest = _digest(text)
            if state.digest == state.full_digest:
                self._show(path, state)
        for finding in findings:
            if finding.key not in reported:
                self._publish(finding_event(turn, finding, "flagged"))

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for task in (self._scanning, self._reading):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._background.close()
