"""Keeping or undoing the applied blocks of a turn one by one, for everyone in the room.

``hunk.keep`` and ``hunk.undo`` name a turn of this room and one of its blocks, or all of its
blocks waiting for review (``all``). The turn's edit engine does the work
(``TurnEditor.keep_block``/``undo_block``: an undo takes back that block's own changes only,
and is refused when its lines were changed since); this announces each decision
(``edit.reviewed``, after an undone block's ``edit.status``) and tells the asking connection
what was refused. The running turn can be reviewed as its blocks apply; an ended one while
the Pilot keeps its engine (``reverts.Revertible``, the recent turns).
"""

from __future__ import annotations

from collections.abc import Callable

from spark_ide.editing import ReviewRefused, TurnEditor

from .events import EditReviewed, ErrorCode, TurnEvent
from .events import ErrorEvent as SessionError
from .turns import Command, publish_edits

KEEP = "keep"
UNDO = "undo"


class HunkReviews:
    """``editor``: the kept edit engine of a turn of this room (None: unknown or too old);
    ``publish``: the room's turn events."""

    def __init__(self, *, editor: Callable[[str], TurnEditor | None], publish: Callable[[TurnEvent], None]) -> None:
        self._editor = editor
        self._publish = publish

    def review(self, command: Command) -> TurnEditor | None:
        """Carry out ``command`` (``decision`` keep or undo, ``block`` None for all of the
        turn's blocks waiting for review); returns the turn's engine when something was
        decided, None when nothing was (told to the asking connection)."""
        turn = command.turn
        editor = self._editor(turn)
        if editor is None:
            self._refuse(command, ErrorCode.HUNK_UNAVAILABLE,
                         f"turn {turn} has no blocks to review in this room (unknown, or too old)")
            return None
        if command.block is None:
            blocks = editor.reviewable()
            if command.decision == UNDO:
                blocks = tuple(reversed(blocks))  # the newest first: each undo leaves the older ones in place
            if not blocks:
                self._refuse(command, ErrorCode.HUNK_UNAVAILABLE,
                             f"turn {turn} has no applied block waiting to be kept or undone")
                return None
        else:
            blocks = (command.block,)
        refusals: list[ReviewRefused] = []
        decided = 0
        for block in blocks:
            try:
                self._decide(command, editor, block)
            except ReviewRefused as refused:
                refusals.append(refused)
            else:
                decided += 1
        if refusals:
            code = ErrorCode.HUNK_CONFLICT if any(r.conflict for r in refusals) else ErrorCode.HUNK_UNAVAILABLE
            self._refuse(command, code, "; ".join(str(r) for r in refusals))
        return editor if decided else None

    def _decide(self, command: Command, editor: TurnEditor, block: int) -> None:
        by = command.author
        if command.decision == UNDO:
            publish_edits(self._publish, editor.undo_block(block, by))
            decision = "undone"
        else:
            editor.keep_block(block, by)
            decision = "kept"
        path = editor.ledger.entry(block).path
        self._publish(EditReviewed(turn=command.turn, block=block, path=path, decision=decision, by=by))

    @staticmethod
    def _refuse(command: Command, code: ErrorCode, message: str) -> None:
        if command.reply is not None:
            command.reply(SessionError(code, message, ref=command.turn))
