"""The room's queue of prompts waiting behind the running turn, as everyone sees it.

Prompts queued (Alt+Enter) wait here in order; the Pilot starts them from the front. Every
driver sees the same queue (the ephemeral ``queue`` event, sent on every change and to a
page joining) and may change it: edit a prompt's text, delete it, move it, take it out to
steer with it now, or merge several into one. The queue lives in the room while the room is
open (a reload shows it again; a room closed and opened again starts with an empty queue).

A change naming a prompt that is not queued (started meanwhile, deleted by someone else, a
made-up id) is refused with ``not_queued`` and changes nothing; a prompt beyond
``MAX_QUEUED`` is refused with ``queue_full``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .events import ErrorCode, ErrorEvent, LineSpan, QueueItem, QueueState
from .turns import Command, CommandKind

MAX_QUEUED = 50
MAX_MERGED_CHARS = 20_000  # a merged prompt: as long as one prompt may be by default
MERGE_SEPARATOR = "\n\n"

QUEUE_KINDS = frozenset({
    CommandKind.QUEUE_EDIT, CommandKind.QUEUE_DELETE, CommandKind.QUEUE_MOVE, CommandKind.QUEUE_STEER,
    CommandKind.QUEUE_MERGE,
})


class PromptQueue:
    """Queued prompts (``Command``s of kind ``prompt``), in the order they will run.
    ``announce``: the queue's state for everyone, after each change."""

    def __init__(
        self, *, announce: Callable[[QueueState], None], limit: int = MAX_QUEUED, max_chars: int = MAX_MERGED_CHARS,
    ) -> None:
        self._items: list[Command] = []
        self._announce = announce
        self.limit = limit
        self.max_chars = max_chars

    def __len__(self) -> int:
        return len(self._items)

    def state(self) -> QueueState:
        return QueueState(items=tuple(
            QueueItem(turn=command.turn, prompt=command.text, author=command.author, position=index + 1,
                      range=_span(command))
            for index, command in enumerate(self._items)
        ))

    def add(self, command: Command) -> bool:
        """Queue ``command`` at the end; False (the sender told ``queue_full``) when full."""
        if len(self._items) >= self.limit:
            _refuse(command, ErrorCode.QUEUE_FULL,
                    f"the queue is full: at most {self.limit} prompts may wait; run, merge or delete some first")
            return False
        self._items.append(command)
        self._changed()
        return True

    def pop(self) -> Command | None:
        """The prompt at the front, taken out (None: nothing waits)."""
        if not self._items:
            return None
        command = self._items.pop(0)
        self._changed()
        return command

    def change(self, command: Command) -> Command | None:
        """Apply one queue change; for ``queue.steer`` the prompt to steer with (a ``steer``
        command by the person who asked, with the prompt's text and turn id)."""
        kind = command.kind
        turns = command.turns if kind is CommandKind.QUEUE_MERGE else (command.turn,)
        indexes = self._find(command, turns)
        if indexes is None:
            return None
        first = indexes[0]
        if kind is CommandKind.QUEUE_EDIT:
            # The new text's mentions replace the old ones (its exclusions stay).
            self._items[first] = replace(self._items[first], text=command.text, mentions=command.mentions)
        elif kind is CommandKind.QUEUE_DELETE:
            del self._items[first]
        elif kind is CommandKind.QUEUE_MOVE:
            if not 1 <= command.position <= len(self._items):
                _refuse(command, ErrorCode.BAD_FIELD,
                        f"'position' must be from 1 to {len(self._items)} (the queue's length)")
                return None
            self._items.insert(command.position - 1, self._items.pop(first))
        elif kind is CommandKind.QUEUE_STEER:
            queued = self._items.pop(first)
            self._changed()
            return Command(
                kind=CommandKind.STEER, session=command.session, user_id=command.user_id, author=command.author,
                turn=queued.turn, text=queued.text, effort=queued.effort, path=queued.path, reply=command.reply,
                received_at=command.received_at, range=queued.range, mentions=queued.mentions, exclude=queued.exclude,
            )
        elif kind is CommandKind.QUEUE_MERGE and not self._merge(command, sorted(indexes)):
            return None
        self._changed()
        return None

    def _merge(self, command: Command, indexes: list[int]) -> bool:
        if len(indexes) < 2:
            _refuse(command, ErrorCode.BAD_FIELD, "'turns' must name at least two different queued prompts")
            return False
        text = MERGE_SEPARATOR.join(self._items[index].text for index in indexes)
        if len(text) > self.max_chars:
            _refuse(command, ErrorCode.TOO_LONG, f"the merged prompt would be longer than {self.max_chars} characters")
            return False
        first = indexes[0]
        merged = [self._items[index] for index in indexes]
        self._items[first] = replace(
            self._items[first], text=text,  # the mentions and exclusions of every prompt merged
            mentions=tuple(dict.fromkeys(m for queued in merged for m in queued.mentions)),
            exclude=tuple(dict.fromkeys(p for queued in merged for p in queued.exclude)),
        )
        for index in reversed(indexes[1:]):
            del self._items[index]
        return True

    def _find(self, command: Command, turns: Sequence[str]) -> list[int] | None:
        """The queue positions (0-based) of ``turns``, each once; or None, the sender told."""
        where = {queued.turn: index for index, queued in enumerate(self._items)}
        missing = [turn for turn in turns if turn not in where]
        if missing or not turns:
            _refuse(command, ErrorCode.NOT_QUEUED,
                    f"no prompt {missing[0][:64]!r} waits in the queue; nothing changed" if missing
                    else "no queued prompt named; nothing changed")
            return None
        return list(dict.fromkeys(where[turn] for turn in turns))

    def _changed(self) -> None:
        self._announce(self.state())


def _span(command: Command) -> LineSpan | None:
    asked = command.range
    return None if asked is None else LineSpan(asked.path, asked.from_line, asked.to_line)


def _refuse(command: Command, code: ErrorCode, message: str) -> None:
    if command.reply is not None:
        command.reply(ErrorEvent(code, message, ref=command.turn or None))
