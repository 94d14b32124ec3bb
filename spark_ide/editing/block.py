"""One edit block of a turn, from its opening tag to its final state."""

from __future__ import annotations

from typing import Any

from pycrdt import Doc, Map, Text

from spark_ide.editing.applier import LineApplier
from spark_ide.editing.fence import FencePreview
from spark_ide.editing.limits import FileLimits, too_many_files
from spark_ide.editing.lines import split_lines_keeping_ends
from spark_ide.editing.locator import LocateFailure, MatchStrategy, locate
from spark_ide.editing.merge import MergeReport, is_python, plan_merge, separator
from spark_ide.editing.parse_events import BlockKind, BlockOpened
from spark_ide.editing.paths import block_path, path_conflict
from spark_ide.editing.reasons import FailureReason
from spark_ide.editing.snapshot import FileSnapshot
from spark_ide.editing.status import BlockOperation, BlockStatus, EditState, code_head
from spark_ide.editing.tracker import CandidateTracker


def block_origin(turn: str, index: int) -> str:
    """The transaction origin of one block's changes (what undo managers filter on)."""
    return f"ai:{turn}:{index}"


class BlockFailure(Exception):
    """Internal: ends a block as `failed` (never leaves the engine)."""

    def __init__(
        self, reason: FailureReason, candidates: tuple[int, ...] = (), message: str | None = None
    ) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.candidates = candidates
        self.message = message or reason.explanation


