"""One `apply_patch` tool call, applied to the turn's document while it streams.

`TurnEditor.open_patch(call_id)` makes one for a V4A patch (the custom tool's input, a
function tool's `input` argument); `open_patch(call_id, PatchOperation(type, path))` for the
built-in tool's single operation, whose diff has no envelope. Then `feed(chunk)` as the input
arrives, `finish()` when it is complete, and `result` is the call's answer. Every change goes
through the turn's `BlockRunner` (runner.py): the turn's undo history, ledger, block numbers
and `edit.status` events, so `TurnEditor.cancel()` rolls back the hunk in flight and
`TurnEditor.revert()` takes back every call of the turn.

Calls are applied one at a time (finish or cancel one before feeding the next): a rollback
undoes the newest items of the turn's undo stack, which must be its own block's.

One block per hunk, per added file, per delete and per move. A hunk that cannot be located
fails and the file's later hunks still apply; an operation refused by the workspace's rules
(bad path, missing file, too many files, file too large, a move onto a taken path) leaves
nothing of itself behind: its earlier blocks are rolled back with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import spark_ide.editing.v4a as v4a
from spark_ide.editing.block import BlockFailure, EditBlock
from spark_ide.editing.hunk import FileCursor, FileOpBlock, HunkBlock
from spark_ide.editing.limits import FileLimits
from spark_ide.editing.parse_events import BlockKind, BlockOpened
from spark_ide.editing.patch_result import INTERRUPTED, BlockOutcome, OperationOutcome, PatchResult
from spark_ide.editing.reasons import EditorClosedError, FailureReason, RollbackReason
from spark_ide.editing.stale import changed_under
from spark_ide.editing.status import BlockOperation, EditEvent, EditState

if TYPE_CHECKING:
    from spark_ide.editing.runner import BlockRunner

# The built-in tool's operation types.
BUILTIN_KINDS = {
    "create_file": v4a.PatchOpKind.ADD, "update_file": v4a.PatchOpKind.UPDATE, "delete_file": v4a.PatchOpKind.DELETE,
}
# Failures that refuse a whole operation (nothing of it stays), not just one hunk.
REFUSALS = frozenset(
    {
        FailureReason.MISSING_PATH, FailureReason.BAD_PATH, FailureReason.FILE_NOT_FOUND,
        FailureReason.TOO_MANY_FILES, FailureReason.FILE_TOO_LARGE, FailureReason.PATH_CONFLICT,
    }
)


@dataclass(frozen=True, slots=True)
class PatchOperation:
    """The built-in `apply_patch` tool's operation: `type` (create_file, update_file,
    delete_file) and `path`, known when its item is added."""

    type: str
    path: str


@dataclass
class _Operation:
    kind: v4a.PatchOpKind
    path: str  # where its hunks go (the target after a move)
    source: str
    target: str | None = None
    blocks: list[EditBlock] = field(default_factory=list)
    hunks: int = 0
    refused: bool = False
    problem: str | None = None
    cursor: FileCursor = field(default_factory=FileCursor)
    unfollow: Callable[[], None] | None = None

    def outcome(self, stale: dict[int, str]) -> OperationOutcome:
        blocks = tuple(
            BlockOutcome.of(block.final or block.status(), stale.get(block.index)) for block in self.blocks
        )
        return OperationOutcome(self.kind, self.source, self.target, blocks, self.problem)


class PatchCall:
    """See the module docstring. Made by `TurnEditor.open_patch`."""

    def __init__(
        self,
        runner: BlockRunner,
        call_id: str,
        operation: PatchOperation | None,
        *,
        limits: FileLimits,
        on_end: Callable[[PatchCall], None],
        refusal: str | None = None,
    ) -> None:
        self.call_id = call_id
        self._runner = runner
        self._limits = limits
        self._on_end = on_end
        self._ops: list[_Operation] = []
        self._op: _Operation | None = None
        self._block: EditBlock | None = None  # the block of this call in flight
        self._problems: list[str] = [refusal] if refusal else []
        self._interrupted = False
        self._result: PatchResult | None = None
        self._stale: dict[int, str] = {}  # block index -> what changed under a hunk that found nothing
        headless = None
        if operation is not None and not self._problems:
            kind = BUILTIN_KINDS.get(operation.type)
            if kind is None:
                known = ", ".join(BUILTIN_KINDS)
                self._problems.append(f"unknown operation type {operation.type!r} (known: {known})")
            else:
                headless = (kind, operation.path)
        self._refused = bool(self._problems)  # nothing of the input is applied
        # A built-in operation opens with the first feed (a delete is done by finish).
        self._parser = v4a.V4AParser(headless=headless)

    @property
    def result(self) -> PatchResult:
        """The call's outcome; only once it ended (`finish`, `cancel`, or the turn's end)."""
        if self._result is None:
            raise EditorClosedError(f"apply_patch call {self.call_id} has not ended yet")
        return self._result

    @property
    def ended(self) -> bool:
        return self._result is not None

    def feed(self, chunk: str) -> list[EditEvent]:
        """Parse and apply a piece of the call's input; returns what changed."""
        self._ensure_open()
        out = self._out_of(self._parser.feed(chunk))
        block = self._block
        if block is not None and block.final is None:
            self._try(block, block.check_size)
        self._runner._report_progress()
        return out

    def finish(self) -> list[EditEvent]:
        """The input is complete: the last hunk and operation close; `result` is ready."""
        self._ensure_open()
        out = self._out_of(self._parser.finish())
        if not self._ops and not self._problems:  # (a refused call has its problem)
            self._problems.append("the patch has no operation ('*** Add File:', '*** Update File:', ...)")
        self._end()
        return out

    def cancel(self) -> list[EditEvent]:
        """Stop applying (steer, stop): the block in flight rolls back, applied ones stay; the
        result says the call was interrupted by the user."""
        self._ensure_open()
        self._runner._out = []
        self.cut_off()
        return self._runner._out

    def cut_off(self) -> None:
        """`cancel` into the runner's current events (the turn ending around the call)."""
        block = self._block
        if block is not None and block.final is None:
            self._runner._roll_back(block)
            self._runner._settle(block, EditState.ROLLED_BACK, reason=RollbackReason.CANCELLED)
        self._interrupted = True
        self._problems.append(f"the call was {INTERRUPTED}")
        self._end()

    def _ensure_open(self) -> None:
        if self._result is not None:
            raise EditorClosedError(f"apply_patch call {self.call_id} already ended")

    def _end(self) -> None:
        self._close_operation()
        self._result = PatchResult(
            self.call_id, tuple(op.outcome(self._stale) for op in self._ops), tuple(self._problems), self._interrupted
        )
        self._on_end(self)

    # -- routing the parser's events --

    def _out_of(self, events: list[v4a.PatchEvent]) -> list[EditEvent]:
        self._runner._out = []
        for event in events:
            self._route(event)
        return self._runner._out

    def _route(self, event: v4a.PatchEvent) -> None:
        if self._refused:
            return
        if isinstance(event, v4a.OperationOpened):
            self._open_operation(event.kind, event.path)
            return
        if isinstance(event, v4a.PatchBroken):
            self._broken(event.message)
            return
        op = self._op
        if op is None or op.refused:
            return
        if isinstance(event, v4a.OperationClosed):
            self._close_operation()
        elif isinstance(event, v4a.MovedTo):
            self._move(op, event.path)
        elif isinstance(event, v4a.HunkOpened):
            self._open_hunk(op)
        else:
            self._hunk_event(op, event)

    def _hunk_event(self, op: _Operation, event: v4a.PatchEvent) -> None:
        block = self._block
        if block is None or block.final is not None:
            return
        if not isinstance(block, HunkBlock):
            if isinstance(event, v4a.AddedText):  # an added file's line
                block.take_new_text(event.text)
                self._runner._note_code(block, event.text)
            return
        if isinstance(event, v4a.AddedText):
            self._try(block, lambda: block.take_added(event.text))
        elif isinstance(event, v4a.AnchorLine):
            block.take_anchor(event.text)
        elif isinstance(event, v4a.OldLine):
            self._try(block, lambda: self._old_line(block, event.text, event.removed))
        elif isinstance(event, v4a.HunkClosed):
            self._try(block, lambda: self._close_hunk(op, block, event.end_of_file))
        for text in block.take_written():  # what reached the file (the watchdog reads it)
            self._runner._note_code(block, text)

    def _old_line(self, block: HunkBlock, text: str, removed: bool) -> None:
        if not block.take_old(text, removed):
            self._runner._roll_back(block)  # streamed where the hunk turns out not to go
            block.wait()
            self._runner._emit(block.status())

    def _close_hunk(self, op: _Operation, block: HunkBlock, end_of_file: bool) -> None:
        if block.misplaced(end_of_file):
            self._runner._roll_back(block)
            block.wait()
        self._runner._emit(block.complete_hunk(end_of_file))
        cursor = block.cursor_after()
        if cursor is not None:
            op.cursor.position = cursor

    # -- operations --

    def _open_operation(self, kind: v4a.PatchOpKind, path: str) -> None:
        self._close_operation()
        op = _Operation(kind, path, path)
        self._ops.append(op)
        self._op = op
        runner = self._runner
        if kind is v4a.PatchOpKind.ADD:
            block = EditBlock(turn=runner.turn_id, opened=BlockOpened(runner._next_index(), BlockKind.WRITE, path),
                              limits=self._limits)
            block.call, block.operation = self.call_id, BlockOperation.ADD
            self._start(op, block)
        elif kind is v4a.PatchOpKind.DELETE:
            self._file_operation(op, None)

    def _move(self, op: _Operation, target: str) -> None:
        if op.blocks:  # a Move to after hunks: V4A puts it right after the Update line
            self._broken(f"'*** Move to: {target}' must come right after '*** Update File: {op.source}'")
            return
        self._file_operation(op, target)
        if not op.refused:
            op.path = op.target = op.blocks[-1].target or target
            self._unfollow(op)

    def _file_operation(self, op: _Operation, target: str | None) -> None:
        runner = self._runner
        block = FileOpBlock(turn=runner.turn_id, index=runner._next_index(), path=op.path, target=target,
                            call=self.call_id, limits=self._limits)
        self._start(op, block, (target,) if target else ())
        if block.final is None:
            runner._emit(block.settle(EditState.APPLIED))

    def _open_hunk(self, op: _Operation) -> None:
        runner = self._runner
        op.hunks += 1
        block = HunkBlock(turn=runner.turn_id, index=runner._next_index(), path=op.path, hunk=op.hunks,
                          call=self.call_id, limits=self._limits, cursor=op.cursor)
        self._start(op, block)
        if block.final is None and op.unfollow is None:
            op.unfollow = runner._follow(block.path, op.cursor.on_delta)

    def _start(self, op: _Operation, block: EditBlock, paths: tuple[str, ...] = ()) -> None:
        op.blocks.append(block)
        self._block = block
        self._runner._start(block, paths)
        final = block.final
        if final is not None and final.reason in REFUSALS:
            self._refuse(op, block, final.reason, final.message)

    def _close_operation(self) -> None:
        op, self._op = self._op, None
        if op is None:
            return
        block = self._block
        if block is not None and block.final is None and op.kind is v4a.PatchOpKind.ADD:
            self._try(block, lambda: self._runner._emit(block.complete()))
        if op.kind is v4a.PatchOpKind.UPDATE and not op.blocks and op.problem is None:
            op.problem = "the update has no hunk (no '@@' and no ' ', '-' or '+' lines)"
        self._unfollow(op)

    def _unfollow(self, op: _Operation) -> None:
        if op.unfollow is not None:
            op.unfollow()
            op.unfollow = None

    # -- failures --

    def _try(self, block: EditBlock, step: Callable[[], None]) -> None:
        """Run a step of ``block``; a `BlockFailure` rolls the block back and fails it (and
        its whole operation, for a refusal)."""
        try:
            step()
        except BlockFailure as failure:
            self._runner._roll_back(block)
            self._runner._settle(block, EditState.FAILED, reason=failure.reason, message=failure.message)
            op = self._op
            if op is not None and failure.reason in REFUSALS:
                self._refuse(op, block, failure.reason, failure.message)
            if failure.reason is FailureReason.NO_MATCH and isinstance(block, HunkBlock):
                self._note_stale(block)

    def _note_stale(self, block: HunkBlock) -> None:
        """A hunk found nothing: when someone else changed its file since the model saw it,
        the call's output says so, with the file's lines now (``stale``)."""
        seen = self._runner.seen_if_changed(block.path)
        now = self._runner._text(block.path)
        if seen is not None and now is not None and seen != now:
            self._stale[block.index] = changed_under(block.path, seen, now, *block.sought)

    def _refuse(self, op: _Operation, failed: EditBlock, reason: str, message: str | None) -> None:
        """Take back the blocks ``op`` applied before ``failed`` (the newest items of the undo
        stack, newest first) and fail them too: nothing of a refused operation stays."""
        op.refused = True
        for block in reversed(op.blocks):
            if block is failed or block.final is None or block.final.state is not EditState.APPLIED:
                continue
            self._runner._roll_back(block)
            why = f"undone with its operation, which was refused: {message or reason}"
            self._runner._settle(block, EditState.FAILED, reason=reason, message=why)
        self._unfollow(op)

    def _broken(self, message: str) -> None:
        """A line the format does not allow: the hunk or file in flight fails; the parser
        skips the rest of its operation."""
        block, op = self._block, self._op
        if block is not None and block.final is None:
            self._runner._roll_back(block)
            self._runner._settle(block, EditState.FAILED, reason=FailureReason.MALFORMED_BLOCK, message=message)
        elif op is not None:
            op.problem = message
        else:
            self._problems.append(message)
        if op is not None:
            self._close_operation()
