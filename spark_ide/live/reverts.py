"""Taking a whole turn back (revert) and putting it back (restore), for everyone in the room.

The edit engines of the recent turns are kept (``Revertible``); a revert of the running turn
first ends it (the Pilot's part: ``Pilot._revert``). A revert can be undone until the next
turn starts. Both are announced (``turn.reverted``, ``turn.restored``) once recorded, so a
history panel refreshed on them shows the change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from pycrdt import Doc

from spark_ide.editing import TurnEditor
from spark_ide.editing.reasons import RevertUnavailable

from .events import ErrorCode, TurnEvent, TurnRestored, TurnReverted
from .events import ErrorEvent as SessionError
from .records import Records
from .turns import Command, publish_edits

KEEP_REVERTIBLE = 50


class RevertBook(Protocol):
    """Where a turn's record is marked reverted or restored (``RoomStore``)."""

    async def turn_reverted(self, turn: str) -> None: ...

    async def turn_restored(self, turn: str) -> None: ...


class Revertible:
    """The edit engines of the recent turns, which can take a whole turn back."""

    def __init__(self, keep: int = KEEP_REVERTIBLE) -> None:
        self._keep = keep
        self._editors: OrderedDict[str, TurnEditor] = OrderedDict()

    def add(self, turn: str, editor: TurnEditor) -> None:
        self._editors[turn] = editor
        while len(self._editors) > self._keep:
            self._editors.popitem(last=False)

    def get(self, turn: str) -> TurnEditor | None:
        return self._editors.get(turn)

    def detach(self, doc: Doc[Any]) -> None:
        """The room compacted its document into ``doc``: each kept turn reverts as text now."""
        for editor in self._editors.values():
            editor.detach(doc)


class TurnReverts:
    """``records``: the Pilot's ordered turn records (a revert is recorded after its turn's
    end); ``book``: where they go; ``publish``: the room's turn events."""

    def __init__(self, *, book: RevertBook, records: Records, publish: Callable[[TurnEvent], None]) -> None:
        self._book = book
        self._records = records
        self._publish = publish
        self._revertible = Revertible()
        self._restorable: set[str] = set()  # turns reverted since the last turn started

    def turn_started(self, turn: str, editor: TurnEditor) -> None:
        """A turn started: it can be reverted; a revert before it can no longer be undone."""
        self._restorable.clear()
        self._revertible.add(turn, editor)

    def document_replaced(self, doc: Doc[Any]) -> None:
        """The room compacted its document into ``doc`` (between turns): the kept turns'
        undo histories belong to the old one; they revert as text from now on."""
        self._revertible.detach(doc)

    def kept(self, turn: str) -> TurnEditor | None:
        """The edit engine of ``turn`` if it is one of the recent turns of this room."""
        return self._revertible.get(turn)

    def files_restored(self, doc: Doc[Any]) -> None:
        """A checkpoint's files were put back (between turns): the kept turns' undo histories
        no longer describe the files, so they revert as text from now on (refused where their
        lines changed since), and no revert before it can be undone."""
        self._revertible.detach(doc)
        self._restorable.clear()

    def editor(self, command: Command) -> TurnEditor | None:
        """The edit engine of the turn ``command`` reverts; None (told to the asking
        connection) when the turn is unknown or too old."""
        editor = self._revertible.get(command.turn)
        if editor is None and command.reply is not None:
            command.reply(SessionError(
                ErrorCode.REVERT_UNAVAILABLE, f"turn {command.turn} cannot be reverted (unknown or too old)",
                ref=command.turn,
            ))
        return editor

    def revert(self, command: Command, editor: TurnEditor) -> bool:
        """Take the turn back (``editor``: from ``editor()``); False when that is refused
        (told to the asking connection), changing nothing."""
        turn = command.turn
        try:
            edits = editor.revert()
        except RevertUnavailable as refused:
            if command.reply is not None:
                command.reply(SessionError(ErrorCode.REVERT_UNAVAILABLE, str(refused), ref=turn))
            return False
        publish_edits(self._publish, edits)
        self._restorable.add(turn)
        self._records.put(
            "turn reverted", lambda: self._book.turn_reverted(turn),
            then=lambda: self._publish(TurnReverted(turn=turn)),
        )
        return True

    def restore(self, command: Command) -> None:
        """Undo the revert of a turn: its edits go back into the files (``TurnEditor.restore``),
        for everyone, and its record is no longer reverted. Only a turn reverted since the
        last turn started, in this room; refused, changing nothing, when the lines it brings
        back were edited since."""
        turn = command.turn
        editor = self._revertible.get(turn)
        if turn not in self._restorable or editor is None or not editor.reverted:
            if command.reply is not None:
                why = (
                    "a turn has started since it was reverted" if editor is not None and editor.reverted
                    else "it is not a reverted turn of this room"
                )
                command.reply(SessionError(
                    ErrorCode.RESTORE_UNAVAILABLE,
                    f"turn {turn} cannot be restored: {why} (a revert can be undone until the next turn starts)",
                    ref=turn,
                ))
            return
        try:
            edits = editor.restore()
        except RevertUnavailable as refused:
            if command.reply is not None:
                command.reply(SessionError(ErrorCode.RESTORE_UNAVAILABLE, str(refused), ref=turn))
            return
        self._restorable.discard(turn)
        publish_edits(self._publish, edits)
        self._records.put(
            "turn restored", lambda: self._book.turn_restored(turn),
            then=lambda: self._publish(TurnRestored(turn=turn)),
        )
