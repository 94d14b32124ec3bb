"""The security watchdog at the Pilot's side (``live.watchdog`` has the rules): what a turn's
answer goes through on its way into the files.

``WatchGate`` applies each delta of a turn to the document with the turn's ``TurnWatch``
reading the code it commits; with the watchdog on, a delta of several lines that may end a
block goes in cut before and after each line that may end one (a tool call's input, whose
every line may end a hunk, line by line), so that a flaw on a line is caught before the end
of its block applies it (a halt rolls back only the block in flight). Flagged findings go to the
transcript; a halting one is handed to the Pilot's command loop (``GuardHalt``), which ends
the turn and re-prompts the model with the correction this gate writes (``correction``), or,
after ``max_corrections`` in a chain, stops it. Completed top-level blocks go to bandit in the
scan process, one scan at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from spark_ide.editing import BlockStatus, EditEvent, EditState
from spark_ide.editing.grammar import BLOCK_END_CHARS, may_end_a_block
from spark_ide.guard import Finding

from .events import TurnEvent
from .policy import AiPolicy
from .scan_process import bandit_in_process
from .turn_watch import TurnWatch
from .turns import Command, CommandKind, TurnRun, new_turn_id, publish_edits
from .watchdog import CORRECTOR, GuardRules, correction_prompt, finding_event


class RoomRules(Protocol):
    """What the gate needs of the room's watchdog (``RoomGuard``)."""

    rules: GuardRules

    async def read_rules(self) -> GuardRules: ...

    def refresh_rules(self) -> None: ...

    def turn_ended(self, turn: str, paths: Iterable[str], reported: frozenset[object]) -> None: ...


@dataclass(frozen=True, slots=True)
class GuardHalt:
    """The watchdog found a flaw in what ``run`` writes that halts it (``Pilot._correct``)."""

    run: TurnRun
    findings: tuple[Finding, ...]


def _last_progress(events: list[EditEvent]) -> list[EditEvent]:
    """``events`` without the progress statuses of a block that a later one replaces."""
    last: dict[int, int] = {}
    for index, event in enumerate(events):
        if isinstance(event, BlockStatus) and event.state is EditState.STREAMING:
            last[event.block] = index
    return [
        event for index, event in enumerate(events)
        if not (isinstance(event, BlockStatus) and event.state is EditState.STREAMING and last[event.block] != index)
    ]


def block_end_pieces(tail: str, text: str) -> list[str]:
    """``text`` cut around each of its lines that may end a block (``tail``: the text before
    it, for a marker cut in two at its start): the lines between such lines go in together,
    one transaction for all of them (a delta of 100 code lines was 100), and the watchdog
    still reads every line before any line that may end its block is applied."""
    pieces: list[str] = []
    start = 0
    at = 0
    before = tail
    for line in text.splitlines(keepends=True):
        if may_end_a_block(before + line):
            if at > start:
                pieces.append(text[start:at])
            pieces.append(line)
            start = at + len(line)
        at += len(line)
        before = ""
    if start < len(text):
        pieces.append(text[start:])
    return pieces


