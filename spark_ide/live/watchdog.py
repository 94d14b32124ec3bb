"""The security watchdog in the room (issue 15): ``spark_ide.guard`` reads the code, this decides.

Its rules, here: the mode, from which severity a finding halts, how many corrections a chain
may have, what a finding says in the transcript and what the model is told. Three readers
follow them:

* ``turn_watch.TurnWatch`` reads what one turn's blocks commit to their files, as they commit
  it; the Pilot's ``watch_gate.WatchGate`` feeds it after every chunk: a finding the rules say
  halts makes the Pilot stop the stream, roll back the block in flight and re-prompt the model
  with the finding; the others are flagged in the transcript (``guard.finding``).
* ``room_guard.RoomGuard`` keeps the diagnostics of the document as it is, whoever typed it,
  and runs the full scan after each turn.
* ``scan_process`` runs bandit and the full scan off the server's event loop.

The mode is the workspace's, or its course's (``RoomStore.guard_mode``): ``off``, ``flag``, or
``halt`` (the default: high severity halts, the rest is flagged).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from spark_ide.guard import Finding, GuardMode, Severity

from .events import GuardFinding
from .scan_process import scan_in_process

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
