"""What every block of a turn goes through, whichever way the model wrote it.

`BlockRunner` holds one turn's document, its origin-scoped undo manager, its ledger and the
events of the call in progress; it starts a block, watches its file, settles it and rolls it
back. `TurnEditor` (turn.py, the model's text) and `PatchCall` (patch.py, its `apply_patch`
tool calls) drive their blocks through it, so both share one undo history, one ledger and
one numbering of blocks per turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycrdt import Doc, Subscription, Text, UndoManager
from pycrdt._transaction import hash_origin

from spark_ide.editing.block import BlockFailure, EditBlock
from spark_ide.editing.files import FILES_KEY, workspace_files
from spark_ide.editing.ledger import Ledger
from spark_ide.editing.lines import utf8_length
from spark_ide.editing.reasons import EditorClosedError
from spark_ide.editing.review import Landed, byte_to_char, line_span, lines_around, merged
from spark_ide.editing.status import BlockOperation, BlockStatus, CodeText, EditEvent, EditState

DeltaFollower = Callable[[list[dict[str, Any]]], None]
ForeignHook = Callable[[str, list[dict[str, Any]]], None]  # (path, delta): a change by someone else
SeenText = Callable[[str], str | None]  # the text the model last saw of a path (None: not known)


@dataclass(frozen=True, slots=True)
class Touch:
    """A file the turn's blocks touched since the last `BlockRunner.take_touched`: its text
    when they first touched it since then (None: it did not exist), and whether someone else
    changed it after that, while the turn was on it (`others`)."""

    first: str | None
    others: bool


class BlockRunner:
    """The shared state and plumbing of one turn's blocks (see the module docstring)."""

    def __init__(
        self, doc: Doc[Any], turn_id: str, *, files_key: str = FILES_KEY, seen: SeenText | None = None,
    ) -> None:
        self.turn_id = turn_id
        self._doc = doc
        self._files_key = files_key
        self._files = workspace_files(doc, files_key)
        self._undo: UndoManager | None = UndoManager(scopes=[self._files], capture_timeout_millis=0)
        self._before: dict[str, str | None] = {}  # each file the turn touched, as it was first
        self._mixed: set[str] = set()  # files someone else changed while the turn was on them
        self._own: set[int] = set()  # the (hashed) origins of the turn's own transactions
        self._undoing = False
        self._ledger = Ledger(turn_id)
        self._block: EditBlock | None = None
        self._blocks = 0  # blocks started so far (the next one's index)
        self._out: list[EditEvent] = []
        self._finals: dict[int, BlockStatus] = {}  # each block's final status (restored as it was)
        self._watched: dict[str, tuple[Text, Subscription]] = {}
        self._followers: dict[str, list[DeltaFollower]] = {}  # path -> who else hears others' edits
        self._created: dict[str, str] = {}  # path -> origin of the files this turn created
        self._code: list[CodeText] = []  # new text sent to files since the last take_code()
        # Hunk review (review.py): each block's own undo manager while it runs (one at a time),
        # then, once it applied, its change and what it left in its file, until kept or undone.
        self._scopes: dict[int, UndoManager] = {}
        self._landed: dict[int, Landed] = {}
        self._reviewing = False  # a block is being undone on its own (its change reaches others)
        self._seen = seen
        self._touched: dict[str, str | None] = {}  # files touched since the last take_touched(): text then
        self._touched_by_others: set[str] = set()  # of those, the ones someone else changed since
        # Edit steering (``live.edit_steer``): hears every change someone else makes to a file
        # the turn watches, before the block in flight's anchors move (so in the positions the
        # turn's regions had); and the byte span each applied block wrote, kept in step.
        self.on_foreign: ForeignHook | None = None
        self._written: dict[int, list[Any]] = {}  # block -> [path, start, end]

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    def take_code(self) -> list[CodeText]:
        """The new text blocks sent to their files since the last call (the watchdog's feed).
        A block that fails or is rolled back afterwards says so in its final `BlockStatus`."""
        code, self._code = self._code, []
        return code

    def take_touched(self) -> dict[str, Touch]:
        """The files the turn's blocks touched since the last call (or the turn's start), as
        `Touch`es; the next call reports from now on. What the model did to a file is then
        told apart from what someone else did (``live.seen``)."""
        touched = {
            path: Touch(first, path in self._touched_by_others) for path, first in self._touched.items()
        }
        self._touched, self._touched_by_others = {}, set()
        return touched

    def seen_if_changed(self, path: str) -> str | None:
        """The text the model last saw of ``path`` when someone else has changed the file
        since (before the turn's blocks touched it since then, or while they were on it);
        None when nobody did, or what the model saw is not known."""
        seen = self._seen(path) if self._seen is not None else None
        if seen is None or path not in self._touched:
            return None
        if path in self._touched_by_others or self._touched[path] != seen:
            return seen
        return None

    def _next_index(self) -> int:
        index = self._blocks
        self._blocks += 1
        return index

    def _text(self, path: str) -> str | None:
        ytext = self._files.get(path)
        return str(ytext) if isinstance(ytext, Text) else None

    # -- a block's life --

    def _start(self, block: EditBlock, paths: tuple[str, ...] = ()) -> None:
        """Open ``block`` (in flight from now on) and report it. ``paths``: files it touches
        besides its own (a move's destination), remembered as they were for `revert`."""
        self._report_progress()
        self._block = block
        self._own.update((hash_origin(block.origin), hash_origin(block.file_origin)))
        for path in (block.path, *paths):
            if not path or (path in self._before and path in self._touched):
                continue
            text = self._text(path)  # one string for both (a turn's files are not copied twice)
            self._before.setdefault(path, text)
            self._touched.setdefault(path, text)
        self._undo_manager().include_origin(block.origin)
        scope = UndoManager(scopes=[self._files], capture_timeout_millis=0)
        scope.include_origin(block.origin)
        self._scopes[block.index] = scope
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
            origin = event.transaction.origin()
            delta: list[dict[str, Any]] | None = None
            if not self._undoing and origin not in self._own:
                if not self._reviewing:  # (a block of the turn undone alone is the turn's own change)
                    self._mixed.add(path)  # another origin changed the file while the turn was on it
                if path in self._touched:
                    self._touched_by_others.add(path)  # (an undone block too: the model is told of it)
                if self.on_foreign is not None or self._written:
                    delta = event.delta
                    if self.on_foreign is not None:
                        self.on_foreign(path, delta)
                    self._shift_written(path, delta)
                for follower in self._followers.get(path, ()):
                    follower(delta if delta is not None else event.delta)
            current = self._block
            if current is None or current.final is not None or current.path != path:
                return
            if origin == hash_origin(current.origin):
                return  # the block's own edit: its applier accounts for it
            current.on_delta(delta if delta is not None else event.delta)

        self._watched[path] = (ytext, ytext.integrated.observe(forward))

    def _follow(self, path: str, follower: DeltaFollower) -> Callable[[], None]:
        """Have ``follower`` hear every change of ``path`` made by someone else (the file
        must be watched: a block of the turn opened it); returns how to stop."""
        followers = self._followers.setdefault(path, [])
        followers.append(follower)
        return lambda: followers.remove(follower)

    def written_regions(self) -> list[tuple[str, int, int, bool]]:
        """What the turn has written so far, as (path, start, end, in flight) byte spans of the
        files now: each applied block's lines, and the block in flight's (its written lines
        and the old lines it has not reached yet; the line it is writing comes at ``end``)."""
        block = self._block
        flight = block.landed_region if block is not None and block.final is None else None
        regions: list[tuple[str, int, int, bool]] = []
        grown, at = 0, -1
        if block is not None and flight is not None:
            grown, at = _net(flight, block.landed_old), flight[0]
            regions.append((block.path, flight[0], flight[1], True))
        for path, start, end in self._written.values():
            shift = grown if block is not None and path == block.path and start >= at >= 0 else 0
            regions.append((path, start + shift, end + shift, False))
        return regions

    def written_texts(self) -> dict[str, str]:
        """The files the turn has written in so far (``written_regions``), as they are now:
        read in one transaction through the turn's own handle on the files."""
        paths = {region[0] for region in self.written_regions()}
        texts: dict[str, str] = {}
        if not paths:
            return texts
        with self._doc.transaction():
            for path in paths:
                text = self._files.get(path)
                if isinstance(text, Text):
                    texts[path] = str(text)
        return texts

    def _shift_written(self, path: str, delta: list[dict[str, Any]]) -> None:
        """Move the applied blocks' spans in ``path`` through someone else's change."""
        for span in self._written.values():
            if span[0] == path:
                span[1], span[2] = shift_through(span[1], delta), shift_through(span[2], delta)

    def _note_written(self, block: EditBlock) -> None:
        """``block`` applied: its span joins the turn's written ones (the later ones in its
        file move by what it added)."""
        region = block.landed_region
        if region is None:
            return
        grown = _net(region, block.landed_old)
        for span in self._written.values():
            if span[0] == block.path and span[1] >= region[0]:
                span[1] += grown
                span[2] += grown
        self._written[block.index] = [block.path, region[0], region[1]]

    def _unwatch(self) -> None:
        for _, subscription in self._watched.values():
            subscription.drop()
        self._watched.clear()
        self._followers.clear()

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
        self._emit(status)

    def _emit(self, status: BlockStatus) -> None:
        self._ledger.record(status)
        if status.state.is_final:
            self._finals[status.block] = status
            if status.state is EditState.APPLIED:
                self._land(status)
            self._scopes.pop(status.block, None)
        self._out.append(status)

    def _land(self, status: BlockStatus) -> None:
        """``status``'s block applied: keep what it left in its file, so that it can be undone
        on its own (review.py). Not a file's delete or move (the whole turn's revert takes
        those back)."""
        block = self._block
        scope = self._scopes.get(status.block)
        if block is None or block.index != status.block or scope is None:
            return
        self._note_written(block)
        if block.operation in (BlockOperation.DELETE, BlockOperation.MOVE):
            return
        ytext = self._files.get(block.path)
        if not isinstance(ytext, Text):
            return
        text = str(ytext)
        region = block.landed_region
        if region is not None:
            start, end = byte_to_char(text, region[0]), byte_to_char(text, region[1])
        else:
            start, end = line_span(text, status.lines)
        at, before, after = lines_around(text, start, end)
        self._landed[status.block] = Landed(
            block=status.block, path=block.path, change=merged(scope), old=block.landed_old, before=before,
            text=text[start:end], after=after, at=at, created=block.created_file, file_origin=block.file_origin,
        )

    def _report_progress(self) -> None:
        block = self._block
        if block is not None and block.final is None and block.changed:
            self._out.append(block.status())

    def _note_code(self, block: EditBlock, text: str) -> None:
        """``text`` went to ``block``'s file (the watchdog reads it, `take_code`)."""
        line = block.code_line
        if line is not None and text:
            self._code.append(CodeText(block.index, block.path, line, text))

    # -- undo --

    def _roll_back(self, block: EditBlock) -> None:
        """Undo exactly this block's transactions (the newest items on the stack).

        The turn's undo manager captures every transaction as its own item
        (capture_timeout_millis=0) and only tracks this turn's origins, so the block's
        items are the last ones pushed; counting them avoids listing the whole stack.
        """
        block.close()
        self._landed.pop(block.index, None)  # (an applied block of a refused patch operation)
        scope = self._scopes.get(block.index)
        if scope is not None:
            scope.clear()  # a hunk may start again elsewhere: its scope holds what it does from now
        self._undo_items(block.transactions)
        if block.created_file:
            self._remove_if_empty(block.path, block.file_origin)

    def _undo_items(self, count: int) -> None:
        """Undo the newest ``count`` items of the turn's undo stack."""
        undo = self._undo_manager()
        self._undoing = True
        try:
            for _ in range(count):
                undo.undo()
        finally:
            self._undoing = False

    def _remove_if_empty(self, path: str, origin: str) -> None:
        """Remove a file this turn created, unless someone else's text is left in it."""
        ytext = self._files.get(path)
        if isinstance(ytext, Text) and len(ytext) == 0:
            with self._doc.transaction(origin=origin):
                del self._files[path]

    def _undo_manager(self) -> UndoManager:
        if self._undo is None:
            raise EditorClosedError(f"turn {self.turn_id} was detached from its document")
        return self._undo


def _net(region: tuple[int, int], old: str | None) -> int:
    """Bytes a block's span grew the file by: what it spans less the lines it replaced."""
    return region[1] - region[0] - (utf8_length(old) if old is not None else 0)


def shift_through(position: int, delta: list[dict[str, Any]], *, pushed_at: bool = True) -> int:
    """``position`` (bytes) after the change ``delta``: text inserted before it pushes it on,
    and text inserted right at it too unless ``pushed_at`` is False (it then stays after the
    position)."""
    cursor = 0
    for op in delta:
        if cursor > position or (cursor == position and not pushed_at):
            break
        if "retain" in op:
            cursor += op["retain"]
        elif "insert" in op:
            inserted = op["insert"]
            size = utf8_length(inserted) if isinstance(inserted, str) else 1
            position += size
            cursor += size
        elif "delete" in op:
            position -= min(op["delete"], max(position - cursor, 0))
    return position
