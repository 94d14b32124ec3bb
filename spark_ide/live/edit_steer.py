"""Steering by editing (issue 33): a person's edit of the lines the running turn wrote, or is
writing, redirects the model, with no message typed (docs/pairing.md, "Steering by editing").

Detection is the room's: every person's document update reaches it, from any page of any
process (a replica's frames come over the bus to ``Room.receive_yjs``). While a turn runs,
``EditSteering.receiving`` wraps each driver's document frame: the turn's edit engine tells
it, through ``TurnEditor.on_foreign``, every change someone else makes to a file the turn
writes, before the block in flight's anchors move, so the change is compared with the turn's
regions as they were (``BlockRunner.written_regions``: the block in flight's lines, each
applied block's). A change that touches one starts a *steering edit* (``Pending``), and so
does every change near it afterwards, by anyone (two people editing there: one steer with
both their edits, the document's merged text). Changes elsewhere are ordinary typing.

It is committed ``SPARK_EDIT_STEER_IDLE_MS`` after the last change in it, at once on the
page's ``edit_steer.commit`` (Ctrl+Enter; or the person's cursor left its lines), never
after ``edit_steer.cancel`` (Esc: the edit stays an ordinary one, and that person's edits
do not steer this turn again). At commit the Pilot steers as for any steer (a command of
kind ``EDIT_STEER``), its block in flight kept as the file has it (``EditBlock.cut_short``),
and the re-prompt says what the model had written and what it is now: a small diff of the
region (``region_change``). A small model (``PromptStyle.steer_as_request``) gets its plain
request again, over the files as they are now.

A person's switch (``edit_steer.switch``, on by default) and the course's rule
(``AiPolicy.edit_steer``) turn it off; ``SPARK_EDIT_STEER_IDLE_MS`` 0 turns it off for the
server. Cost to typing: nothing while no turn runs; while one does, one read of each file
the turn writes per driver's document frame (the text the first steering change started
from), until a steering edit is pending.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pycrdt import Doc, Text, YMessageType, YSyncMessageType

from spark_ide.editing.files import workspace_files
from spark_ide.editing.runner import shift_through

from .events import DRIVER_ROLES, EditSteerState, ErrorEvent, Event, TurnEditSteered
from .policy import AiPolicy
from .prompting import as_data, lines_named, path_attribute
from .seen import file_diff
from .transport import Connection
from .turns import Command, CommandKind, TurnRun

EDIT_STEER_KINDS = frozenset({
    CommandKind.EDIT_STEER_COMMIT, CommandKind.EDIT_STEER_CANCEL, CommandKind.EDIT_STEER_SWITCH,
})
WRITES = (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE)
CONTEXT_LINES = 2  # unchanged lines around the region in its diff
DIFF_CHARS = 3_000  # of the region's diff, at most

Delta = list[dict[str, Any]]
Span = tuple[int, int]  # byte positions in a file: [start, end)


@dataclass(frozen=True, slots=True)
class RegionChange:
    """What people made of a region: its lines in the file now (1-based, inclusive) and the
    unified diff from what the model had written."""

    lines: tuple[int, int]
    diff: str


@dataclass(slots=True)
class Pending:
    """A steering edit not committed yet."""

    turn: str
    path: str
    before: str  # the file just before its first change
    span: Span  # the bytes people changed, as the file is now
    people: dict[int | None, Connection] = field(default_factory=dict)  # by user id, in order
    timer: asyncio.TimerHandle | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(conn.username for conn in self.people.values()))


def removed_and_added(delta: Delta) -> tuple[list[Span], list[Span]]:
    """A change's spans: what it removed or inserted at, in the positions before it; and
    what it inserted or removed at, in the positions after it."""
    old: list[Span] = []
    new: list[Span] = []
    at_old = at_new = 0
    for op in delta:
        if "retain" in op:
            at_old += op["retain"]
            at_new += op["retain"]
        elif "insert" in op:
            inserted = op["insert"]
            size = len(inserted.encode()) if isinstance(inserted, str) else 1
            old.append((at_old, at_old))
            new.append((at_new, at_new + size))
            at_new += size
        elif "delete" in op:
            old.append((at_old, at_old + op["delete"]))
            new.append((at_new, at_new))
            at_old += op["delete"]
    return old, new


def touches(spans: list[Span], start: int, end: int, *, open_end: bool) -> bool:
    """Whether a change's ``spans`` touch the region ``[start, end)`` (``open_end``: a change
    right at its end counts, where the model writes its next line)."""
    for low, high in spans:
        if low == high:
            if start <= low < end or (open_end and low == end):
                return True
        elif low < end and high > start:
            return True
    return False


def line_of(text: str, position: int) -> int:
    """The 0-based line of byte ``position`` of ``text``."""
    if not text.isascii():
        return text.encode()[:position].count(b"\n")
    return text.count("\n", 0, position)


def region_change(before: str, after: str, lines: tuple[int, int]) -> RegionChange | None:
    """What changed between ``before`` and ``after`` at ``lines`` (0-based, inclusive, of
    ``after``): the changed lines there as one region, with a diff; None when nothing did
    (a change typed and taken back)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    low, high = lines
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    kept = [
        (i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal" and (j1 <= high and j2 > low if j2 > j1 else low <= j1 <= high + 1)
    ]
    if not kept:
        return None
    i_low, i_high = min(op[0] for op in kept), max(op[1] for op in kept)
    j_low, j_high = min(op[2] for op in kept), max(op[3] for op in kept)
    above = min(CONTEXT_LINES, i_low, j_low)
    below = min(CONTEXT_LINES, len(old) - i_high, len(new) - j_high)
    diff, _ = file_diff(
        "".join(old[i_low - above : i_high + below]), "".join(new[j_low - above : j_high + below]), limit=DIFF_CHARS,
    )
    return RegionChange((j_low + 1, max(j_high, j_low + 1)), diff)


def steer_text(path: str, change: RegionChange, names: str) -> str:
    """The direction a steer by editing gives the model (after its interrupted answer)."""
    where = lines_named(*change.lines)
    return (
        f"{names} edited what you were writing in {path} ({where} now); their version is in the file now. "
        f"What you had written, and what they made of it:\n"
        f'<diff path="{path_attribute(path)}">\n{as_data(change.diff)}</diff>\n'
        "Continue the same task from there, consistent with their change: keep it, do not write those lines again."
    )


class EditSteering:
    """The room's steering edits. ``running``: the running turn and the course's policy
    (``Pilot.running``); ``submit``: a command for the Pilot; ``announce``: an event for
    everyone now; ``tell``: one for a connection; ``document``: the room's document as it
    is now; ``idle_ms`` (0: off); ``plain``: the model gets its plain request again
    (``PromptStyle.steer_as_request``)."""

    def __init__(
        self, *, running: Callable[[], tuple[TurnRun, AiPolicy] | None], submit: Callable[[Command], None],
        announce: Callable[[Event], None], tell: Callable[[Connection, Event], None],
        document: Callable[[], Doc[Any]], idle_ms: int, plain: bool,
    ) -> None:
        self._running = running
        self._submit = submit
        self._announce = announce
        self._tell = tell
        self._document = document
        self._idle_s = idle_ms / 1000
        self._plain = plain
        self._loop = asyncio.get_running_loop()
        self._off: set[int | None] = set()  # people whose switch is off
        self._dismissed: tuple[str, set[int | None]] = ("", set())  # a turn, and who pressed Esc in it
        self.pending: Pending | None = None
        # While a driver's frame is applied: who sent it, the turn, the files it started from.
        self._conn: Connection | None = None
        self._run: TurnRun | None = None
        self._before: dict[str, str] = {}
        self._steered = False  # the frame made a steering change

    # -- a person's document frame -----------------------------------------------------------

    def receiving(
        self, conn: Connection, message: bytes, receive: Callable[[Connection, bytes], ErrorEvent | None],
    ) -> ErrorEvent | None:
        """Apply ``conn``'s frame (``receive``), hearing what it changes in the running turn's
        lines."""
        run = self._steerable(conn, message)
        if run is None:
            return receive(conn, message)
        if run.editor.on_foreign is None:
            run.editor.on_foreign = self._heard
        pending = self.pending
        if pending is not None and pending.turn != run.id:
            self._end(pending, "dropped")
            pending = None
        if pending is None:  # the text a first steering change starts from
            self._before.update(run.editor.written_texts())
        self._conn, self._run, self._steered = conn, run, False
        try:
            return receive(conn, message)
        finally:
            self._conn, self._run = None, None
            self._before.clear()
            if self._steered and (pending := self.pending) is not None:  # (the document is free again)
                if pending.timer is not None:
                    pending.timer.cancel()
                pending.timer = self._loop.call_later(self._idle_s, self.commit, "idle")
                self._announce(self._state(pending, "pending"))

    def _steerable(self, conn: Connection, message: bytes) -> TurnRun | None:
        """The running turn, when ``message`` is a document change of a driver whose edits may
        steer it; else None."""
        if not self._idle_s or len(message) < 2 or message[0] != YMessageType.SYNC or message[1] not in WRITES:
            return None
        if conn.role not in DRIVER_ROLES or conn.user_id in self._off:
            return None
        running = self._running()
        if running is None or not running[1].edit_steer:
            return None
        run = running[0]
        turn, dismissed = self._dismissed
        if turn == run.id and conn.user_id in dismissed:
            return None
        return run

    def _heard(self, path: str, delta: Delta) -> None:
        """A change of ``path`` by someone else than the turn (``TurnEditor.on_foreign``), heard
        while the document commits it: nothing here reads the document."""
        conn, run, pending = self._conn, self._run, self.pending
        if pending is not None and pending.path != path:
            return  # an ordinary edit: one steering edit at a time, in one file
        if conn is None or run is None:  # not a steering person's frame (an HTTP write, a switch off)
            if pending is not None:
                pending.span = (shift_through(pending.span[0], delta), shift_through(pending.span[1], delta))
            return
        old, new = removed_and_added(delta)
        regions = [r for r in run.editor.written_regions() if r[0] == path]
        steers = any(touches(old, start, end, open_end=flight) for _, start, end, flight in regions)
        if pending is None:
            before = self._before.get(path)
            if not steers or before is None:
                return
            pending = Pending(run.id, path, before, (min(s for s, _ in new), max(e for _, e in new)))
            self.pending = pending
        else:
            near = touches(old, pending.span[0], pending.span[1] + 1, open_end=True)
            start, end = (shift_through(position, delta) for position in pending.span)
            if not (steers or near):
                pending.span = (start, end)  # an ordinary edit beside it (its lines may move)
                return
            pending.span = (min(start, *(s for s, _ in new)), max(end, *(e for _, e in new)))
        pending.people.setdefault(conn.user_id, conn)
        self._steered = True

    # -- the page's messages -----------------------------------------------------------------

    def command(self, conn: Connection, kind: CommandKind, **fields: Any) -> None:
        """``edit_steer.commit`` (``text``: why), ``.cancel`` or ``.switch`` (``on``) from ``conn``."""
        pending = self.pending
        if kind is CommandKind.EDIT_STEER_SWITCH:
            if fields.get("on", False):
                self._off.discard(conn.user_id)
                return
            self._off.add(conn.user_id)
        mine = pending is not None and conn.user_id in pending.people
        if kind is CommandKind.EDIT_STEER_COMMIT:
            if mine:
                self.commit(str(fields.get("text") or "key"))
        elif mine and pending is not None:  # cancel, or the switch turned off: an ordinary edit
            turn, dismissed = self._dismissed
            self._dismissed = (pending.turn, (dismissed if turn == pending.turn else set()) | {conn.user_id})
            self._end(pending, "cancelled")

    def commit(self, why: str) -> None:
        """Steer with the pending edit now (``why``: idle, key, left)."""
        pending = self.pending
        if pending is None:
            return
        running = self._running()
        run = running[0] if running is not None else None
        files = workspace_files(self._document())
        text = files.get(pending.path)
        if run is None or run.id != pending.turn or not isinstance(text, Text):
            self._end(pending, "dropped")
            return
        now = str(text)
        change = region_change(pending.before, now, (line_of(now, pending.span[0]), line_of(now, pending.span[1])))
        if change is None:
            self._end(pending, "dropped")
            return
        self._end(pending, "committed", change.lines)
        names = ", ".join(pending.names)
        first = next(iter(pending.people.values()))
        note = TurnEditSteered(turn=run.id, path=pending.path, lines=change.lines, by=names, diff=change.diff, why=why)
        self._submit(Command(
            kind=CommandKind.EDIT_STEER, session=first.session, user_id=first.user_id, author=names,
            text=run.origin.text if self._plain else steer_text(pending.path, change, names), note=note,
            reply=lambda error: self._tell(first, error),
        ))

    def close(self) -> None:
        if self.pending is not None and self.pending.timer is not None:
            self.pending.timer.cancel()
        self.pending = None

    # -- telling the pages -------------------------------------------------------------------

    def _end(self, pending: Pending, state: str, lines: tuple[int, int] | None = None) -> None:
        if pending.timer is not None:
            pending.timer.cancel()
        if self.pending is pending:
            self.pending = None
        self._announce(self._state(pending, state, lines))

    def _state(self, pending: Pending, state: str, lines: tuple[int, int] | None = None) -> EditSteerState:
        if lines is None:
            text = workspace_files(self._document()).get(pending.path)
            now = str(text) if isinstance(text, Text) else ""
            lines = (line_of(now, pending.span[0]) + 1, line_of(now, pending.span[1]) + 1)
        return EditSteerState(
            turn=pending.turn, state=state, path=pending.path, lines=lines, by=pending.names,
            idle_ms=round(self._idle_s * 1000),
        )