class EditBlock:
    """Locates and applies one block; the `TurnEditor` routes parser events to it."""

    def __init__(self, *, turn: str, opened: BlockOpened, limits: FileLimits) -> None:
        self.turn = turn
        self.index = opened.index
        self.kind = kind = opened.kind
        self.path = opened.path or ""
        self.fenced = opened.fenced
        self.language = opened.language
        self.origin = block_origin(turn, self.index)
        self._limits = limits
        self.created_file = False
        self.state = EditState.LOCATING if kind is BlockKind.EDIT else EditState.STREAMING
        self.changed = True  # progress not yet reported
        self.final: BlockStatus | None = None
        self._ytext: Text | None = None
        self._snapshot: FileSnapshot | None = None
        self._tracker: CandidateTracker | None = None
        self._old_parts: list[str] = []
        self._applier: LineApplier | None = None
        self._strategy: MatchStrategy | None = None
        self._doc: Doc[Any] | None = None
        self._own_transactions = 0  # tracked transactions not made by the applier
        self._code: list[str] = []  # a fence's text, merged when it closes
        self._preview: FencePreview | None = None  # a fence streaming after a file's content
        self._fence_line = 0  # the line its preview starts on (where its code is reported)
        self._merge: MergeReport | None = None
        self._merged_lines: tuple[int, int] | None = None
        self.hunk: int | None = None  # set by a V4A hunk (hunk.py)
        self.call: str | None = None  # set by the blocks of an apply_patch call
        self.operation: BlockOperation | None = None  # an apply_patch block's file operation
        self.target: str | None = None  # a move's destination
        self.literal = False  # a V4A hunk drives its applier line by line (applier.py)

    # -- lifecycle, driven by the TurnEditor; a BlockFailure ends the block --

    def open(self, doc: Doc[Any], files: Map[Text]) -> None:
        """Find (or, for <write>, create) the file and read it."""
        path = block_path(self.path or None, max_length=self._limits.max_path_length)
        if isinstance(path, FailureReason):
            raise BlockFailure(path)
        self.path = path
        existing = files.get(self.path)
        if existing is not None and not isinstance(existing, Text):
            raise BlockFailure(FailureReason.BAD_PATH)
        if self.kind is BlockKind.EDIT:
            if existing is None:
                raise BlockFailure(FailureReason.FILE_NOT_FOUND)
            self._ytext = existing
            self._snapshot = FileSnapshot.take(doc, existing)
            self._tracker = CandidateTracker(self._snapshot.text)
            return
        if existing is None:
            if (too_many := too_many_files(self._limits.max_files, len(files))) is not None:
                raise BlockFailure(FailureReason.TOO_MANY_FILES, message=too_many)
            conflict = path_conflict(self.path, set(files.keys()))
            if conflict is not None:
                raise BlockFailure(FailureReason.PATH_CONFLICT, message=conflict)
            # Not under the block's origin, so undo never deletes the file with whatever
            # people typed into it; the TurnEditor removes it only if it ends up empty.
            with doc.transaction(origin=self.file_origin):
                files[self.path] = Text()
            self.created_file = True
            existing = files[self.path]
        self._ytext = existing
        self._doc = doc
        snapshot = FileSnapshot.take(doc, existing)
        if self.fenced and snapshot.text.strip():
            self._start_preview(doc, snapshot)
        else:
            self._start_applier(doc, snapshot, 0, tuple(split_lines_keeping_ends(snapshot.text)), 0)

    def _start_preview(self, doc: Doc[Any], snapshot: FileSnapshot) -> None:
        """A fence into a file with content streams after it, to be merged when it closes
        (`fence.py`: nothing is written until a line is to be shown)."""
        assert self._ytext is not None
        original = snapshot.text
        self._preview = FencePreview(doc, self._ytext, self.origin, original, is_python(self.path, self.language))
        self._fence_line = (original + separator(original)).count("\n") + 1
        self.state = EditState.STREAMING
        self.changed = True

    @property
    def file_origin(self) -> str:
        """Origin of creating and removing the block's file (not tracked by undo)."""
        return self.origin + ":file"

    @property
    def transactions(self) -> int:
        """How many tracked transactions (so undo-stack items) this block made."""
        applier = self._applier.transactions if self._applier is not None else 0
        preview = self._preview.transactions if self._preview is not None else 0
        return applier + preview + self._own_transactions

    def take_old_text(self, text: str) -> None:
        self._old_parts.append(text)
        if self._tracker is not None and self._tracker.feed(text):
            self.changed = True

    def resolve(self, doc: Doc[Any], line_hint: int | None) -> None:
        """`</old_text>`: decide where the block applies and get ready to stream."""
        assert self._ytext is not None and self._snapshot is not None
        snapshot = self._snapshot.refreshed(doc, self._ytext)
        self._tracker = None
        found = locate(snapshot.text, "".join(self._old_parts), line_hint)
        self._old_parts = []
        if isinstance(found, LocateFailure):
            raise BlockFailure(found.reason, found.candidates)
        self._strategy = found.strategy
        self._start_applier(doc, snapshot, found.first_line, found.lines, found.offset)

    @property
    def code_line(self) -> int | None:
        """The file line (1-based) the block's new text starts on; None before it streams."""
        if self._preview is not None:
            return self._fence_line
        return self._applier.first_line + 1 if self._applier is not None else None

    def take_new_text(self, text: str) -> None:
        preview = self._preview
        if preview is not None:
            preview.feed(text)
            self._applier = preview.applier  # from its first line shown
            self.changed = True
            self._code.append(text)
        elif self._applier is not None:
            self._applier.feed(text)
            self.changed = True
            if self.fenced:
                self._code.append(text)

    def check_size(self) -> None:
        """Fail the block once its file must end up over the size limit.

        While the block streams, the old lines it has not reached yet may still be
        deleted, so only what is certain to stay counts; of a fence's preview that is only
        the code (the merge may replace all the rest).
        """
        limit = self._limits.max_file_bytes
        if limit is None or self._applier is None or self._ytext is None:
            return  # (a preview with nothing shown yet adds nothing)
        if self._preview is not None and self._merge is None:
            start, end = self._applier.region
            certain = end - start  # the code shown (held code replaces what the file has)
        else:
            certain = len(self._ytext) - self._applier.pending_bytes
        if certain > limit:
            message = f"{self.path} would be larger than {limit} bytes"
            raise BlockFailure(FailureReason.FILE_TOO_LARGE, message=message)

    def complete(self) -> BlockStatus:
        """The block's text is all there: write its last line, then check the limits."""
        if self._preview is not None:
            self._preview.close()
            conflicts = self._applier.conflicts if self._applier is not None else ()
        else:
            assert self._applier is not None
            conflicts = self._applier.finish()
        if self.fenced:
            conflicts = tuple(sorted({*conflicts, *self._merge_fence()}))
        self.check_size()
        return self.settle(EditState.APPLIED, conflicts=conflicts)

    def _merge_fence(self) -> tuple[int, ...]:
        """A closed fence: merge its preview into the file, or describe what the empty file got.
        Returns the lines kept because a person changed them."""
        code = "".join(self._code)
        self._code = [code]  # joined once: settle() reads it again for the status
        preview = self._preview
        if preview is None:
            self._merge = plan_merge("", code, python=is_python(self.path, self.language)).report
            return ()
        result = preview.merge(code)
        self._merge = result.report
        self._merged_lines = result.lines
        return result.conflicts

    def settle(
        self,
        state: EditState,
        *,
        reason: str | None = None,
        message: str | None = None,
        candidates: tuple[int, ...] = (),
        conflicts: tuple[int, ...] = (),
    ) -> BlockStatus:
        """Enter a final state; the block ignores everything after this. A fence's final
        status carries the code the model wrote in it (what the transcript shows of it, now and
        after a reload: the document may hold other text there by then)."""
        self.state = state
        final = self.status(reason=reason, message=message, candidates=candidates, conflicts=conflicts)
        if self.fenced:
            final.code, final.code_lines = code_head("".join(self._code))
        self.final = final
        return final

    def cut_short(self) -> BlockStatus | None:
        """The turn was steered by a person's edit of this block's lines: what it wrote stays as
        the file has it now (their changes in it included; its unfinished line was never
        written), and so do the old lines it had not reached; a fence's preview stays where it
        streamed, unmerged, as a preview somebody typed into does (``fence``). None when it
        cannot (nothing written yet): it is rolled back."""
        if self._applier is None or self.state is not EditState.STREAMING:
            return None
        self._applier.close()
        return self.settle(EditState.APPLIED, message="cut short: a person edited its lines while it was written")

    @property
    def landed_region(self) -> tuple[int, int] | None:
        """Byte positions of the lines the block wrote, as its applier tracked them (None when
        only its `lines` tell: a fence merged by structure, a block without an applier)."""
        if self._applier is None or self._merged_lines is not None:
            return None
        return self._applier.region

    @property
    def landed_old(self) -> str | None:
        """The lines the block replaced, as it found them (with `landed_region`; None when
        that is None)."""
        if self._applier is None or self._merged_lines is not None:
            return None
        return self._applier.old_text

    @property
    def ytext(self) -> Text | None:
        return self._ytext

    def on_delta(self, delta: list[dict[str, Any]]) -> None:
        """A change of this block's file made under another origin (the TurnEditor observes)."""
        if self._applier is not None:
            self._applier.on_delta(delta)

    def close(self) -> None:
        """Stop following the document; called before the block's changes are undone."""
        if self._applier is not None:
            self._applier.close()

    # -- reporting --

    def status(
        self,
        *,
        reason: str | None = None,
        message: str | None = None,
        candidates: tuple[int, ...] = (),
        conflicts: tuple[int, ...] = (),
    ) -> BlockStatus:
        """The current status; the keyword arguments carry the details of a final one."""
        streaming = self._streaming_status() if self.state is EditState.STREAMING else None
        self.changed = False
        if streaming is not None:
            return streaming
        merge = self._merge if self.state is EditState.APPLIED else None
        lines, written, candidates = self._where(merge is not None, candidates)
        return BlockStatus(
            turn=self.turn,
            block=self.index,
            path=self.path,
            kind=self.kind,
            state=self.state,
            lines=lines,
            candidates=candidates,
            strategy=self._strategy,
            reason=reason,
            message=message,
            conflicts=conflicts,
            fenced=self.fenced,
            language=self.language,
            merge=merge,
            written=written,
            hunk=self.hunk,
            call=self.call,
            operation=self.operation,
            target=self.target,
        )

    def _streaming_status(self) -> BlockStatus | None:
        """The status while the block streams, the short way (once per chunk); None while it
        has neither written nor held anything."""
        applier = self._applier
        preview = self._preview
        if preview is not None and (applier is None or preview.held_lines):
            # A fence's code the preview holds back (it is the file's own definition, or
            # nothing was shown yet): the region is the definition it will replace, no ghost.
            return BlockStatus(
                self.turn, self.index, self.path, self.kind, EditState.STREAMING, preview.held_lines,
                fenced=self.fenced, language=self.language, hunk=self.hunk, call=self.call,
                operation=self.operation,
            )
        if applier is None:
            return None
        return BlockStatus(
            self.turn,
            self.index,
            self.path,
            self.kind,
            EditState.STREAMING,
            applier.line_range,
            (),
            applier.ghost,
            applier.ghost_line,
            applier.ghost_from,
            self._strategy,
            fenced=self.fenced,
            language=self.language,
            hunk=self.hunk,
            call=self.call,
            operation=self.operation,
        )

    def _where(
        self, merged: bool, candidates: tuple[int, ...]
    ) -> tuple[tuple[int, int] | None, tuple[int, int] | None, tuple[int, ...]]:
        """Where the block is in its file (its lines; a block undone: where it was written too;
        a block still being located: its candidate lines). ``merged``: an applied fence merged
        by structure (its lines are where the merge put its code)."""
        applier = self._applier
        lines: tuple[int, int] | None = None
        written: tuple[int, int] | None = None
        if applier is not None:
            undone = self.state in (EditState.ROLLED_BACK, EditState.FAILED)
            lines = applier.located_range if undone else applier.line_range
            if undone:
                written = applier.line_range
            if merged and self._merged_lines is not None:
                lines = self._merged_lines
        elif self._tracker is not None and self._tracker.lines_seen:
            candidates = candidates or tuple(self._tracker.candidates())
            if self._tracker.count() == 1:
                lines = (candidates[0], candidates[0] + self._tracker.lines_seen - 1)
        if applier is None and merged:
            lines = self._merged_lines  # a fence whose preview showed nothing: where its code is
        return lines, written, candidates

    def _start_applier(
        self,
        doc: Doc[Any],
        snapshot: FileSnapshot,
        first_line: int,
        old_lines: tuple[str, ...],
        offset: int,
    ) -> None:
        assert self._ytext is not None
        self._applier = LineApplier(
            doc=doc,
            ytext=self._ytext,
            origin=self.origin,
            snapshot=snapshot,
            first_line=first_line,
            old_lines=old_lines,
            offset=offset,
            literal=self.literal,
        )
        self.state = EditState.STREAMING
        self.changed = True