class WatchGate:
    """``room``: the room's watchdog (its rules, its post-turn scan); ``publish``: the room's
    turn events; ``halt``: hands a halt to the Pilot's command loop; ``running``: the turn the
    Pilot runs now (a bandit scan that ends after its turn reports nothing of it)."""

    def __init__(
        self,
        *,
        room: RoomRules,
        publish: Callable[[TurnEvent], None],
        halt: Callable[[GuardHalt], None],
        running: Callable[[], TurnRun | None],
    ) -> None:
        self._room = room
        self._publish = publish
        self._halt = halt
        self._running = running
        self._scans: set[asyncio.Task[None]] = set()  # bandit over the running turn's blocks

    # -- the rules ---------------------------------------------------------------------------

    async def read_rules(self) -> GuardRules:
        return await self._room.read_rules()

    def refresh_rules(self) -> None:
        self._room.refresh_rules()

    def watch_for(self, policy: AiPolicy) -> TurnWatch | None:
        """The watch over a new turn's code: None when the watchdog is off, or nothing it
        writes is applied (explain-only)."""
        rules = self._room.rules
        return TurnWatch(rules) if rules.active and policy.edits_apply else None

    # -- a delta -----------------------------------------------------------------------------

    def apply(self, run: TurnRun, text: str, feed: Callable[[str], list[EditEvent]] | None = None) -> bool:
        """Apply a delta of ``run``'s answer (see the module docstring). True: the watchdog
        halted the turn. ``feed``: where the delta goes when it is not answer text (a tool
        call's input, ``rounds.ToolRounds.delta``); any of its lines may end a hunk."""
        watch = run.watch
        tail: str | None = None  # None: any line may end a hunk
        if feed is None:
            feed = run.editor.feed
            tail, run.tail = run.tail, text[-BLOCK_END_CHARS:]
            may_end = watch is not None and may_end_a_block(tail + text)  # with the last delta's end: a cut marker
        else:
            may_end = watch is not None
        # What the watchdog holds unread is read before anything may end its block.
        if may_end and watch is not None and watch.holding and self._watch(run, watch.feed([])):
            return True
        if watch is None or text.count("\n") < 2 or not may_end:
            edits = feed(text)
            publish_edits(self._publish, edits)
            code = run.editor.take_code()
            if watch is None or not (code or edits):
                return False
            new = watch.feed(code, edits, behind=run.stream is not None and run.stream.waiting > 0)
            # Most deltas end no line and find nothing: no call for them (one per delta adds up).
            return self._watch(run, new) if new or watch.lines_ended else False
        held: list[EditEvent] = []
        found: list[Finding] = []
        pieces = text.splitlines(keepends=True) if tail is None else block_end_pieces(tail, text)
        for piece in pieces:
            edits = feed(piece)
            held += edits
            code = run.editor.take_code()
            if code or edits:
                found += watch.feed(code, edits)
                if any(watch.rules.halts(finding) for finding in found):
                    break
        # One progress status per block for the whole delta, as without the split (a status
        # per line made the room send many times the events at high rates).
        publish_edits(self._publish, _last_progress(held))
        return self._watch(run, found)

    def _watch(self, run: TurnRun, found: list[Finding]) -> bool:
        """What the watchdog found in ``run``'s newest code: flagged findings go to the
        transcript; a halting one is handed to the Pilot's loop (True: stop reading the
        answer). Completed top-level blocks go to bandit in the scan process."""
        watch = run.watch
        assert watch is not None
        watch.pending += watch.blocks()
        if watch.pending and not watch.scanning:
            self._scan_blocks(run, watch)
        if not found:
            return False
        halting = tuple(finding for finding in found if watch.rules.halts(finding))
        for finding in found:
            if finding not in halting:
                self._publish(finding_event(run.id, finding, "flagged"))
        if not halting:
            return False
        self._halt(GuardHalt(run, halting))
        return True

    def _scan_blocks(self, run: TurnRun, watch: TurnWatch) -> None:
        """bandit over the completed blocks, one scan at a time and at most one every
        ``BANDIT_EVERY_S``: blocks that complete meanwhile go together in the next (a trip to
        the scan process per block cost the stream more than the scans)."""
        watch.scanning = True

        async def scan() -> None:
            try:
                while watch.pending:
                    wait = watch.scan_wait(time.monotonic())
                    if wait:
                        await asyncio.sleep(wait)
                        if not (run.live and self._running() is run):
                            break  # ended meanwhile: the turn's full scan reads its files
                    batch, watch.pending = watch.pending, []
                    watch.scanned_at = time.monotonic()
                    fresh = watch.fresh(await bandit_in_process(batch))
                    if run.live and self._running() is run:
                        self._watch(run, fresh)
                    else:  # the turn ended meanwhile: flagged, as the full scan would
                        self._flag(run, fresh)
            finally:
                watch.scanning = False

        task = asyncio.create_task(scan())
        self._scans.add(task)
        task.add_done_callback(self._scans.discard)

    def _flag(self, run: TurnRun, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self._publish(finding_event(run.id, finding, "flagged"))

    # -- a halt, the end of a turn -----------------------------------------------------------

    def correction(self, run: TurnRun, findings: tuple[Finding, ...]) -> Command | None:
        """The steer by the watchdog that re-prompts the model with the findings of a halt
        (published as halted); None when ``run``'s chain has had its ``max_corrections``: the
        findings are flagged, and the Pilot stops the turn (``given_up``)."""
        assert run.watch is not None
        if run.corrections >= run.watch.rules.max_corrections:
            self._flag(run, findings)
            return None
        correction = Command(
            kind=CommandKind.STEER, session=run.command.session, user_id=run.command.user_id, author=CORRECTOR,
            text=correction_prompt(findings), turn=new_turn_id(), correction=True,
        )
        for finding in findings:
            self._publish(finding_event(run.id, finding, "halted", correction=correction.turn))
        return correction

    def answer_complete(self, run: TurnRun, finished: list[EditEvent]) -> None:
        """``run``'s answer is complete (``finished``: its last block statuses): the last
        statement of the answer is read (it halts nothing now)."""
        if run.watch is not None:
            self._flag(run, run.watch.feed(run.editor.take_code(), finished))

    def chain_ended(self, run: TurnRun) -> None:
        """``run`` ended its steering chain: the room rescans and runs the full scan of the
        files the chain changed (flagging what its stream did not report)."""
        reported = run.watch.reported if run.watch is not None else frozenset()
        self._room.turn_ended(run.id, run.touched, reported)

    def close(self) -> None:
        for scan in list(self._scans):
            scan.cancel()


def given_up(run: TurnRun, findings: tuple[Finding, ...]) -> str:
    """The error of a turn stopped because its model wrote a halting flaw again after its
    chain's corrections."""
    first = findings[0]
    return (
        f"the model wrote the same kind of flaw again ({first.rule}, {first.path} line {first.line}) "
        f"after {run.corrections} corrections; it was stopped"
    )
