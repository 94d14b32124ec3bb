"""The edit engine for one turn: model text in, document changes and status events out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycrdt import Doc, Map, Subscription, Text, UndoManager
from pycrdt._transaction import hash_origin

from spark_ide.editing.block import BlockFailure, EditBlock
from spark_ide.editing.ledger import Ledger, Outcome
from spark_ide.editing.limits import NO_LIMITS, FileLimits
from spark_ide.editing.parse_events import (
    BlockBroken,
    BlockClosed,
    BlockOpened,
    NewTextChunk,
    OldTextChunk,
    OldTextClosed,
    ParseEvent,
    ProseText,
    WriteChunk,
)
from spark_ide.editing.parser import EditStreamParser
from spark_ide.editing.reasons import EditorClosedError, RollbackReason
from spark_ide.editing.status import BlockStatus, CodeText, EditEvent, EditState, ProseEvent

FILES_KEY = "files"


def workspace_files(doc: Doc[Any], key: str = FILES_KEY) -> Map[Text]:
    """The document's path -> Y.Text map (PROTOCOL.md §2), created if missing."""
    files: Map[Text] = doc.get(key, type=Map)
    return files


class TurnEditor:
    """Applies one turn's edit blocks to a workspace document while the model streams.

    Every change is a transaction with origin `ai:<turn>:<block>`; one origin-scoped
    undo manager per turn (capturing each transaction separately) can take back the block
    in flight on `cancel()` and the whole turn on `revert()`, leaving other people's
    changes alone.

    `limits` are the workspace's (paths, file count, file size): a block that would break
    one fails with a named reason and leaves nothing behind.

    `explain_only` (a course's AI policy, live.policy): nothing is applied; the model's whole
    text, its blocks and fences included, comes out as prose (shown, never applied), and
    `withheld` counts the blocks it held.
    """

    def __init__(
        self,
        doc: Doc[Any],
        turn_id: str,
        *,
        files_key: str = FILES_KEY,
        fence_path: str | None = None,
        limits: FileLimits = NO_LIMITS,
        explain_only: bool = False,
    ) -> None:
        self.turn_id = turn_id
        self.explain_only = explain_only
        self.withheld = 0  # explain-only: edit blocks (and fences taken as files) shown as text
        self._limits = limits
        self._doc = doc
        self._files = workspace_files(doc, files_key)
        self._parser = EditStreamParser(fence_path=fence_path)
        self._undo = UndoManager(scopes=[self._files], capture_timeout_millis=0)
        self._ledger = Ledger(turn_id)
        self._block: EditBlock | None = None
        self._out: list[EditEvent] = []
        self._closed = False
        self._reverted = False
        self._watched: dict[str, tuple[Text, Subscription]] = {}
        self._created: dict[str, str] = {}  # path -> origin of the files this turn created
        self._code: list[CodeText] = []  # new text sent to files since the last take_code()

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    def take_code(self) -> list[CodeText]:
        """The new text blocks sent to their files since the last call (the watchdog's feed).
        A block that fails or is rolled back afterwards says so in its final `BlockStatus`."""
        code, self._code = self._code, []
        return code

    def feed(self, chunk: str) -> list[EditEvent]:
        """Parse, locate and apply a chunk of model output; returns what changed."""
        self._ensure_open()
        if self.explain_only:
            self._withhold(self._parser.feed(chunk))
            return [ProseEvent(self.turn_id, chunk)] if chunk else []
        self._out = []
        for event in self._parser.feed(chunk):
            self._route(event)
        block = self._block
        if block is not None and block.final is None:
            self._attempt(block, block.check_size)
        self._report_progress()
        return self._out

    def finish(self) -> list[EditEvent]:
        """The stream ended normally; a block still open becomes `failed`."""
        self._ensure_open()
        self._out = []
        if self.explain_only:
            self._withhold(self._parser.finish())
            self._closed = True
            return []
        for event in self._parser.finish():
            self._route(event)
        self._closed = True
        self._unwatch()
        return self._out

    def cancel(self) -> list[EditEvent]:
        """Steer or stop: roll back the block in flight; completed blocks stay."""
        self._ensure_open()
        self._out = []
        self._closed = True
        self._unwatch()
        block = self._block
        if block is not None and block.final is None:
            self._roll_back(block)
            self._settle(block, EditState.ROLLED_BACK, reason=RollbackReason.CANCELLED)
        return self._out

    def revert(self) -> list[EditEvent]:
        """Undo the whole turn (cancelling it first if it is still streaming)."""
        events = [] if self._closed else self.cancel()
        if self._reverted:
            return events
        self._reverted = True
        for _ in range(len(self._undo.undo_stack)):
            self._undo.undo()
        for path, origin in self._created.items():
            self._remove_if_empty(path, origin)
        for entry in self._ledger.with_outcome(Outcome.APPLIED, Outcome.CONFLICTED):
            status = BlockStatus(
                turn=self.turn_id,
                block=entry.block,
                path=entry.path,
                kind=entry.kind,
                state=EditState.ROLLED_BACK,
                lines=entry.lines,
                reason=RollbackReason.REVERTED,
            )
            self._ledger.record(status)
            events.append(status)
        return events

    def _withhold(self, events: list[ParseEvent]) -> None:
        """Explain-only: the parser only tells which text is a block; nothing is applied."""
        self.withheld += sum(1 for event in events if isinstance(event, BlockOpened))

    # -- routing parser events --

    def _route(self, event: ParseEvent) -> None:
        if isinstance(event, (NewTextChunk, WriteChunk, OldTextChunk)):
            block = self._block
            if block is None or block.final is not None:
                return
            if isinstance(event, OldTextChunk):
                block.take_old_text(event.text)
            else:
                block.take_new_text(event.text)
                line = block.code_line
                if line is not None and event.text:
                    self._code.append(CodeText(block.index, block.path, line, event.text))
        elif isinstance(event, ProseText):
            self._report_progress()
            self._out.append(ProseEvent(self.turn_id, event.text))
        elif isinstance(event, BlockOpened):
            self._open(event)
        else:
            self._advance(event)

    def _open(self, event: BlockOpened) -> None:
        self._report_progress()
        block = EditBlock(turn=self.turn_id, opened=event, limits=self._limits)
        self._block = block
        self._undo.include_origin(block.origin)
        self._attempt(block, lambda: block.open(self._doc, self._files))
        if block.created_file:
            self._created[block.path] = block.file_origin
        if block.final is None:
            self._watch(block)
            self._emit(block.status())

    def _watch(self, block: EditBlock) -> None:
        """Observe the block's file (once per file per turn) so anchors follow others' edits.

        The callback gets pycrdt's raw event and reads its delta only for another origin's
        change. pycrdt's ``observe`` would build the whole ``TextEvent`` for every change,
        our own included, and its delta walks the entire text, deleted items too: a file
        rewritten turn after turn keeps every deleted line as a tombstone, so that cost grew
        with the document's history, every streamed line paying for all the turns before.
        """
        ytext = block.ytext
        if ytext is None or block.path in self._watched:
            return
        path = block.path

        def forward(event: Any) -> None:  # pycrdt's raw TextEvent (untyped)
            current = self._block
            if current is None or current.final is not None or current.path != path:
                return
            if event.transaction.origin() == hash_origin(current.origin):
                return  # the block's own edit: its applier accounts for it
            current.on_delta(event.delta)

        self._watched[path] = (ytext, ytext.integrated.observe(forward))

    def _unwatch(self) -> None:
        for _, subscription in self._watched.values():
            subscription.drop()
        self._watched.clear()

    def _advance(self, event: OldTextClosed | BlockClosed | BlockBroken) -> None:
        block = self._block
        if block is None or block.final is not None:
            return
        if isinstance(event, OldTextClosed):
            hint = event.line_hint
            self._attempt(block, lambda: block.resolve(self._doc, hint))
            if block.final is None:
                self._emit(block.status())
        elif isinstance(event, BlockClosed):
            # The parser closes a block only after </old_text>, so it is streaming now.
            self._attempt(block, lambda: self._emit(block.complete()))
        else:
            self._roll_back(block)
            self._settle(block, EditState.FAILED, reason=event.reason, message=event.message)

    def _attempt(self, block: EditBlock, step: Callable[[], None]) -> None:
        try:
            step()
        except BlockFailure as failure:
            self._roll_back(block)
            self._settle(
                block,
                EditState.FAILED,
                reason=failure.reason,
                message=failure.message,
                candidates=failure.candidates,
            )

    # -- output and undo --

    def _settle(
        self,
        block: EditBlock,
        state: EditState,
        *,
        reason: str,
        message: str | None = None,
        candidates: tuple[int, ...] = (),
    ) -> None:
        status = block.settle(state, reason=reason, message=message, candidates=candidates)
        self._ledger.record(status)
        self._out.append(status)

    def _emit(self, status: BlockStatus) -> None:
        self._ledger.record(status)
        self._out.append(status)

    def _report_progress(self) -> None:
        block = self._block
        if block is not None and block.final is None and block.changed:
            self._out.append(block.status())

    def _roll_back(self, block: EditBlock) -> None:
        """Undo exactly this block's transactions (the newest items on the stack).

        The turn's undo manager captures every transaction as its own item
        (capture_timeout_millis=0) and only tracks this turn's origins, so the block's
        items are the last ones pushed; counting them avoids listing the whole stack.
        """
        block.close()
        for _ in range(block.transactions):
            self._undo.undo()
        if block.created_file:
            self._remove_if_empty(block.path, block.file_origin)

    def _remove_if_empty(self, path: str, origin: str) -> None:
        """Remove a file this turn created, unless someone else's text is left in it."""
        ytext = self._files.get(path)
        if isinstance(ytext, Text) and len(ytext) == 0:
            with self._doc.transaction(origin=origin):
                del self._files[path]

    def _ensure_open(self) -> None:
        if self._closed:
            raise EditorClosedError(f"turn {self.turn_id} already ended")
