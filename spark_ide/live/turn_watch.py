"""The watchdog over one turn (``TurnWatch``): what the turn's blocks commit to their files, read
as they commit it.

Secret patterns on every completed line and the statement rules on every completed statement
inline (tiers 1-2 cost microseconds a line); bandit on every completed top-level block, in the
scan process (``live.scan_process``). The Pilot's ``WatchGate`` feeds it after every chunk and
decides what a finding does (``live.watchdog.GuardRules``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from typing import TypeGuard

from spark_ide.editing import BlockStatus, CodeText, EditEvent, EditState
from spark_ide.editing.status import FINAL_STATES
from spark_ide.guard import FileScanner, Finding

from .scan_process import Block
from .watchdog import GuardRules

# While a turn streams, bandit scans of its completed blocks start at most this often; the
# blocks completed meanwhile go together. A trip to the scan process wakes two threads of the
# server's own (the pool's) and the scan competes for the CPU: a trip per block, at a fast
# stream's rate, cost the stream more than all its line scans (`spark_bench guard`). bandit only
# ever reads completed blocks, so this delays what it reports, never what the line tiers halt.
BANDIT_EVERY_S = 0.1
# At most this many characters of a turn's code are kept unread while the stream outruns the
# room (``TurnWatch.feed``): a few dozen lines, read together.
HOLD_CHARS = 4096



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
    return isinstance(event, BlockStatus) and event.state in FINAL_STATES


def _joined(code: list[CodeText]) -> list[CodeText]:
    """``code`` with the consecutive pieces of one block as one piece."""
    out: list[CodeText] = []
    for _, group in itertools.groupby(code, key=lambda piece: piece.block):
        first, *rest = group
        text = first.text + "".join(piece.text for piece in rest)
        out.append(dataclasses.replace(first, text=text) if rest else first)
    return out
