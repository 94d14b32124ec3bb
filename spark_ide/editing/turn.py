"""The edit engine for one turn: model text in, document changes and status events out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pycrdt import Doc

from spark_ide.editing.block import EditBlock, block_origin
from spark_ide.editing.document import set_file_text
from spark_ide.editing.files import FILES_KEY, workspace_files
from spark_ide.editing.ledger import Outcome
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
from spark_ide.editing.patch import PatchCall, PatchOperation
from spark_ide.editing.reasons import EditorClosedError, RevertUnavailable, ReviewRefused, RollbackReason
from spark_ide.editing.review import undo_landed
from spark_ide.editing.runner import BlockRunner, SeenText
from spark_ide.editing.status import BlockStatus, EditEvent, EditState, ProseEvent
from spark_ide.editing.threeway import take_back

Decision = Literal["kept", "undone"]


class TurnEditor(BlockRunner):
    """Applies one turn's edit blocks to a workspace document while the model streams.

    Every change is a transaction with origin `ai:<turn>:<block>`; one origin-scoped
    undo manager per turn (capturing each transaction separately) can take back the block
    in flight on `cancel()` and the whole turn on `revert()`, leaving other people's
    changes alone. `restore()` undoes a revert: the turn's change goes back into each file as
    text (the revert's change taken back out, `threeway.take_back`), and the turn reverts as
    text from then on.

    `limits` are the workspace's (paths, file count, file size): a block that would break
    one fails with a named reason and leaves nothing behind.

    `explain_only` (a course's AI policy, live.policy): nothing is applied; the model's whole
    text, its blocks and fences included, comes out as prose (shown, never applied), and
    `withheld` counts the blocks it held.

    `seen(path)`: the text the model last saw of a file (``live.seen``; None: not known). A
    patch hunk that finds nothing in a file someone else changed since then says so in the
    call's output, with the file's lines as they are now (``stale``).

    The undo manager keeps the text the turn deletes (pycrdt frees deleted text only in the
    transaction that deletes it), for as long as the document lives. A room that compacts its
    document (a fresh copy without the deleted text) calls `detach`: from then on `revert`
    takes the turn's change back out of each file as text (`threeway.take_back`), which needs
    the lines the turn changed left alone since, and nobody else's edits in the file while the
    turn wrote it (those could not be told apart from the turn's own).
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
        seen: SeenText | None = None,
    ) -> None:
        super().__init__(doc, turn_id, files_key=files_key, seen=seen)
        self.explain_only = explain_only
        self.withheld = 0  # explain-only: edit blocks (and fences taken as files) shown as text
        self._limits = limits
        self._fence_path = fence_path
        self._parser = EditStreamParser(fence_path=fence_path)
        self._after: dict[str, str | None] = {}  # the files the turn touched, when it ended
        self._closed = False
        self._reverted = False
        # What the last revert did: each file the turn touched, before and after it (restore).
        self._revert_texts: dict[str, tuple[str | None, str | None]] = {}
        self._calls: list[PatchCall] = []  # the turn's apply_patch calls not ended yet
        self._reviews: dict[int, tuple[Decision, str]] = {}  # block -> kept or undone, and by whom
        self._text_only = False  # a block was undone as text: the turn reverts as text
        self._notes: list[str] = []  # blocks undone that the model has not been told of yet

    def open_patch(self, call_id: str, operation: PatchOperation | None = None) -> PatchCall:
        """Start applying one `apply_patch` tool call while it streams (patch.py): a V4A patch
        in its envelope (the custom or function tool), or, given ``operation``, the built-in
        tool's one file operation whose diff has no envelope. Its blocks join this turn's
        (one undo history, ledger and numbering); `cancel` and `revert` take them too. An
        explain-only turn applies nothing: the call's result says so."""
        self._ensure_open()
        refusal = "editing is off for this course: nothing was applied" if self.explain_only else None
        call = PatchCall(self, call_id, operation, limits=self._limits, on_end=self._calls.remove, refusal=refusal)
        self._calls.append(call)
        return call

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
        self._close()
        return self._out

    def end_text(self) -> list[EditEvent]:
        """The model's text ended for now (a tool call follows, or its response ended with
        calls: the tool loop): what the parser holds back (a last line without its line end,
        which could have begun a block) comes out as prose, and a block of the text left open
        fails; text after this is read afresh."""
        self._ensure_open()
        self._out = []
        if self.explain_only:
            self._withhold(self._parser.finish())
        else:
            for event in self._parser.finish():
                self._route(event)
        self._parser = EditStreamParser(fence_path=self._fence_path)
        return self._out

    def cancel(self, *, keep_in_flight: bool = False) -> list[EditEvent]:
        """Steer or stop: roll back the block in flight; completed blocks stay. ``keep_in_flight``
        (a steer by editing, ``live.edit_steer``): the block in flight stays as it is now, a
        person's changes in its lines included (``EditBlock.cut_short``), when it can."""
        self._ensure_open()
        self._out = []
        block = self._block
        if block is not None and block.final is None:
            kept = block.cut_short() if keep_in_flight else None
            if kept is not None:
                self._emit(kept)
            else:
                self._roll_back(block)
                self._settle(block, EditState.ROLLED_BACK, reason=RollbackReason.CANCELLED)
        self._close()
        return self._out

    def _close(self) -> None:
        for call in list(self._calls):  # a call the turn's end cut off: answered as interrupted
            call.cut_off()
        self._closed = True
        self._unwatch()
        self._after = {path: self._text(path) for path in self._before}

    def detach(self, doc: Doc[Any]) -> None:
        """The room replaced its document by ``doc``, a compacted copy (the same files without
        the deleted text): the undo history goes; a later `revert` works on text. Only for a
        turn that has ended."""
        if not self._closed:
            raise EditorClosedError(f"turn {self.turn_id} is still running: its document cannot change")
        self._undo = None
        self._landed.clear()  # their undo managers are of the old document
        self._block = None  # the last block holds the old document's text (and so the document)
        self._doc = doc
        self._files = workspace_files(doc, self._files_key)

    @property
    def reverted(self) -> bool:
        return self._reverted

    def revert(self) -> list[EditEvent]:
        """Undo the whole turn (cancelling it first if it is still streaming)."""
        events = [] if self._closed else self.cancel()
        if self._reverted:
            return events
        before = {path: self._text(path) for path in self._before}
        if self._undo is None or self._text_only:
            self._take_back_as_text()  # raises RevertUnavailable before changing anything
        else:
            undo = self._undo  # the turn has ended: nothing watches its files any more
            for _ in range(len(undo.undo_stack)):
                undo.undo()
            for path, origin in self._created.items():
                self._remove_if_empty(path, origin)
        self._reverted = True
        self._landed.clear()  # its blocks are out of the files now
        self._revert_texts = {path: (text, self._text(path)) for path, text in before.items()}
        for entry in self._ledger.changed():
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

    def restore(self) -> list[EditEvent]:
        """Undo the last `revert()`: the turn's change goes back into each file, as text (the
        revert's change taken back out of the file as it is now), and its blocks are as they
        were. Raises `RevertUnavailable`, changing nothing, when the turn is not reverted, when
        a file it brings back was deleted since, or when the lines it brings back (or those
        beside them) were edited since. From then on the turn reverts as text."""
        if not self._reverted:
            raise RevertUnavailable(f"turn {self.turn_id} is not reverted: there is nothing to restore")
        plans: dict[str, str | None] = {}
        for path, (before, after) in self._revert_texts.items():
            if before == after:
                continue
            now = self._text(path)
            if now is None and after is not None:
                raise RevertUnavailable(f"turn {self.turn_id} cannot be restored: {path} was deleted since")
            taken = take_back(before or "", after or "", now or "")
            if taken is None:
                raise RevertUnavailable(
                    f"turn {self.turn_id} cannot be restored: the lines its revert changed in {path} were edited since"
                )
            plans[path] = None if before is None and taken == "" else taken
        for path, text in plans.items():
            set_file_text(self._doc, path, text, origin=f"ai:{self.turn_id}:restore")
        # The undo history no longer describes the files (its turn was undone, then put back
        # as text): a later revert works on text, as after `detach`.
        self._undo = None
        self._reverted = False
        self._revert_texts = {}
        events: list[EditEvent] = []
        for entry in self._ledger.with_outcome(Outcome.REVERTED):
            status = self._finals[entry.block]
            self._ledger.record(status)
            events.append(status)
        return events

    # -- hunk review: keep or undo one applied block (review.py) --

    def reviewable(self) -> tuple[int, ...]:
        """The blocks that applied and nobody has kept or undone yet, in order."""
        landed = (Outcome.APPLIED, Outcome.CONFLICTED, Outcome.UNCHANGED)
        return tuple(entry.block for entry in self._ledger.with_outcome(*landed) if entry.block not in self._reviews)

    def review(self, block: int) -> tuple[Decision, str] | None:
        """How ``block`` was reviewed (kept or undone, and by whom); None: not yet."""
        return self._reviews.get(block)

    def keep_block(self, block: int, by: str) -> None:
        """``by`` keeps ``block``: nothing changes in the files; it can no longer be undone on
        its own (the whole turn's revert still takes it). Raises ``ReviewRefused``."""
        self._reviewable(block)
        self._reviews[block] = ("kept", by)
        self._landed.pop(block, None)  # its undo history is no longer needed

    def undo_block(self, block: int, by: str) -> list[EditEvent]:
        """``by`` undoes ``block`` alone, while the turn runs or after: only its own changes
        go, others' typing stays (review.py). Raises ``ReviewRefused``, changing nothing, when
        it is not an applied block waiting for review, or its lines were changed since.
        Returns its new status (``rolled_back``, reason ``undone``)."""
        name = self._reviewable(block)
        final = self._finals[block]
        unchanged = self._ledger.entry(block).outcome is Outcome.UNCHANGED
        landed = self._landed.get(block)
        if landed is None and not unchanged:
            raise ReviewRefused(
                f"{name} cannot be undone on its own (a file's delete or move; or the turn's undo history is "
                "gone: the room's document was compacted, a checkpoint's files were put back, or the turn was "
                "reverted and restored): revert the "
                "whole turn instead"
            )
        if landed is not None:
            self._reviewing = True
            try:
                as_text = undo_landed(landed, self._files, name, f"{block_origin(self.turn_id, block)}:undo")
            finally:
                self._reviewing = False
            del self._landed[block]
            if as_text:
                # Its change went out as text, not through the undo history, which still holds
                # it: a later revert of the turn works on text (as after `detach`).
                self._text_only = True
        self._reviews[block] = ("undone", by)
        self._written.pop(block, None)  # (edit steering: its lines are not the turn's any more)
        status = replace(final, state=EditState.ROLLED_BACK, reason=RollbackReason.UNDONE, message=f"undone by {by}")
        self._ledger.record(status)
        self._notes.append(
            f"{by} undid {name} in turn {self.turn_id}: its change is no longer in "
            f"{final.path}. Do not apply it again unless asked to."
        )
        return [status]

    def take_notes(self) -> list[str]:
        """The blocks undone since the last call, in words for the model (its next request)."""
        notes, self._notes = self._notes, []
        return notes

    def _reviewable(self, block: int) -> str:
        """``block``'s name for messages, if it can be kept or undone; else ``ReviewRefused``."""
        final = self._finals.get(block)
        try:
            entry = self._ledger.entry(block)
        except KeyError:
            raise ReviewRefused(f"turn {self.turn_id} has no block {block}") from None
        name = f"hunk {final.hunk} of {final.path}" if final is not None and final.hunk is not None else (
            f"block {block} ({entry.path or 'no path'})"
        )
        if self._reverted:
            raise ReviewRefused(f"{name} cannot be reviewed: turn {self.turn_id} was reverted")
        review = self._reviews.get(block)
        if review is not None:
            raise ReviewRefused(f"{name} was already {review[0]} by {review[1]}")
        if entry.outcome is Outcome.IN_FLIGHT:
            raise ReviewRefused(f"{name} is still being written: keep or undo it once it has applied")
        if final is None or entry.outcome not in (Outcome.APPLIED, Outcome.CONFLICTED, Outcome.UNCHANGED):
            raise ReviewRefused(f"{name} did not apply ({entry.outcome.value.replace('_', ' ')}): there is nothing "
                                "to keep or undo")
        return name

    def _take_back_as_text(self) -> None:
        """A detached turn's revert: each file it changed, with its change taken back out."""
        plans: dict[str, str | None] = {}
        for path, before in self._before.items():
            after = self._after.get(path)
            if before == after:
                continue
            if path in self._mixed:
                raise RevertUnavailable(
                    f"turn {self.turn_id} cannot be reverted any more: someone else edited {path} while it was "
                    "being written, and the document's undo history has since gone (compacted, or the turn was "
                    "reverted and restored)"
                )
            now = self._text(path)
            if now is None:
                if after is None:  # the turn deleted the file (a patch's Delete or Move)
                    if before is not None:
                        plans[path] = before
                    continue
                raise RevertUnavailable(f"turn {self.turn_id} cannot be reverted: {path} was deleted since")
            taken = take_back(before or "", after or "", now)
            if taken is None:
                raise RevertUnavailable(
                    f"turn {self.turn_id} cannot be reverted: the lines it changed in {path} were edited since"
                )
            plans[path] = None if before is None and taken == "" else taken
        for path, text in plans.items():
            set_file_text(self._doc, path, text, origin=f"ai:{self.turn_id}:revert")

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
                self._note_code(block, event.text)
        elif isinstance(event, ProseText):
            self._report_progress()
            self._out.append(ProseEvent(self.turn_id, event.text))
        elif isinstance(event, BlockOpened):
            self._open(event)
        else:
            self._advance(event)

    def _open(self, event: BlockOpened) -> None:
        # The parser numbers its blocks from 0; the turn numbers all of them (patch calls too).
        opened = replace(event, index=self._next_index())
        self._start(EditBlock(turn=self.turn_id, opened=opened, limits=self._limits))

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

    def _ensure_open(self) -> None:
        if self._closed:
            raise EditorClosedError(f"turn {self.turn_id} already ended")
